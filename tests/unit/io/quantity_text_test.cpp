// Quantities as people type them (io/quantity_text.hpp): what each means, and
// what is refused, naming the field the edge gave.

#include <catch2/catch.hpp>

#include <moeplan/core/error.hpp>
#include <moeplan/io/quantity_text.hpp>

using moeplan::io::parse_count_range;
using moeplan::io::parse_token_count;

namespace {

// The reason parsing `text` gives, or "accepted".
template <typename F>
std::string quantity_refusal(F&& parse, const char* field) {
  try {
    parse();
  } catch (const moeplan::Error& e) {
    CHECK(e.field() == field);
    return e.reason();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("io::parse_token_count reads decimal units", "[io]") {
  CHECK(parse_token_count("2T", "request.tokens") == 2e12);
  CHECK(parse_token_count("500B", "request.tokens") == 5e11);
  CHECK(parse_token_count("1.5e12", "request.tokens") == 1.5e12);
  CHECK(parse_token_count("300M", "request.tokens") == 3e8);
  CHECK(parse_token_count("20k", "request.tokens") == 2e4);
  // Not decimal numbers: empty, a unit alone, an unknown unit, words, hex
  // (strtod read "0x10T" as 16e12), spaces, a value past a double.
  for (const char* bad : {"", "T", "2X", "inf", "nanT", "2 T", "0x10T", " 5B"}) {
    INFO(bad);
    CHECK_THAT(quantity_refusal([&] { parse_token_count(bad, "request.tokens"); }, "request.tokens"),
               Catch::StartsWith("expected a decimal number"));
  }
  CHECK_THAT(quantity_refusal([&] { parse_token_count("1e400", "request.tokens"); }, "request.tokens"),
             Catch::EndsWith("is not a number a double holds"));
  // Decimal, but out of the option's range (1 to 1e18 tokens): a budget is at
  // least one token (1e-300 was accepted), and 2e18 = 2000P is past the bound.
  CHECK(quantity_refusal([&] { parse_token_count("1e-300", "request.tokens"); }, "request.tokens") ==
        "must be at least 1 token, got 1e-300");
  CHECK(quantity_refusal([&] { parse_token_count("0B", "request.tokens"); }, "request.tokens") ==
        "must be at least 1 token, got '0' (0)");
  CHECK(quantity_refusal([&] { parse_token_count("-1T", "request.tokens"); }, "request.tokens") ==
        "must be at least 1 token, got '-1' (-1000000000000)");
  CHECK(quantity_refusal([&] { parse_token_count("2000000T", "request.tokens"); }, "request.tokens") ==
        "must be at most 1e+18 tokens, got '2000000' (2e+18)");
}

TEST_CASE("io::parse_count_range reads N and LO..HI of whole numbers in range", "[io]") {
  CHECK(parse_count_range("64..4096", "request.gpus") == std::pair<std::int64_t, std::int64_t>{64, 4096});
  CHECK(parse_count_range("128", "request.gpus") == std::pair<std::int64_t, std::int64_t>{128, 128});
  CHECK(quantity_refusal([&] { parse_count_range("4096..64", "request.gpus"); }, "request.gpus") ==
        "a range LO..HI needs LO <= HI, got '4096..64'");
  // An empty count was taken for "not given" by the CLI (issue 28); each end is a whole number.
  for (const char* bad : {"", "a..b", "64..", "..64", "8...16", "0x40", "1e3", " 8"}) {
    INFO(bad);
    CHECK_THAT(quantity_refusal([&] { parse_count_range(bad, "request.gpus"); }, "request.gpus"),
               Catch::StartsWith("expected a whole number"));
  }
  // Range: 1 to 2^20 = 1,048,576 GPUs (the bound on any parallel size).
  CHECK(quantity_refusal([&] { parse_count_range("0..8", "request.gpus"); }, "request.gpus") ==
        "must be at least 1 GPU, got 0");
  CHECK(quantity_refusal([&] { parse_count_range("8..2097152", "request.gpus"); }, "request.gpus") ==
        "must be at most 1048576 GPUs, got 2097152");
  // 2^63 does not fit 64 bits: past the range, not a wrapped number.
  CHECK(quantity_refusal([&] { parse_count_range("9223372036854775808", "request.gpus"); }, "request.gpus") ==
        "must be at most 1048576 GPUs, got 9223372036854775808");
}
