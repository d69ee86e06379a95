// moeplan report's library side (issue 18 item 2): the page wraps its data so
// that nothing in it can run or fetch, the iteration splits add up, timelines
// keep every drawn task, and a plan's page draws the runs the plan chose.

#include <catch2/catch.hpp>

#include <moeplan/io/loader.hpp>
#include <moeplan/plan/candidate_run.hpp>
#include <moeplan/plan/explain.hpp>
#include <moeplan/plan/planner.hpp>
#include <moeplan/report/html_report.hpp>
#include <moeplan/sim/engine.hpp>

using namespace moeplan;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The JSON between the data element's tags.
io::Json embedded_data(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"moeplan-data\">";
  const std::size_t from = page.find(open);
  REQUIRE(from != std::string::npos);
  const std::size_t begin = from + open.size();
  return io::Json::parse(page.substr(begin, page.find("</script>", begin) - begin));
}

std::vector<double> numbers(const io::Json& array) {
  std::vector<double> out;
  for (const io::Json& v : array.as_array()) out.push_back(v.as_number());
  return out;
}

dag::TaskId add(dag::TaskGraphBuilder& b, const char* name, dag::ResourceId r, double ms, model::OpClass op,
                dag::Phase phase, std::vector<dag::TaskId> after = {}) {
  dag::TaskSpec spec;
  spec.name = name;
  spec.duration_ms = ms;
  spec.op = op;
  spec.phase = phase;
  spec.resources = {r};
  const dag::TaskId id = b.add_task(spec);
  for (dag::TaskId a : after) b.add_dependency(a, id);
  return id;
}

}  // namespace

TEST_CASE("report::html_page embeds its data so that no text in it ends the script, and names no URL", "[report]") {
  io::Json data = io::Json::object();
  const std::string hostile = "</script><script>alert(1)</script><!-- & \"quotes\"";
  data.set("title", hostile);
  data.set("kind", "plan");
  const std::string page = report::html_page(data, hostile);
  // The data element's and the script's own closing tags, and no third one from the data.
  CHECK(count(page, "</script>") == 2);
  CHECK(page.find("<script>alert") == std::string::npos);
  // The data reads back as it was written (\u003c is '<').
  CHECK(embedded_data(page).find("title")->as_string() == hostile);
  // The title is escaped text.
  CHECK(page.find("<title>&lt;/script&gt;&lt;script&gt;alert(1)") != std::string::npos);
  // Self-contained: no address to fetch, and a policy that forbids fetching.
  CHECK(page.find("http://") == std::string::npos);
  CHECK(page.find("https://") == std::string::npos);
  CHECK(page.find("default-src 'none'") != std::string::npos);
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
}

TEST_CASE("report::split_of divides an iteration into compute, exposed communication and idle", "[report]") {
  SECTION("10 ms with 6 ms compute and 3 ms exposed leaves 1 ms idle") {
    const report::IterationSplit s = report::split_of(plan::SearchBar{"1a1m (d 4)", 10, 6, 3, "chosen"});
    CHECK(s.name == "1a1m (d 4)");
    CHECK(s.compute_ms == 6);
    CHECK(s.exposed_comm_ms == 3);
    CHECK(s.idle_ms == 1);
  }
  SECTION("a split that exceeds its iteration is an internal error, never drawn") {
    CHECK_THROWS_AS(report::split_of(plan::SearchBar{"x", 10, 8, 3, ""}), Error);
  }
}

TEST_CASE("report::timeline_to_json keeps the drawn ranks' tasks, six numbers each", "[report]") {
  // rank 0: A (compute, forward) 0-2, then X (comm, forward) 2-5; rank 1: B (compute, backward) 5-6 after X.
  dag::TaskGraphBuilder b;
  const dag::ResourceId c0 = b.add_resource({"compute", 0, dag::DispatchPolicy::InOrder});
  const dag::ResourceId m0 = b.add_resource({"comm", 0, dag::DispatchPolicy::InOrder});
  const dag::ResourceId c1 = b.add_resource({"compute", 1, dag::DispatchPolicy::InOrder});
  const dag::TaskId a = add(b, "A", c0, 2, model::OpClass::Attention, dag::Phase::Forward);
  const dag::TaskId x = add(b, "X", m0, 3, model::OpClass::A2A, dag::Phase::Forward, {a});
  add(b, "B", c1, 1, model::OpClass::Gemm, dag::Phase::Backward, {x});
  const dag::TaskGraph g = std::move(b).build();
  const sim::Timeline tl = sim::simulate(g);
  SECTION("rank 1 alone: one lane, task B at 5-6 ms, gemm (op 0), backward (2), name 0; no forward drawn: no divider") {
    const io::Json j = report::timeline_to_json(g, tl, {1});
    CHECK(j.find("lanes")->as_array().size() == 1);
    CHECK(numbers(*j.find("tasks")) == std::vector<double>{0, 5, 6, 0, 2, 0});
    CHECK(j.find("names")->as_array().front().as_string() == "B");
    CHECK(j.find("divider_ms")->is_null());
    CHECK(j.find("ranks_total")->as_number() == 2);
    CHECK(j.find("iteration_ms")->as_number() == 6);
  }
  SECTION("both ranks: three lanes in resource order, forward ends at 5 where backward starts") {
    const io::Json j = report::timeline_to_json(g, tl, {0, 1});
    CHECK(j.find("lanes")->as_array().size() == 3);
    CHECK(numbers(*j.find("tasks")) ==
          std::vector<double>{0, 0, 2, 1, 1, 0, /* X */ 1, 2, 5, 2, 1, 1, /* B */ 2, 5, 6, 0, 2, 2});
    CHECK(j.find("divider_ms")->as_number() == 5);
    std::vector<std::string> ops;
    for (const io::Json& op : j.find("ops")->as_array()) ops.push_back(op.as_string());
    CHECK(ops == std::vector<std::string>{"gemm", "attention", "a2a"});
  }
}

TEST_CASE("report::report_ranks draws every rank up to 8, else ranks 0-7 and the critical one", "[report]") {
  // Ten ranks, one task each; rank 9's is the longest, so rank 9 ends last.
  dag::TaskGraphBuilder b;
  for (std::int32_t r = 0; r < 10; ++r) {
    const dag::ResourceId res = b.add_resource({"compute", r, dag::DispatchPolicy::InOrder});
    add(b, "t", res, r == 9 ? 5.0 : 1.0, model::OpClass::Gemm, dag::Phase::Forward);
  }
  const dag::TaskGraph g = std::move(b).build();
  CHECK(report::report_ranks(g, sim::simulate(g)) == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 9});
}

TEST_CASE("report::sweep_report_data indexes a sweep's rows by first-seen values", "[report]") {
  output::SweepTable t;
  t.path = "s.csv";
  t.axes = {"model.d_model"};
  t.rows = {{0, "a", {"1024"}, "none", 10.0, {}, {}, 1.0, std::nullopt},
            {0, "a", {"1024"}, "fsmoe", 8.0, {}, {}, 1.25, std::nullopt},
            {1, "b", {"4096"}, "none", 20.0, {}, {}, 1.0, std::nullopt},
            {1, "b", {"4096"}, "fsmoe", 16.0, {}, {}, 1.25, std::nullopt}};
  const io::Json d = report::sweep_report_data(t, "dir/s.csv");
  const io::Json& s = *d.find("sweep");
  CHECK(s.find("points")->as_number() == 2);
  CHECK(s.find("schedules")->as_array().size() == 2);
  const io::Json& rows = *s.find("rows");
  CHECK(numbers(*rows.find("schedule")) == std::vector<double>{0, 1, 0, 1});
  CHECK(numbers(*rows.find("scenario")) == std::vector<double>{0, 0, 1, 1});
  CHECK(numbers(rows.find("axes")->as_array().front()) == std::vector<double>{0, 0, 1, 1});
  CHECK(rows.find("speedup_vs_tutel")->as_array().front().is_null());
  CHECK(d.find("title")->as_string() == "moeplan report: sweep s.csv");
}

TEST_CASE("report::plan_report_data draws the plan's chosen run and its baseline", "[report]") {
  const plan::ScenarioRun run(io::load_scenario("foldmoe-gpt-moe-s-4k"));
  const plan::PlanResult r = plan::plan_scenario(run, {"all", 1});
  const io::Json d =
      report::plan_report_data(run.spec(), r, plan::explain(run, r), plan::run_plan_again(run, r), {"foldmoe-gpt-moe-s-4k"});
  const io::Json::Array& timelines = d.find("timelines")->as_array();
  REQUIRE(timelines.size() == 2);
  // The timelines end at the planner's own figures for the chosen schedule and for none.
  CHECK(timelines[0].find("iteration_ms")->as_number() == r.chosen.iteration_ms);
  CHECK(timelines[0].find("schedule")->as_string() == r.chosen.schedule);
  CHECK(timelines[1].find("iteration_ms")->as_number() == r.baseline("none")->iteration_ms);
  // Symmetric runs hold every task on one resource: six numbers per task of the graph.
  const sched::BuiltSchedule none = run.build("none", 1);
  CHECK(timelines[1].find("tasks")->as_array().size() == 6 * none.graph.size());
  // One bar per schedule the search evaluated, each adding up to its iteration; the chosen one marked.
  const io::Json::Array& bars = d.find("bars")->as_array();
  CHECK(bars.size() == r.search->evaluations().size());
  CHECK(bars.size() == 5);  // FoldMoE's five schedules
  std::size_t chosen = 0;
  for (const io::Json& bar : bars) {
    const double sum = bar.find("compute_ms")->as_number() + bar.find("exposed_comm_ms")->as_number() +
                       bar.find("idle_ms")->as_number();
    CHECK(sum == Approx(bar.find("iteration_ms")->as_number()).epsilon(1e-12));
    if (bar.find("role")->as_string() == "chosen") {
      ++chosen;
      CHECK(bar.find("iteration_ms")->as_number() == r.chosen.iteration_ms);
    }
  }
  CHECK(chosen == 1);
  CHECK(d.find("plan")->find("iteration_ms")->as_number() == r.chosen.iteration_ms);
}
