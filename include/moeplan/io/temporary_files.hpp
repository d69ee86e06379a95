#pragma once
// Temporary files and folders are removed when a signal ends the process. The
// handler may only call async-signal-safe functions, so it reads a fixed table
// of paths that OutputSet fills while a temporary exists.

#include <string>

namespace moeplan::io {

/// Installs, for SIGINT, SIGTERM, SIGHUP and SIGPIPE, a handler that unlinks
/// every registered temporary file, removes every registered temporary folder
/// (empty once those files are gone), and then lets the signal end the process
/// as it would have (the default action, re-raised). Only signals whose
/// action is the default are taken over: one the process ignores (nohup, a
/// background job's SIGINT) stays ignored. Call once, early in main.
void remove_temporaries_on_signal();

/// Lists path for the handler before the file is created; returns the slot
/// for unregister_temporary. Throws a runtime Error when the table is full.
int register_temporary(const std::string& path);
/// Takes the entry off the list once the file is renamed or removed.
void unregister_temporary(int slot) noexcept;

/// While one lives, a handled signal is recorded, not acted on; when the last
/// one ends, the first signal recorded (if any) removes the temporaries still
/// listed and ends the process, as it would have. OutputSet::commit holds one
/// while it renames, so that a signal cannot leave some outputs new and
/// others old: it comes after the last rename. Not nested across threads.
class DeferSignals {
 public:
  DeferSignals();
  ~DeferSignals();
  DeferSignals(const DeferSignals&) = delete;
  DeferSignals& operator=(const DeferSignals&) = delete;
};

}  // namespace moeplan::io
