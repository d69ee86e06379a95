#pragma once
// A parallel loop whose results do not depend on the thread count: each index
// writes only its own slot, so callers collect results by index and output
// them in order.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace moeplan {

/// Starts one worker thread. parallel_for's default is std::thread itself;
/// tests pass one that fails (std::system_error, as std::thread throws when
/// the process may start no more threads).
using ThreadStarter = std::function<std::thread(std::function<void()>)>;

inline std::thread start_thread(std::function<void()> work) { return std::thread(std::move(work)); }

/// Calls body(i) for i in [0, n) on up to `threads` threads (at least 1: the
/// calling thread works too). The workers take indices from one shared counter,
/// so a thread that cannot start (std::thread throws std::system_error when
/// the process is out of threads) loses no work: the indices run on the
/// threads that did start, at the least the caller, and the results are the
/// same. The first exception thrown by body (lowest index among those seen) is
/// rethrown after all threads stop. Returns the number of threads that worked,
/// the caller included.
template <typename Body>
unsigned parallel_for(std::size_t n, unsigned threads, Body&& body, const ThreadStarter& start = start_thread) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::size_t failed_index = n;
  std::exception_ptr error;
  auto worker = [&] {
    while (!failed.load()) {
      const std::size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        body(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (i < failed_index) {
          failed_index = i;
          error = std::current_exception();
        }
        failed = true;
      }
    }
  };
  const unsigned count = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::max<std::size_t>(n, 1))));
  std::vector<std::thread> pool;
  pool.reserve(count - 1);  // no reallocation below: a started thread is never lost unjoined
  for (unsigned t = 1; t < count; ++t) {
    try {
      std::thread thread = start(worker);
      if (!thread.joinable()) break;
      pool.push_back(std::move(thread));
    } catch (...) {
      break;  // no more threads: the ones that started, and this one, do the rest
    }
  }
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return static_cast<unsigned>(pool.size()) + 1;
}

/// @brief The threads a search's parallel_for calls could start: of the call
/// that fell shortest, the threads it wanted (its threads, at most its jobs)
/// and those that worked. started < wanted when the system refused some (a
/// caller says so: no work is lost).
struct ThreadsStarted {
  unsigned wanted = 1;
  unsigned started = 1;

  /// One parallel_for of `jobs` jobs on `threads` threads that returned `started_now`.
  void record(unsigned threads, std::size_t jobs, unsigned started_now) {
    const unsigned want =
        std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::max<std::size_t>(jobs, 1))));
    if (want - std::min(want, started_now) > wanted - started) {
      wanted = want;
      started = started_now;
    }
  }
};

}  // namespace moeplan
