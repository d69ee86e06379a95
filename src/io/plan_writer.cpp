#include <moeplan/io/plan_writer.hpp>

#include <google/protobuf/text_format.h>

#include <moeplan/core/version.hpp>
#include <moeplan/model/pipeline_layout.hpp>
#include <moeplan/model/recompute.hpp>

#include "proto_convert.hpp"

namespace moeplan::io {

Json parallelism_to_json(const model::ParallelSpec& p) {
  Json j = Json::object();
  j.set("tp", p.tp);
  j.set("cp", p.cp);
  j.set("dp", p.dp);
  j.set("pp", p.pp);
  j.set("ep", p.ep);
  j.set("etp", p.etp);
  j.set("edp", p.edp);
  j.set("vpp", p.vpp);
  j.set("sequence_parallel", p.sequence_parallel);
  if (!p.stage_layers.empty()) j.set("pipeline_layout", model::pipeline_layout_text(p.stage_layers, p.layout_mtp_blocks));
  return j;
}

Json knobs_to_json(const model::PlanKnobs& k) {
  Json j = Json::object();
  auto ints = [](const std::vector<std::int64_t>& v) {
    Json a = Json::array();
    for (std::int64_t x : v) a.push(x);
    return a;
  };
  if (k.degree) j.set("degree", *k.degree);
  if (k.degree_forward) j.set("degree_forward", *k.degree_forward);
  if (k.degree_backward) j.set("degree_backward", *k.degree_backward);
  if (!k.slicing_tokens.empty()) j.set("slicing", ints(k.slicing_tokens));
  if (k.ar_chunk_bytes) j.set("ar_chunk_bytes", *k.ar_chunk_bytes);
  if (!k.grad_partition_bytes.empty()) j.set("grad_partition_bytes", ints(k.grad_partition_bytes));
  if (k.parallelism) j.set("parallelism", parallelism_to_json(*k.parallelism));
  if (k.micro_batch_size) j.set("micro_batch_size", *k.micro_batch_size);
  if (k.precision) j.set("precision", model::to_string(*k.precision));
  if (k.recompute) j.set("recompute", model::recompute_text(*k.recompute));
  return j;
}

Json plan_spec_to_json(const model::PlanSpec& plan) {
  Json j = Json::object();
  j.set("scenario", plan.scenario);
  j.set("schedule", plan.schedule);
  j.set("iteration_ms", plan.iteration_ms);
  j.set("baseline_ms", plan.baseline_ms);
  j.set("speedup", plan.speedup);
  j.set("knobs", knobs_to_json(plan.knobs));
  return j;
}

std::string plan_to_textproto(const model::PlanSpec& plan) {
  std::string body;
  google::protobuf::TextFormat::PrintToString(to_proto(plan, kVersion), &body);
  return "# proto-message: Plan\n# Written by moeplan plan.\n" + body;
}

}  // namespace moeplan::io
