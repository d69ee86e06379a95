#include "scenario_support.hpp"

#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include <thread>

#include <moeplan/core/error.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {

void add_threads_option(CLI::App* command, unsigned& threads) {
  command
      ->add_option("--threads", threads,
                   "Worker threads, at most the machine's hardware threads (default: all of them); results do not "
                   "depend on it")
      ->check(positive());
}

void refuse_noise(const model::ScenarioSpec& spec, const char* command) {
  if (spec.schedule.compute_jitter_cv > 0)
    throw Error(ErrorKind::Input,
                fmt::format("{} ranks schedules on the noiseless model; `moeplan simulate` reports the mean and p95 "
                            "iteration under noise (scenario {})",
                            command, quoted_for_error(spec.name)),
                "schedule.compute_jitter_cv");
}

void add_max_memory_option(CLI::App* command, double& gib) {
  gib = static_cast<double>(model::kDefaultMaxMemoryBytes >> 30);
  command
      ->add_option("--max-memory", gib,
                   fmt::format("GiB one simulated task graph may need, estimated at {} bytes per task before it runs "
                               "(default {}; docs/reliability.md)",
                               model::kPeakBytesPerTask, model::kDefaultMaxMemoryBytes >> 30))
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            // 0.001 GiB (1 MiB) to 2^20 GiB (1 PiB): any machine, and the bytes fit in 64 bits.
            double value = 0;
            if (!CLI::detail::lexical_cast(text, value) || !(value >= 0.001 && value <= 1048576.0))
              return fmt::format("must be a number of GiB from 0.001 to 1048576, got '{}'", text);
            return {};
          },
          "GIB"));
}

model::ScenarioSpec with_max_memory(model::ScenarioSpec spec, double gib) {
  spec.limits.max_memory_bytes = static_cast<std::size_t>(gib * static_cast<double>(std::size_t{1} << 30));
  return spec;
}

unsigned thread_count(unsigned requested, std::ostream& err) {
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  if (requested == 0) return hardware;
  if (requested > hardware) {
    err << fmt::format("moeplan: note: --threads {} capped at {}, the hardware threads of this machine\n", requested,
                       hardware);
    return hardware;
  }
  return requested;
}

void note_threads_started(unsigned threads, unsigned started, std::size_t jobs, std::ostream& err) {
  const unsigned wanted = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(jobs, 1)));
  if (started < wanted)
    err << fmt::format("moeplan: note: {} of {} threads started (the system refused the rest); the work ran on them\n",
                       started, wanted);
}

void note_threads_started(const ThreadsStarted& threads, std::ostream& err) {
  note_threads_started(threads.wanted, threads.started, threads.wanted, err);
}

io::Json evaluation_to_json(const std::string& scenario, const plan::Evaluation& e) {
  io::Json j = io::Json::object();
  j.set("scenario", scenario);
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
  j.set("a2a_total_ms", e.a2a_total_ms);
  j.set("a2a_critical_ms", e.a2a_critical_ms);
  io::Json flops = io::Json::object();
  flops.set("forward", e.attention_flops_forward);
  flops.set("backward", e.attention_flops_backward);
  j.set("attention_flops", flops);
  io::Json per_layer = io::Json::array();
  const std::size_t layers =
      std::max(e.attention_flops_forward_per_layer.size(), e.attention_flops_backward_per_layer.size());
  for (std::size_t layer = 0; layer < layers; ++layer) {
    io::Json entry = io::Json::object();
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
    io::Json per_rank = io::Json::array();
    for (double ms : e.routing->per_rank_a2a_ms) per_rank.push(ms);
    j.set("per_rank_a2a_ms", per_rank);
    j.set("slowest_rank", e.routing->slowest_rank);
    j.set("dropped_token_fraction", e.routing->dropped_token_fraction);
  }
  return j;
}

}  // namespace moeplan::cli
