#include <moeplan/io/temporary_files.hpp>

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include <moeplan/core/error.hpp>

namespace moeplan::io {
namespace {

// The handler reads these with atomic loads only (lock-free, hence
// async-signal-safe). A slot holds a malloc'd copy of the path or nullptr.
// export-chakra stages one file per rank, and a multi_rank graph reaches
// 131,072 ranks (docs/reliability.md, "Resource bounds"), so the table holds twice that: 2 MiB
// of pointers, whose pages cost nothing until a slot on them is used.
constexpr int kSlots = 1 << 18;
std::atomic<char*> g_paths[kSlots];
// Where the next search for a free slot starts: slots are taken in turn, so
// that listing n paths costs n steps, not n^2 / 2 from the first slot each time.
std::atomic<unsigned> g_cursor{0};
// Handlers running now: a path taken off the list is freed only when none is,
// so that a handler on another thread never reads freed memory.
std::atomic<int> g_handlers{0};
static_assert(std::atomic<char*>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

// Whether an output set is renaming its files into place now (DeferSignals),
// and the first signal that came meanwhile.
std::atomic<int> g_deferring{0};
std::atomic<int> g_pending{0};
static_assert(std::atomic<int>::is_always_lock_free);

// Unlinks every listed temporary, then ends the process with signal_number.
[[noreturn]] void remove_temporaries_then_die(int signal_number) {
  for (std::atomic<char*>& slot : g_paths)
    if (const char* path = slot.load()) ::unlink(path);
  // Then the staged folders (OutputSet::add_folder), empty now but for each
  // other: a folder inside another goes first, so passes repeat while one goes.
  for (bool removed = true; removed;) {
    removed = false;
    for (std::atomic<char*>& slot : g_paths)
      if (const char* path = slot.load()) removed = ::rmdir(path) == 0 || removed;
  }
  // The default action, the signal unblocked (a handler runs with it
  // blocked), then the signal again: it ends the process with the status a
  // parent expects from it (e.g. 143 for SIGTERM).
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  ::sigaction(signal_number, &fallback, nullptr);
  sigset_t only {};
  sigemptyset(&only);
  sigaddset(&only, signal_number);
  ::pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(signal_number);
  ::_exit(128 + signal_number);  // not reached
}

extern "C" void remove_temporaries_and_die(int signal_number) {
  // Counted before g_deferring is read: DeferSignals waits for a handler that
  // may have read it as zero (seq_cst, as Dekker's exclusion).
  g_handlers.fetch_add(1);
  if (g_deferring.load() > 0) {
    const int saved_errno = errno;
    int none = 0;
    g_pending.compare_exchange_strong(none, signal_number);
    g_handlers.fetch_sub(1);
    errno = saved_errno;
    return;
  }
  remove_temporaries_then_die(signal_number);
}

}  // namespace

void remove_temporaries_on_signal() {
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction current {};
    if (::sigaction(signal_number, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = remove_temporaries_and_die;
    sigemptyset(&action.sa_mask);
    // No SA_RESETHAND: a second signal while renames are deferred is deferred
    // too; the handler puts the default back itself before it re-raises.
    action.sa_flags = 0;
    ::sigaction(signal_number, &action, nullptr);
  }
}

int register_temporary(const std::string& path) {
  char* copy = ::strdup(path.c_str());
  if (copy == nullptr) throw_runtime_error(fmt::format("{}: out of memory", path));
  const unsigned start = g_cursor.fetch_add(1);
  for (unsigned k = 0; k < static_cast<unsigned>(kSlots); ++k) {
    const int slot = static_cast<int>((start + k) % kSlots);
    char* expected = nullptr;
    if (g_paths[slot].compare_exchange_strong(expected, copy)) {
      g_cursor.store(static_cast<unsigned>(slot) + 1);
      return slot;
    }
  }
  std::free(copy);
  throw_runtime_error(fmt::format("{}: more than {} temporary files at once", path, kSlots));
}

void unregister_temporary(int slot) noexcept {
  if (slot < 0 || slot >= kSlots) return;
  char* path = g_paths[slot].exchange(nullptr);
  // A handler that may have loaded the pointer is ending the process anyway.
  if (g_handlers.load() == 0) std::free(path);
}

}  // namespace moeplan::io

namespace moeplan::io {

DeferSignals::DeferSignals() {
  g_deferring.fetch_add(1);
  // A handler that read g_deferring before it rose ends the process: wait
  // here rather than rename while it unlinks.
  while (g_handlers.load() > 0) ::sched_yield();
}

DeferSignals::~DeferSignals() {
  if (g_deferring.fetch_sub(1) != 1) return;
  // A handler that read g_deferring while it was raised records its signal
  // before it leaves; wait for it, so that no signal is lost.
  while (g_handlers.load() > 0) ::sched_yield();
  if (const int signal_number = g_pending.exchange(0); signal_number != 0) {
    g_handlers.fetch_add(1);
    remove_temporaries_then_die(signal_number);
  }
}

}  // namespace moeplan::io
