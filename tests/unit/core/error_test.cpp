#include <catch2/catch.hpp>

#include <string>

#include <moeplan/core/error.hpp>

using namespace moeplan;

TEST_CASE("quoted_for_error quotes a short value whole", "[core]") {
  CHECK(quoted_for_error("abc") == "'abc'");
  CHECK(quoted_for_error("") == "''");
  const std::string sixty(kQuotedForErrorMax, 'x');
  CHECK(quoted_for_error(sixty) == "'" + sixty + "'");
}

TEST_CASE("quoted_for_error cuts a 1 MB value to 60 bytes and its length", "[core]") {
  const std::string value(1000000, '7');
  const std::string quoted = quoted_for_error(value);
  CHECK(quoted == "'" + std::string(kQuotedForErrorMax, '7') + "'... (1000000 bytes)");
  CHECK(quoted.size() < 100);
}

TEST_CASE("quoted_for_error cuts at a UTF-8 character boundary and keeps one line", "[core]") {
  // 59 ASCII bytes, then a 2-byte character across the 60-byte cut.
  const std::string value = std::string(59, 'a') + "\xc3\xa9" + std::string(10, 'b');
  CHECK(quoted_for_error(value) == "'" + std::string(59, 'a') + "'... (71 bytes)");
  CHECK(quoted_for_error("a\nb\tc\x01") == "'a\\nb\\tc\\x01'");
}

TEST_CASE("format_error cuts a long field path (an unknown field of --set)", "[core]") {
  const std::string field(1000000, 'f');
  const Error e(ErrorKind::Input, "unknown field", field, SourceLocation{"--set", 0, 0});
  const std::string line = format_error(e);
  CHECK(line.size() < 300);
  CHECK(line.find("(1000000 bytes): unknown field") != std::string::npos);
  CHECK(format_error(Error(ErrorKind::Input, "bad", "moe.top_k")) == "moe.top_k: bad");
}
