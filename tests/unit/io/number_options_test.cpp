// The numeric options of every command and Python keyword (io/number_options.hpp):
// one table, one parser. Issue 28 found each edge value below accepted by
// some command (hexadecimal, empty, 1e-300, values past 64 bits or past any
// machine) or turned into a crash by another.

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <moeplan/core/error.hpp>
#include <moeplan/io/number_options.hpp>

using moeplan::io::check_number;
using moeplan::io::number_option;
using moeplan::io::number_options;
using moeplan::io::parse_number;

namespace {

std::string number_refusal_of_text(const std::string& field, const std::string& text) {
  try {
    parse_number(field, text);
  } catch (const moeplan::Error& e) {
    CHECK(e.field() == field);
    CHECK(e.kind() == moeplan::ErrorKind::Input);
    return e.reason();
  }
  return "accepted";
}

std::string number_refusal_of_value(const std::string& field, double value) {
  try {
    check_number(field, value);
  } catch (const moeplan::Error& e) {
    CHECK(e.field() == field);
    return e.reason();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("io::number_options: one row per field, bounds that hold every later product", "[io]") {
  std::set<std::string_view> fields;
  for (const auto& o : number_options()) {
    INFO(o.field);
    CHECK(fields.insert(o.field).second);
    CHECK(o.field.rfind("request.", 0) == 0);
    CHECK(o.min <= o.max);
    CHECK(o.min >= 0);
    CHECK(!o.why.empty());
    if (o.integer) {
      CHECK(o.min == std::floor(o.min));
      CHECK(o.max == std::floor(o.max));
    }
    // No option takes 1e308 (the CLI's property test sends it to every one).
    CHECK(o.max <= 1e18);
  }
}

TEST_CASE("io::parse_number refuses what is not a decimal number, whatever the option", "[io]") {
  for (const auto& o : number_options()) {
    const std::string field(o.field);
    INFO(field);
    // Not decimal numbers: each was read by strtod, strtoll or CLI11 as
    // something (0x10 as 16, " 1" as 1, "1 " as 1, nan and inf as themselves).
    for (const char* bad : {"", " 1", "1 ", "0x10", "0X1p3", "nan", "inf", "-inf", "infinity", "1,5", "1_000", "--1",
                            "1e", "e5", ".", "+", "1..2", "1e+", "\xff"}) {
      INFO(bad);
      CHECK_THAT(number_refusal_of_text(field, bad), Catch::StartsWith("expected a"));
    }
    // 2^63 is past 64 bits: out of range of every option, never wrapped.
    CHECK_THAT(number_refusal_of_text(field, "9223372036854775808"), Catch::StartsWith("must be at most"));
    // Negative numbers are below every option's least value (all are >= 0).
    CHECK_THAT(number_refusal_of_text(field, "-1"), Catch::StartsWith("must be"));
    if (o.integer) {
      for (const char* bad : {"1.5", "1e3", "1e308", "1e-300", "2.", ".5"}) {
        INFO(bad);
        CHECK(number_refusal_of_text(field, bad) == "expected a whole number, got '" + std::string(bad) + "'");
      }
    } else {
      CHECK_THAT(number_refusal_of_text(field, "1e308"), Catch::StartsWith("must be at most"));
      CHECK_THAT(number_refusal_of_text(field, "1e400"), Catch::EndsWith("is not a number a double holds"));
    }
  }
}

TEST_CASE("io::parse_number reads decimal numbers within each option's range", "[io]") {
  // Whole numbers: decimal with leading zeros (CLI11 read "010" as octal 8) and a plus sign.
  CHECK(parse_number("request.seq_len", "010") == 10);
  CHECK(parse_number("request.seq_len", "+4096") == 4096);
  // seq_len: 1 to 2^27 = 134,217,728 tokens (the scenario format's bound).
  CHECK(parse_number("request.seq_len", "134217728") == 134217728);
  CHECK(number_refusal_of_text("request.seq_len", "134217729") == "must be at most 134217728 tokens, got 134217729");
  CHECK(number_refusal_of_text("request.seq_len", "1000000000") == "must be at most 134217728 tokens, got 1000000000");
  CHECK(number_refusal_of_text("request.seq_len", "0") == "must be at least 1 token, got 0");
  // global_batch: 1 to 2^16 = 65,536 sequences (capacity's bound).
  CHECK(number_refusal_of_text("request.global_batch", "1048576") == "must be at most 65536 sequences, got 1048576");
  CHECK(number_refusal_of_text("request.global_batch", "9223372036854775807") ==
        "must be at most 65536 sequences, got 9223372036854775807");
  // Reals in every decimal form.
  CHECK(parse_number("request.days", "30") == 30);
  CHECK(parse_number("request.days", "0.5") == 0.5);
  CHECK(parse_number("request.days", ".5") == 0.5);
  CHECK(parse_number("request.days", "5.") == 5);
  CHECK(parse_number("request.days", "1E2") == 100);
  // days: above 0 (a deadline of 1e-300 days is a tiny one, not nonsense), at most 1e5.
  CHECK(parse_number("request.days", "1e-300") == 1e-300);
  CHECK(number_refusal_of_text("request.days", "0") == "must be above 0 days, got 0");
  CHECK(number_refusal_of_text("request.days", "100001") == "must be at most 100000 days, got 100001");
  // Options whose least value is 0: cost --size (the latency term), --warmup.
  CHECK(parse_number("request.size", "0") == 0);
  CHECK(parse_number("request.warmup", "0") == 0);
  // max_memory: 0.001 to 1,048,576 GiB.
  CHECK(number_refusal_of_text("request.max_memory", "0") == "must be at least 0.001 GiB, got 0");
}

TEST_CASE("io::check_number holds numbers given as numbers to the same ranges", "[io]") {
  CHECK(number_refusal_of_value("request.days", NAN) == "must be a finite number, got nan");
  CHECK(number_refusal_of_value("request.days", INFINITY) == "must be a finite number, got inf");
  CHECK(number_refusal_of_value("request.days", -5) == "must be above 0 days, got -5");
  CHECK(number_refusal_of_value("request.cost_per_gpu_hour", -2.5) == "must be above 0 per GPU-hour, got -2.5");
  CHECK(number_refusal_of_value("request.global_batch", 0) == "must be at least 1 sequence, got 0");
  CHECK(number_refusal_of_value("request.global_batch", 2.5) == "expected a whole number, got 2.5");
  // 2^62 sequences: a MemoryError in Python before (issue 28).
  CHECK(number_refusal_of_value("request.global_batch", 4611686018427387904.0) ==
        "must be at most 65536 sequences, got 4.611686018427388e+18");
  CHECK(number_refusal_of_value("request.seq_len", 4096) == "accepted");
  CHECK(number_refusal_of_value("request.gpus", 1099511627776.0) == "must be at most 1048576 GPUs, got 1099511627776");
}

TEST_CASE("io::number_option of a field that is not in the table is a bug, not input", "[io]") {
  CHECK_THROWS_AS(number_option("request.nope"), std::logic_error);
}

namespace {

// The CLI's spelling of a field (cli_context.hpp flag_of), written again:
// "request.cost_per_gpu_hour" -> "--cost-per-gpu-hour".
std::string cli_flag(std::string_view field) {
  std::string flag = "--" + std::string(field.substr(std::string_view("request.").size()));
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

}  // namespace

TEST_CASE("docs/cli.md prints the numeric options table the parser uses", "[io]") {
  std::ifstream in(std::string(MOEPLAN_SOURCE_DIR) + "/docs/cli.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string begin = "<!-- number-options:begin -->\n", end = "<!-- number-options:end -->";
  const std::string doc = text.str();
  const std::size_t a = doc.find(begin), b = doc.find(end);
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  // On failure, paste the expected text between the markers.
  CHECK(doc.substr(a + begin.size(), b - a - begin.size()) == moeplan::io::number_options_markdown(&cli_flag));
}
