#include <moeplan/plan/result_json.hpp>

#include <algorithm>

#include <moeplan/io/plan_writer.hpp>

namespace moeplan::plan {

using io::Json;

void set_evaluation_times(Json& j, const Evaluation& e) {
  j.set("schedule", e.schedule);
  j.set("degree", e.degree);
  j.set("iteration_ms", e.iteration_ms);
  j.set("forward_ms", e.forward_ms);
  j.set("backward_ms", e.backward_ms);
  j.set("compute_ms", e.compute_ms);
  j.set("comm_ms", e.comm_ms);
  j.set("exposed_comm_ms", e.exposed_comm_ms);
  j.set("bubble_ms", e.bubble_ms);
  j.set("tasks", e.tasks);
}

Json evaluation_to_json(const std::string& scenario, const Evaluation& e) {
  Json j = Json::object();
  j.set("scenario", scenario);
  set_evaluation_times(j, e);
  j.set("a2a_total_ms", e.a2a_total_ms);
  j.set("a2a_critical_ms", e.a2a_critical_ms);
  Json flops = Json::object();
  flops.set("forward", e.attention_flops_forward);
  flops.set("backward", e.attention_flops_backward);
  j.set("attention_flops", flops);
  Json per_layer = Json::array();
  const std::size_t layers =
      std::max(e.attention_flops_forward_per_layer.size(), e.attention_flops_backward_per_layer.size());
  for (std::size_t layer = 0; layer < layers; ++layer) {
    Json entry = Json::object();
    entry.set("layer", static_cast<std::int64_t>(layer));
    entry.set("forward",
              layer < e.attention_flops_forward_per_layer.size() ? e.attention_flops_forward_per_layer[layer] : 0.0);
    entry.set("backward",
              layer < e.attention_flops_backward_per_layer.size() ? e.attention_flops_backward_per_layer[layer] : 0.0);
    per_layer.push(std::move(entry));
  }
  j.set("attention_flops_per_layer", per_layer);
  if (e.routing) {
    // Uneven expert load (docs/cost-model.md): only when workload.routing is not balanced.
    j.set("routing", e.routing->routing);
    j.set("routing_priced", e.routing->priced);
    Json per_rank = Json::array();
    for (double ms : e.routing->per_rank_a2a_ms) per_rank.push(ms);
    j.set("per_rank_a2a_ms", per_rank);
    j.set("slowest_rank", e.routing->slowest_rank);
    j.set("dropped_token_fraction", e.routing->dropped_token_fraction);
  }
  return j;
}

Json mapping_to_json(const MappingResult& f) {
  Json j = Json::object();
  Json par = io::parallelism_to_json(f.config.parallel_spec());
  par.set("micro_batch_size", f.config.micro_batch);
  j.set("parallelism", par);
  j.set("iteration_ms", f.iteration_ms);
  j.set("mfu", f.mfu);
  j.set("memory_bytes_per_gpu", f.memory_bytes_per_gpu);
  j.set("fits", f.fits);
  Json b = Json::object();
  b.set("attention_ms", f.breakdown.attention_ms);
  b.set("moe_compute_ms", f.breakdown.moe_compute_ms);
  b.set("a2a_ms", f.breakdown.a2a_ms);
  b.set("agrs_ms", f.breakdown.agrs_ms);
  b.set("dp_ms", f.breakdown.dp_ms);
  b.set("pp_bubble_ms", f.breakdown.pp_bubble_ms);
  b.set("recompute_ms", f.breakdown.recompute_ms);
  b.set("model_ends_ms", f.breakdown.model_ends_ms);
  b.set("host_wait_ms", f.breakdown.host_wait_ms);
  j.set("breakdown", b);
  Json pipeline = Json::object();
  pipeline.set("micro_batches", f.pipeline.micro_batches);
  pipeline.set("simulated_micro_batches", f.pipeline.simulated_micro_batches);
  pipeline.set("extrapolated", f.pipeline.extrapolated);
  j.set("pipeline", pipeline);
  return j;
}

}  // namespace moeplan::plan
