#pragma once
// Work spread over the processes of an MPI run (issue 17 item 7): item i is
// computed by rank i mod size, and rank 0 gathers every item's result, in
// item order, so that what it writes is byte-identical to a one-process run.
// Without mpirun (or in a build without MPI) there is one process, rank 0,
// and the same code path runs.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace moeplan::dist {

/// @brief This process's share of an MPI run; initialises MPI when started by
/// mpirun (and built with it) and finalises it on destruction. One per process.
class Shard {
 public:
  Shard();
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool mine(std::size_t item) const { return item % static_cast<std::size_t>(size_) == static_cast<std::size_t>(rank_); }

  /// Rank 0: every item's text, index = item, each computed by its rank's
  /// `texts[i]` (entries of other ranks' items empty on input). Other ranks:
  /// send theirs and get an empty vector. Every rank must call it once per
  /// gather, with the same n. Runtime Error when MPI fails.
  std::vector<std::string> gather(std::vector<std::string> texts) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  bool initialised_ = false;
};

}  // namespace moeplan::dist
