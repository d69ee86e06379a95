#include "scalar_fields.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>

#include <moeplan/core/error.hpp>

namespace moeplan::io {
namespace gpb = google::protobuf;

namespace {

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream in(path);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  return parts;
}

std::int64_t parse_int(const std::string& path, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE)
    throw_input_error(path, fmt::format("expected an integer, got '{}'", value));
  return v;
}

double parse_double(const std::string& path, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw_input_error(path, fmt::format("expected a number, got '{}'", value));
  return v;
}

}  // namespace

void set_scalar_field(gpb::Message& root, const std::string& path, const std::string& value) {
  const std::vector<std::string> parts = split(path);
  if (parts.empty()) throw_input_error(path, "empty field path");
  gpb::Message* message = &root;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const gpb::FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(parts[i]);
    if (field == nullptr)
      throw_input_error(path, fmt::format("unknown field '{}' in {}", parts[i], message->GetDescriptor()->name()));
    if (field->is_repeated()) throw_input_error(path, "repeated fields cannot be set with --set");
    const gpb::Reflection* reflection = message->GetReflection();
    const bool last = i + 1 == parts.size();
    if (field->cpp_type() == gpb::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (last) throw_input_error(path, "is a message; set one of its scalar fields");
      message = reflection->MutableMessage(message, field);
      continue;
    }
    if (!last) throw_input_error(path, fmt::format("'{}' is a scalar and has no fields", parts[i]));
    switch (field->cpp_type()) {
      case gpb::FieldDescriptor::CPPTYPE_INT64:
        reflection->SetInt64(message, field, parse_int(path, value));
        break;
      case gpb::FieldDescriptor::CPPTYPE_INT32: {
        const std::int64_t v = parse_int(path, value);
        if (v < INT32_MIN || v > INT32_MAX) throw_input_error(path, "out of range");
        reflection->SetInt32(message, field, static_cast<std::int32_t>(v));
        break;
      }
      case gpb::FieldDescriptor::CPPTYPE_DOUBLE:
        reflection->SetDouble(message, field, parse_double(path, value));
        break;
      case gpb::FieldDescriptor::CPPTYPE_BOOL:
        if (value != "true" && value != "false")
          throw_input_error(path, fmt::format("expected true or false, got '{}'", value));
        reflection->SetBool(message, field, value == "true");
        break;
      case gpb::FieldDescriptor::CPPTYPE_STRING:
        reflection->SetString(message, field, value);
        break;
      case gpb::FieldDescriptor::CPPTYPE_ENUM: {
        const gpb::EnumValueDescriptor* e = field->enum_type()->FindValueByName(value);
        if (e == nullptr) throw_input_error(path, fmt::format("unknown value '{}'", value));
        reflection->SetEnum(message, field, e);
        break;
      }
      default:
        throw_input_error(path, "unsupported field type");
    }
  }
}

}  // namespace moeplan::io
