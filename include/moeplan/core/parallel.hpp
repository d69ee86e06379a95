#pragma once
// A parallel loop whose results do not depend on the thread count: each index
// writes only its own slot, so callers collect results by index and output
// them in order.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace moeplan {

/// Calls body(i) for i in [0, n) on `threads` threads (at least 1). The first
/// exception thrown (lowest index among those seen) is rethrown after all threads stop.
template <typename Body>
void parallel_for(std::size_t n, unsigned threads, Body&& body) {
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
  for (unsigned t = 1; t < count; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace moeplan
