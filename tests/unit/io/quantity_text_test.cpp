// Quantities as people type them (io/quantity_text.hpp): what each means, and
// what is refused, naming the field the edge gave.

#include <catch2/catch.hpp>

#include <moeplan/core/error.hpp>
#include <moeplan/io/quantity_text.hpp>

using moeplan::io::parse_count_range;
using moeplan::io::parse_token_count;

TEST_CASE("io::parse_token_count reads decimal units; io::parse_count_range reads N and LO..HI", "[io]") {
  CHECK(parse_token_count("2T", "request.tokens") == 2e12);
  CHECK(parse_token_count("500B", "request.tokens") == 5e11);
  CHECK(parse_token_count("1.5e12", "request.tokens") == 1.5e12);
  CHECK(parse_token_count("300M", "request.tokens") == 3e8);
  CHECK(parse_token_count("20k", "request.tokens") == 2e4);
  for (const char* bad : {"", "T", "2X", "-1T", "0", "0B", "inf", "nanT", "2 T", "1e400"}) {
    INFO(bad);
    try {
      parse_token_count(bad, "request.tokens");
      FAIL("accepted");
    } catch (const moeplan::Error& e) {
      CHECK(e.field() == "request.tokens");
      CHECK_THAT(e.reason(), Catch::StartsWith("expected a positive token count"));
    }
  }
  CHECK(parse_count_range("64..4096", "request.gpus") == std::pair<std::int64_t, std::int64_t>{64, 4096});
  CHECK(parse_count_range("128", "request.gpus") == std::pair<std::int64_t, std::int64_t>{128, 128});
  for (const char* bad : {"4096..64", "a..b", "64..", "..64", "0..8", "-8..8", "8...16", ""}) {
    INFO(bad);
    try {
      parse_count_range(bad, "request.gpus");
      FAIL("accepted");
    } catch (const moeplan::Error& e) {
      CHECK(e.field() == "request.gpus");
    }
  }
}
