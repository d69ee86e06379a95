// A fifth family registered from this file alone (plan/family.hpp): with no
// other change to moeplan it is validated, loaded from a scenario file,
// planned, swept, explained and reported through the registry, as the four
// bundled families are. Its schedules are simple enough to time by hand.

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/model/validate.hpp>
#include <moeplan/output/plan_report.hpp>
#include <moeplan/output/sweep_csv.hpp>
#include <moeplan/plan/candidate_run.hpp>
#include <moeplan/plan/explain.hpp>
#include <moeplan/plan/family_registry.hpp>
#include <moeplan/plan/overlap_plan.hpp>
#include <moeplan/plan/planner.hpp>
#include <moeplan/plan/simulate.hpp>
#include <moeplan/plan/sweep.hpp>
#include <moeplan/report/html_report.hpp>
#include <moeplan/sched/schedule.hpp>

#include "../test_support.hpp"

using namespace moeplan;

namespace {

// The toy's schedules, per layer: a GEMM of 2 T d^2 FLOPs (T tokens of one
// micro-batch on a rank) then an AlltoAll of T d element bytes over the EP
// group. "none" runs them one after the other; "toy-overlap" at degree r cuts
// both into r chunks, chunk i's AlltoAll on its own stream after chunk i's
// GEMM, so that it runs beside GEMM i + 1; the next layer starts after the
// last AlltoAll. Durations from the cost model: compute by the gemm line,
// communication by the A2A line measured at the EP group's size (no moving).
class ToyRules final : public model::FamilyRules {
 public:
  const std::string& name() const override { return name_; }
  const std::vector<std::string>& schedules() const override { return schedules_; }
  const std::vector<std::string>& read_fields() const override { return reads_; }
  const std::vector<model::OptionRule>& option_rules() const override { return rules_; }
  void validate(const model::ScenarioSpec& s) const override {
    if (s.parallel.pp != 1) throw_input_error("parallelism.pp", "the toy runs one pipeline stage");
  }
  std::vector<model::KnobSetting> plan_knob_settings(const model::PlanSpec& plan) const override {
    std::vector<model::KnobSetting> out{{"schedule.name", plan.schedule, "schedule"}};
    if (plan.knobs.degree) out.push_back({"schedule.degree", std::to_string(*plan.knobs.degree), "knobs.degree"});
    return out;
  }

 private:
  std::string name_ = "toy";
  std::vector<std::string> schedules_{"none", "toy-overlap"};
  // The family-dependent fields it reads: its knobs, and the mapping fields a scenario writes.
  std::vector<std::string> reads_{"schedule.name", "schedule.degree", "parallelism.etp", "parallelism.sequence_parallel",
                                  "workload.global_batch_size"};
  std::vector<model::OptionRule> rules_;
};

const ToyRules& toy_rules() {
  static const ToyRules r;
  return r;
}

sched::BuiltSchedule build_toy(const model::ScenarioSpec& s, const cost::CostModel& costs, const std::string& schedule,
                               std::int64_t degree) {
  if (schedule != "none" && schedule != "toy-overlap")
    throw Error(ErrorKind::Input, fmt::format("no toy schedule {}", schedule), "request.schedule");
  const std::int64_t r = schedule == "none" ? 1 : degree;
  const double tokens = static_cast<double>(s.workload.micro_batch_size * s.workload.seq_len);
  const double d = static_cast<double>(s.model.d_model);
  const double gemm_ms = costs.compute(model::OpClass::Gemm, 2 * tokens * d * d / static_cast<double>(r)).value;
  const double a2a_ms = costs.predict(model::OpClass::A2A, model::LinkClass::Intra, s.parallel.ep,
                                      tokens * d * static_cast<double>(s.model.dtype_bytes) / static_cast<double>(r))
                            .value;
  dag::TaskGraphBuilder b;
  const dag::ResourceId compute = b.add_resource({"compute", 0});
  // none runs its AlltoAlls on the compute stream, in line; toy-overlap on a stream of their own.
  const dag::ResourceId comm = schedule == "none" ? compute : b.add_resource({"comm", 0});
  std::vector<dag::TaskId> previous;  // what the layer's first GEMM waits for
  for (std::int32_t layer = 0; layer < s.model.num_layers; ++layer) {
    std::vector<dag::TaskId> last_comm;
    for (std::int64_t i = 0; i < r; ++i) {
      sched::TaskLabels gemm{"gemm", dag::Phase::Forward, layer, static_cast<std::int32_t>(i)};
      const dag::TaskId g = sched::emit_task(b, gemm, dag::TaskKind::Compute, model::OpClass::Gemm, gemm_ms,
                                             {compute}, i == 0 ? previous : std::vector<dag::TaskId>{});
      sched::TaskLabels a2a{"a2a", dag::Phase::Forward, layer, static_cast<std::int32_t>(i)};
      a2a.group = s.parallel.ep;
      last_comm = {sched::emit_task(b, a2a, dag::TaskKind::Communication, model::OpClass::A2A, a2a_ms, {comm}, {g})};
    }
    previous = last_comm;
  }
  sched::BuiltSchedule out;
  out.graph = std::move(b).build();
  out.schedule = schedule;
  out.degree = r;
  return out;
}

class ToyMaker final : public plan::ScheduleMaker {
 public:
  ToyMaker(const model::ScenarioSpec& s, const cost::CostModel& costs) : s_(s), costs_(costs) {}
  sched::BuiltSchedule build(const std::string& schedule, std::optional<std::int64_t> degree) const override {
    return build_toy(s_, costs_, schedule, degree.value_or(s_.schedule.degree.value_or(1)));
  }

 private:
  const model::ScenarioSpec& s_;
  const cost::CostModel& costs_;
};

// Its search: every schedule at degrees 1..4 (none at 1), the best of each.
struct ToySearch {
  std::vector<plan::Evaluation> best;
};

class ToyRecord final : public plan::SearchRecord {
 public:
  explicit ToyRecord(ToySearch s) : s_(std::move(s)) {}
  void write_json(io::Json& doc, const plan::PlanResult& r) const override {
    doc.set("toy_degree", *r.chosen.knobs.degree);
  }
  std::string text(const plan::PlanResult& r) const override {
    return fmt::format("toy plan for {}: {} at degree {}\n", r.scenario, r.chosen.schedule, *r.chosen.knobs.degree);
  }
  std::vector<const plan::Evaluation*> evaluations() const override {
    std::vector<const plan::Evaluation*> out;
    for (const plan::Evaluation& e : s_.best) out.push_back(&e);
    return out;
  }
  plan::SearchPicture picture(const model::ScenarioSpec&, const plan::PlanResult&,
                              const plan::Candidate& chosen) const override {
    plan::SearchPicture p;
    p.bars = plan::evaluation_bars(*this, chosen.schedule);
    return p;
  }
  std::string emit_format() const override { return "knobs"; }
  std::string emit(const plan::PlanResult& r, const model::ScenarioSpec&) const override {
    return plan::knobs_emit_header(r) + fmt::format("toy_degree={}\n", *r.chosen.knobs.degree);
  }

 private:
  ToySearch s_;
};

ToySearch search_toy(const model::ScenarioSpec& s, const cost::CostModel& costs,
                     const std::vector<std::string>& schedules) {
  ToySearch out;
  for (const std::string& name : schedules) {
    plan::Evaluation best;
    for (std::int64_t d = 1; d <= (name == "none" ? 1 : 4); ++d) {
      const plan::Evaluation e = plan::evaluate(build_toy(s, costs, name, d));
      if (d == 1 || e.iteration_ms < best.iteration_ms) best = e;
    }
    out.best.push_back(best);
  }
  return out;
}

class ToyFamily final : public plan::Family {
 public:
  const model::FamilyRules& rules() const override { return toy_rules(); }
  std::unique_ptr<plan::ScheduleMaker> schedule_maker(const model::ScenarioSpec& s,
                                                      const cost::CostModel& costs) const override {
    return std::make_unique<ToyMaker>(s, costs);
  }
  plan::PlanResult plan(const plan::ScenarioRun& run, const plan::PlanRequest& request) const override {
    plan::PlanResult r = plan::plan_result_for(run);
    const std::vector<std::string> names = run.runnable_schedules(request.schedule, &r.notes);
    ToySearch search = search_toy(run.spec(), run.costs(), names);
    for (const plan::Evaluation& e : search.best) {
      model::PlanKnobs knobs;
      knobs.degree = e.degree;
      r.candidates.push_back(plan::schedule_candidate(run, e, knobs));
      if (e.schedule == "none") r.baselines.push_back({"none", e.iteration_ms});
    }
    plan::rank_candidates(r.candidates);
    r.chosen = r.candidates.front();
    r.search = std::make_shared<ToyRecord>(std::move(search));
    return r;
  }
  std::vector<plan::PointResult> sweep_point(const model::ScenarioSpec& s, const cost::CostModel& costs,
                                             const std::vector<std::string>& schedules, unsigned) const override {
    std::vector<plan::PointResult> out;
    for (const plan::Evaluation& e : search_toy(s, costs, schedules).best) {
      model::PlanKnobs knobs;
      knobs.degree = e.degree;
      out.push_back({e, knobs});
    }
    return out;
  }
  plan::CandidateRun run_candidate(const plan::ScenarioRun& run, const plan::PlanResult&,
                                   const plan::Candidate& c) const override {
    model::ScheduleSpec fields = run.spec().schedule;
    fields.name = c.schedule;
    return plan::run_on_scenario(run, fields, c.schedule, c.knobs.degree);
  }
  std::optional<plan::BaselineRun> run_baseline(const plan::ScenarioRun& run,
                                                const plan::PlanResult& result) const override {
    plan::Candidate none;
    none.schedule = "none";
    none.knobs.degree = 1;
    return plan::BaselineRun{run_candidate(run, result, none), none.knobs};
  }
  std::string emit_format() const override { return "knobs"; }
};

const plan::Family& toy() {
  static const ToyFamily f;
  plan::register_family(f);  // once per process; registering it again is harmless
  return f;
}

// The bundled gpt-moe-s on one node of 2 GPUs, ep 2; one sequence of 256
// tokens per rank. The gemm line: 1e-9 ms per FLOP, no startup; the A2A line
// on 2 ranks: 0.01 ms + 1e-6 ms per byte.
constexpr const char* kProfile = R"(
name: "toy-profile"
cluster: "toy-cluster"
costs { op: GEMM link: LOCAL group: 1 alpha_ms: 0 beta_ms: 1e-9 provenance: PAPER source: "toy" }
costs { op: A2A link: INTRA group: 2 alpha_ms: 0.01 beta_ms: 1e-6 provenance: PAPER source: "toy" }
)";
constexpr const char* kCluster = R"(
name: "toy-cluster"
num_nodes: 1
gpus_per_node: 2
gpu { name: "toy-gpu" peak_tflops_bf16: 1000 memory_gib: 80 }
intra_link { name: "nvlink" bandwidth_gbit_s: 1000 }
inter_link { name: "ib" bandwidth_gbit_s: 100 }
)";
constexpr const char* kScenario = R"(
name: "toy-scenario"
model_ref: "gpt-moe-s"
cluster_ref: "toy-cluster.textproto"
profile_ref: "toy-profile.textproto"
parallelism { dp: 2 ep: 2 etp: 1 }
workload { seq_len: 256 micro_batch_size: 1 global_batch_size: 2 }
schedule { family: "toy" name: "toy-overlap" }
)";

// The scenario files in a fresh folder (the model is the bundled gpt-moe-s:
// 6 blocks of d = 512).
std::string write_toy_files() {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "moeplan-toy-family";
  std::filesystem::create_directories(dir);
  for (const auto& [file, text] : {std::pair{"toy-profile.textproto", kProfile}, {"toy-cluster.textproto", kCluster},
                                   {"toy-scenario.textproto", kScenario}})
    std::ofstream(dir / file) << "# proto-message: " << (std::string(file).find("profile") != std::string::npos ? "CostProfile"
                                                         : std::string(file).find("cluster") != std::string::npos ? "Cluster"
                                                                                                                  : "Scenario")
                              << '\n'
                              << text;
  return (dir / "toy-scenario.textproto").string();
}

// By hand, per layer (T = 256 tokens, d = 512, 2-byte elements): the GEMM is
// 2 T d^2 = 134,217,728 FLOPs x 1e-9 = 0.134217728 ms; the AlltoAll moves
// T d 2 = 262,144 B: 0.01 + 0.262144 = 0.272144 ms. At degree r each chunk is
// g = 0.134217728 / r and a = 0.01 + 0.262144 / r; the AlltoAlls are longer
// than the GEMMs, so they run back to back after the first GEMM: a layer is
// g + r a = 0.134217728 / r + 0.01 r + 0.262144. Six layers:
//   r = 1: 6 x 0.406361728 = 2.438170368   (none's time too)
//   r = 2: 6 x (0.067108864 + 0.02 + 0.262144) = 2.095517184
//   r = 3: 6 x (0.044739243 + 0.03 + 0.262144) = 2.020099456
//   r = 4: 6 x (0.033554432 + 0.04 + 0.262144) = 2.013592192
double toy_layer_ms(int r) { return 0.134217728 / r + 0.01 * r + 0.262144; }

}  // namespace

TEST_CASE("a fifth family registered from a test file is planned, swept and reported through the registry",
          "[family][registry]") {
  const plan::Family& family = toy();
  REQUIRE(&plan::family_named("toy") == &family);
  const std::string path = write_toy_files();
  const model::ScenarioSpec spec = io::load_scenario(path);  // validated as a toy scenario
  REQUIRE(spec.schedule.family == "toy");
  REQUIRE(spec.model.num_layers == 6);
  REQUIRE(spec.model.d_model == 512);
  const plan::ScenarioRun run(spec);

  SECTION("simulate runs its named schedule") {
    plan::SimulateRequest request;
    request.schedule = "all";
    const plan::Simulation sim = plan::simulate(run, request);
    REQUIRE(sim.schedules.size() == 2);
    CHECK(sim.schedules[0].evaluation.iteration_ms == Approx(6 * toy_layer_ms(1)).epsilon(1e-12));
    // The scenario gives no degree: 1.
    CHECK(sim.schedules[1].evaluation.iteration_ms == Approx(6 * toy_layer_ms(1)).epsilon(1e-12));
  }

  SECTION("plan picks the degree of the shortest layer; the plan reporters and --emit take its record") {
    const plan::PlanResult r = plan::plan_scenario(run, {});
    CHECK(r.family == "toy");
    CHECK(r.chosen.schedule == "toy-overlap");
    CHECK(*r.chosen.knobs.degree == 4);
    CHECK(r.chosen.iteration_ms == Approx(6 * toy_layer_ms(4)).epsilon(1e-12));
    REQUIRE(r.baseline("none") != nullptr);
    CHECK(r.baseline("none")->iteration_ms == Approx(6 * toy_layer_ms(1)).epsilon(1e-12));
    const plan::Explanation why = plan::explain(run, r);
    CHECK(why.savings_baseline == "none");  // the default record answers savings from its evaluations
    const io::Json doc = output::plan_to_json(r, &why);
    CHECK(doc.find("toy_degree")->as_number() == 4);
    CHECK(doc.find("family")->as_string() == "toy");
    CHECK_THAT(output::plan_to_text(r, &why), Catch::StartsWith("toy plan for toy-scenario: toy-overlap at degree 4"));
    CHECK(plan::emit_plan(r, run.spec(), "knobs").find("toy_degree=4\n") != std::string::npos);
    CHECK_THROWS_WITH(plan::emit_plan(r, run.spec(), "megatron"), Catch::Contains("is a toy scenario"));

    // The report's page: the chosen and baseline runs again, the record's bars.
    const plan::PlanRuns runs = plan::run_plan_again(run, r);
    CHECK(runs.chosen_run.timeline.makespan_ms == Approx(6 * toy_layer_ms(4)).epsilon(1e-12));
    const io::Json page = report::plan_report_data(run.spec(), r, why, runs, {path});
    CHECK(page.find("bars")->as_array().size() == 2);
    CHECK(report::html_page(page, "toy").find("toy-overlap") != std::string::npos);
  }

  SECTION("a sweep point evaluates its schedules at their best degrees") {
    const std::vector<plan::PointResult> point = plan::evaluate_point(run.spec(), run.costs(), {});
    REQUIRE(point.size() == 2);
    CHECK(point[1].evaluation.degree == 4);
    CHECK(point[1].knobs.degree == 4);
    CHECK(point[1].evaluation.iteration_ms == Approx(6 * toy_layer_ms(4)).epsilon(1e-12));
  }

  SECTION("options another family reads are refused on it, naming who reads them") {
    try {
      io::load_scenario(path, {io::Override{"schedule.slicing", "128,128"}});
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.field() == "schedule.slicing");
      // Only FoldMoE reads slicing: the refusal says so, though no rule of the toy names it.
      CHECK_THAT(e.reason(), Catch::Contains("cannot act on this toy scenario: only the foldmoe family reads it"));
    }
    // Pipelines: only folding maps them; the toy has no rule for pp and is told who reads it.
    const auto [field, reason] = testing::error_of([&] {
      io::load_scenario(path, {io::Override{"parallelism.pp", "2"}, io::Override{"parallelism.dp", "1"},
                               io::Override{"parallelism.ep", "1"}});
    });
    CHECK(field == "parallelism.pp");
    CHECK_THAT(reason, Catch::Contains("only the folding family reads it"));
  }
}
