// Reading a sweep's CSV back for `moeplan report` (issue 18 item 2).

#include <catch2/catch.hpp>

#include <moeplan/core/error.hpp>
#include <moeplan/output/sweep_csv.hpp>

using namespace moeplan;

namespace {

// The error parse_sweep_csv throws for text, as the CLI prints it.
std::string error_of(const std::string& text) {
  try {
    output::parse_sweep_csv("s.csv", text);
  } catch (const Error& e) {
    return format_error(e);
  }
  return "no error";
}

const std::string kHeader =
    "point,scenario,model.d_model,axis1,schedule,degree,iteration_ms,compute_ms,exposed_comm_ms,speedup_vs_none,"
    "speedup_vs_tutel\n";

}  // namespace

TEST_CASE("output::parse_sweep_csv reads the axes between scenario and schedule, quoted cells and empty numbers", "[io]") {
  const output::SweepTable t = output::parse_sweep_csv(
      "s.csv", kHeader + "0,base,1024,\"a=1;b=2\",none,1,10.5,4,6,1,\n"
                         "\r\n"
                         "1,\"odd, \"\"name\"\"\",4096,\"two\nlines\",fsmoe,2,8,4,3,1.3125,1.25\r\n");
  CHECK(t.axes == std::vector<std::string>{"model.d_model", "axis1"});
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0].point == 0);
  CHECK(t.rows[0].axis_values == std::vector<std::string>{"1024", "a=1;b=2"});
  CHECK(t.rows[0].iteration_ms == 10.5);
  CHECK_FALSE(t.rows[0].speedup_vs_tutel.has_value());  // an empty cell: no baseline
  CHECK(t.rows[1].scenario == "odd, \"name\"");
  CHECK(t.rows[1].axis_values[1] == "two\nlines");
  CHECK(t.rows[1].schedule == "fsmoe");
  CHECK(t.rows[1].speedup_vs_none == 1.3125);
}

TEST_CASE("output::parse_sweep_csv names the file, line, column and field of what is wrong", "[io]") {
  CHECK(error_of("") == "s.csv:1:1: no header line: not a sweep CSV (moeplan sweep SWEEP -o F.csv writes one)");
  CHECK(error_of("point,scenario,schedule,speedup_vs_none,speedup_vs_tutel\n0,a,none,1,1\n")
            .rfind("s.csv:1:1: header: the header has no column 'iteration_ms'", 0) == 0);
  CHECK(error_of("point,schedule,scenario,iteration_ms,speedup_vs_none,speedup_vs_tutel\n0,none,a,1,1,1\n") ==
        "s.csv:1:1: header: the axis columns lie between 'scenario' and 'schedule', which comes first here");
  CHECK(error_of(kHeader) == "s.csv:1:1: no rows after the header: the sweep wrote no point");
  // Line 3, the iteration_ms cell starts at column 22 ("1,base,1024,x,none,1," is 21 characters).
  CHECK(error_of(kHeader + "0,base,1024,x,none,1,5,1,1,1,1\n1,base,1024,x,none,1,abc,1,1,1,1\n") ==
        "s.csv:3:22: iteration_ms: expected a finite number, got 'abc'");
  CHECK(error_of(kHeader + "0,base,1024,x,none,1,0x10,1,1,1,1\n") ==
        "s.csv:2:22: iteration_ms: expected a decimal number, got '0x10'");
  CHECK(error_of(kHeader + "0,base,1024,x,none,1,5\n") == "s.csv:2:1: expected 11 comma-separated cells (the header's), got 7");
  CHECK(error_of(kHeader + "-1,base,1024,x,none,1,5,1,1,1,1\n") == "s.csv:2:1: point: expected a whole number >= 0, got '-1'");
  CHECK(error_of(kHeader + "0,base,1024,x,,1,5,1,1,1,1\n") == "s.csv:2:15: schedule: empty: every row names its schedule");
  CHECK(error_of(kHeader + "0,\"base,1024\n") == "s.csv:2:3: a quoted cell is not closed before the end of the file");
}

TEST_CASE("output::parse_sweep_csv refuses a cell that is not UTF-8, naming its line, column and field", "[io]") {
  // The report writes cells into its page as JSON, where 0xff became U+FFFD unseen.
  // Line 2: the scenario cell starts at column 3 ("0," is 2 bytes); 0xff is its 3rd byte (offset 2).
  CHECK(error_of(kHeader + "0,ba\xff"
                           "se,1024,x,none,1,5,1,1,1,1\n") ==
        "s.csv:2:3: scenario: not valid UTF-8 (byte 0xff at offset 2)");
  // An axis cell, quoted, on line 3: "1,base,1024," is 12 bytes, so column 13; the
  // truncated sequence E2 82 starts at offset 1 (the opening quote is not in the cell).
  CHECK(error_of(kHeader + "0,base,1024,x,none,1,5,1,1,1,1\n1,base,1024,\"a\xe2\x82\",none,1,5,1,1,1,1\n") ==
        "s.csv:3:13: axis1: not valid UTF-8 (byte 0xe2 at offset 1)");
  // The header's own cells: field "header"; "point,scenario," is 15 bytes, so column 16.
  CHECK(
      error_of("point,scenario,\xc0\xaf,schedule,iteration_ms,speedup_vs_none,speedup_vs_tutel\n0,a,b,none,1,1,1\n") ==
      "s.csv:1:16: header: not valid UTF-8 (byte 0xc0 at offset 0)");
  // Well-formed multi-byte text is kept: an axis value of U+00E9 (C3 A9).
  CHECK(
      output::parse_sweep_csv("s.csv", kHeader + "0,base,1024,caf\xc3\xa9,none,1,5,1,1,1,1\n").rows[0].axis_values[1] ==
      "caf\xc3\xa9");
}
