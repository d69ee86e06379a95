#include <catch2/catch.hpp>

#include <moeplan/io/loader.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/family/fsmoe/planner.hpp>
#include <moeplan/family/fsmoe/builder.hpp>

#include "../../test_support.hpp"

using namespace moeplan;
using model::LinkClass;
using model::OpClass;

namespace {

// FSMoE's Table 4 layer on Testbed-A with chosen per-byte / per-FLOP costs,
// so that each case's regime can be reached on purpose.
struct Regime {
  double a2a_beta, esp_beta, gemm_beta, t_gar_bytes;
  bool backward;
};

model::CostProfileSpec profile(const Regime& g) {
  using moeplan::testing::cost_line;
  // The inter lines as measured in the training layout: one GPU per node, the
  // 8 groups of a node at once (so they price the scenario's groups as written).
  auto in_layout = [](model::LinearCostSpec line) {
    line.concurrent_groups = 8;
    return line;
  };
  return {"regime",
          "fsmoe-testbed-a",
          {cost_line(OpClass::Gemm, LinkClass::Local, 1, 0.02, g.gemm_beta),
           cost_line(OpClass::Attention, LinkClass::Local, 1, 0.02, g.gemm_beta),
           in_layout(cost_line(OpClass::A2A, LinkClass::Inter, 6, 0.1, g.a2a_beta, 1)),
           cost_line(OpClass::AllGather, LinkClass::Intra, 8, 0.05, g.esp_beta),
           cost_line(OpClass::ReduceScatter, LinkClass::Intra, 8, 0.05, g.esp_beta),
           in_layout(cost_line(OpClass::AllReduce, LinkClass::Inter, 6, 0.2, 1e-6, 1))},
          1.0};
}

struct Comparison {
  fsmoe::FsCase which;
  double closed_ms, engine_ms;
};

Comparison compare(const Regime& g, std::int64_t r) {
  model::ScenarioSpec s = io::load_scenario("fsmoe-table4-testbed-a", {{"workload.seq_len", "2048"}});
  s.profile = profile(g);
  const cost::CostModel costs(*s.profile);
  const double t_gar_ms = g.t_gar_bytes > 0 ? 0.2 + g.t_gar_bytes * 1e-6 : 0.0;
  const fsmoe::MoeLayerModel m = fsmoe::fsmoe_layer_model(s, costs, g.backward, t_gar_ms);
  fsmoe::FsMoeKnobs k;
  k.schedule = "fsmoe";
  k.degree_forward = k.degree_backward = r;
  k.single_layer_only = true;
  k.backward_only = g.backward;
  if (g.t_gar_bytes > 0) k.grad_during_moe_bytes = {g.t_gar_bytes};
  const double engine = plan::evaluate(fsmoe::build_fsmoe(s, costs, k)).iteration_ms;
  const fsmoe::FsCase c = fsmoe::case_at(m, static_cast<double>(r));
  return {c, fsmoe::case_time_ms(m, c, static_cast<double>(r)), engine};
}

}  // namespace

TEST_CASE("plan closed forms and the engine agree within 2% in each case's regime", "[plan][fsmoe]") {
  struct Expectation {
    const char* regime;
    Regime g;
    fsmoe::FsCase expected;
  };
  const Expectation regimes[] = {
      // A 5 MB Gradient-AllReduce (5.2 ms) on a slow inter link: Case 1, 2 r t_a2a + t_gar.
      {"inter-node traffic", {4e-6, 1e-8, 1e-12, 5e6, true}, fsmoe::FsCase::Case1},
      {"experts", {1e-8, 1e-8, 5e-10, 0, false}, fsmoe::FsCase::Case2},
      {"AlltoAll", {4e-6, 1e-8, 1e-12, 0, false}, fsmoe::FsCase::Case3},
      {"ESP AllGather/ReduceScatter", {1e-8, 4e-6, 1e-12, 0, false}, fsmoe::FsCase::Case4},
  };
  for (const Expectation& e : regimes) {
    int in_case = 0;
    for (std::int64_t r : {2, 4, 8}) {
      const Comparison c = compare(e.g, r);
      INFO(e.regime << " r " << r << ": closed " << c.closed_ms << " ms, engine " << c.engine_ms << " ms");
      if (c.which != e.expected) continue;
      ++in_case;
      CHECK(c.engine_ms == Approx(c.closed_ms).epsilon(0.02));
      if (e.expected == fsmoe::FsCase::Case3) {
        // Measured: 0-1.1% below the closed form. Case 3 charges the first
        // AllGather and last ReduceScatter in full (2 r t_a2a + t_ag + t_rs), but
        // on the engine the intra link runs them while the inter link still
        // carries A2As, so the engine can only be faster.
        CHECK(c.engine_ms <= c.closed_ms + 1e-9);
      } else {
        // Cases 1, 2 and 4 are exact: their critical chains are the formulas.
        CHECK(c.engine_ms == Approx(c.closed_ms).epsilon(1e-9));
      }
    }
    INFO(e.regime);
    CHECK(in_case >= 2);
  }
}
