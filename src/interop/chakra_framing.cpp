// Varint length prefixes: protobuf's base-128 encoding (protobuf.dev,
// "Encoding", Base 128 Varints), as Chakra's protolib encodeMessage writes
// them before each message of a trace.

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/interop/chakra.hpp>

namespace moeplan::interop {

void append_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7F) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

void append_delimited(std::string& out, std::string_view message) {
  append_varint(out, message.size());
  out.append(message);
}

std::optional<DelimitedMessage> DelimitedReader::next() {
  if (at_ == stream_.size()) return std::nullopt;
  const std::size_t offset = at_;
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::Input, fmt::format("message {} at byte {}: {}", count_ + 1, offset, why), "",
                 SourceLocation{file_, 0, 0});
  };
  // A 64-bit varint takes at most 10 bytes; the tenth may carry only the top bit.
  std::uint64_t length = 0;
  int shift = 0;
  while (true) {
    if (at_ == stream_.size()) throw bad("the length prefix is cut short by the end of the file (truncated file)");
    const auto byte = static_cast<unsigned char>(stream_[at_++]);
    if (shift == 63 && byte > 1) throw bad("the length prefix does not fit in 64 bits (not a Chakra trace)");
    length |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) break;
    shift += 7;
    if (shift > 63) throw bad("the length prefix runs over 10 bytes (not a Chakra trace)");
  }
  if (length > stream_.size() - at_)
    throw bad(fmt::format("declares {} bytes, but only {} remain (truncated file)", length, stream_.size() - at_));
  const DelimitedMessage message{stream_.substr(at_, static_cast<std::size_t>(length)), offset};
  at_ += static_cast<std::size_t>(length);
  ++count_;
  return message;
}

std::vector<DelimitedMessage> split_delimited(std::string_view stream, const std::string& file) {
  std::vector<DelimitedMessage> out;
  DelimitedReader reader(stream, file);
  while (std::optional<DelimitedMessage> message = reader.next()) out.push_back(*message);
  return out;
}

std::string chakra_file_name(std::int32_t rank) { return fmt::format("{}.{}.et", kChakraPrefix, rank); }

}  // namespace moeplan::interop
