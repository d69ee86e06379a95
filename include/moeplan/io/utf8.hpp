#pragma once
// UTF-8 checks shared by the loader (input strings must be valid UTF-8) and the
// JSON writer (which must never emit bytes a JSON parser rejects).

#include <cstddef>
#include <string>
#include <string_view>

namespace moeplan::io {

/// Length of the well-formed UTF-8 sequence starting at text[at] (1 to 4), or 0
/// when the bytes there are not one (a stray continuation byte, a truncated or
/// overlong sequence, a UTF-16 surrogate, a code point above U+10FFFF): RFC 3629.
std::size_t utf8_sequence_length(std::string_view text, std::size_t at);

/// Offset of the first byte that does not start a well-formed sequence, or
/// std::string_view::npos when all of text is valid UTF-8.
std::size_t first_invalid_utf8(std::string_view text);

/// The reason of an input error about text whose first invalid byte is at
/// offset at: "not valid UTF-8 (byte 0xff at offset 3)". The byte is named, not
/// echoed, so that the error line stays printable.
std::string invalid_utf8_reason(std::string_view text, std::size_t at);

}  // namespace moeplan::io
