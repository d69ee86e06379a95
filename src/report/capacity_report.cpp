#include <moeplan/report/capacity_report.hpp>

#include <cmath>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/plan_writer.hpp>

namespace moeplan::report {
namespace {

using io::Json;

constexpr double kGiB = 1024.0 * 1024 * 1024;

Json optional_number(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

std::int64_t count(std::size_t n) { return static_cast<std::int64_t>(n); }

Json plan_json(const plan::CapacityPlan& p) {
  Json j = Json::object();
  Json par = io::parallelism_to_json(p.mapping.parallel_spec());
  par.set("micro_batch_size", p.mapping.micro_batch);
  j.set("parallelism", par);
  j.set("overlap", p.overlap);
  j.set("degree_forward", p.overlap == "none" ? Json(nullptr) : Json(p.degree_forward));
  j.set("degree_backward", p.overlap == "none" ? Json(nullptr) : Json(p.degree_backward));
  j.set("iteration_ms", p.iteration_ms);
  j.set("no_overlap_ms", p.no_overlap_ms);
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
  return p;
}

std::string mapping_cell(const plan::FoldingConfig& c) {
  return fmt::format("tp{}-cp{}-pp{}-vpp{}-ep{}-etp{}-mb{}", c.tp, c.cp, c.pp, c.vpp, c.ep, c.etp, c.micro_batch);
}

std::string overlap_cell(const plan::CapacityPlan& p) {
  if (p.overlap == "none") return "none";
  if (p.overlap.rfind("fsmoe/", 0) == 0) return fmt::format("{} r{}/{}", p.overlap, p.degree_forward, p.degree_backward);
  return fmt::format("{} {}{}", p.overlap, p.overlap.rfind("flowmoe/", 0) == 0 ? "R" : "d", p.degree_forward);
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number_cell(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : std::string(); }

std::string mark(const plan::CapacityResult& r, std::int64_t gpus) {
  const bool smallest = r.smallest_gpus == gpus, cheapest = r.cost_optimal_gpus == gpus;
  return smallest && cheapest ? "smallest;cost-optimal" : smallest ? "smallest" : cheapest ? "cost-optimal" : "";
}

// 2T, 500B, 1.5M: the largest decimal unit that leaves a number of at least 1.
std::string tokens_text(double tokens) {
  for (auto [unit, scale] : {std::pair{"T", 1e12}, {"B", 1e9}, {"M", 1e6}, {"K", 1e3}})
    if (tokens >= scale) return fmt::format("{:g}{}", tokens / scale, unit);
  return fmt::format("{:g}", tokens);
}

}  // namespace

Json capacity_row_to_json(const plan::CapacityRow& row) {
  Json j = Json::object();
  j.set("gpus", row.gpus);
  j.set("plan", row.plan ? plan_json(*row.plan) : Json(nullptr));
  j.set("tokens_per_s", optional_number(row.tokens_per_s));
  j.set("mfu", row.plan ? Json(row.plan->mfu) : Json(nullptr));
  j.set("memory_bytes_per_gpu", row.plan ? Json(row.plan->memory_bytes_per_gpu) : Json(nullptr));
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

std::string capacity_to_csv(const plan::CapacityResult& result) {
  std::string out =
      "gpus,mapping,dp,edp,overlap,iteration_ms,tokens_per_s,mfu,memory_bytes_per_gpu,days,gpu_hours,cost,"
      "meets_deadline,bound_by,mark,bound_detail\n";
  for (const plan::CapacityRow& row : result.rows) {
    const std::optional<plan::CapacityPlan>& p = row.plan;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", row.gpus, p ? mapping_cell(p->mapping) : "",
                       p ? fmt::format("{}", p->mapping.dp) : "", p ? fmt::format("{}", p->mapping.edp) : "",
                       p ? csv_cell(overlap_cell(*p)) : "", p ? fmt::format("{}", p->iteration_ms) : "",
                       number_cell(row.tokens_per_s), p ? fmt::format("{}", p->mfu) : "",
                       p ? fmt::format("{}", p->memory_bytes_per_gpu) : "", number_cell(row.days),
                       number_cell(row.gpu_hours), number_cell(row.cost),
                       row.meets_deadline ? (*row.meets_deadline ? "true" : "false") : "", csv_cell(row.bound_by),
                       mark(result, row.gpus), csv_cell(row.bound_detail));
  }
  return out;
}

std::string capacity_to_text(const plan::CapacityRequest& r, const plan::CapacityResult& result) {
  std::string out = fmt::format("capacity: {} on {} ({}), sequence {}, global batch {} sequences", r.model.name,
                                r.cluster.name, r.cluster.gpu.name, r.seq_len, r.global_batch);
  if (r.tokens) out += fmt::format(", {} tokens", tokens_text(*r.tokens));
  if (r.days) out += fmt::format(", deadline {:g} days", *r.days);
  if (r.cost_per_gpu_hour) out += fmt::format(", {:g} per GPU-hour", *r.cost_per_gpu_hour);
  out += '\n';
  // The answer first: the smallest count in time, and the cheapest.
  const plan::CapacityRow* smallest = nullptr;
  const plan::CapacityRow* cheapest = nullptr;
  for (const plan::CapacityRow& row : result.rows) {
    if (result.smallest_gpus == row.gpus) smallest = &row;
    if (result.cost_optimal_gpus == row.gpus) cheapest = &row;
  }
  if (r.days)
    out += smallest != nullptr
               ? fmt::format("  answer: {} GPUs train it in {:.1f} days (deadline {:g})\n", smallest->gpus,
                             *smallest->days, *r.days)
               : fmt::format("  answer: no count searched meets the {:g}-day deadline\n", *r.days);
  if (cheapest != nullptr)
    out += fmt::format("  cost-optimal: {} GPUs ({:.0f} tokens per GPU-second{})\n", cheapest->gpus,
                       *cheapest->tokens_per_s / static_cast<double>(cheapest->gpus),
                       cheapest->gpu_hours ? fmt::format(", {:.0f} GPU-hours", *cheapest->gpu_hours) : "");
  out += fmt::format("  {:>5}  {:<41} {:<24} {:>10} {:>6} {:>7} {:>7} {:>10} {:>11}  {}\n", "GPUs", "mapping (dp, edp)",
                     "overlap", "tokens/s", "MFU", "GiB/GPU", "days", "GPU-hours", "cost", "bound by");
  for (const plan::CapacityRow& row : result.rows) {
    const std::string marks = mark(result, row.gpus);
    if (!row.plan) {
      out += fmt::format("  {:>5}  no plan: {} ({})\n", row.gpus, row.bound_by, row.bound_detail);
      continue;
    }
    const plan::CapacityPlan& p = *row.plan;
    out += fmt::format("  {:>5}  {:<41} {:<24} {:>10.0f} {:>5.1f}% {:>7.1f} {:>7} {:>10} {:>11}  {}{}\n", row.gpus,
                       fmt::format("{} ({}, {})", mapping_cell(p.mapping), p.mapping.dp, p.mapping.edp),
                       overlap_cell(p), *row.tokens_per_s, 100 * p.mfu, p.memory_bytes_per_gpu / kGiB,
                       row.days ? fmt::format("{:.1f}", *row.days) : "-",
                       row.gpu_hours ? fmt::format("{:.0f}", *row.gpu_hours) : "-",
                       row.cost ? fmt::format("{:.0f}", *row.cost) : "-", row.bound_by,
                       marks.empty() ? "" : "  <- " + marks);
  }
  return out;
}

}  // namespace moeplan::report
