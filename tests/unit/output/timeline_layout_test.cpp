// The SVG Gantt chart's title, axis, phase divider, legend and stage lanes
// (issue 18 item 3), on graphs small enough to check by hand.

#include <catch2/catch.hpp>


#include <moeplan/output/timeline_layout.hpp>
#include <moeplan/output/timeline_writer.hpp>
#include <moeplan/sim/engine.hpp>

using namespace moeplan;

namespace {

std::vector<double> values(const std::vector<output::AxisTick>& ticks) {
  std::vector<double> out;
  for (const output::AxisTick& t : ticks) out.push_back(t.value);
  return out;
}

std::vector<std::string> labels(const std::vector<output::AxisTick>& ticks) {
  std::vector<std::string> out;
  for (const output::AxisTick& t : ticks) out.push_back(t.label);
  return out;
}

// For every occurrence of `prefix`: the element text after it (from the next
// '>' to the next '<'), or with `quoted`, the rest of an attribute value (up to '"').
// (std::regex trips GCC 12's -Wmaybe-uninitialized under the sanitizers.)
std::vector<std::string> all(const std::string& text, const std::string& prefix, bool quoted = false) {
  std::vector<std::string> out;
  for (std::size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    std::size_t begin = at + prefix.size();
    if (!quoted) begin = text.find('>', begin) + 1;
    out.push_back(text.substr(begin, text.find(quoted ? '"' : '<', begin) - begin));
  }
  return out;
}

struct Task {
  const char* name;
  dag::ResourceId resource;
  double ms;
  model::OpClass op;
  dag::Phase phase;
};

// A chain of tasks in the order given (each after the previous one).
dag::TaskGraph chain(dag::TaskGraphBuilder& b, const std::vector<Task>& tasks) {
  std::optional<dag::TaskId> previous;
  for (const Task& t : tasks) {
    dag::TaskSpec spec;
    spec.name = t.name;
    spec.duration_ms = t.ms;
    spec.op = t.op;
    spec.kind = t.op == model::OpClass::Gemm || t.op == model::OpClass::Attention ? dag::TaskKind::Compute
                                                                                  : dag::TaskKind::Communication;
    spec.phase = t.phase;
    spec.resources = {t.resource};
    const dag::TaskId id = b.add_task(spec);
    if (previous) b.add_dependency(*previous, id);
    previous = id;
  }
  return std::move(b).build();
}

}  // namespace

TEST_CASE("output::axis_ticks steps by 1, 2 or 5 times a power of ten", "[io]") {
  SECTION("0..1234 ms with at most 8 intervals: 1234 / 8 = 154.25 rounds up to a step of 200") {
    const auto ticks = output::axis_ticks(0, 1234, 8);
    CHECK(values(ticks) == std::vector<double>{0, 200, 400, 600, 800, 1000, 1200});
    CHECK(labels(ticks) == std::vector<std::string>{"0", "200", "400", "600", "800", "1000", "1200"});
    CHECK(output::axis_tick_step(0, 1234, 8) == 200);
  }
  SECTION("0..1: 1 / 8 = 0.125 rounds up to 0.2; labels with the step's one decimal") {
    CHECK(labels(output::axis_ticks(0, 1, 8)) == std::vector<std::string>{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"});
  }
  SECTION("0..35.5: 4.44 rounds up to 5; the last tick (35) is inside the range") {
    CHECK(values(output::axis_ticks(0, 35.5, 8)) == std::vector<double>{0, 5, 10, 15, 20, 25, 30, 35});
  }
  SECTION("0..0.07: 0.00875 is above 5 x 0.001, so the step is the next power of ten, 0.01") {
    CHECK(labels(output::axis_ticks(0, 0.07, 8)) ==
          std::vector<std::string>{"0.00", "0.01", "0.02", "0.03", "0.04", "0.05", "0.06", "0.07"});
  }
  SECTION("3..17 with 5 intervals: 14 / 5 = 2.8 rounds up to 5; ticks are whole multiples of it") {
    CHECK(values(output::axis_ticks(3, 17, 5)) == std::vector<double>{5, 10, 15});
  }
  SECTION("an empty range is widened to one unit: 2..3 at 0.2") {
    CHECK(labels(output::axis_ticks(2, 2, 8)) == std::vector<std::string>{"2.0", "2.2", "2.4", "2.6", "2.8", "3.0"});
  }
}

TEST_CASE("output::SvgGanttWriter titles the chart, marks round ms ticks, the phase divider and the ops present",
          "[io]") {
  // compute: attention fwd 0-2, gemm bwd 5-9; comm: a2a fwd 2-5 (a chain). Forward ends at 5 ms,
  // when the first backward task starts: the divider is at 5. No allgather, allreduce, p2p, ...
  dag::TaskGraphBuilder b;
  const dag::ResourceId compute = b.add_resource({"compute", 0, dag::DispatchPolicy::InOrder});
  const dag::ResourceId comm = b.add_resource({"comm", 0, dag::DispatchPolicy::InOrder});
  const dag::TaskGraph g = chain(b, {{"attn", compute, 2, model::OpClass::Attention, dag::Phase::Forward},
                                     {"dispatch", comm, 3, model::OpClass::A2A, dag::Phase::Forward},
                                     {"experts bwd", compute, 4, model::OpClass::Gemm, dag::Phase::Backward}});
  const sim::Timeline tl = sim::simulate(g);
  REQUIRE(tl.makespan_ms == 9);
  CHECK(output::phase_divider_ms(g, tl) == 5.0);
  CHECK(output::ops_present(g) ==
        std::vector<model::OpClass>{model::OpClass::Gemm, model::OpClass::Attention, model::OpClass::A2A});
  const std::string svg = output::SvgGanttWriter().with_caption("s", "1a1m").write(g, tl);
  CHECK(all(svg, "class=\"title\"") == std::vector<std::string>{"s \u00b7 1a1m \u00b7 iteration 9.000 ms"});
  // 9 ms over at most 10 intervals: 0.9 rounds up to a step of 1 ms.
  CHECK(all(svg, "class=\"tick-label\"") ==
        std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"});
  CHECK(all(svg, "class=\"phase-divider\" data-ms=\"", true) == std::vector<std::string>{"5"});
  // The legend: the three classes drawn, in OpClass order, and nothing else.
  CHECK(all(svg, "class=\"legend-item\" data-op=\"", true) == std::vector<std::string>{"gemm", "attention", "a2a"});
  CHECK(svg.find("data-phase=\"backward\"") == std::string::npos);  // phases apart: no lighter shade
}

TEST_CASE("output::SvgGanttWriter lists only the drawn ranks' ops and shades interleaved backward tasks", "[io]") {
  // Rank 0 computes forward 0-1, backward 1-3, forward again 3-4 (interleaved, as a 1F1B stage);
  // rank 1 only sends (p2p). Drawing rank 0 alone: no p2p in the legend, no divider, lighter backward.
  dag::TaskGraphBuilder b;
  const dag::ResourceId r0 = b.add_resource({"compute", 0, dag::DispatchPolicy::InOrder});
  const dag::ResourceId r1 = b.add_resource({"p2p", 1, dag::DispatchPolicy::InOrder});
  const dag::TaskGraph g = chain(b, {{"F0", r0, 1, model::OpClass::Gemm, dag::Phase::Forward},
                                     {"B0", r0, 2, model::OpClass::Gemm, dag::Phase::Backward},
                                     {"F1", r0, 1, model::OpClass::Gemm, dag::Phase::Forward},
                                     {"send", r1, 1, model::OpClass::P2P, dag::Phase::Forward}});
  const sim::Timeline tl = sim::simulate(g);
  CHECK_FALSE(output::phase_divider_ms(g, tl).has_value());
  const std::string rank0 = output::SvgGanttWriter({0}).write(g, tl);
  CHECK(all(rank0, "class=\"legend-item\" data-op=\"", true) == std::vector<std::string>{"gemm"});
  CHECK(rank0.find("data-phase=\"backward\"") != std::string::npos);
  CHECK(rank0.find("phase-divider") == std::string::npos);
  CHECK(all(output::SvgGanttWriter().write(g, tl), "class=\"legend-item\" data-op=\"", true) ==
        std::vector<std::string>{"gemm", "p2p"});
}

TEST_CASE("output::SvgGanttWriter draws one lane per pipeline stage with stage lanes", "[io]") {
  // Two stages, each with a compute and a p2p stream: four resource lanes, or two stage lanes.
  dag::TaskGraphBuilder b;
  const dag::ResourceId c0 = b.add_resource({"compute", 0, dag::DispatchPolicy::InOrder});
  const dag::ResourceId p0 = b.add_resource({"p2p", 0, dag::DispatchPolicy::InOrder});
  const dag::ResourceId c1 = b.add_resource({"compute", 1, dag::DispatchPolicy::InOrder});
  b.add_resource({"p2p", 1, dag::DispatchPolicy::InOrder});
  const dag::TaskGraph g = chain(b, {{"F c0 mb0", c0, 1, model::OpClass::Gemm, dag::Phase::Forward},
                                     {"act send", p0, 0.5, model::OpClass::P2P, dag::Phase::Forward},
                                     {"F c0 mb0", c1, 1, model::OpClass::Gemm, dag::Phase::Forward}});
  const sim::Timeline tl = sim::simulate(g);
  const std::string stages = output::SvgGanttWriter().with_stage_lanes().write(g, tl);
  CHECK(all(stages, "<text x=\"4\"") == std::vector<std::string>{"stage 0", "stage 1"});
  CHECK(all(output::SvgGanttWriter().write(g, tl), "<text x=\"4\"") ==
        std::vector<std::string>{"rank 0 compute", "rank 0 p2p", "rank 1 compute", "rank 1 p2p"});
}
