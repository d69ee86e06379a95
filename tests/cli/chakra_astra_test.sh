#!/usr/bin/env bash
# Chakra traces in ASTRA-sim's example layout read as ASTRA-sim runs them
# (issue 29; docs/formats.md, "What `import-chakra` reads"): sends and
# receives as separate operations (a ring allreduce of sends and receives
# alone, two ranks that each send then receive), BROADCAST and BARRIER, and
# an ALL_GATHER's comm_size read as each rank's input. Every expected time is
# derived by hand below from the fixture's durations (--comm trace) or from
# the lines of calibration/profiles/foldmoe-g5-datasheet.textproto
# (--comm model, on cluster foldmoe-g5: 2 nodes of 8 GPUs; ranks 0..7 share
# node 0). Usage: chakra_astra_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"
proto=$src/proto/chakra/et_def.proto
astra=$src/tests/data/chakra/astra
fixture() { python3 "$src/tests/cli/chakra_fixture.py" "$proto" "$astra/$1" "$tmp/$1"; }
# iteration NAME DIR COMM WANT_MS TASKS TRANSFERS COLLECTIVES: import-chakra's
# iteration_ms within 1e-9 relative of WANT_MS, and its counts.
iteration() {
  local name=$1 dir=$2 comm=$3 want=$4 tasks=$5 transfers=$6 collectives=$7
  check "$name" 0 "$bin" import-chakra "$tmp/$dir" --cluster foldmoe-g5 --profile foldmoe-g5-datasheet --comm "$comm" \
    --json
  cp "$tmp/out" "$tmp/$dir.$comm.json"
  pycheck "$name: $want ms" "$tmp/$dir.$comm.json" "$want" "$tasks" "$transfers" "$collectives" <<'PY'
import sys
from cli_check import close, done, expect, expect_close, load
r = load(sys.argv[1])
expect_close(r["iteration_ms"], float(sys.argv[2]), "iteration_ms", rel=1e-9)
for key, want in zip(("tasks", "transfers", "collectives"), sys.argv[3:6]):
    expect(r[key] == int(want), f"{key}: {r[key]}, want {want}")
done()
PY
}

# --- (a) A ring allreduce of sends and receives alone (tests/data/chakra/astra/
# ring-allreduce, in the layout of ASTRA-sim's custom ring example, which
# merging a send with its receive refused as a dependency cycle). Each rank r:
# S0 send; R1 receive, C1 reduce, S2 send; R3, C3, S4; R5, C5, S6; R7, S8;
# R9, S10; R11 (each after the one before). A send ends d after it starts; a
# receive of rank r ends at max(its own send before it, the arrival of rank
# r-1's send of the same step); reductions take c = 2 us, rank 1's c1 = 10 us.
# Trace, d = 5 us (rank r: r0 r1 r2 r3, in us):
#   S0 5 5 5 5; R1 = max(5, 5) = 5; C1 7 15 7 7; S2 12 20 12 12
#   R3 12 20 20 12 (rank 2: posted at 12, arrives at 20); C3 14 30 22 14; S4 19 35 27 19
#   R5 19 35 35 27; C5 21 45 37 29; S6 26 50 42 34
#   R7 34 50 50 42 (rank 0: posted at 26, arrives at 34); S8 39 55 55 47
#   R9 47 55 55 55; S10 52 60 60 60; R11 60 60 60 60.
# 60 us = 6 d + 3 c1: rank 1's reductions on the path of every step.
# Tasks: 6 sends and 3 reductions a rank (a receive is no task): 36; 24 transfers.
fixture ring-allreduce
iteration "ring allreduce, trace" ring-allreduce trace 0.060 36 24 0
# The cost model: each send is the intra p2p line of its pair (ranks 0..3 on
# node 0; the profile's P2P INTRA group 2: 0.015 ms + 3.9682539682539686e-08
# ms/byte = PCIe 4.0 x16 31.5 GB/s x 0.8 = 25.2e6 bytes/ms):
# 0.015 + 252000 / 25.2e6 = 0.025 ms = d. 6 x 25 + 3 x 10 = 180 us.
iteration "ring allreduce, cost model" ring-allreduce model 0.180 36 24 0

# --- (b) Two ranks that each send 252,000 bytes to the other, then receive,
# then compute 5 us. Trace: rank 0's send 3 us, rank 1's 7 us; each receive
# ends at max(3, 7) = 7 us, each compute at 12 us. Tasks: 2 sends, 2 computes.
fixture exchange
iteration "exchange, trace" exchange trace 0.012 4 2 0
# Cost model: both sends 0.025 ms (as in (a)), then 5 us: 0.030 ms.
iteration "exchange, cost model" exchange model 0.030 4 2 0

# --- (c) BROADCAST and BARRIER over 4 ranks: compute 10 us, BROADCAST of
# 2,520,000 bytes, compute 5 us, BARRIER (comm_size 0), compute 1 us.
# Trace: the broadcast ends with its slowest member (rank 0's 30 us), the
# barrier takes 2 us: 10 + 30 + 5 + 2 + 1 = 48 us. (ASTRA-sim 518bd51 replays a
# BROADCAST's duration_micros and refuses a BARRIER: Workload.cc issue_coll_comm.)
# Tasks: 3 computes a rank and the 2 collectives: 14.
fixture broadcast-barrier
iteration "broadcast and barrier, trace" broadcast-barrier trace 0.048 14 0 2
# Cost model, 4 ranks on node 0 (the intra lines of group 8 moved to 4 ranks):
# the broadcast at the all-gather line's bus bandwidth, 25.2e6 bytes/ms
# (ALLGATHER INTRA group 8: 3.472222222222222e-08 ms/byte = (7/8) / 25.2e6),
# takes S / busbw (nccl-tests doc/PERFORMANCE.md: a broadcast's busbw = algbw)
# = 2,520,000 / 25.2e6 = 0.1 ms, plus the line's 0.015 ms: 0.115 ms. The
# barrier is an allreduce of 0 bytes: the ALLREDUCE INTRA line's 0.015 ms.
# 0.010 + 0.115 + 0.005 + 0.015 + 0.001 = 0.146 ms.
iteration "broadcast and barrier, cost model" broadcast-barrier model 0.146 14 0 2

# --- (d) ASTRA-sim's all_gather 16npus_1MB microbenchmark: comm_size 1,048,576
# is each rank's input, so the cost model prices 16 x 1,048,576 = 16,777,216
# bytes of output. 16 ranks on 2 nodes of 8 with one NIC each, as the
# profile's ALLGATHER INTER line was placed (group 16, 8 ranks per node):
# 0.03 ms + 16,777,216 x 9.375e-08 ms/byte = 0.03 + 1.572864 = 1.602864 ms
# (read as the output, 0.03 + 1,048,576 x 9.375e-08 = 0.128304 ms).
fixture all-gather-16
iteration "all-gather 16 x 1 MB, cost model" all-gather-16 model 1.602864 1 0 1

summary
