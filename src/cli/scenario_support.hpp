#pragma once
// What the commands that run scenarios share: the simulate JSON keys and the
// --threads option.

#include <string>

#include <CLI/CLI.hpp>

#include <moeplan/io/json.hpp>
#include <moeplan/plan/evaluation.hpp>

namespace moeplan::cli {

/// CLI.md `simulate` keys.
io::Json evaluation_to_json(const std::string& scenario, const plan::Evaluation& e);

/// Adds --threads N (at least 1; default: every core). Results never depend on it.
void add_threads_option(CLI::App* command, unsigned& threads);

/// The worker threads to use for a --threads value (0: not given).
unsigned thread_count(unsigned requested);

}  // namespace moeplan::cli
