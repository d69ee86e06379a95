#pragma once
// The folding tests' toy scenario, shared by the folding and joint-search
// tests (their expected numbers are derived from it by hand).

#include <cstdint>

#include <moeplan/model/specs.hpp>
#include <moeplan/plan/mapping_search.hpp>

#include "../test_support.hpp"

namespace moeplan::testing {

// A one-layer toy on one node of two GPUs, small enough to price every mapping
// by hand. d = 4, h = g = 2 heads of k = 2, E = 2 GELU experts of hidden 8,
// top-1, capacity 1, V = 8 (untied), 2-byte elements; one sequence of s = 8
// tokens per iteration. Every line has no startup, so times are work x slope:
// compute 1e-3 ms per FLOP (the GPU's peak, 1e6 FLOP/s), AllGather,
// ReduceScatter and AlltoAll on two ranks 1e-3 ms per byte, P2P 1e-2 ms per byte.
inline model::ScenarioSpec toy_scenario() {
  using model::LinkClass;
  using model::OpClass;
  model::ScenarioSpec s;
  s.name = "toy";
  model::ModelSpec& m = s.model;
  m.name = "toy";
  m.num_layers = 1;
  m.d_model = 4;
  m.num_heads = 2;
  m.num_kv_heads = 2;
  m.head_dim = 2;
  m.vocab_size = 8;
  m.norm_type = model::NormType::RmsNorm;
  m.dtype_bytes = 2;
  m.moe.num_experts = 2;
  m.moe.top_k = 1;
  m.moe.capacity_factor = 1.0;
  m.moe.expert_type = model::FfnType::GeluFfn;
  m.moe.expert_ffn_hidden = 8;
  m.moe_layer = {true};
  model::ClusterSpec& c = s.cluster;
  c.name = "toy";
  c.num_nodes = 1;
  c.gpus_per_node = 2;
  c.gpu.peak_flops_per_s_bf16 = 1e6;
  c.gpu.memory_bytes = 1e12;  // every mapping fits: this case is about time
  s.profile = model::CostProfileSpec{"toy",
                                     "toy",
                                     {cost_line(OpClass::Gemm, LinkClass::Local, 1, 0.0, 1e-3),
                                      cost_line(OpClass::Attention, LinkClass::Local, 1, 0.0, 1e-3),
                                      cost_line(OpClass::AllGather, LinkClass::Intra, 2, 0.0, 1e-3),
                                      cost_line(OpClass::ReduceScatter, LinkClass::Intra, 2, 0.0, 1e-3),
                                      cost_line(OpClass::A2A, LinkClass::Intra, 2, 0.0, 1e-3),
                                      cost_line(OpClass::P2P, LinkClass::Intra, 2, 0.0, 1e-2),
                                      // Memory-bound kernels at 1e-14 ms per byte (100 TB/s): a toy's few
                                      // hundred bytes cost 1e-12 ms, so the by-hand block times below hold
                                      // without them (memory_bound_kernels_test prices them by hand).
                                      cost_line(OpClass::Elementwise, LinkClass::Local, 1, 0.0, 1e-14),
                                      // The loss's all-reduces over tp (model_ends.hpp), twice the
                                      // ReduceScatter's slope (a ring all-reduce is a reduce-scatter and an all-gather).
                                      cost_line(OpClass::AllReduce, LinkClass::Intra, 2, 0.0, 2e-3)},
                                     1.0};
  s.workload.seq_len = 8;
  s.workload.micro_batch_size = 1;
  s.workload.global_batch_size = 1;
  s.schedule.family = "folding";
  return s;
}

// The toy's model ends for one micro-batch (model_ends.hpp), by hand, with
// t the tokens the attention sees (8 / cp) and the vocabulary (8) over tp:
// - the LM head GEMM forward and its two gradient GEMMs, 2 t d V / tp FLOPs
//   each at 1e-3 ms per FLOP: 3 x 2 t 4 8 / tp x 1e-3 = 0.192 t / tp ms;
// - over tp = 2 only: the embedding's ReduceScatter and gradient AllGather,
//   the head's input AllGather and gradient ReduceScatter, t d b = 8 t bytes
//   each at 1e-3 ms per byte (4 x 0.008 t), and the loss's all-reduces of
//   4 t and 8 t bytes at 2e-3 (0.024 t);
// - the memory-bound kernels: bytes at 1e-14 ms, nothing at this scale.
// tp 2, t 8: 0.768 + 0.256 + 0.192 = 1.216; tp 1, t 8: 1.536; tp 1, t 4:
// 0.768; tp 2, t 4: 0.384 + 0.128 + 0.096 = 0.608.
inline double toy_ends_ms(double t, int tp) {
  const double head = 0.192 * t / tp;
  return tp == 1 ? head : head + 4 * 0.008 * t + 0.024 * t;
}

inline cost::MappingConfig mapping(std::int64_t tp, std::int64_t cp, std::int64_t pp, std::int64_t ep, std::int64_t etp) {
  cost::MappingConfig c;
  c.tp = tp;
  c.cp = cp;
  c.pp = pp;
  c.ep = ep;
  c.etp = etp;
  return c;
}


// The toy with twice the GPU peak. Only MFU's denominator moves (times come
// from the profile's lines): the toy ran at MFU 0.99 at 1e6 FLOP/s before its
// LM head was priced, so any communication an overlap hides would read as an
// MFU above 1, which price_mapping refuses. (The overlap families all-reduce
// gradients on the toy's AllReduce line.)
inline model::ScenarioSpec toy_scenario_for_overlap() {
  model::ScenarioSpec s = toy_scenario();
  s.cluster.gpu.peak_flops_per_s_bf16 = 2e6;
  return s;
}

}  // namespace moeplan::testing
