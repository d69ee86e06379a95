#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <moeplan/core/parallel.hpp>

using namespace moeplan;

namespace {

// A thread starter that starts `allowed` threads, then fails as std::thread
// does when the process may start no more (EAGAIN: std::system_error).
struct LimitedStarter {
  unsigned allowed;
  std::atomic<unsigned> started{0};
  std::atomic<unsigned> refused{0};
  ThreadStarter starter() {
    return [this](std::function<void()> work) {
      if (started.load() >= allowed) {
        ++refused;
        throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                                "thread creation refused (test)");
      }
      ++started;
      return std::thread(std::move(work));
    };
  }
};

// Each index writes its own slot: i * i, so the expected result is known
// without running anything: {0, 1, 4, 9, ...}.
std::vector<long> squares(std::size_t n) {
  std::vector<long> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<long>(i * i);
  return out;
}

}  // namespace

TEST_CASE("parallel_for runs every index once on the threads that started when thread creation fails",
          "[core][parallel]") {
  const std::size_t n = 1000;
  for (unsigned allowed : {0u, 1u, 3u}) {
    INFO("threads the starter allows besides the caller: " << allowed);
    LimitedStarter limit{allowed};
    std::vector<long> out(n, -1);
    std::vector<std::atomic<int>> calls(n);
    // Before the fix a failed start escaped parallel_for (with a started
    // thread still joinable: std::terminate, exit 134).
    unsigned worked = 0;
    REQUIRE_NOTHROW(worked = parallel_for(
                        n, 8,
                        [&](std::size_t i) {
                          ++calls[i];
                          out[i] = static_cast<long>(i * i);
                        },
                        limit.starter()));
    CHECK(out == squares(n));
    for (std::size_t i = 0; i < n; ++i) CHECK(calls[i].load() == 1);
    // The caller plus the threads that started; one refusal stops further tries.
    CHECK(worked == allowed + 1);
    CHECK(limit.started.load() == allowed);
    CHECK(limit.refused.load() == 1);
  }
}

TEST_CASE("parallel_for rethrows the body's lowest failing index after a refused thread start", "[core][parallel]") {
  LimitedStarter limit{1};
  std::atomic<int> ran{0};
  try {
    parallel_for(
        100, 4,
        [&](std::size_t i) {
          ++ran;
          if (i == 7) throw std::runtime_error("index 7");
        },
        limit.starter());
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "index 7");
  }
  CHECK(ran.load() >= 8);  // indices 0..7 were taken before the failure stopped the loop
}

TEST_CASE("parallel_for returns the threads that worked, never more than the indices", "[core][parallel]") {
  std::vector<int> out(3, 0);
  CHECK(parallel_for(3, 16, [&](std::size_t i) { out[i] = 1; }) == 3);
  CHECK(out == std::vector<int>{1, 1, 1});
  CHECK(parallel_for(0, 4, [&](std::size_t) { FAIL("no index"); }) == 1);
}

TEST_CASE("ThreadsStarted keeps the parallel step that fell shortest", "[core][parallel]") {
  ThreadsStarted t;
  CHECK(t.started == t.wanted);
  t.record(8, 3, 3);  // 3 jobs: 3 threads wanted, all started
  CHECK(t.started == t.wanted);
  t.record(8, 100, 2);  // 8 wanted, 2 started
  CHECK(t.wanted == 8);
  CHECK(t.started == 2);
  t.record(4, 100, 3);  // short by 1 only: the worse step stays
  CHECK(t.wanted == 8);
  CHECK(t.started == 2);
}
