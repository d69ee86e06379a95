// A plan file read back (io/plan_reader.hpp) is input: a hand-edited one is
// refused at its field, in its file (issue 28: `report` printed nan and inf
// from one, and blamed --degree and --set for its knobs and overrides).

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/plan_reader.hpp>

namespace fs = std::filesystem;

namespace {

// A FlowMoE plan as `moeplan plan host-flowmoe-small -o` writes it, with
// `edit` replacing the line that starts with its key.
std::string plan_text(const std::string& key = "", const std::string& line = "") {
  std::string text =
      "# proto-message: Plan\n"
      "scenario: \"host-flowmoe-small\"\n"
      "schedule: \"flowmoe-ar\"\n"
      "iteration_ms: 1346.4439247052355\n"
      "baseline_ms: 1347.9274625194453\n"
      "speedup: 1.0011018192343468\n"
      "knobs {\n"
      "  degree: 1\n"
      "  ar_chunk_bytes: 1064960\n"
      "}\n"
      "scenario_ref: \"host-flowmoe-small\"\n"
      "family: \"flowmoe\"\n";
  if (key.empty()) return text;
  const std::size_t at = text.find(key + ":");
  REQUIRE(at != std::string::npos);
  return text.replace(at, text.find('\n', at) - at, line);
}

std::string plan_file_at(const std::string& text) {
  const fs::path p = fs::temp_directory_path() / fmt::format("moeplan-plan-{}.textproto", ::getpid());
  std::ofstream(p) << text;
  return p.string();
}

// "field: reason" of the refusal, checked to be located in the plan file.
std::string plan_refusal(const std::string& text, bool planned_scenario = false) {
  const std::string path = plan_file_at(text);
  try {
    if (planned_scenario)
      moeplan::io::load_planned_scenario(path);
    else
      moeplan::io::load_plan(path);
  } catch (const moeplan::Error& e) {
    CHECK(e.kind() == moeplan::ErrorKind::Input);
    CHECK(e.location().file == path);
    return e.field() + ": " + e.reason();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("io::load_plan reads the plan moeplan wrote", "[io]") {
  const moeplan::model::PlanSpec p = moeplan::io::load_plan(plan_file_at(plan_text()));
  CHECK(p.iteration_ms == 1346.4439247052355);
  CHECK(p.knobs.ar_chunk_bytes == 1064960);
}

TEST_CASE("io::load_plan refuses times and a speed-up that are not finite, positive and consistent", "[io]") {
  CHECK(plan_refusal(plan_text("iteration_ms", "iteration_ms: nan")) ==
        "iteration_ms: must be a finite time above 0 and at most 1e12 ms, got nan");
  CHECK(plan_refusal(plan_text("iteration_ms", "iteration_ms: inf")) ==
        "iteration_ms: must be a finite time above 0 and at most 1e12 ms, got inf");
  CHECK(plan_refusal(plan_text("iteration_ms", "iteration_ms: -3")) ==
        "iteration_ms: must be a finite time above 0 and at most 1e12 ms, got -3");
  CHECK(plan_refusal(plan_text("baseline_ms", "baseline_ms: inf")) ==
        "baseline_ms: must be a finite time above 0 and at most 1e12 ms, got inf");
  CHECK(plan_refusal(plan_text("speedup", "speedup: nan")) ==
        "speedup: nan is not baseline_ms / iteration_ms = 1.0011018192343468");
  // 1347.927... / 1346.443... = 1.00110...; a speed-up of 2 is not it.
  CHECK(plan_refusal(plan_text("speedup", "speedup: 2")) == "speedup: 2 is not baseline_ms / iteration_ms = 1.0011018192343468");
  CHECK(plan_refusal(plan_text("speedup", "")) == "speedup: missing: a plan names speedup so that simulate and execute can "
                                              "rebuild the run (a plan written before plans carried it does not: plan again)");
}

TEST_CASE("io::load_plan names the plan's knob, not a command-line option", "[io]") {
  // `report PLAN` said "--degree: must be positive" for this plan.
  CHECK(plan_refusal(plan_text("  degree", "  degree: 0")) == "knobs.degree: must be from 1 to 4096, got 0");
  CHECK(plan_refusal(plan_text("  ar_chunk_bytes", "  ar_chunk_bytes: -1")) ==
        "knobs.ar_chunk_bytes: must be from 1 to 9223372036854775807, got -1");
}

TEST_CASE("io::load_planned_scenario names a malformed scenario_overrides entry in the plan", "[io]") {
  // It said "--set: expects field.path=value", though no --set was given.
  CHECK(plan_refusal(plan_text() + "scenario_overrides: \"no-equals-sign\"\n", true) ==
        "scenario_overrides[0]: expects field.path=value, got 'no-equals-sign'");
}
