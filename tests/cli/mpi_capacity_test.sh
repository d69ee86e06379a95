#!/usr/bin/env bash
# Capacity on MPI (issue 17 item 7 applied to item 4): GPU counts are sharded
# over ranks (count i on rank i mod N) and rank 0 writes the table; the JSON
# and the CSV must be byte-identical to one process's at 2 and 3 ranks, and a
# bad option must fail the same way. Usage: mpi_capacity_test.sh MOEPLAN_BINARY
# SOURCE_DIR. Exit 77 (skipped) without mpirun or in a build without MPI.
set -u
bin=$1
src=$2
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$src/tests/cli/mpi_run.sh"
status=0
# Three counts (8, 16, 32 GPUs): at 2 ranks rank 1 computes one of them, at 3 one each.
args=(capacity gpt-moe-s --cluster dgx-h100 --gpus 8..32 --global-batch 64 --tokens 100B --days 30 --threads 1)
"$bin" "${args[@]}" --json -o "$tmp/cap.1.csv" >"$tmp/cap.1.json" 2>"$tmp/err" ||
  { echo "FAIL: one process: $(cat "$tmp/err")"; exit 1; }
for n in 2 3; do
  if ! mpi "$n" "$bin" "${args[@]}" --json -o "$tmp/cap.$n.csv" >"$tmp/cap.$n.json" 2>"$tmp/err"; then
    if grep -q "built without MPI" "$tmp/err"; then echo "moeplan built without MPI: skipped"; exit 77; fi
    echo "FAIL: mpirun -n $n capacity:"; cat "$tmp/err"; status=1; continue
  fi
  cmp "$tmp/cap.1.csv" "$tmp/cap.$n.csv" || { echo "FAIL: capacity CSV differs at $n ranks"; status=1; }
  cmp "$tmp/cap.1.json" "$tmp/cap.$n.json" || { echo "FAIL: capacity JSON differs at $n ranks"; status=1; }
done
[[ $(wc -l <"$tmp/cap.1.csv") == 4 ]] || { echo "FAIL: capacity CSV has not 3 rows"; status=1; }
# A bad option fails every run the same way: exit 2 and one line.
"$bin" capacity gpt-moe-s --cluster dgx-h100 --days 30 >/dev/null 2>"$tmp/bad1.err"
want=$?
mpi 2 "$bin" capacity gpt-moe-s --cluster dgx-h100 --days 30 >/dev/null 2>"$tmp/bad2.err"
[[ $want == 2 ]] || { echo "FAIL: --days without --tokens exited $want, wanted 2"; status=1; }
grep "^moeplan: error:" "$tmp/bad1.err" >"$tmp/bad1.line"
grep "^moeplan: error:" "$tmp/bad2.err" >"$tmp/bad2.line"
[[ -s $tmp/bad1.line ]] && cmp -s "$tmp/bad1.line" "$tmp/bad2.line" ||
  { echo "FAIL: the bad option's error differs under mpirun:"; cat "$tmp/bad1.err" "$tmp/bad2.err"; status=1; }
[[ $status == 0 ]] && echo "capacity under mpirun -n 2 and 3: the same bytes as one process"
exit $status
