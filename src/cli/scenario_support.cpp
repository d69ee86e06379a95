#include "scenario_support.hpp"

#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include <thread>

#include <unistd.h>

#include <moeplan/core/error.hpp>

#include "cli_context.hpp"

namespace moeplan::cli {

std::vector<std::string> runnable_schedules(const plan::ScenarioRun& run, const std::string& requested,
                                            std::ostream& err) {
  std::vector<std::string> notes;
  std::vector<std::string> names = run.runnable_schedules(requested, &notes);
  for (const std::string& note : notes) print_note(err, note);
  return names;
}

void print_note(std::ostream& err, const std::string& note) {
  err << "moeplan: note: " << name_options(note, flag_of) << '\n';
}

void add_quiet_option(CLI::App* command, bool& quiet) {
  command->add_flag("--quiet", quiet, "No progress bar (it is drawn on stderr only when stderr is a terminal)");
}

std::unique_ptr<ProgressBar> progress_bar(const char* label, bool quiet, std::ostream& err) {
  if (quiet || isatty(STDERR_FILENO) == 0) return nullptr;
  return std::make_unique<ProgressBar>(label, err);
}

void add_threads_option(CLI::App* command, unsigned& threads) {
  add_number_option(command, "request.threads", threads,
                    "Worker threads, at most the machine's hardware threads (default: all of them); results do not "
                    "depend on it");
}

void add_max_memory_option(CLI::App* command, double& gib) {
  gib = static_cast<double>(model::kDefaultMaxMemoryBytes >> 30);
  add_number_option(command, "request.max_memory", gib,
                    fmt::format("GiB one simulated task graph may need, estimated at {} bytes per task before it runs "
                                "(default {}; docs/reliability.md)",
                                model::kPeakBytesPerTask, model::kDefaultMaxMemoryBytes >> 30));
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


}  // namespace moeplan::cli
