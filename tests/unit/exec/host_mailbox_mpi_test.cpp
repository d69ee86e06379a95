// The host executor's control channel (src/exec/host_mailbox.hpp) between real
// processes: run under `mpirun -n N` (N >= 2) by tests/cli/mpi_mailbox_test.sh.
// Not Catch2: every process runs the same checks in lock step and process 0
// reports; exit 0 when every check held on every process, 1 otherwise.

#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include <moeplan/core/error.hpp>

#include "host_mailbox.hpp"

namespace {

int failures = 0;
int me = 0;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "FAIL (process %d): %s\n", me, what.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  {
    constexpr std::size_t kCapacity = 4;
    moeplan::exec::HostMailboxes boxes(MPI_COMM_WORLD, kCapacity);

    // 1. Every other process sends 3 messages to process 0, in order; process 0
    // reads 3 x (size - 1), and each sender's come in the order it sent them
    // (expected by hand: task = 10 * sender + k, k = 0, 1, 2). Capacity 4 is
    // less than the 3 x (size - 1) >= 3 sent: the senders wait for the reader
    // between rounds (a barrier per round), so the ring wraps at least once
    // at size 3.
    for (int k = 0; k < 3; ++k) {
      if (me != 0) boxes.post(0, {me, 10 * me + k, k, -k});
      if (me == 0) {
        int last[64];
        for (int p = 0; p < 64; ++p) last[p] = -1;
        for (int m = 0; m < size - 1; ++m) {
          const std::optional<moeplan::exec::ControlMessage> got = boxes.receive();
          expect(got.has_value(), "a message arrives");
          if (!got) break;
          const auto from = static_cast<int>(got->resource);
          expect(from >= 1 && from < size, "the sender is a process");
          expect(got->task == 10 * from + k && got->begin_ns == k && got->end_ns == -k,
                 "round " + std::to_string(k) + ": process " + std::to_string(from) + "'s message intact");
          expect(last[from] < k, "one message per sender and round");
          last[from] = k;
        }
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }

    // 2. A receiver blocked with nothing to read wakes on another thread's post
    // (process 1 posts to itself here: the wait is on its own mailbox).
    if (me == 1) {
      std::thread later([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        boxes.post(1, {7, 8, 9, 10});
      });
      const auto got = boxes.receive();
      later.join();
      expect(got && got->resource == 7 && got->task == 8 && got->begin_ns == 9 && got->end_ns == 10,
             "a blocked receive gets a message posted later");
    }

    // 3. A full mailbox refuses the next message with an error naming it,
    // and loses none of those it holds.
    if (me == 1) {
      for (int k = 0; k < static_cast<int>(kCapacity); ++k) boxes.post(1, {0, k, 0, 0});
      bool refused = false;
      try {
        boxes.post(1, {0, 99, 0, 0});
      } catch (const moeplan::Error& e) {
        refused = std::string(e.what()).find("mailbox of process 1 is full (4 unread messages)") != std::string::npos;
      }
      expect(refused, "a fifth message to a mailbox of 4 is refused by name");
      for (int k = 0; k < static_cast<int>(kCapacity); ++k) {
        const auto got = boxes.receive();
        expect(got && got->task == k, "the held messages come out in order after a refusal");
      }
    }

    // 4. interrupt() ends a blocked receive with nothing; reset() lets messages through again.
    if (me == 0) {
      std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        boxes.interrupt();
      });
      expect(!boxes.receive().has_value(), "an interrupted receive returns nothing");
      stopper.join();
      expect(!boxes.receive().has_value(), "the interruption lasts until reset");
      boxes.reset();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 1) boxes.post(0, {1, 2, 3, 4});
    if (me == 0) {
      const auto got = boxes.receive();
      expect(got && got->task == 2, "after reset a message is read again");
    }
  }  // the destructor is collective
  int all = failures;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) std::printf("host mailbox over %d processes: %s\n", size, all == 0 ? "all checks passed" : "FAILED");
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
