#!/usr/bin/env bash
# Sweeps on MPI (issue 17 item 7): the same sweep run as one process and under
# mpirun with 2 and 3 ranks (points sharded i mod ranks, gathered on rank 0)
# must write the same CSV and print the same JSON, byte for byte; a sweep with
# a bad point fails the same way (exit code and message) however it is run.
# Usage: mpi_sweep_test.sh MOEPLAN_BINARY SOURCE_DIR. Exit 77 (skipped) without
# mpirun or in a build without MPI.
set -u
bin=$1
src=$2
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$src/tests/cli/mpi_run.sh"
status=0
for sweep in small-fsmoe small-mixed; do
  file=$src/tests/data/sweeps/$sweep.textproto
  "$bin" sweep "$file" --json -o "$tmp/$sweep.1.csv" >"$tmp/$sweep.1.json" 2>"$tmp/err" ||
    { echo "FAIL: one process: $(cat "$tmp/err")"; exit 1; }
  for n in 2 3; do
    if ! mpi "$n" "$bin" sweep "$file" --json -o "$tmp/$sweep.$n.csv" >"$tmp/$sweep.$n.json" 2>"$tmp/err"; then
      if grep -q "built without MPI" "$tmp/err"; then echo "moeplan built without MPI: skipped"; exit 77; fi
      echo "FAIL: mpirun -n $n sweep $sweep:"; cat "$tmp/err"; status=1; continue
    fi
    cmp "$tmp/$sweep.1.csv" "$tmp/$sweep.$n.csv" || { echo "FAIL: $sweep CSV differs at $n ranks"; status=1; }
    cmp "$tmp/$sweep.1.json" "$tmp/$sweep.$n.json" || { echo "FAIL: $sweep JSON differs at $n ranks"; status=1; }
  done
  [[ $(wc -l <"$tmp/$sweep.1.csv") -gt 4 ]] || { echo "FAIL: $sweep CSV has no rows"; status=1; }
done
# A point that fails (d_model 7 is not divisible by the heads) fails every run the same way.
cat >"$tmp/bad.textproto" <<SWEEP
# proto-message: Sweep
name: "bad-point"
scenarios: "fsmoe-table4-testbed-b"
axes { field: "model.d_model" values: "1024" values: "2048" values: "4096" values: "1024" }
axes { field: "workload.micro_batch_size" values: "1" values: "0" }
SWEEP
"$bin" sweep "$tmp/bad.textproto" -o "$tmp/bad1.csv" >/dev/null 2>"$tmp/bad1.err"
want=$?
mpi 2 "$bin" sweep "$tmp/bad.textproto" -o "$tmp/bad2.csv" >/dev/null 2>"$tmp/bad2.err"
got=$?
[[ $want == 2 ]] || { echo "FAIL: the bad sweep exited $want, wanted 2"; status=1; }
# mpirun reports a failed rank with its own exit code; moeplan's line must be the same.
grep "^moeplan: error:" "$tmp/bad1.err" >"$tmp/bad1.line"
grep "^moeplan: error:" "$tmp/bad2.err" >"$tmp/bad2.line"
[[ -s $tmp/bad1.line ]] && cmp -s "$tmp/bad1.line" "$tmp/bad2.line" ||
  { echo "FAIL: the bad sweep's error differs under mpirun (exit $got):"; cat "$tmp/bad1.err" "$tmp/bad2.err"; status=1; }
[[ ! -e $tmp/bad1.csv && ! -e $tmp/bad2.csv ]] || { echo "FAIL: a failed sweep wrote its CSV"; status=1; }
# A point that fails while it is computed (point 1: rank 1 of 2), past --max-memory: rank 0 reports
# rank 1's error, the same line and exit code as one process.
cat >"$tmp/late.textproto" <<SWEEP
# proto-message: Sweep
name: "late-failure"
scenarios: "foldmoe-gpt-moe-s-4k"
axes { field: "model.num_layers" values: "2" values: "1000" }
SWEEP
"$bin" sweep "$tmp/late.textproto" --max-memory 0.002 -o "$tmp/late1.csv" >/dev/null 2>"$tmp/late1.err"
want=$?
mpi 2 "$bin" sweep "$tmp/late.textproto" --max-memory 0.002 -o "$tmp/late2.csv" >/dev/null 2>"$tmp/late2.err"
grep "^moeplan: error:" "$tmp/late1.err" >"$tmp/late1.line"
grep "^moeplan: error:" "$tmp/late2.err" >"$tmp/late2.line"
[[ $want == 2 ]] && grep -q "task graph would have" "$tmp/late1.line" && cmp -s "$tmp/late1.line" "$tmp/late2.line" ||
  { echo "FAIL: a point failing on rank 1 is not reported as one process reports it:"; cat "$tmp/late1.err" "$tmp/late2.err"; status=1; }
[[ $status == 0 ]] && echo "sweeps under mpirun -n 2 and 3: the one-process output, byte for byte"
exit $status
