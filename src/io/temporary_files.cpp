#include <moeplan/io/temporary_files.hpp>

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
constexpr int kSlots = 256;
std::atomic<char*> g_paths[kSlots];
// Handlers running now: a path taken off the list is freed only when none is,
// so that a handler on another thread never reads freed memory.
std::atomic<int> g_handlers{0};
static_assert(std::atomic<char*>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

extern "C" void remove_temporaries_and_die(int signal_number) {
  g_handlers.fetch_add(1);
  const int saved_errno = errno;
  for (std::atomic<char*>& slot : g_paths)
    if (const char* path = slot.load()) ::unlink(path);
  // Then the staged folders (OutputSet::add_folder), empty now but for each
  // other: a folder inside another goes first, so passes repeat while one goes.
  for (bool removed = true; removed;) {
    removed = false;
    for (std::atomic<char*>& slot : g_paths)
      if (const char* path = slot.load()) removed = ::rmdir(path) == 0 || removed;
  }
  errno = saved_errno;
  // SA_RESETHAND restored the default action, and the signal stays blocked
  // while this handler runs: raised again, it ends the process on return,
  // with the status a parent expects from it (e.g. 143 for SIGTERM).
  ::raise(signal_number);
}

}  // namespace

void remove_temporaries_on_signal() {
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction current {};
    if (::sigaction(signal_number, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = remove_temporaries_and_die;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    ::sigaction(signal_number, &action, nullptr);
  }
}

int register_temporary(const std::string& path) {
  char* copy = ::strdup(path.c_str());
  if (copy == nullptr) throw_runtime_error(fmt::format("{}: out of memory", path));
  for (int slot = 0; slot < kSlots; ++slot) {
    char* expected = nullptr;
    if (g_paths[slot].compare_exchange_strong(expected, copy)) return slot;
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
