#include <moeplan/io/profile_writer.hpp>

#include <sstream>

#include <google/protobuf/text_format.h>

#include "proto_convert.hpp"

namespace moeplan::io {

std::string profile_to_textproto(const model::CostProfileSpec& profile, const std::string& comment) {
  std::string out = "# proto-message: CostProfile\n";
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) out += line.empty() ? "#\n" : "# " + line + "\n";
  std::string body;
  google::protobuf::TextFormat::Printer printer;
  printer.PrintToString(to_proto(profile), &body);
  return out + body;
}

}  // namespace moeplan::io
