#pragma once
// What the commands that run scenarios share: the simulate JSON keys and the
// --threads option.

#include <cstddef>
#include <memory>
#include <iosfwd>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <moeplan/core/parallel.hpp>
#include <moeplan/core/progress.hpp>
#include <moeplan/io/json.hpp>
#include <moeplan/plan/evaluation.hpp>
#include <moeplan/plan/scenario_run.hpp>

namespace moeplan::cli {

/// Adds --max-memory GIB (default model::kDefaultMaxMemoryBytes): the memory
/// one simulated task graph may need; a larger graph is refused before it runs.
void add_max_memory_option(CLI::App* command, double& gib);
/// The scenario with the run limits of a --max-memory value.
model::ScenarioSpec with_max_memory(model::ScenarioSpec spec, double gib);

/// The schedules of `requested` (a name or all) that run for the scenario; a
/// note on `err` for each the scenario's knobs leave out.
std::vector<std::string> runnable_schedules(const plan::ScenarioRun& run, const std::string& requested,
                                            std::ostream& err);

/// A note of the library's on `err` ("moeplan: note: ..."), the request
/// options it mentions named as flags.
void print_note(std::ostream& err, const std::string& note);

/// Adds --quiet: no progress bar. Without it a command that searches draws one
/// on stderr when stderr is a terminal (never in a pipe or a file).
void add_quiet_option(CLI::App* command, bool& quiet);
/// The progress bar a command draws, or nullptr (--quiet, or stderr is not a terminal).
std::unique_ptr<ProgressBar> progress_bar(const char* label, bool quiet, std::ostream& err);

/// Adds --threads N (at least 1; default: every core). Results never depend on it.
void add_threads_option(CLI::App* command, unsigned& threads);

/// The worker threads to use for a --threads value (0: not given: every
/// hardware thread). A request above the hardware threads is capped there,
/// with a note on `err`: more threads than cores only cost memory and
/// process slots (one thread per sweep point at --threads 100000).
unsigned thread_count(unsigned requested, std::ostream& err);

/// Says on `err` when parallel_for could start fewer than the threads it was
/// given for `jobs` jobs (no work is lost: the threads that started do it).
void note_threads_started(unsigned threads, unsigned started, std::size_t jobs, std::ostream& err);
/// The same for a planner's parallel steps (plan: the step that fell shortest).
void note_threads_started(const ThreadsStarted& threads, std::ostream& err);

}  // namespace moeplan::cli
