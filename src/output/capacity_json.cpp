#include <moeplan/output/capacity_report.hpp>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/plan_writer.hpp>
#include <moeplan/plan/joint.hpp>

namespace moeplan::output {
namespace {

using io::Json;

Json optional_number(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

std::int64_t count(std::size_t n) { return static_cast<std::int64_t>(n); }

Json plan_json(const plan::CapacityPlan& p) {
  Json j = Json::object();
  Json par = io::parallelism_to_json(p.mapping.parallel_spec());
  par.set("micro_batch_size", p.mapping.micro_batch);
  j.set("parallelism", par);
  j.set("overlap", p.overlap);
  j.set("degree_forward", p.overlap == plan::OverlapSchedule::kNone ? Json(nullptr) : Json(p.degree_forward));
  j.set("degree_backward", p.overlap == plan::OverlapSchedule::kNone ? Json(nullptr) : Json(p.degree_backward));
  j.set("iteration_ms", p.iteration_ms);
  j.set("no_overlap_ms", p.no_overlap_ms);
  j.set("precision", p.precision);
  j.set("recompute", p.recompute);
  return j;
}

// Readers of the JSON capacity_row_to_json wrote (the MPI gather): a key it
// always writes, else an input Error naming the key.
const Json& key(const Json& j, const char* name) {
  const Json* v = j.find(name);
  if (v == nullptr) throw Error(ErrorKind::Input, fmt::format("capacity row: no key {}", name));
  return *v;
}
std::optional<double> maybe_number(const Json& j, const char* name) {
  const Json& v = key(j, name);
  return v.is_null() ? std::nullopt : std::optional<double>(v.as_number());
}
std::int64_t integer(const Json& j, const char* name) { return static_cast<std::int64_t>(key(j, name).as_number()); }

plan::CapacityPlan plan_from_json(const Json& j) {
  plan::CapacityPlan p;
  const Json& par = key(j, "parallelism");
  p.mapping = {integer(par, "tp"), integer(par, "cp"), integer(par, "pp"),  integer(par, "vpp"), integer(par, "ep"),
               integer(par, "etp"), integer(par, "micro_batch_size"), integer(par, "dp"), integer(par, "edp")};
  p.overlap = key(j, "overlap").as_string();
  p.degree_forward = static_cast<std::int64_t>(maybe_number(j, "degree_forward").value_or(0));
  p.degree_backward = static_cast<std::int64_t>(maybe_number(j, "degree_backward").value_or(0));
  p.iteration_ms = key(j, "iteration_ms").as_number();
  p.no_overlap_ms = key(j, "no_overlap_ms").as_number();
  p.precision = key(j, "precision").as_string();
  p.recompute = key(j, "recompute").as_string();
  return p;
}

}  // namespace

Json capacity_row_to_json(const plan::CapacityRow& row) {
  Json j = Json::object();
  j.set("gpus", row.gpus);
  j.set("plan", row.plan ? plan_json(*row.plan) : Json(nullptr));
  j.set("tokens_per_s", optional_number(row.tokens_per_s));
  j.set("mfu", row.plan ? Json(row.plan->mfu) : Json(nullptr));
  j.set("memory_bytes_per_gpu", row.plan ? Json(row.plan->memory_bytes_per_gpu) : Json(nullptr));
  j.set("memory_tight", row.plan ? Json(row.plan->memory_tight) : Json(nullptr));
  j.set("days", optional_number(row.days));
  j.set("gpu_hours", optional_number(row.gpu_hours));
  j.set("cost", optional_number(row.cost));
  j.set("meets_deadline", row.meets_deadline ? Json(*row.meets_deadline) : Json(nullptr));
  j.set("bound_by", row.bound_by);
  j.set("bound_detail", row.bound_detail);
  Json search = Json::object();
  search.set("mappings", count(row.mappings));
  search.set("fitting", count(row.fitting));
  search.set("evaluated", count(row.evaluated));
  search.set("configurations", count(row.configurations));
  j.set("search", search);
  return j;
}

plan::CapacityRow capacity_row_from_json(const Json& j) {
  plan::CapacityRow row;
  row.gpus = integer(j, "gpus");
  if (!key(j, "plan").is_null()) {
    row.plan = plan_from_json(key(j, "plan"));
    row.plan->mfu = key(j, "mfu").as_number();
    row.plan->memory_bytes_per_gpu = key(j, "memory_bytes_per_gpu").as_number();
    row.plan->memory_tight = key(j, "memory_tight").as_bool();
  }
  row.tokens_per_s = maybe_number(j, "tokens_per_s");
  row.days = maybe_number(j, "days");
  row.gpu_hours = maybe_number(j, "gpu_hours");
  row.cost = maybe_number(j, "cost");
  if (!key(j, "meets_deadline").is_null()) row.meets_deadline = key(j, "meets_deadline").as_bool();
  row.bound_by = key(j, "bound_by").as_string();
  row.bound_detail = key(j, "bound_detail").as_string();
  const Json& search = key(j, "search");
  row.mappings = static_cast<std::size_t>(integer(search, "mappings"));
  row.fitting = static_cast<std::size_t>(integer(search, "fitting"));
  row.evaluated = static_cast<std::size_t>(integer(search, "evaluated"));
  row.configurations = static_cast<std::size_t>(integer(search, "configurations"));
  return row;
}

Json capacity_to_json(const plan::CapacityRequest& r, const plan::CapacityResult& result) {
  Json j = Json::object();
  j.set("model", r.model.name);
  j.set("cluster", r.cluster.name);
  j.set("profile", r.profile.name);
  j.set("seq_len", r.seq_len);
  j.set("global_batch", r.global_batch);
  j.set("tokens", optional_number(r.tokens));
  j.set("deadline_days", optional_number(r.days));
  j.set("cost_per_gpu_hour", optional_number(r.cost_per_gpu_hour));
  Json rows = Json::array();
  for (const plan::CapacityRow& row : result.rows) rows.push(capacity_row_to_json(row));
  j.set("rows", rows);
  j.set("smallest_gpus", result.smallest_gpus ? Json(*result.smallest_gpus) : Json(nullptr));
  j.set("cost_optimal_gpus", result.cost_optimal_gpus ? Json(*result.cost_optimal_gpus) : Json(nullptr));
  return j;
}

}  // namespace moeplan::output
