#pragma once
// Progress of a long search (issue 17 item 6): the library reports work done
// to a Progress it is given (or to none); the CLI draws it. Thread-safe: the
// planners' worker threads report concurrently.

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <mutex>
#include <string>

namespace moeplan {

/// @brief Where a search reports its work: jobs announced, then done.
class Progress {
 public:
  virtual ~Progress() = default;
  /// More jobs to do (a search may announce its work in several parts).
  virtual void add_total(std::size_t jobs) = 0;
  /// Jobs finished.
  virtual void advance(std::size_t jobs = 1) = 0;
};

/// @brief A one-line bar on a terminal: done/total, percent, rate and ETA,
/// redrawn at most every 100 ms, erased when it is destroyed.
class ProgressBar final : public Progress {
 public:
  ProgressBar(std::string label, std::ostream& out);
  ~ProgressBar() override;
  void add_total(std::size_t jobs) override;
  void advance(std::size_t jobs = 1) override;
  /// The line as drawn now (for tests): e.g. "plan: 120/480 (25%) 60.0/s, ETA 6.0 s".
  std::string line(double elapsed_s) const;

 private:
  void draw(bool force);
  std::string label_;
  std::ostream& out_;
  std::mutex mutex_;
  std::size_t total_ = 0;
  std::size_t done_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point drawn_{};
  bool visible_ = false;
};

}  // namespace moeplan
