#include <fmt/format.h>

#include <moeplan/core/error.hpp>
#include <moeplan/io/loader.hpp>
#include <moeplan/io/number_options.hpp>
#include <moeplan/plan/capacity.hpp>

#include <algorithm>

namespace moeplan::plan {

CapacityRequest capacity_request(const CapacityQuery& q) {
  // Numbers are held to their options' ranges here, whichever edge gave them
  // (the CLI read them as text already; Python passes numbers), before any
  // file is read or any work is sized by them.
  io::check_number("request.seq_len", static_cast<double>(q.seq_len));
  io::check_number("request.global_batch", static_cast<double>(q.global_batch));
  if (q.tokens) io::check_number("request.tokens", *q.tokens);
  if (q.days) io::check_number("request.days", *q.days);
  if (q.cost_per_gpu_hour) io::check_number("request.cost_per_gpu_hour", *q.cost_per_gpu_hour);
  if (q.gpus) {
    io::check_number("request.gpus", static_cast<double>(q.gpus->first));
    io::check_number("request.gpus", static_cast<double>(q.gpus->second));
  }
  io::check_number("request.max_memory", q.max_memory_gib);
  CapacityRequest r;
  r.model = io::load_model(q.model);
  r.cluster = io::load_cluster(q.cluster);
  // The cluster's datasheet profile (datasheet-profile writes one for every bundled cluster) unless named.
  const std::string profile = q.profile.empty() ? r.cluster.name + "-datasheet" : q.profile;
  try {
    r.profile = io::load_profile(profile);
  } catch (const Error& e) {
    if (!q.profile.empty() || e.kind() != ErrorKind::Input) throw;
    throw Error(ErrorKind::Input,
                fmt::format("cluster {} has no bundled profile {}; name one ({})", r.cluster.name, profile, e.reason()),
                "request.profile");
  }
  // A profile measured or derived for another cluster prices other GPUs and
  // links: refused, as a scenario refuses one (model/validate.cpp).
  if (r.profile.cluster != r.cluster.name)
    throw Error(ErrorKind::Input,
                fmt::format("profile {} belongs to cluster {}, not {}", quoted_for_error(r.profile.name),
                            quoted_for_error(r.profile.cluster), quoted_for_error(r.cluster.name)),
                "request.profile");
  r.seq_len = q.seq_len;
  r.global_batch = q.global_batch;
  r.tokens = q.tokens;
  r.days = q.days;
  r.cost_per_gpu_hour = q.cost_per_gpu_hour;
  // Default counts: one node up to the cluster file's size.
  const auto [lo, hi] = q.gpus.value_or(std::pair{r.cluster.gpus_per_node, r.cluster.world_size()});
  r.gpus = capacity_gpu_counts(lo, hi, r.cluster.gpus_per_node);
  r.limits.max_memory_bytes = static_cast<std::size_t>(q.max_memory_gib * static_cast<double>(std::size_t{1} << 30));
  r.threads = q.threads;
  for (const std::string& knob : q.search) {
    if (knob != "precision" && knob != "recompute")
      throw Error(ErrorKind::Input,
                  fmt::format("{} is not a knob capacity searches (precision, recompute)", quoted_for_error(knob)),
                  "request.search");
    if (std::count(q.search.begin(), q.search.end(), knob) > 1)
      throw Error(ErrorKind::Input, fmt::format("{} is listed twice", knob), "request.search");
  }
  r.search = q.search;
  check_capacity_request(r);
  return r;
}

}  // namespace moeplan::plan
