#!/usr/bin/env bash
# sweep: the same CSV at any thread count, rows = simulate of the same point,
# the summary = the rows' means; --threads capped and refused threads; grids
# too large to expand (--max-points, --max-memory); axis values that are wrong
# named where they are. Usage: sweep_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"

# sweep: same CSV bytes whatever the thread count; JSON summary per schedule.
check "sweep 1 thread" 0 "$bin" sweep "$src/tests/data/sweeps/small-fsmoe.textproto" --threads 1 -o "$tmp/s1.csv"
check "sweep 2 threads" 0 "$bin" sweep "$src/tests/data/sweeps/small-fsmoe.textproto" --threads 2 -o "$tmp/s2.csv" --json
cmp -s "$tmp/s1.csv" "$tmp/s2.csv" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL sweep differs across threads"; }
[[ $(wc -l <"$tmp/s1.csv") == $((1 + 8 * 6)) ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL sweep rows"; }
pycheck "sweep rows = simulate of the same point; summary = the rows' means" "$tmp/s1.csv" "$tmp/out" <<'PY'
# Each grid point is the base scenario with its axis values as --set overrides
# (an axis without a field carries "field=value;..." pairs).
import csv
from cli_check import *
rows = list(csv.DictReader(open(sys.argv[1])))
points = {}
for row in rows:
    points.setdefault(row["point"], []).append(row)
expect(len(points) == 8, f"{len(points)} points")
for point, point_rows in points.items():
    sets = []
    for column in ("workload.micro_batch_size", "model.d_model", "axis2"):
        value = point_rows[0][column]
        pairs = value.split(";") if column.startswith("axis") else [f"{column}={value}"]
        for pair in pairs:
            sets += ["--set", pair]
    sim = {e["schedule"]: e for e in moeplan("simulate", point_rows[0]["scenario"], "--schedule", "all", *sets)}
    for row in point_rows:
        e = sim[row["schedule"]]
        what = f"point {point} {row['schedule']}"
        expect(int(row["degree"]) == e["degree"] and int(row["tasks"]) == e["tasks"], f"{what} degree/tasks")
        for key in ("iteration_ms", "forward_ms", "backward_ms", "compute_ms", "comm_ms", "exposed_comm_ms", "bubble_ms"):
            expect_close(float(row[key]), e[key], f"{what} {key}")
        expect_close(float(row["speedup_vs_none"]), sim["none"]["iteration_ms"] / e["iteration_ms"], f"{what} vs none")
        expect_close(float(row["speedup_vs_tutel"]), sim["tutel"]["iteration_ms"] / e["iteration_ms"], f"{what} vs tutel")
summary = load(sys.argv[2])
expect([s["schedule"] for s in summary] == [r["schedule"] for r in points["0"]], "summary order")
for s in summary:
    mine = [r for r in rows if r["schedule"] == s["schedule"]]
    vs_none = [float(r["speedup_vs_none"]) for r in mine]
    expect(s["points"] == len(mine) == 8, f"{s['schedule']} points {s['points']}")
    expect_close(s["mean_speedup_vs_none"], sum(vs_none) / 8, f"{s['schedule']} mean vs none", 1e-9)
    expect_close(s["geomean_speedup_vs_none"], math.exp(sum(map(math.log, vs_none)) / 8), f"{s['schedule']} geomean", 1e-9)
    expect_close(s["mean_speedup_vs_tutel"], sum(float(r["speedup_vs_tutel"]) for r in mine) / 8, f"{s['schedule']} vs tutel", 1e-9)
done()
PY
check "sweep validates" 0 "$bin" validate fsmoe-table4

# Issue 14, item 1: --threads is capped at the hardware threads (said on
# stderr); a thread the system refuses to start costs no work: the threads
# that started (at least the calling one) do it, and the output is the same.
# Before the fix: --threads 100000 started one thread per point, and a refused
# start escaped parallel_for (exit 1, or std::terminate, exit 134, when other
# threads were running).
check "sweep --threads 100000" 0 "$bin" sweep "$src/tests/data/sweeps/small-fsmoe.textproto" --threads 100000 -o "$tmp/s-many.csv"
grep -q "^moeplan: note: --threads 100000 capped at [0-9]*, the hardware threads of this machine$" "$tmp/err" &&
  pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL sweep --threads 100000: no cap note:"; cat "$tmp/err"; }
cmp -s "$tmp/s1.csv" "$tmp/s-many.csv" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL sweep --threads 100000 differs"; }
# One process allowed (RLIMIT_NPROC): no second thread can start. Root ignores
# the limit, so as root the run is made as user nobody.
as_limited_prefix
if [[ ${#as_limited[@]} -gt 0 ]]; then
  mkdir -p "$tmp/limited" && chmod 777 "$tmp/limited" && chmod o+x "$tmp"
  # LeakSanitizer's exit check stops the world from a thread of its own, which
  # this limit forbids: leaks are checked by every other test of the ASan run.
  check "sweep with no thread to spare" 0 "${as_limited[@]}" env ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    bash -c 'ulimit -u 1 && exec "$0" "$@"' "$bin" sweep \
    "$src/tests/data/sweeps/small-fsmoe.textproto" --threads 2 -o "$tmp/limited/s.csv"
  cmp -s "$tmp/s1.csv" "$tmp/limited/s.csv" && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL sweep with no thread to spare: CSV differs from --threads 1"; }
else
  echo "skip: sweep with no thread to spare (root without runuser or user nobody)"
fi

# Issue 14, item 4: a 30-line sweep of 8 axes x 100 values (10^16 points)
# reached 11-16 GB within 60 s. Now its size is counted, not expanded, and it
# is refused at once under a 1 GiB address-space limit (ulimit -v, KiB).
mkdir -p "$tmp/i4"
{
  echo '# proto-message: Sweep'
  echo 'name: "huge" scenarios: "fsmoe-table4-testbed-b"'
  for a in 0 1 2 3 4 5 6 7; do
    printf 'axes { field: "workload.seq_len%s"' "$a"
    for v in $(seq 1 100); do printf ' values: "%s"' "$v"; done
    echo ' }'
  done
} >"$tmp/i4/huge.textproto"
# AddressSanitizer reserves terabytes of address space: no ulimit -v under it.
vlimit=1048576
ldd "$bin" 2>/dev/null | grep -q libasan && vlimit=unlimited
for cmd in validate sweep; do
  check "$cmd of a 10^16-point sweep" 2 bash -c 'ulimit -v "$1"; shift; exec timeout 20 "$@"' _ "$vlimit" "$bin" "$cmd" "$tmp/i4/huge.textproto"
  expect_err "$cmd of a 10^16-point sweep" "axes: the grid has 10000000000000000 points, more than the 16384 allowed"
done
# --max-points: small-fsmoe has 2 x 2 x 2 = 8 points.
check "sweep --max-points below the grid" 2 "$bin" sweep "$src/tests/data/sweeps/small-fsmoe.textproto" --max-points 7 -o "$tmp/i4/s.csv"
expect_err "sweep --max-points below the grid" "the grid has 8 points, more than the 7 allowed"
check "sweep --max-points at the grid" 0 "$bin" sweep "$src/tests/data/sweeps/small-fsmoe.textproto" --max-points 8 -o "$tmp/i4/s.csv"
[[ $(grep -c '' "$tmp/i4/s.csv") -gt 8 ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL sweep --max-points 8 rows"; }
# A point's task graph past --max-memory fails the sweep (simulate_test.sh has the estimate by hand).
printf '# proto-message: Sweep\nname: "b" scenarios: "fsmoe-table4-testbed-b"\naxes { field: "workload.global_batch_size" values: "4096" }\n' >"$tmp/i4/batch.textproto"
check "sweep past --max-memory" 2 "$bin" sweep "$tmp/i4/batch.textproto" --max-memory 0.001 -o "$tmp/i4/s2.csv"
expect_err "sweep past --max-memory" "the task graph would have"

# Errors point at the place that is wrong (issue 14 item 8).
mkdir -p "$tmp/i8"
cat >"$tmp/i8/sweep.textproto" <<SWEEP
# proto-message: Sweep
name: "bad-axis"
scenarios: "fsmoe-table4-testbed-b"
axes { field: "workload.micro_batch_size" values: "1" }
axes {
  field: "model.d_model"
  values: "1024"
  values: "abc"
  values: "-8"
}
SWEEP
sed '/values: "abc"/d' "$tmp/i8/sweep.textproto" >"$tmp/i8/sweep2.textproto"
check "sweep axis value not an integer" 2 "$bin" sweep "$tmp/i8/sweep.textproto" -o "$tmp/i8/s.csv"
expect_err "sweep axis value not an integer" "sweep.textproto:8:3: axes[1].values[1]: model.d_model: expected an integer"
check "validate sweep axis value" 2 "$bin" validate "$tmp/i8/sweep.textproto"
expect_err "validate sweep axis value" "sweep.textproto:8:3: axes[1].values[1]: model.d_model: expected an integer"
check "sweep axis value bad in the model" 2 "$bin" sweep "$tmp/i8/sweep2.textproto" -o "$tmp/i8/s.csv"
expect_err "sweep axis value bad in the model" "sweep2.textproto:8:3: axes[1].values[1]: model.d_model=-8 makes the scenario invalid"

# Issue 28: a NUL byte in a sweep's axis value (text format's "\0") or in a
# scenario's set: was cut or written into the CSV; it is refused at its field.
mkdir -p "$tmp/i28"
cat >"$tmp/i28/nul.textproto" <<'EOF'
# proto-message: Sweep
name: "nul"
scenarios: "fsmoe-table4-testbed-b"
axes { field: "model.name" values: "a\0b" }
EOF
check "sweep axis value with a NUL byte" 2 "$bin" sweep "$tmp/i28/nul.textproto" -o "$tmp/i28/nul.csv"
expect_err "sweep axis value with a NUL byte" "nul.textproto:4:28: axes[0].values[0]: model.name: the value holds a NUL byte"
is_true "no CSV from the NUL sweep" test ! -e "$tmp/i28/nul.csv"
{ cat "$src/scenarios/fsmoe-table4-testbed-b.textproto"; echo 'set: "workload.seq_len=2048\0garbage"'; } >"$tmp/i28/s.textproto"
check "scenario set: with a NUL byte" 2 "$bin" validate "$tmp/i28/s.textproto"
# The appended line is the file's last, and its set: entry follows the scenario's own.
sets=$(grep -c '^set:' "$src/scenarios/fsmoe-table4-testbed-b.textproto")
expect_err "scenario set: with a NUL byte" \
  "s.textproto:$(wc -l <"$tmp/i28/s.textproto"):1: set[$sets]: the value holds a NUL byte"
# An all-reduce chunk of 1 byte made 12.8 million tasks (FlowMoE's own search starts at 128 KiB).
check "schedule.ar_chunk_bytes=1" 2 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --set schedule.ar_chunk_bytes=1
expect_err "schedule.ar_chunk_bytes=1" "schedule.ar_chunk_bytes: 1 bytes; an all-reduce chunk is at least 1024 bytes"

summary
