#!/usr/bin/env bash
# CLI contract tests (docs/cli.md): exit codes, one-line errors, --help and
# --version, JSON on stdout only; and the values commands print, checked against
# hand arithmetic or against `simulate` of the same scenario (plan, sweep and
# simulate --schedule all must agree with it). Usage: cli_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # check NAME EXPECTED_RC COMMAND...
  local name=$1 want=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [[ $rc == "$want" ]]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL $name: exit $rc, wanted $want"; head -3 "$tmp/err"; fi
}
expect_err() {  # expect_err NAME SUBSTRING: the last command's stderr is one line holding SUBSTRING
  local lines
  lines=$(wc -l <"$tmp/err")
  if [[ $lines == 1 ]] && grep -qF -- "$2" "$tmp/err"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL $1: stderr was:"; cat "$tmp/err"; fi
}
# Value checks in Python: pycheck NAME [ARGS...] <<'PY' ... PY passes when the
# script exits 0. Scripts import cli_check (below): moeplan(...) runs the binary
# with --json and parses the answer, expect() collects failures, done() reports.
export MOEPLAN_BIN=$bin PYTHONPATH=$tmp
cat >"$tmp/cli_check.py" <<'PY'
import json, math, os, subprocess, sys

failures = []


def moeplan(*args):
    r = subprocess.run([os.environ["MOEPLAN_BIN"], *args, "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"moeplan {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def load(path):
    with open(path) as f:
        return json.load(f)


def close(a, b, rel=1e-12):
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def expect(ok, what):
    if not ok:
        failures.append(what)


def expect_close(got, want, what, rel=1e-12):
    expect(close(got, want, rel), f"{what}: got {got}, want {want}")


def same_evaluation(got, want, what):
    # Two evaluations of one schedule: the same numbers, whichever command made them.
    for key in ("schedule", "degree", "tasks"):
        expect(got[key] == want[key], f"{what}: {key} {got[key]} vs {want[key]}")
    for key in ("iteration_ms", "forward_ms", "backward_ms", "compute_ms", "comm_ms", "exposed_comm_ms", "bubble_ms"):
        expect_close(got[key], want[key], f"{what}: {key}")


def done():
    if failures:
        print("\n".join(failures[:12]))
        sys.exit(1)
PY
pycheck() {  # pycheck NAME [ARGS...] < SCRIPT
  local name=$1
  shift
  if python3 - "$@" >"$tmp/py" 2>&1; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL $name:"; head -12 "$tmp/py"; fi
}

check version 0 "$bin" --version
grep -qE '^moeplan [0-9]+\.[0-9]+\.[0-9]+$' "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL version text"; }
check help 0 "$bin" --help
for cmd in validate cost fit datasheet-profile simulate plan sweep mappings bench calibrate; do
  check "help $cmd" 0 "$bin" "$cmd" --help
  grep -q "Usage" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL help $cmd text"; }
done
check "no command" 2 "$bin"
expect_err "no command" "moeplan: error: no command given (commands: validate, cost, fit, datasheet-profile, simulate, plan, sweep, mappings, bench, calibrate, execute, validate-hw"
# Issue 14 item 8d: it said "A subcommand is required".
check "unknown command" 2 "$bin" frobnicate
expect_err "unknown command" "moeplan: error: unknown command 'frobnicate' (commands: validate, cost, fit, datasheet-profile, simulate, plan, sweep, mappings, bench, calibrate, execute, validate-hw"
check "unknown command after an option" 2 "$bin" frobnicate --json
expect_err "unknown command after an option" "moeplan: error: unknown command 'frobnicate' (commands: validate,"
check "unknown flag" 2 "$bin" validate --frob models/gpt-moe-m.textproto
expect_err "unknown flag" "moeplan: error:"

# Bundled default scenario and every bundled file validate.
check "default scenario" 0 "$bin" validate foldmoe-gpt-moe-m-16k
check "bundled files" 0 "$bin" validate "$src"/models/*.textproto "$src"/scenarios/clusters/*.textproto "$src"/scenarios/*.textproto
check "json" 0 "$bin" validate mixtral-8x22b --json
[[ ! -s $tmp/err ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL json wrote to stderr"; }
pycheck "validate --json counts Mixtral-8x22B's parameters" "$tmp/out" <<'PY'
# models/mixtral-8x22b.textproto: 56 layers, d 6144, 48 heads and 8 KV heads of
# 128, 8 SwiGLU experts of 16384, top-2, vocabulary 32000 untied, RMSNorm.
# Per layer: Q, O 2 d h k; K, V 2 d g k; router d E; two norms 2 d; experts 3 d H
# each. Mistral publishes 141B total, 39B active.
from cli_check import *
[r] = load(sys.argv[1])
d, layers, h, g, k, hidden, experts, top_k, vocab = 6144, 56, 48, 8, 128, 16384, 8, 2, 32000
shared = 2 * d * h * k + 2 * d * g * k + d * experts + 2 * d
expert = 3 * d * hidden
outside = 2 * vocab * d + d  # untied embeddings and the final norm
expect(r["ok"] and r["kind"] == "model", f"not a valid model: {r}")
expect(r["params_total"] == layers * (shared + experts * expert) + outside, f"params_total {r['params_total']}")
expect(r["params_active"] == layers * (shared + top_k * expert) + outside, f"params_active {r['params_active']}")
done()
PY

# Every malformed fixture: exit 2, one line naming the file and the field.
while IFS='|' read -r file expected; do
  [[ -z $file || $file == \#* ]] && continue
  check "bad $file" 2 "$bin" validate "$src/tests/data/bad/$file"
  expect_err "bad $file" "$expected"
done <"$src/tests/data/bad/EXPECTED"
check "bad json" 2 "$bin" validate "$src/tests/data/bad/models/negative_size.textproto" --json
grep -q '"ok": false' "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL bad json body"; }
check "missing file" 2 "$bin" validate /nonexistent/file.textproto
expect_err "missing file" "no such file"
# Sizes that would overflow 64-bit products or exhaust memory are refused up front.
for set in parallelism.tp=4611686018427387904 model.num_layers=100000000 cluster.num_nodes=4611686018427387904 workload.global_batch_size=16000000; do
  check "huge --set $set" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set "$set"
  expect_err "huge --set $set" "--set: "
done
check "bad --set" 2 "$bin" validate foldmoe-gpt-moe-m-16k --set parallelism.nope=1
expect_err "bad --set" "--set: parallelism.nope: unknown field"

# cost: the FSMoE Testbed-A AlltoAll line, 0.287 + (S/4) * 2.3201e-6 ms for any S bytes.
for size in 0 4 1048576 33554432 1000000007; do
  check "cost a2a $size" 0 "$bin" cost --profile fsmoe-testbed-a --op a2a --link inter --size "$size" --json
  want=$(awk -v s="$size" 'BEGIN { printf "%.15g", 0.287 + (s / 4) * 2.3201e-6 }')
  got=$(sed -n 's/.*"time_ms": *\([0-9.e+-]*\).*/\1/p' "$tmp/out" | tr -d '\n')
  awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 1e-9 * (b > 1 ? b : 1)) }' \
    && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL cost a2a $size: got '$got' want $want"; }
  grep -q '"op": "a2a"' "$tmp/out" && grep -q '"link": "inter"' "$tmp/out" && grep -q '"group": 6' "$tmp/out" \
    && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL cost json keys"; }
done
# cost of a placed group on DGX H100 (datasheet: 8 NICs x 50 GB/s x 0.8 per node,
# inter startup 0.03 ms). AllReduce of 1e9 bytes over 16 GPUs, one per node: the
# 8 DP groups of a node share its NICs, 40 GB/s each: 0.03 + 1e9 x 2 x 15/16 / 40e9 s.
# AlltoAll over 16 GPUs, 8 per node: half the buffer crosses the NIC at 40 GB/s per
# GPU: 0.03 + 0.5e9 / 40e9 s (the NVLink part, 7/16 at 360 GB/s, is shorter).
for spec in "allreduce 1 46.905" "allreduce 8 5.889375" "a2a 8 12.53"; do
  set -- $spec
  check "cost placed $1 $2" 0 "$bin" cost --profile dgx-h100-datasheet --op "$1" --group 16 --ranks-per-node "$2" --size 1e9 --json
  pycheck "cost placed $1 $2 value" "$tmp/out" "$3" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))["time_ms"]
want = float(sys.argv[2])
if abs(got - want) > 1e-9 * want:
    print(f"got {got}, want {want}"); sys.exit(1)
PY
done
check "cost placed needs group" 2 "$bin" cost --profile dgx-h100-datasheet --op a2a --ranks-per-node 8 --size 1
expect_err "cost placed needs group" "--group"
check "cost concurrent without placement" 2 "$bin" cost --profile dgx-h100-datasheet --op a2a --concurrent 2 --size 1
expect_err "cost concurrent without placement" "--concurrent"
check "cost unknown op" 2 "$bin" cost --profile fsmoe-testbed-a --op broadcast --size 1
expect_err "cost unknown op" "--op: unknown operation 'broadcast'"
check "cost negative size" 2 "$bin" cost --profile fsmoe-testbed-a --op gemm --size -5
expect_err "cost negative size" "--size"
check "cost missing profile" 2 "$bin" cost --profile nope --op gemm --size 1
expect_err "cost missing profile" "no bundled profile named 'nope'"

# fit: nccl-tests logs -> profile that validates; malformed inputs -> exit 2, nothing written.
check "fit logs" 0 "$bin" fit "$src"/tests/data/calibration/*.log -o "$tmp/fitted.textproto" --cluster dgx-h100 --json
pycheck "fit --json is least squares of the logs' out-of-place times" "$tmp/out" "$src"/tests/data/calibration/*.log <<'PY'
# Ordinary least squares t = alpha + beta size, recomputed here from each log's
# rows (size in bytes, out-of-place time in us), its group from the "#  Rank"
# lines and its link from their host names (docs/cost-model.md "Fitting").
import os
from cli_check import *
ops = {"all_gather": "allgather", "all_reduce": "allreduce", "alltoall": "a2a", "reduce_scatter": "reducescatter"}
fitted = {r["op"]: r for r in load(sys.argv[1])}
expect(len(fitted) == 4, f"ops fitted: {sorted(fitted)}")
for path in sys.argv[2:]:
    op = ops[os.path.basename(path).replace("_perf.log", "")]
    hosts, xs, ys = {}, [], []
    for line in open(path):
        w = line.split()
        if line.startswith("#  Rank"):
            host = w[w.index("on") + 1]
            hosts[host] = hosts.get(host, 0) + 1
        elif w and not line.startswith("#"):
            xs.append(float(w[0]))
            ys.append(float(w[-8]) / 1e3)
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    beta = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    alpha = my - beta * mx
    r2 = 1 - sum((y - alpha - beta * x) ** 2 for x, y in zip(xs, ys)) / sum((y - my) ** 2 for y in ys)
    r = fitted.get(op, {})
    expect(r.get("group") == sum(hosts.values()), f"{op} group {r.get('group')}")
    expect(r.get("ranks_per_node") == max(hosts.values()), f"{op} ranks_per_node {r.get('ranks_per_node')}")
    expect(r.get("link") == ("intra" if len(hosts) == 1 else "inter"), f"{op} link {r.get('link')}")
    expect(r.get("points") == n, f"{op} points {r.get('points')}")
    expect_close(r.get("alpha_ms"), alpha, f"{op} alpha_ms", 1e-9)
    expect_close(r.get("beta_ms"), beta, f"{op} beta_ms", 1e-9)
    expect_close(r.get("r2"), r2, f"{op} r2", 1e-9)
done()
PY
check "fitted profile validates" 0 "$bin" validate "$tmp/fitted.textproto"
while IFS='|' read -r file expected; do
  [[ -z $file || $file == \#* ]] && continue
  check "fit bad $file" 2 "$bin" fit "$src/tests/data/bad/fit/$file" -o "$tmp/never.textproto"
  expect_err "fit bad $file" "$expected"
  [[ ! -e $tmp/never.textproto ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL fit $file wrote output"; }
done <"$src/tests/data/bad/fit/EXPECTED"
check "datasheet profile" 0 "$bin" datasheet-profile dgx-h100 -o "$tmp/ds.textproto"
check "datasheet profile validates" 0 "$bin" validate "$tmp/ds.textproto"

# Commands that later issues bring answer exit 2 with the contract's sentence.
check "bench engine" 0 "$bin" bench engine --json
pycheck "bench engine figures" "$tmp/out" <<'PY'
# docs/performance.md: the random DAG (seed 1) has 1,000,000 tasks and 1,438,717
# dependencies; issue 4's budget is 200 bytes per task (counted from container
# capacities, so deterministic). The fluid DAG is the same draw at 50%
# communication: 1,000,000 tasks. The multi-rank run is FlowMoE (R 2, Sp 4 MiB)
# on 1,024 ranks, ep 16 (64 EP groups), 12 layers: per layer and direction,
# each rank runs 2 AT and 2 expert tasks and each EP group 2 dispatch and 2
# combine AlltoAlls: 12 x 2 x (4 x 1024 + 4 x 64) = 104,448; then per layer one
# dense all-reduce chunk (MHA + gate, about 1.07 MB fp32, under Sp) over every
# rank and one expert chunk (one 256 x 512 GELU expert, 1 MiB) per EDP group
# (16): 12 x 17 = 204; 104,652 in all. Its makespan is simulate's iteration for
# the same scenario and knobs (second formulation). Speeds are not asserted
# (timing belongs to benchmarks), only present.
from cli_check import *
b = load(sys.argv[1])
expect(b["tasks"] == 1000000 and b["dependencies"] == 1438717, f"random DAG {b['tasks']}, {b['dependencies']}")
expect(0 < b["bytes_per_task"] <= 200, f"bytes_per_task {b['bytes_per_task']}")
expect(b["fluid_tasks"] == 1000000 and b["fluid_retimed_events"] > 0, f"fluid DAG {b['fluid_tasks']}")
expect(b["multi_rank_1024_tasks"] == 12 * 2 * (4 * 1024 + 4 * 64) + 12 * 17, f"multi_rank_1024_tasks {b['multi_rank_1024_tasks']}")
sim = moeplan("simulate", "flowmoe-gpt2-tiny-moe-c1", "--schedule", "flowmoe", "--degree", "2", "--set",
              "schedule.ar_chunk_bytes=4194304", "--set", "schedule.mode=multi_rank", "--set", "cluster.num_nodes=128",
              "--set", "parallelism.dp=1024")
expect(sim["tasks"] == b["multi_rank_1024_tasks"], "the same graph as simulate's")
expect_close(b["multi_rank_1024_makespan_ms"], sim["iteration_ms"], "multi_rank_1024_makespan_ms", 1e-12)
expect(b["tasks_per_s"] > 0 and b["fluid_tasks_per_s"] > 0 and b["multi_rank_1024_s"] > 0, "speeds")
done()
PY
check "bench what" 2 "$bin" bench nothing

# simulate and plan on the default FoldMoE scenario.
check "simulate all" 0 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule all --json --trace "$tmp/trace.json" --svg "$tmp/gantt.svg"
for s in none tutel aaam 1a1m 1a1m-uniform; do
  grep -q "\"schedule\": \"$s\"" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL simulate all lacks $s"; }
  [[ -s $tmp/trace.$s.json && -s $tmp/gantt.$s.svg ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL no trace/svg for $s"; }
done
pycheck "simulate all = simulate of each schedule" "$tmp/out" <<'PY'
# Every entry of --schedule all equals simulate --schedule S alone (degree 4,
# none at 1), and forward + backward = iteration.
from cli_check import *
for e in load(sys.argv[1]):
    same_evaluation(e, moeplan("simulate", "foldmoe-gpt-moe-m-16k", "--schedule", e["schedule"]), e["schedule"])
    expect(e["degree"] == (1 if e["schedule"] == "none" else 4), f"{e['schedule']} degree {e['degree']}")
    expect_close(e["forward_ms"] + e["backward_ms"], e["iteration_ms"], f"{e['schedule']} forward + backward")
done()
PY
pycheck "attention FLOPs: one causal rule, whatever the schedule" <<'PY'
# foldmoe-gpt-moe-m-32k: H = 768, h = 8 heads, 6 layers, one 32K sequence per
# rank, tp = 8. Causal attention of a sequence of L tokens (docs/cost-model.md):
# (4H + 3h) L (L + 1) / 2 + 8 H^2 L, / tp per rank; backward twice forward.
# Slicing (1a1m, 1a1m-uniform) changes when attention runs, not how much.
from cli_check import *
H, h, L, tp, layers = 768, 8, 32768, 8, 6
per_layer = ((4 * H + 3 * h) * L * (L + 1) // 2 + 8 * H * H * L) // tp
for degree in ("4", "8"):
    for e in moeplan("simulate", "foldmoe-gpt-moe-m-32k", "--schedule", "all", "--degree", degree):
        what = f"{e['schedule']} d={degree}"
        expect_close(e["attention_flops"]["forward"], layers * per_layer, f"{what} forward")
        expect_close(e["attention_flops"]["backward"], 2 * layers * per_layer, f"{what} backward")
        rows = e["attention_flops_per_layer"]
        expect(len(rows) == layers, f"{what}: {len(rows)} layers")
        for row in rows:
            expect_close(row["forward"], per_layer, f"{what} layer {row['layer']} forward")
            expect_close(row["backward"], 2 * per_layer, f"{what} layer {row['layer']} backward")
done()
PY
check "simulate one" 0 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule 1a1m --degree 6 --json
head -c 1 "$tmp/out" | grep -q '{' && grep -q '"degree": 6' "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL simulate one object"; }
check "simulate bad schedule" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule fsmoe
expect_err "simulate bad schedule" "--schedule: 'fsmoe' is a fsmoe schedule; this scenario is foldmoe"
check "simulate bad degree" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule 1a1m --degree 100000
expect_err "simulate bad degree" "degree 100000 is outside"
check "plan" 0 "$bin" plan foldmoe-gpt-moe-m-16k --json -o "$tmp/plan.textproto"
pycheck "plan = simulate of its choice" "$tmp/out" <<'PY'
# The plan's figures are simulate's at the degree it chose: the chosen schedule,
# the none baseline, tutel at its best degree, and every schedule's entry; the
# choice is the fastest entry.
from cli_check import *
p = load(sys.argv[1])
scenario = "foldmoe-gpt-moe-m-16k"
expect(p["scenario"] == scenario, f"scenario {p['scenario']}")
entries = {e["schedule"]: e for e in p["schedules"]}
for name, e in entries.items():
    same_evaluation(e, moeplan("simulate", scenario, "--schedule", name, "--degree", str(e["degree"])), f"entry {name}")
best = min(p["schedules"], key=lambda e: e["iteration_ms"])
expect(p["schedule"] == best["schedule"], f"chose {p['schedule']}, fastest {best['schedule']}")
chosen = moeplan("simulate", scenario, "--schedule", p["schedule"], "--degree", str(p["knobs"]["degree"]))
expect_close(p["iteration_ms"], chosen["iteration_ms"], "iteration_ms")
expect_close(p["a2a_critical_ms"], chosen["a2a_critical_ms"], "a2a_critical_ms")
expect_close(p["a2a_total_ms"], chosen["a2a_total_ms"], "a2a_total_ms")
none = moeplan("simulate", scenario, "--schedule", "none")
expect_close(p["baseline_ms"], none["iteration_ms"], "baseline_ms")
expect_close(p["speedup"], none["iteration_ms"] / chosen["iteration_ms"], "speedup")
tutel = moeplan("simulate", scenario, "--schedule", "tutel", "--degree", str(entries["tutel"]["degree"]))
expect_close(p["tutel_ms"], tutel["iteration_ms"], "tutel_ms")
expect_close(p["speedup_vs_tutel"], tutel["iteration_ms"] / chosen["iteration_ms"], "speedup_vs_tutel")
slices = p["knobs"]["slicing"]
expect(len(slices) == p["knobs"]["degree"] and sum(slices) == 16384, f"slicing {slices} of a 16K sequence")
done()
PY
check "plan file validates" 0 "$bin" validate "$tmp/plan.textproto"
check "plan json file" 0 "$bin" plan foldmoe-gpt-moe-s-4k --schedule 1a1m -o "$tmp/plan.json"
pycheck "plan -o F.json = plan --json = simulate" "$tmp/plan.json" <<'PY'
from cli_check import *
f = load(sys.argv[1])
p = moeplan("plan", "foldmoe-gpt-moe-s-4k", "--schedule", "1a1m")
for key in ("scenario", "schedule", "iteration_ms", "baseline_ms", "speedup"):
    expect(f[key] == p[key], f"{key}: file {f[key]}, --json {p[key]}")
expect(f["schedule"] == "1a1m" and f["knobs"]["degree"] == p["knobs"]["degree"], f"knobs {f['knobs']}")
s = moeplan("simulate", "foldmoe-gpt-moe-s-4k", "--schedule", "1a1m", "--degree", str(f["knobs"]["degree"]))
expect_close(f["iteration_ms"], s["iteration_ms"], "iteration_ms")
done()
PY
check "plan with --set" 0 "$bin" plan foldmoe-gpt-moe-m-16k --set workload.seq_len=8192 --json
pycheck "plan --set = simulate --set" "$tmp/out" <<'PY'
from cli_check import *
p = load(sys.argv[1])
expect(p["scenario"] == "foldmoe-gpt-moe-m-16k", f"scenario {p['scenario']}")
s = moeplan("simulate", "foldmoe-gpt-moe-m-16k", "--set", "workload.seq_len=8192", "--schedule", p["schedule"],
            "--degree", str(p["knobs"]["degree"]))
expect_close(p["iteration_ms"], s["iteration_ms"], "iteration_ms")
expect(sum(p["knobs"]["slicing"]) == 8192, f"slicing {p['knobs']['slicing']} of an 8K sequence")
unset = moeplan("simulate", "foldmoe-gpt-moe-m-16k", "--schedule", p["schedule"], "--degree", str(p["knobs"]["degree"]))
expect(s["iteration_ms"] < unset["iteration_ms"], "half the sequence is not faster: --set ignored?")
done()
PY
check "plan without profile" 2 "$bin" plan foldmoe-gpt-moe-m-16k --set profile_ref=nope
expect_err "plan without profile" "profile_ref"

# FSMoE: six schedules, and the plan's closed-form keys.
check "fsmoe simulate all" 0 "$bin" simulate fsmoe-testbed-b-gpt2-xl --schedule all --json
pycheck "fsmoe simulate all: six schedules, each = simulate alone" "$tmp/out" <<'PY'
from cli_check import *
entries = load(sys.argv[1])
names = [e["schedule"] for e in entries]
expect(names == ["none", "tutel", "tutel-improved", "pipemoe-lina", "fsmoe-no-iio", "fsmoe"], f"schedules {names}")
for e in entries:
    same_evaluation(e, moeplan("simulate", "fsmoe-testbed-b-gpt2-xl", "--schedule", e["schedule"]), e["schedule"])
done()
PY
check "fsmoe plan" 0 "$bin" plan fsmoe-testbed-a-gpt2-xl --json
pycheck "fsmoe plan = simulate at the planned degrees" "$tmp/out" <<'PY'
# simulate runs FSMoE schedules at the planner's degrees, so the plan's entries,
# its choice and its baselines are simulate's figures.
from cli_check import *
p = load(sys.argv[1])
scenario = "fsmoe-testbed-a-gpt2-xl"
sim = {e["schedule"]: e for e in moeplan("simulate", scenario, "--schedule", "all")}
for e in p["schedules"]:
    same_evaluation(e, sim[e["schedule"]], e["schedule"])
    expect_close(e["speedup_vs_none"], sim["none"]["iteration_ms"] / e["iteration_ms"], f"{e['schedule']} vs none")
best = min(p["schedules"], key=lambda e: e["iteration_ms"])
expect(p["schedule"] == best["schedule"], f"chose {p['schedule']}, fastest {best['schedule']}")
expect_close(p["iteration_ms"], sim[p["schedule"]]["iteration_ms"], "iteration_ms")
expect_close(p["baseline_ms"], sim["none"]["iteration_ms"], "baseline_ms")
expect_close(p["tutel_ms"], sim["tutel"]["iteration_ms"], "tutel_ms")
k = p["knobs"]
expect(sim["fsmoe"]["degree"] == k["degree_forward"], f"fsmoe degree {sim['fsmoe']['degree']} vs {k['degree_forward']}")
expect(sim["tutel"]["degree"] == k["tutel_degree"], f"tutel degree {sim['tutel']['degree']} vs {k['tutel_degree']}")
layers = len(k["degree_backward_per_layer"])
expect(len(k["grad_partition_bytes"]) == layers, f"{len(k['grad_partition_bytes'])} partitions for {layers} layers")
expect(all(b >= 0 for b in k["grad_partition_bytes"]) and k["grad_tail_bytes"] >= 0, "negative partition")
c = p["closed_form"]
expect(c["case_forward"] in ("Case1", "Case2", "Case3", "Case4"), f"case_forward {c['case_forward']}")
expect(c["case_backward"] in ("Case1", "Case2", "Case3", "Case4"), f"case_backward {c['case_backward']}")
expect(c["t_moe_forward_ms"] > 0 and c["t_moe_backward_ms"] > 0 and c["overlap_gap_ms"] >= 0, f"closed form {c}")
done()
PY

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

# FlowMoE: five schedules; the plan carries R, Sp and the BO trace.
check "flowmoe simulate all" 0 "$bin" simulate flowmoe-bert-large-moe-c1 --schedule all --json
pycheck "flowmoe simulate all: five schedules at R = 2, each = simulate alone" "$tmp/out" <<'PY'
from cli_check import *
entries = load(sys.argv[1])
expect([e["schedule"] for e in entries] == ["none", "tutel", "flowmoe-at", "flowmoe-ar", "flowmoe"], "schedules")
for e in entries:
    same_evaluation(e, moeplan("simulate", "flowmoe-bert-large-moe-c1", "--schedule", e["schedule"]), e["schedule"])
    expect(e["degree"] == (1 if e["schedule"] == "none" else 2), f"{e['schedule']} R {e['degree']}")
done()
PY
check "flowmoe plan" 0 "$bin" plan flowmoe-bert-large-moe-c1 --json
pycheck "flowmoe plan = simulate at its R and Sp; the BO trace = simulate at each sample" "$tmp/out" <<'PY'
from cli_check import *
p = load(sys.argv[1])
scenario = "flowmoe-bert-large-moe-c1"


def simulate(schedule, degree, chunk=None):
    sp = ["--set", f"schedule.ar_chunk_bytes={chunk}"] if chunk else []
    return moeplan("simulate", scenario, "--schedule", schedule, "--degree", str(degree), *sp)


for e in p["schedules"]:
    same_evaluation(e, simulate(e["schedule"], e["degree"], e.get("ar_chunk_bytes")), e["schedule"])
    expect(("ar_chunk_bytes" in e) == (e["schedule"] in ("flowmoe-ar", "flowmoe")), f"{e['schedule']} Sp")
best = min(p["schedules"], key=lambda e: e["iteration_ms"])
expect(p["schedule"] == best["schedule"], f"chose {p['schedule']}, fastest {best['schedule']}")
chosen = simulate(p["schedule"], p["knobs"]["degree"], p["knobs"].get("ar_chunk_bytes"))
expect_close(p["iteration_ms"], chosen["iteration_ms"], "iteration_ms")
expect_close(p["baseline_ms"], simulate("none", 1)["iteration_ms"], "baseline_ms")
bo = p["bo_trace"]
samples = bo["samples"]
expect(bo["schedule"] == "flowmoe" and 0 < len(samples) <= 8, f"{len(samples)} BO samples")
for s in samples:
    expect_close(s["iteration_ms"], simulate("flowmoe", bo["degree"], s["ar_chunk_bytes"])["iteration_ms"],
                 f"BO sample {s['ar_chunk_bytes']}")
fastest = min(samples, key=lambda s: (s["iteration_ms"], s["ar_chunk_bytes"]))
expect(bo["best_ar_chunk_bytes"] == fastest["ar_chunk_bytes"], f"BO best {bo['best_ar_chunk_bytes']}")
flow = next(e for e in p["schedules"] if e["schedule"] == "flowmoe")
expect(flow["ar_chunk_bytes"] == bo["best_ar_chunk_bytes"] and flow["degree"] == bo["degree"], "flowmoe entry knobs")
done()
PY
check "flowmoe straggler" 0 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --schedule flowmoe --set schedule.mode=multi_rank --set schedule.slow_ranks_compute_factor=2 --json
pycheck "flowmoe multi-rank: identical ranks = the symmetric run" "$tmp/out" <<'PY'
from cli_check import *
symmetric = moeplan("simulate", "flowmoe-gpt2-tiny-moe-c1", "--schedule", "flowmoe")
ranks = moeplan("simulate", "flowmoe-gpt2-tiny-moe-c1", "--schedule", "flowmoe", "--set", "schedule.mode=multi_rank")
expect_close(ranks["iteration_ms"], symmetric["iteration_ms"], "multi_rank iteration_ms", 1e-9)
done()
PY
# Stragglers act in simulate as in plan (issue 13, item 1).
pycheck "flowmoe straggler slows simulate" "$tmp/out" <<'PY'
# Half the GPUs at half speed: every collective waits for them (K.1), so the
# iteration is longer than with identical ranks, and simulate = plan at the
# same R and Sp.
from cli_check import *
slowed = load(sys.argv[1])
sets = ["--set", "schedule.mode=multi_rank", "--set", "schedule.slow_ranks_compute_factor=2"]
even = moeplan("simulate", "flowmoe-gpt2-tiny-moe-c1", "--schedule", "flowmoe", "--set", "schedule.mode=multi_rank")
expect(slowed["iteration_ms"] > even["iteration_ms"], f"slowed {slowed['iteration_ms']} vs even {even['iteration_ms']}")
p = moeplan("plan", "flowmoe-gpt2-tiny-moe-c1", "--schedule", "flowmoe", *sets)
s = moeplan("simulate", "flowmoe-gpt2-tiny-moe-c1", "--schedule", "flowmoe", "--degree", str(p["knobs"]["degree"]),
            "--set", f"schedule.ar_chunk_bytes={p['knobs']['ar_chunk_bytes']}", *sets)
expect_close(p["iteration_ms"], s["iteration_ms"], "plan vs simulate with stragglers")
done()
PY
# Issue 15, item 3: FoldMoE and FSMoE build multi-rank graphs too, with stragglers.
pycheck "foldmoe and fsmoe multi-rank: identical ranks = symmetric; a straggler adds its compute" <<'PY'
# Schedule none is one chain per rank (every task after the one issued before
# it), so T = C + M with C its compute and M its communication; every rank at
# factor 2 (fraction 1) computes 2C on its chain: T(2) = 2C + M, so
# T(2) - T(1) = C, the critical rank's compute_ms at factor 1.
from cli_check import *
fold = "foldmoe-gpt-moe-s-4k"
mode = ["--set", "schedule.mode=multi_rank"]
symmetric = moeplan("simulate", fold, "--schedule", "none")
slow = mode + ["--set", "schedule.slow_ranks_fraction=1"]
one = moeplan("simulate", fold, "--schedule", "none", *slow, "--set", "schedule.slow_ranks_compute_factor=1")
two = moeplan("simulate", fold, "--schedule", "none", *slow, "--set", "schedule.slow_ranks_compute_factor=2")
expect_close(one["iteration_ms"], symmetric["iteration_ms"], "foldmoe multi_rank at factor 1", 1e-9)
expect_close(two["iteration_ms"] - one["iteration_ms"], one["compute_ms"], "foldmoe factor 2 adds C", 1e-9)
expect(one["tasks"] > symmetric["tasks"], f"multi-rank tasks {one['tasks']} vs symmetric {symmetric['tasks']}")
fs = "fsmoe-table4-testbed-a"
expect_close(moeplan("simulate", fs, *mode)["iteration_ms"], moeplan("simulate", fs)["iteration_ms"],
             "fsmoe multi_rank iteration_ms", 1e-9)
done()
PY
check "folding refuses multi_rank" 2 "$bin" simulate folding-qwen2-57b-a14b-64 --set schedule.mode=multi_rank
expect_err "folding refuses multi_rank" "cannot act on this folding scenario"

# mappings: the issue's example, JSON keys and the intra/inter marks.
check "mappings" 0 "$bin" mappings --world 16 --tp 2 --cp 2 --pp 2 --ep 4 --etp 1 --json --gpus-per-node 8
tr -d ' \n' <"$tmp/out" >"$tmp/flat"
for want in '"tp":[[0,1],[2,3]' '"cp":[[0,2],[1,3]' '"dp":[[0,4],[1,5]' '"pp":[[0,8],[1,9]' '"ep":[[0,1,2,3],[4,5,6,7]' '"edp":[[0,4],[1,5]' '"attention_links"' '"inter"'; do
  grep -qF -- "$want" "$tmp/flat" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL mappings lacks $want"; }
done
check "folding plan" 0 "$bin" plan folding-mixtral-8x22b-128 --json
cp "$tmp/out" "$tmp/folding-mixtral.json"
check "folding plan qwen2" 0 "$bin" plan folding-qwen2-57b-a14b-64 --json
cp "$tmp/out" "$tmp/folding-qwen2.json"
check "folding simulate" 0 "$bin" simulate folding-qwen2-57b-a14b-64 --json
pycheck "folding plan = simulate of its mappings; own mapping no better than the plan" \
  "$tmp/folding-mixtral.json" "$tmp/folding-qwen2.json" "$tmp/out" <<'PY'
# simulate prices a scenario's own mapping the way the planner prices every
# mapping, so simulate with the plan's mapping set gives the plan's figures, and
# the scenario's own mapping (in the search space) is no faster than the plan.
from cli_check import *


def simulate_mapping(scenario, m):
    sets = []
    for key, value in m["parallelism"].items():
        if key == "micro_batch_size":
            continue
        sets += ["--set", f"parallelism.{key}={str(value).lower()}"]
    mb = m["parallelism"].get("micro_batch_size", m.get("micro_batch_size"))
    return moeplan("simulate", scenario, *sets, "--set", f"workload.micro_batch_size={mb}")


for path, scenario in ((sys.argv[1], "folding-mixtral-8x22b-128"), (sys.argv[2], "folding-qwen2-57b-a14b-64")):
    p = load(path)
    expect(p["scenario"] == scenario and p["schedule"] == "folded", f"{scenario}: {p['schedule']}")
    for what, m in (("folded", p["folded"]), ("coupled", p["coupled"])):
        s = simulate_mapping(scenario, m)
        for key in ("iteration_ms", "mfu", "memory_bytes_per_gpu"):
            expect_close(m[key], s[key], f"{scenario} {what} {key}")
        expect(m["fits"] and s["fits"], f"{scenario} {what} does not fit")
    expect_close(p["iteration_ms"], p["folded"]["iteration_ms"], f"{scenario} iteration_ms")
    expect_close(p["baseline_ms"], p["coupled"]["iteration_ms"], f"{scenario} baseline_ms")
    expect_close(p["speedup"], p["coupled"]["iteration_ms"] / p["folded"]["iteration_ms"], f"{scenario} speedup")
    expect(p["speedup"] >= 1.0, f"{scenario}: folded worse than coupled")
    top = [t["iteration_ms"] for t in p["top10"]]
    expect(top and top == sorted(top) and close(top[0], p["iteration_ms"]), f"{scenario} top10 {top}")
own = load(sys.argv[3])
expect(own["fits"] and own["iteration_ms"] >= load(sys.argv[2])["iteration_ms"], f"own mapping {own['iteration_ms']}")
done()
PY
check "mappings bad order" 2 "$bin" mappings --world 16 --tp 2 --pp 2 --ep 8 --etp 1 --order tp-cp-ep-pp-dp
expect_err "mappings bad order" "parallelism.order: attention and expert pipeline groups differ"
check "mappings bad world" 2 "$bin" mappings --world 10 --tp 4
expect_err "mappings bad world" "parallelism.dp: world 10 is not divisible by tp*cp*pp = 4"


# --- Issue 13: references beside their file; one tensor-parallel head rule ---
in_dir() {  # in_dir DIR COMMAND...: runs COMMAND with DIR as working directory
  local dir=$1
  shift
  (cd "$dir" && "$@")
}
# A scenario copied into proj/ with its model beside it (bare name local-moe, 4
# experts) and its cluster under parts/ (a path), run from a sibling folder:
# references resolve against the scenario's folder, then the bundle.
mkdir -p "$tmp/proj/parts" "$tmp/elsewhere"
sed -e 's/model_ref: "gpt-moe-m"/model_ref: "local-moe"/' -e 's|cluster_ref: "foldmoe-g5"|cluster_ref: "parts/g5.textproto"|' \
  -e 's/ep: 16/ep: 4/' "$src/scenarios/foldmoe-gpt-moe-m-16k.textproto" >"$tmp/proj/s.textproto"
sed -e 's/name: "gpt-moe-m"/name: "local-moe"/' -e 's/num_experts: 16/num_experts: 4/' \
  "$src/models/gpt-moe-m.textproto" >"$tmp/proj/local-moe.textproto"
cp "$src/scenarios/clusters/foldmoe-g5.textproto" "$tmp/proj/parts/g5.textproto"
check "reference beside the scenario" 0 in_dir "$tmp/elsewhere" "$bin" validate ../proj/s.textproto
grep -q "local-moe: 6 blocks (3 MoE), d_model 768, 4 experts top-1" "$tmp/out" && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL reference beside the scenario: loaded another model"; cat "$tmp/out"; }
check "simulate with references beside" 0 in_dir "$tmp/elsewhere" "$bin" simulate "$tmp/proj/s.textproto" --json
printf '# proto-message: Sweep\nname: "grid"\nscenarios: "s"\naxes { field: "workload.seq_len" values: "8192" values: "16384" }\n' \
  >"$tmp/proj/grid.textproto"
check "sweep scenario beside the sweep" 0 in_dir "$tmp/elsewhere" "$bin" sweep ../proj/grid.textproto --json
check "validate sweep beside" 0 in_dir "$tmp/elsewhere" "$bin" validate ../proj/grid.textproto
sed 's|parts/g5.textproto|parts/none.textproto|' "$tmp/proj/s.textproto" >"$tmp/proj/t.textproto"
check "missing reference lists what was tried" 2 in_dir "$tmp/elsewhere" "$bin" validate ../proj/t.textproto
expect_err "missing reference lists what was tried" \
  "../proj/t.textproto:11:1: cluster_ref: no cluster named 'parts/none.textproto': tried ../proj/parts/none.textproto, parts/none.textproto"
# A reference given with --set is typed on the command line: as given, then bundled.
check "--set reference from the CWD" 0 in_dir "$tmp/proj" "$bin" validate foldmoe-gpt-moe-m-16k \
  --set model_ref=local-moe.textproto --set parallelism.ep=4

# Mixtral 8x22B has 48 query and 8 KV heads: tp 16 divides the query heads but
# would replicate KV heads, which Megatron-Core refuses. validate, simulate and
# plan answer with one exit code and one message.
tp_rule="--set: parallelism.tp: num_heads 48 and num_kv_heads 8 must both be divisible by tp 16"
for cmd in validate simulate plan; do
  check "$cmd tp 16 on 8 KV heads" 2 "$bin" "$cmd" folding-mixtral-8x22b-128 --set parallelism.tp=16
  expect_err "$cmd tp 16 on 8 KV heads" "$tp_rule"
  cp "$tmp/err" "$tmp/err.$cmd"
done
cmp -s "$tmp/err.validate" "$tmp/err.simulate" && cmp -s "$tmp/err.validate" "$tmp/err.plan" && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL tp rule: validate, simulate and plan differ"; cat "$tmp"/err.*; }
check "tp dividing both kinds of heads" 0 "$bin" validate folding-mixtral-8x22b-128 --set parallelism.tp=4


# Issue 13, item 3: a plan written by `plan` is not a scenario; say so (with or without its header line).
# Issue 17, item 2: simulate (and execute) take it: see "plans round-trip" below.
check "plan writes a plan" 0 "$bin" plan foldmoe-gpt-moe-m-16k -o "$tmp/p.textproto"
check "plan of a plan file" 2 "$bin" plan "$tmp/p.textproto"
expect_err "plan of a plan file" "this is a plan file, not a scenario"
tail -n +2 "$tmp/p.textproto" >"$tmp/p-noheader.textproto"
check "simulate of a plan without its header" 2 "$bin" simulate "$tmp/p-noheader.textproto"
expect_err "simulate of a plan without its header" "this is a plan file, not a scenario"

# Issue 14, items 2, 5, 6 and 7: outputs (docs/cli.md, "Output files"; docs/reliability.md, "Outputs").
out=$tmp/outputs
mkdir -p "$out"
no_temporaries() {  # no_temporaries NAME FOLDER...: no staged temporary (.NAME.tmpPID.N) is left behind
  local name=$1 left
  shift
  left=$(find "$@" -name '*.tmp*' 2>/dev/null)
  [[ -z $left ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL $name: left $left"; }
}
is_true() {  # is_true NAME TEST...: a [[ ]]-style test that must hold
  local name=$1
  shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $name: $*"; fi
}
# The reference: the plan as a fresh regular file.
check "plan -o a new file" 0 "$bin" plan foldmoe-gpt-moe-m-16k -o "$out/ref.textproto"

# Item 2: -o writes through a symlink (the link stays, its target in another
# folder gets the content), keeps a file's mode, writes a FIFO or a device in
# place and "-" to stdout.
mkdir -p "$out/real" "$out/links"
echo old >"$out/real/plan.textproto"
ln -s ../real/plan.textproto "$out/links/plan.textproto"
check "-o symlink" 0 "$bin" plan foldmoe-gpt-moe-m-16k -o "$out/links/plan.textproto"
is_true "-o symlink stays a link" test -L "$out/links/plan.textproto"
is_true "-o symlink target has the plan" cmp -s "$out/real/plan.textproto" "$out/ref.textproto"
no_temporaries "-o symlink" "$out/real" "$out/links"
echo old >"$out/private.textproto"
chmod 600 "$out/private.textproto"
check "-o 0600 file" 0 "$bin" plan foldmoe-gpt-moe-m-16k -o "$out/private.textproto"
is_true "-o keeps mode 600" test "$(stat -c %a "$out/private.textproto")" = 600
is_true "-o 0600 file has the plan" cmp -s "$out/private.textproto" "$out/ref.textproto"
mkfifo "$out/fifo"
cat "$out/fifo" >"$out/fifo.read" &
reader=$!
check "-o FIFO" 0 "$bin" plan foldmoe-gpt-moe-m-16k -o "$out/fifo"
is_true "-o FIFO stays a FIFO" test -p "$out/fifo"
# The old code replaced the FIFO: its reader would wait forever.
for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$reader" 2>/dev/null || break; sleep 0.5; done
kill "$reader" 2>/dev/null
wait "$reader" 2>/dev/null
is_true "-o FIFO reader got the plan" cmp -s "$out/fifo.read" "$out/ref.textproto"
# Devices: copies of /dev/null (1,3) and /dev/full (1,7), never the real ones
# (the old code replaced the device node). mknod needs root, as CI runs.
if mknod "$out/null" c 1 3 2>/dev/null && mknod "$out/full" c 1 7 2>/dev/null && echo >"$out/null" 2>/dev/null; then
  check "-o null device" 0 "$bin" plan foldmoe-gpt-moe-m-16k -o "$out/null"
  is_true "-o null device stays a device" test -c "$out/null"
  check "-o full device" 1 "$bin" plan foldmoe-gpt-moe-m-16k -o "$out/full"
  expect_err "-o full device" "full: cannot write: No space left on device"
  is_true "-o full device stays a device" test -c "$out/full"
else
  echo "note: mknod not permitted, device outputs not tested"
fi
check "-o - is stdout" 0 "$bin" plan foldmoe-gpt-moe-m-16k -o -
is_true "-o - prints the plan only" cmp -s "$tmp/out" "$out/ref.textproto"
is_true "-o - makes no file named -" test ! -e -
check "sweep -o -" 0 "$bin" sweep "$src/tests/data/sweeps/small-fsmoe.textproto" -o -
is_true "sweep -o - prints the CSV" grep -q '^point,scenario' "$tmp/out"
check "datasheet-profile -o -" 0 "$bin" datasheet-profile dgx-h100 -o -
is_true "datasheet-profile -o - prints the profile" grep -q '^# proto-message: CostProfile' "$tmp/out"
check "simulate --trace -" 0 "$bin" simulate foldmoe-gpt-moe-m-16k --trace -
pycheck "simulate --trace - prints the trace only" "$tmp/out" <<'PY'
from cli_check import *
doc = load(sys.argv[1])
expect("traceEvents" in doc, f"not a trace: {list(doc)[:5]}")
done()
PY
check "plan -o - --json" 2 "$bin" plan foldmoe-gpt-moe-m-16k -o - --json
expect_err "plan -o - --json" "-o -: standard output would carry both"
check "simulate --trace - --svg -" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --trace - --svg -
expect_err "simulate --trace - --svg -" "--svg -: standard output already carries the --trace output"
check "simulate --schedule all --trace -" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule all --trace -
expect_err "simulate --schedule all --trace -" "--trace -: several schedules write one file each"
check "fit -o - without --name" 2 "$bin" fit "$src/tests/data/calibration/all_gather_perf.log" -o -
expect_err "fit -o - without --name" "-o -: give the profile a --name"
check "fit -o -" 0 "$bin" fit "$src/tests/data/calibration/all_gather_perf.log" -o - --name ag
is_true "fit -o - prints the profile" grep -q '^name: "ag"' "$tmp/out"

# Item 5: stdout that cannot be written is a failure (exit 1, one line).
"$bin" plan foldmoe-gpt-moe-m-16k --json >/dev/full 2>"$tmp/err"
is_true "--json > /dev/full exits 1" test $? = 1
expect_err "--json > /dev/full" "standard output: cannot write: No space left on device"
"$bin" validate foldmoe-gpt-moe-m-16k >&- 2>"$tmp/err"
is_true "closed stdout exits 1" test $? = 1
expect_err "closed stdout" "standard output: cannot write"
"$bin" --help >/dev/full 2>"$tmp/err"
is_true "--help > /dev/full exits 1" test $? = 1
# stdout fails: the files of the command do not appear either.
"$bin" plan foldmoe-gpt-moe-m-16k -o "$out/unseen.textproto" >/dev/full 2>/dev/null
is_true "stdout fails: no -o file" test ! -e "$out/unseen.textproto"
no_temporaries "stdout fails" "$out"

# Item 6: a command's files appear together or not at all.
mkdir -p "$out/all"
mkdir "$out/all/t.1a1m.json"  # the fourth schedule's trace cannot be written
check "simulate all, fourth trace fails" 1 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule all --trace "$out/all/t.json" --svg "$out/all/t.svg"
expect_err "simulate all, fourth trace fails" "t.1a1m.json: cannot write the output file: Is a directory"
is_true "simulate all, fourth trace fails: no file" test "$(ls "$out/all")" = t.1a1m.json
no_temporaries "simulate all, fourth trace fails" "$out/all"
mkdir -p "$out/half"
check "--svg unwritable" 1 "$bin" simulate foldmoe-gpt-moe-m-16k --trace "$out/half/t.json" --svg "$out/half/missing/t.svg"
expect_err "--svg unwritable" "missing/t.svg: cannot create the output file: No such file or directory"
is_true "--svg unwritable: no trace" test ! -e "$out/half/t.json"
no_temporaries "--svg unwritable" "$out/half"
if [[ $(id -u) != 0 ]]; then  # root writes into a read-only folder anyway
  mkdir -p "$out/ro"
  chmod 555 "$out/ro"
  check "--svg in a read-only folder" 1 "$bin" simulate foldmoe-gpt-moe-m-16k --trace "$out/half/t.json" --svg "$out/ro/t.svg"
  is_true "--svg in a read-only folder: no trace" test ! -e "$out/half/t.json"
  chmod 755 "$out/ro"
fi
# SIGTERM while the trace is staged: the --svg FIFO has no reader, so the
# command waits at commit with the trace's temporary on disk; the signal must
# remove it and end the command with SIGTERM's status (128 + 15).
mkdir -p "$out/sig"
mkfifo "$out/sig/t.svg"
"$bin" simulate foldmoe-gpt-moe-m-16k --trace "$out/sig/t.json" --svg "$out/sig/t.svg" >/dev/null 2>&1 &
job=$!
for _ in $(seq 100); do
  [[ -n $(find "$out/sig" -name '*.tmp*') ]] && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
kill -TERM "$job" 2>/dev/null
wait "$job"
is_true "SIGTERM at commit exits 143" test $? = 143
no_temporaries "SIGTERM at commit" "$out/sig"
is_true "SIGTERM at commit: no trace" test ! -e "$out/sig/t.json"
is_true "SIGTERM at commit: FIFO kept" test -p "$out/sig/t.svg"
# SIGTERM during a long plan: no file, no temporary, a failing status.
mkdir -p "$out/long"
# (2^17 GPUs: about 10 s; the 1,024-GPU plan this used took under a second
# once mappings were priced from their first groups.)
"$bin" plan folding-qwen2-57b-a14b-64 --set cluster.num_nodes=16384 --set workload.global_batch_size=524288 \
  -o "$out/long/p.textproto" >/dev/null 2>&1 &
job=$!
sleep 1
kill -TERM "$job" 2>/dev/null
wait "$job"
is_true "SIGTERM during plan fails" test $? != 0
is_true "SIGTERM during plan: no plan" test ! -e "$out/long/p.textproto"
no_temporaries "SIGTERM during plan" "$out/long"

# Issue 14, item 7: strings that are not UTF-8 are input errors naming the
# field, and --json never carries raw invalid bytes (a path from the command
# line is written with U+FFFD for each bad byte).
utf=$tmp/utf8
mkdir -p "$utf"
sed 's/^name: .*/name: "\xff\xfe"/' "$src/scenarios/foldmoe-gpt-moe-m-16k.textproto" >"$utf/bad-name.textproto"
check "name not UTF-8" 2 "$bin" plan "$utf/bad-name.textproto" --json
expect_err "name not UTF-8" "bad-name.textproto:8:1: name: not valid UTF-8 (byte 0xff at offset 0)"
check "--set name not UTF-8" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set "name=$(printf 'a\xfe')" --json
expect_err "--set name not UTF-8" "--set: name: not valid UTF-8 (byte 0xfe at offset 1)"
check "fit --name not UTF-8" 2 "$bin" fit "$src/tests/data/calibration/all_gather_perf.log" -o "$utf/f.textproto" --name "$(printf '\xc0\xaf')"
expect_err "fit --name not UTF-8" "--name: not valid UTF-8 (byte 0xc0 at offset 0)"
odd="$utf/$(printf 'odd\xff').textproto"
cp "$src/scenarios/foldmoe-gpt-moe-m-16k.textproto" "$odd"
check "validate --json of an odd path" 0 "$bin" validate "$odd" --json
pycheck "validate --json of an odd path is UTF-8 JSON" "$tmp/out" <<'PY'
from cli_check import *
raw = open(sys.argv[1], "rb").read()
doc = json.loads(raw.decode("utf-8"))  # strict: raw FF would raise here
expect(doc[0]["file"].endswith("odd\ufffd.textproto"), f"file: {doc[0]['file']!r}")
done()
PY

check "cost --size -5" 2 "$bin" cost --profile foldmoe-g5-datasheet --op a2a --link inter --size -5
expect_err "cost --size -5" "--size: must not be negative, got -5"

# Issue 13, item 9: zero and negative sizes, counts and degrees are errors everywhere, never "default".
while IFS='|' read -r name args; do
  read -r -a argv <<<"$args"
  check "$name" 2 "$bin" "${argv[@]}"
  expect_err "$name" "must be positive, got"
done <<EOF
simulate --degree 0|simulate foldmoe-gpt-moe-m-16k --degree 0
simulate --degree -2|simulate foldmoe-gpt-moe-m-16k --degree -2
plan --threads 0|plan foldmoe-gpt-moe-m-16k --threads 0
sweep --threads 0|sweep $src/tests/data/sweeps/small-fsmoe.textproto --threads 0
cost --group 0|cost --profile foldmoe-g5-datasheet --op a2a --link inter --size 1e6 --group 0
cost --ranks-per-node 0|cost --profile foldmoe-g5-datasheet --op a2a --link inter --size 1e6 --ranks-per-node 0
mappings --gpus-per-node 0|mappings --world 16 --gpus-per-node 0
mappings --tp 0|mappings --world 16 --tp 0
fit --group -3|fit $src/tests/data/calibration/all_gather_perf.log -o $tmp/f.textproto --group -3
set schedule.degree=0|simulate foldmoe-gpt-moe-m-16k --set schedule.degree=0
set schedule.slicing=-5|simulate foldmoe-gpt-moe-m-16k --set schedule.slicing=-5,16389
EOF

# Issue 14, item 3: ep = 1 is legal (every rank holds all experts: no AlltoAll
# runs). Each family simulates and plans it; no A2A task exists. Task counts
# by hand: an A2A is emitted per MoE block, micro-batch (or chunk) and pass:
# dispatch and combine forward, combine and dispatch backward, 4 in all; and
# ep = 1 makes edp = world / (etp pp) > 1, adding one expert-gradient
# all-reduce per MoE block (FoldMoE; FlowMoE without chunked all-reduce) or
# one in the tail (FSMoE `none` and `tutel`). Before the fix FlowMoE's
# flowmoe and flowmoe-ar stopped at "internal check failed: ... critical path
# longer than the graph" (zero-length A2A tasks on one priority pool).
pycheck "ep 1: every family simulates and plans it, without AlltoAll" <<'PY'
from cli_check import *

def by_schedule(result):
    return {e["schedule"]: e for e in result}

def no_a2a(result, what):
    for e in result:
        expect(e["a2a_total_ms"] == 0 and e["a2a_critical_ms"] == 0, f"{what} {e['schedule']}: A2A {e}")
        expect(e["iteration_ms"] > 0, f"{what} {e['schedule']}: iteration {e['iteration_ms']}")

# FlowMoE, gpt2-tiny-moe: 12 MoE blocks, R = 1 for none, 2 (default) otherwise.
# ep 16 -> edp 1 (no expert all-reduce); ep 1 -> edp 16.
flow = "flowmoe-gpt2-tiny-moe-c1"
ep16 = by_schedule(moeplan("simulate", flow, "--schedule", "all"))
ep1 = moeplan("simulate", flow, "--schedule", "all", "--set", "parallelism.ep=1")
no_a2a(ep1, "flowmoe ep 1")
ep1 = by_schedule(ep1)
for name, r in (("none", 1), ("tutel", 2), ("flowmoe-at", 2)):
    expect(ep1[name]["tasks"] == ep16[name]["tasks"] - 4 * 12 * r + 12,
           f"flowmoe {name}: {ep1[name]['tasks']} tasks at ep 1, {ep16[name]['tasks']} at ep 16")
expect(set(ep1) == set(ep16), f"flowmoe schedules {sorted(ep1)}")
multi = moeplan("simulate", flow, "--schedule", "all", "--set", "parallelism.ep=1", "--set", "schedule.mode=multi_rank")
no_a2a(multi, "flowmoe multi_rank ep 1")
p = moeplan("plan", flow, "--set", "parallelism.ep=1")
no_a2a(p["schedules"], "flowmoe plan ep 1")
expect(0 < p["iteration_ms"] <= p["baseline_ms"], f"flowmoe plan {p['iteration_ms']} vs none {p['baseline_ms']}")

# FoldMoE, gpt-moe-m: 3 MoE blocks of 6, one micro-batch per DP rank, degree 4 (none: 1).
fold = "foldmoe-gpt-moe-m-16k"
ep16 = by_schedule(moeplan("simulate", fold, "--schedule", "all"))
ep1 = moeplan("simulate", fold, "--schedule", "all", "--set", "parallelism.ep=1")
no_a2a(ep1, "foldmoe ep 1")
ep1 = by_schedule(ep1)
for name, d in (("none", 1), ("tutel", 4), ("aaam", 4), ("1a1m", 4), ("1a1m-uniform", 4)):
    expect(ep1[name]["tasks"] == ep16[name]["tasks"] - 4 * 3 * d + 3,
           f"foldmoe {name}: {ep1[name]['tasks']} tasks at ep 1, {ep16[name]['tasks']} at ep 16")
p = moeplan("plan", fold, "--set", "parallelism.ep=1")
expect(p["a2a_total_ms"] == 0 and p["a2a_critical_ms"] == 0, f"foldmoe plan A2A {p['a2a_total_ms']}")

# FSMoE, gpt2-xl-moe: 48 MoE blocks; edp is written in the scenario (1), so
# it is set to world / (etp ep pp) = 48 / 8 = 6. Degrees: none 1, tutel 2.
fs = "fsmoe-testbed-a-gpt2-xl"
ep6 = by_schedule(moeplan("simulate", fs, "--schedule", "all"))
ep1 = moeplan("simulate", fs, "--schedule", "all", "--set", "parallelism.ep=1", "--set", "parallelism.edp=6")
no_a2a(ep1, "fsmoe ep 1")
ep1 = by_schedule(ep1)
for name, r in (("none", 1), ("tutel", 2)):
    expect(ep1[name]["degree"] == r, f"fsmoe {name} degree {ep1[name]['degree']}")
    expect(ep1[name]["tasks"] == ep6[name]["tasks"] - 4 * 48 * r + 1,
           f"fsmoe {name}: {ep1[name]['tasks']} tasks at ep 1, {ep6[name]['tasks']} at ep 6")
p = moeplan("plan", fs, "--set", "parallelism.ep=1", "--set", "parallelism.edp=6")
no_a2a(p["schedules"], "fsmoe plan ep 1")

# Folding: the scenario's own mapping at ep 1 (edp = 128 / (etp pp) = 32) is priced.
f = moeplan("simulate", "folding-mixtral-8x22b-128", "--set", "parallelism.ep=1")
expect(f["iteration_ms"] > 0 and f["tasks"] > 0, f"folding ep 1: {f}")
done()
PY
check "folding plan ep 1" 0 "$bin" plan folding-qwen2-57b-a14b-64 --set parallelism.ep=1 --json

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
as_limited=()
if [[ $EUID == 0 ]]; then
  command -v runuser >/dev/null && id nobody >/dev/null 2>&1 && as_limited=(runuser -u nobody --)
else
  as_limited=(env)
fi
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

# Issue 14, item 9: traces at scale. A 1,024-rank FlowMoE run (multi_rank:
# 128 nodes x 8 GPUs, dp 1024, ep 16) draws ranks 0-7 and the critical rank
# by default (said on stderr) and stays small; every event says what its task
# is (args.size was 0 in folding traces). --trace-ranks chooses the ranks of
# --trace and --svg.
big=(simulate flowmoe-gpt2-tiny-moe-c1 --set schedule.mode=multi_rank --set cluster.num_nodes=128
  --set parallelism.dp=1024 --set parallelism.ep=16)
check "trace of 1,024 ranks" 0 "$bin" "${big[@]}" --trace "$tmp/big.json" --svg "$tmp/big.svg"
grep -q "^moeplan: note: flowmoe has 1024 ranks; its trace draws ranks 0-7" "$tmp/err" && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL trace of 1,024 ranks: no note:"; cat "$tmp/err"; }
pycheck "trace of 1,024 ranks: under 50 MB, ranks 0-7 and the critical rank, sizes filled" "$tmp/big.json" "$tmp/big.svg" <<'PY'
import os
from cli_check import *
expect(os.path.getsize(sys.argv[1]) < 50e6, f"trace of {os.path.getsize(sys.argv[1])} bytes")
expect(os.path.getsize(sys.argv[2]) < 50e6, f"SVG of {os.path.getsize(sys.argv[2])} bytes")
events = [e for e in load(sys.argv[1])["traceEvents"] if e["ph"] == "X"]
pids = sorted({e["pid"] for e in events})
expect(pids[:8] == list(range(8)) and len(pids) <= 9, f"ranks drawn {pids}")
for e in events:
    a = e["args"]
    size = a.get("flops" if a["kind"] == "compute" else "bytes")
    if not (size and size > 0 and a["size"] == size and a["group"] >= 1 and a["members"] >= 1):
        expect(False, f"event {e['name']}: args {a}")
        break
# The drawn ranks' lanes only: compute and comm per rank.
lanes = open(sys.argv[2]).read().count('<text x="4"')
expect(lanes == 2 * len(pids), f"{lanes} SVG lanes for {len(pids)} ranks")
done()
PY
small=(simulate flowmoe-gpt2-tiny-moe-c1 --set schedule.mode=multi_rank)
check "--trace-ranks" 0 "$bin" "${small[@]}" --trace "$tmp/r.json" --svg "$tmp/r.svg" --trace-ranks 0,7,12-15
[[ ! -s $tmp/err ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --trace-ranks: stderr:"; cat "$tmp/err"; }
check "16 ranks, all drawn" 0 "$bin" "${small[@]}" --trace "$tmp/all.json"
[[ ! -s $tmp/err ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL 16 ranks: stderr:"; cat "$tmp/err"; }
pycheck "--trace-ranks 0,7,12-15 draws those ranks, in the trace and the SVG" "$tmp/r.json" "$tmp/r.svg" "$tmp/all.json" <<'PY'
from cli_check import *
chosen = [0, 7, 12, 13, 14, 15]
events = [e for e in load(sys.argv[1])["traceEvents"] if e["ph"] == "X"]
expect(sorted({e["pid"] for e in events}) == chosen, f"ranks {sorted({e['pid'] for e in events})}")
everything = [e for e in load(sys.argv[3])["traceEvents"] if e["ph"] == "X"]
expect(sorted({e["pid"] for e in everything}) == list(range(16)), "16 ranks: all drawn")
expect(len(events) == sum(e["pid"] in chosen for e in everything), "events of the chosen ranks")
lanes = [line for line in open(sys.argv[2]).read().splitlines() if line.startswith('<text x="4"')]
drawn = sorted({int(line.split(">rank ")[1].split()[0]) for line in lanes})
expect(len(lanes) == 12 and drawn == chosen, f"SVG lanes {len(lanes)} of ranks {drawn}")
done()
PY
while IFS='|' read -r name message args; do
  read -r -a argv <<<"$args"
  check "$name" 2 "$bin" "${argv[@]}"
  expect_err "$name" "$message"
done <<TRACE_RANKS
--trace-ranks without a picture|--trace-ranks: chooses the ranks of --trace and --svg|simulate flowmoe-gpt2-tiny-moe-c1 --trace-ranks 0
--trace-ranks 3-1|--trace-ranks: range '3-1' runs backwards|simulate flowmoe-gpt2-tiny-moe-c1 --trace $tmp/x.json --trace-ranks 3-1
--trace-ranks 0,x|--trace-ranks: 'x' is not a rank|simulate flowmoe-gpt2-tiny-moe-c1 --trace $tmp/x.json --trace-ranks 0,x
--trace-ranks 16 of 16|--trace-ranks: rank 16 is not in the flowmoe run (its ranks: 0-15)|simulate flowmoe-gpt2-tiny-moe-c1 --set schedule.mode=multi_rank --trace $tmp/x.json --trace-ranks 16
TRACE_RANKS

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


# Issue 14, item 8e: a directory given as a file says so (it said "no such file").
for cmd in validate simulate; do
  check "$cmd of a directory" 2 "$bin" "$cmd" "$tmp"
  expect_err "$cmd of a directory" "is a directory"
done

# Issue 14, item 4: inputs are regular files of at most 64 MiB. /dev/zero was
# read until std::bad_alloc; a FIFO with no writer blocked fit for ever (the
# timeout turns a hang into exit 124, which fails the check).
mkdir -p "$tmp/i4" && mkfifo "$tmp/i4/fifo"
check "fit /dev/zero" 2 timeout 20 "$bin" fit /dev/zero -o "$tmp/i4/p.textproto" --cluster dgx-h100
expect_err "fit /dev/zero" "/dev/zero: is a character device; moeplan reads its inputs from regular files only"
check "fit a FIFO" 2 timeout 20 "$bin" fit "$tmp/i4/fifo" -o "$tmp/i4/p.textproto" --cluster dgx-h100
expect_err "fit a FIFO" "fifo: is a FIFO"
check "validate a FIFO" 2 timeout 20 "$bin" validate "$tmp/i4/fifo"
expect_err "validate a FIFO" "fifo: is a FIFO"
check "simulate a FIFO" 2 timeout 20 "$bin" simulate "$tmp/i4/fifo"
expect_err "simulate a FIFO" "fifo: is a FIFO"
# A sparse file one byte past 64 MiB (64 x 2^20 + 1), and one of exactly 64 MiB
# which is read (and then refused for what it holds, not for its size).
truncate -s $((64 * 1048576 + 1)) "$tmp/i4/big.csv"
check "fit of a file past 64 MiB" 2 "$bin" fit "$tmp/i4/big.csv" -o "$tmp/i4/p.textproto" --cluster dgx-h100
expect_err "fit of a file past 64 MiB" "big.csv: is larger than 64 MiB, the limit on an input file"
truncate -s $((64 * 1048576)) "$tmp/i4/limit.textproto"
check "validate of a 64 MiB file" 2 "$bin" validate "$tmp/i4/limit.textproto"
grep -q "larger than" "$tmp/err" && { fail=$((fail + 1)); echo "FAIL 64 MiB refused for its size"; } || pass=$((pass + 1))
rm -f "$tmp/i4/big.csv" "$tmp/i4/limit.textproto"

# Issue 14, item 4: a 30-line sweep of 8 axes x 100 values (10^16 points)
# reached 11-16 GB within 60 s. Now its size is counted, not expanded, and it
# is refused at once under a 1 GiB address-space limit (ulimit -v, KiB).
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

# Issue 14, item 4: a task graph past --max-memory is refused before it runs,
# with its estimate (2^20 FlowMoE ranks ended in std::bad_alloc after 30-40 s).
# gpt2-tiny-moe on 16,384 ranks (2,048 nodes x 8), ep 16, d = 2: one forward
# block is 2 AT + 2 expert tasks per rank (4 x 16384) and 2 dispatch + 2
# combine AlltoAlls per EP group (4 x 1024) = 69,632 tasks; 12 layers make 24
# such blocks: 1,671,168 tasks, x 256 B = 408.0 MiB, above 0.1 GiB = 102.4 MiB.
check "simulate past --max-memory" 2 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --set schedule.mode=multi_rank \
  --set cluster.num_nodes=2048 --set parallelism.dp=16384 --max-memory 0.1
expect_err "simulate past --max-memory" "the task graph would have about 1671168 tasks, about 408.0 MiB at 256 bytes per task, more than the 102.4 MiB allowed (raise --max-memory"
check "--max-memory 0" 2 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --max-memory 0
expect_err "--max-memory 0" "--max-memory: must be a number of GiB from 0.001 to 1048576, got '0'"
# A search never skips a candidate for its size: the plan fails, naming the mapping.
check "plan past --max-memory" 2 "$bin" plan folding-qwen2-57b-a14b-64 --set workload.global_batch_size=262144 \
  --max-memory 0.01 -o "$tmp/i4/p.textproto"
expect_err "plan past --max-memory" "mapping tp "
[[ ! -e $tmp/i4/p.textproto ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL plan past --max-memory wrote a plan"; }
printf '# proto-message: Sweep\nname: "b" scenarios: "fsmoe-table4-testbed-b"\naxes { field: "workload.global_batch_size" values: "4096" }\n' >"$tmp/i4/batch.textproto"
check "sweep past --max-memory" 2 "$bin" sweep "$tmp/i4/batch.textproto" --max-memory 0.001 -o "$tmp/i4/s2.csv"
expect_err "sweep past --max-memory" "the task graph would have"
# Issue 14, item 8b: a schedule of another family in a scenario without
# schedule.family is blamed on the file's schedule.name, which says that the
# family defaulted to foldmoe (it said "--schedule: ..." with no --schedule).
grep -v 'family: "flowmoe"' "$src/scenarios/flowmoe-gpt2-tiny-moe-c1.textproto" >"$tmp/i8/nofamily.textproto"
for cmd in simulate plan validate; do
  check "$cmd: schedule of another family, family not set" 2 "$bin" "$cmd" "$tmp/i8/nofamily.textproto"
  expect_err "$cmd: schedule of another family, family not set" \
    "nofamily.textproto:19:3: schedule.name: 'flowmoe' is a flowmoe schedule, but schedule.family is not set and defaults to foldmoe (none, tutel, aaam, 1a1m, 1a1m-uniform); set schedule.family: \"flowmoe\""
done
sed 's/family: "flowmoe"/family: "fsmoe"/' "$src/scenarios/flowmoe-gpt2-tiny-moe-c1.textproto" >"$tmp/i8/fsfamily.textproto"
check "schedule of another family" 2 "$bin" simulate "$tmp/i8/fsfamily.textproto"
expect_err "schedule of another family" "fsfamily.textproto:20:3: schedule.name: 'flowmoe' is a flowmoe schedule, not one of schedule.family fsmoe's"
check "schedule of another family by --set" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set schedule.name=flowmoe
expect_err "schedule of another family by --set" "--set: schedule.name: 'flowmoe' is a flowmoe schedule, not one of schedule.family foldmoe's"
# --schedule on the command line is still what is blamed.
check "--schedule of another family" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule flowmoe
expect_err "--schedule of another family" "moeplan: error: --schedule: 'flowmoe' is a flowmoe schedule; this scenario is foldmoe"

# Issue 14, item 8c: heads that tp does not divide name parallelism.tp where it was set.
sed -e 's/tp: 8/tp: 16/' -e 's/dp: 2/dp: 1/' "$src/scenarios/foldmoe-gpt-moe-m-16k.textproto" >"$tmp/i8/tp16.textproto"
check "heads over tp, in the file" 2 "$bin" simulate "$tmp/i8/tp16.textproto"
expect_err "heads over tp, in the file" "tp16.textproto:14:3: parallelism.tp: num_heads 8 and num_kv_heads 8 must both be divisible by tp 16"
check "heads over tp, by --set" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set parallelism.tp=16 --set parallelism.dp=1
expect_err "heads over tp, by --set" "moeplan: error: --set: parallelism.tp: num_heads 8 and num_kv_heads 8 must both be divisible by tp 16"

# Issue 14, item 8f: a figure whose conversion to bytes or FLOP/s overflows is
# named as given (it said "inf GiB").
while IFS='|' read -r name message args; do
  read -r -a argv <<<"$args"
  check "$name" 2 "$bin" "${argv[@]}"
  expect_err "$name" "$message"
done <<'HUGE'
memory_gib 1e300|--set: cluster.gpu.memory_gib: 1e+300 GiB is outside the plausible range [0.25, 16384] GiB|simulate foldmoe-gpt-moe-m-16k --set cluster.gpu.memory_gib=1e300
peak_tflops_fp16 1e300|--set: cluster.gpu.peak_tflops_fp16: 1e+300 TFLOP/s is outside the plausible range|simulate foldmoe-gpt-moe-m-16k --set cluster.gpu.peak_tflops_fp16=1e300
peak_tflops_fp32 1e300|--set: cluster.gpu.peak_tflops_fp32: 1e+300 TFLOP/s is outside the plausible range|simulate foldmoe-gpt-moe-m-16k --set cluster.gpu.peak_tflops_fp32=1e300
bandwidth_gbit_s 1e308|--set: cluster.intra_link.bandwidth_gbit_s: 1e+308 Gbit/s is outside the plausible range [0.1, 1000000] Gbit/s|simulate foldmoe-gpt-moe-m-16k --set cluster.intra_link.bandwidth_gbit_s=1e308
expert_ffn_hidden_scale 1e308|--set: model.moe.expert_ffn_hidden_scale: 1e+308 x d_model|simulate fsmoe-table4-testbed-b --set model.moe.expert_ffn_hidden_scale=1e308
HUGE
sed 's/memory_gib: [0-9.]*/memory_gib: 1e300/' "$src/scenarios/clusters/foldmoe-g5.textproto" >"$tmp/i8/huge-memory.textproto"
check "memory_gib 1e300 in a cluster file" 2 "$bin" validate "$tmp/i8/huge-memory.textproto"
expect_err "memory_gib 1e300 in a cluster file" "huge-memory.textproto:"
expect_err "memory_gib 1e300 in a cluster file" "gpu.memory_gib: 1e+300 GiB is outside the plausible range [0.25, 16384] GiB"

# Issue 14, item 8g: a huge value is cut to 60 bytes and its length; the error
# stays one short line. A command-line argument is at most 128 KiB (Linux's
# MAX_ARG_STRLEN): 100 kB there, 1 MB in files.
short_err() {  # short_err NAME: the last command's stderr is one line under 300 bytes, with the cut value's length
  local lines bytes
  lines=$(wc -l <"$tmp/err")
  bytes=$(wc -c <"$tmp/err")
  if [[ $lines == 1 && $bytes -lt 300 ]] && grep -q "\.\.\. ([0-9]* bytes)" "$tmp/err"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL $1: stderr of $lines lines, $bytes bytes:"; head -c 400 "$tmp/err"; echo; fi
}
big=$(head -c 100000 /dev/zero | tr '\0' 7)
check "--set of 100 kB" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set "model.d_model=$big"
short_err "--set of 100 kB"
expect_err "--set of 100 kB" "--set: model.d_model: expected an integer, got '7777777777"
check "--set of a 100 kB field" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set "model.$big=1"
short_err "--set of a 100 kB field"
check "--set of a 100 kB enum" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set "model.moe.expert_type=$big"
short_err "--set of a 100 kB enum"
check "--set without = of 100 kB" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set "$big"
short_err "--set without = of 100 kB"
check "--schedule of 100 kB" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule "$big"
short_err "--schedule of 100 kB"
check "--degree of 100 kB" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --degree "$big"
short_err "--degree of 100 kB"
check "command of 100 kB" 2 "$bin" "$big"
short_err "command of 100 kB"
check "scenario of 100 kB" 2 "$bin" simulate "$big"
short_err "scenario of 100 kB"
huge=$(head -c 1000000 /dev/zero | tr '\0' 7)
# (Bash substitutions: sed could not take 1 MB as an argument.)
text=$(<"$src/scenarios/foldmoe-gpt-moe-m-16k.textproto")
printf '%s\n' "${text/name: \"1a1m-uniform\"/name: \"$huge\"}" >"$tmp/i8/huge-schedule.textproto"
check "schedule.name of 1 MB in a file" 2 "$bin" simulate "$tmp/i8/huge-schedule.textproto"
short_err "schedule.name of 1 MB in a file"
expect_err "schedule.name of 1 MB in a file" "huge-schedule.textproto:27:3: schedule.name: unknown schedule '7777"
printf '%s\n' "${text/model_ref: \"gpt-moe-m\"/model_ref: \"$huge\"}" >"$tmp/i8/huge-ref.textproto"
check "model_ref of 1 MB in a file" 2 "$bin" simulate "$tmp/i8/huge-ref.textproto"
short_err "model_ref of 1 MB in a file"
cat >"$tmp/i8/huge-sweep.textproto" <<SWEEP
# proto-message: Sweep
name: "huge-axis"
scenarios: "fsmoe-table4-testbed-b"
axes { field: "model.d_model" values: "$huge" }
SWEEP
check "sweep axis value of 1 MB" 2 "$bin" sweep "$tmp/i8/huge-sweep.textproto" -o "$tmp/i8/s.csv"
short_err "sweep axis value of 1 MB"

# Issue 14, item 1 (remainder): plan says when the system refused threads, as
# simulate and sweep do (as_limited: see "sweep with no thread to spare").
if [[ ${#as_limited[@]} -gt 0 ]] && (($(nproc) > 1)); then
  for scenario in fsmoe-table4-testbed-b flowmoe-gpt2-tiny-moe-c1 foldmoe-gpt-moe-s-4k folding-qwen2-57b-a14b-64; do
    check "plan $scenario with no thread to spare" 0 "${as_limited[@]}" env ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
      bash -c 'ulimit -u 1 && exec "$0" "$@"' "$bin" plan "$scenario" --threads 2
    grep -q "^moeplan: note: 1 of 2 threads started (the system refused the rest); the work ran on them$" "$tmp/err" &&
      pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL plan $scenario with no thread to spare: no note:"; cat "$tmp/err"; }
  done
else
  echo "skip: plan with no thread to spare (root without runuser or user nobody, or one hardware thread)"
fi

# Issue 15 items 1 and 5: compute slows beside communication; noise over seeds.
pycheck "overlap_compute_slowdown slows overlapped schedules, by at most its factor" <<'PY'
from cli_check import *
base = {e["schedule"]: e["iteration_ms"] for e in moeplan("simulate", "foldmoe-gpt-moe-m-16k", "--schedule", "all")}
slow = {e["schedule"]: e["iteration_ms"] for e in moeplan("simulate", "foldmoe-gpt-moe-m-16k", "--schedule", "all",
                                                         "--set", "profile.overlap_compute_slowdown=1.3")}
# Compute runs at 1/1.3 only while communication runs beside it: every iteration
# is at least the free one and at most 1.3 times it (every compute task 1.3x longer).
for name, ms in base.items():
    expect(ms <= slow[name] <= 1.3 * ms * (1 + 1e-12), f"{name}: {ms} -> {slow[name]}")
expect(any(slow[n] > base[n] * 1.001 for n in ("aaam", "1a1m")), f"aaam/1a1m overlap and must slow: {base} -> {slow}")
done()
PY
check "overlap_compute_slowdown on folding with pp 1" 2 "$bin" simulate folding-qwen2-57b-a14b-64 --set parallelism.pp=1 --set profile.overlap_compute_slowdown=1.2
expect_err "overlap_compute_slowdown on folding with pp 1" "profile.overlap_compute_slowdown"
pycheck "noise: mean and p95 over seeds are those of the single-seed runs" <<'PY'
from cli_check import *
scenario = "flowmoe-gpt2-tiny-moe-c1"
runs = []
for seed in range(5, 25):  # 20 single-seed runs, seeds 5..24
    e = moeplan("simulate", scenario, "--set", "schedule.compute_jitter_cv=0.2", "--set", "schedule.jitter_seeds=1",
                "--set", f"schedule.jitter_seed={seed}")
    n = e["noise"]
    expect(n["iteration_ms_mean"] == n["iteration_ms_p95"] == n["iteration_ms_min"] == n["iteration_ms_max"],
           f"one seed: {n}")
    runs.append(n["iteration_ms_mean"])
e = moeplan("simulate", scenario, "--set", "schedule.compute_jitter_cv=0.2", "--set", "schedule.jitter_seeds=20",
            "--set", "schedule.jitter_seed=5")
n = e["noise"]
expect(n["seeds"] == 20, f"seeds {n['seeds']}")
expect_close(n["iteration_ms_mean"], sum(runs) / 20, "mean of the 20 runs", 1e-12)
expect(n["iteration_ms_p95"] == sorted(runs)[18], f"p95 is the 19th of 20 (nearest rank ceil(0.95 x 20)): {n} {sorted(runs)}")
expect(n["iteration_ms_min"] == min(runs) and n["iteration_ms_max"] == max(runs), "range")
expect(len(set(runs)) > 1, "different seeds give different iterations")
# The noiseless iteration is untouched by the noise fields.
plain = moeplan("simulate", scenario)
expect(plain["iteration_ms"] == e["iteration_ms"] and "noise" not in plain, "iteration_ms stays the noiseless one")
done()
PY
check "plan refuses noise" 2 "$bin" plan flowmoe-gpt2-tiny-moe-c1 --set schedule.compute_jitter_cv=0.1
expect_err "plan refuses noise" "schedule.compute_jitter_cv: plan ranks schedules on the noiseless model"
check "jitter seeds without noise" 2 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --set schedule.jitter_seeds=4
expect_err "jitter seeds without noise" "schedule.jitter_seeds"
check "jitter cv out of range" 2 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --set schedule.compute_jitter_cv=3
expect_err "jitter cv out of range" "schedule.compute_jitter_cv"
# Issue 15, item 4: uneven expert load (docs/cost-model.md, "Uneven expert load").
# flowmoe-gpt2-tiny-moe-c1: 16 ranks, ep 16, 16 experts (one per rank), top-2,
# capacity factor 1.0, 1024 tokens per rank: 2048 slots, C = 2048 / 16 = 128 per
# (rank, expert).
mkdir -p "$tmp/i15"
mr=(--set schedule.mode=multi_rank)
zipf=(--set workload.routing=zipf --set workload.routing_zipf_s=1.2)
"$bin" simulate flowmoe-gpt2-tiny-moe-c1 "${mr[@]}" --json >"$tmp/i15/balanced.json"
"$bin" simulate flowmoe-gpt2-tiny-moe-c1 "${mr[@]}" "${zipf[@]}" --json >"$tmp/i15/zipf.json"
"$bin" simulate flowmoe-gpt2-tiny-moe-c1 "${mr[@]}" --set model.moe.dropless=true --json >"$tmp/i15/balanced-dropless.json"
"$bin" simulate flowmoe-gpt2-tiny-moe-c1 "${mr[@]}" "${zipf[@]}" --set model.moe.dropless=true --json >"$tmp/i15/zipf-dropless.json"
pycheck "zipf routing: padded drops tokens at the same time, dropless is slower" "$tmp/i15" <<'PY'
from cli_check import *
d = sys.argv[1]
bal, zipf = load(f"{d}/balanced.json"), load(f"{d}/zipf.json")
bal_dl, zipf_dl = load(f"{d}/balanced-dropless.json"), load(f"{d}/zipf-dropless.json")
# Balanced routing reports nothing new: today's output.
expect("routing" not in bal and "dropped_token_fraction" not in bal, f"balanced reports routing: {bal.keys()}")
# Padded: buffers are padded to C, so every size is balanced's and the time is the same to the bit.
expect(zipf["iteration_ms"] == bal["iteration_ms"], f"padded zipf {zipf['iteration_ms']} != balanced {bal['iteration_ms']}")
# Dropped: an expert of probability p gets about 2048 p slots per rank and drops
# what passes 128 = 2048 / 16, so the fraction is about sum_k max(0, p_k - 1/16),
# p_k = k^-1.2 / sum_j j^-1.2 (k = 1..16). Binomial noise around experts near C
# only adds (Jensen): at most about 0.4 sd = 0.4 sqrt(2048 / 16) = 4.5 slots, 0.2%
# each; 0.02 covers it.
w = [k ** -1.2 for k in range(1, 17)]
p = [x / sum(w) for x in w]
want = sum(max(0.0, x - 1 / 16) for x in p)
got = zipf["dropped_token_fraction"]
expect(want - 0.005 < got < want + 0.02, f"dropped_token_fraction {got}, hand {want:.4f}")
expect(zipf["routing"] == "zipf", f"routing {zipf.get('routing')}")
expect(len(zipf["per_rank_a2a_ms"]) == 16, "one AlltoAll time per rank of the multi_rank graph")
# Padded: every rank's AlltoAlls are balanced's, the same for all.
expect(len(set(zipf["per_rank_a2a_ms"])) == 1, f"padded ranks differ: {zipf['per_rank_a2a_ms']}")
# Dropless: nothing dropped; the hot expert's rank receives ~0.365 x 32768 slots
# (1 / H(16, 1.2), H = 2.7376) against 2048 balanced, so its AlltoAll and experts
# are slower and the iteration with them.
expect(zipf_dl["dropped_token_fraction"] == 0, f"dropless drops {zipf_dl['dropped_token_fraction']}")
expect(zipf_dl["iteration_ms"] > bal_dl["iteration_ms"],
       f"dropless zipf {zipf_dl['iteration_ms']} not slower than balanced {bal_dl['iteration_ms']}")
per_rank = zipf_dl["per_rank_a2a_ms"]
expect(per_rank[zipf_dl["slowest_rank"]] == max(per_rank), "slowest_rank has the largest AlltoAll time")
expect(max(per_rank) > min(per_rank), "dropless zipf ranks differ")
done()
PY
check "routing: the same seed prints the same bytes" 0 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 "${mr[@]}" "${zipf[@]}" \
  --set model.moe.dropless=true --json
cmp -s "$tmp/out" "$tmp/i15/zipf-dropless.json" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL routing determinism"; }
check "routing text says symmetric mode prices the most loaded rank" 0 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 \
  "${zipf[@]}" --set model.moe.dropless=true
grep -q "priced: symmetric mode: each MoE layer at its most loaded rank" "$tmp/out" && grep -q "slowest rank" "$tmp/out" &&
  pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL routing text:"; cat "$tmp/out"; }
check "routing_zipf_s = -1" 2 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --set workload.routing=zipf --set workload.routing_zipf_s=-1
expect_err "routing_zipf_s = -1" "workload.routing_zipf_s: must be a positive number, got -1"
check "routing_zipf_s = 5" 2 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --set workload.routing=zipf --set workload.routing_zipf_s=5
expect_err "routing_zipf_s = 5" "workload.routing_zipf_s: 5 is implausible: at most 4"
check "unknown routing" 2 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --set workload.routing=uniform
expect_err "unknown routing" "workload.routing: must be balanced, zipf or histogram, got 'uniform'"
check "zipf without its exponent" 2 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --set workload.routing=zipf
expect_err "zipf without its exponent" "workload.routing_zipf_s: required when workload.routing is zipf"
check "routing_zipf_s without zipf" 2 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --set workload.routing_zipf_s=1.2
expect_err "routing_zipf_s without zipf" "workload.routing_zipf_s: cannot act on this flowmoe scenario"
check "routing on folding" 2 "$bin" simulate folding-mixtral-8x22b-128 "${zipf[@]}"
expect_err "routing on folding" "workload.routing: cannot act on this folding scenario"
printf 'expert,tokens\n0,5\n1,3\n2,1\n' >"$tmp/i15/three.csv"
check "histogram of 3 experts for 16" 2 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --set workload.routing=histogram \
  --set workload.routing_histogram_ref="$tmp/i15/three.csv"
expect_err "histogram of 3 experts for 16" "workload.routing_histogram_ref: $tmp/i15/three.csv has 3 experts; the model has 16"
printf 'expert,tokens\n0,5\n1,-3\n' >"$tmp/i15/negative.csv"
check "histogram with a negative count" 2 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --set workload.routing=histogram \
  --set workload.routing_histogram_ref="$tmp/i15/negative.csv"
expect_err "histogram with a negative count" "negative.csv:3:1: routing histogram: tokens must not be negative, got -3"
check "missing histogram" 2 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --set workload.routing=histogram \
  --set workload.routing_histogram_ref=no-such-histogram
expect_err "missing histogram" "workload.routing_histogram_ref: no routing histogram named 'no-such-histogram'"
# A histogram beside a scenario resolves from the scenario's folder, whatever the working directory.
sed 's/^workload {/workload {\n  routing: "histogram"\n  routing_histogram_ref: "hist"/' \
  "$src/scenarios/flowmoe-gpt2-tiny-moe-c1.textproto" | sed 's/model_ref: "gpt2-tiny-moe"/model_ref: "gpt2-tiny-moe"/' \
  >"$tmp/i15/beside.textproto"
cp "$src/scenarios/routing/zipf1-16-experts.csv" "$tmp/i15/hist.csv"
check "histogram beside its scenario" 0 "$bin" simulate "$tmp/i15/beside.textproto" --json
grep -q '"routing": "histogram"' "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL histogram beside:"; head -c 300 "$tmp/out"; }

# calibrate --backend host (issue 16 item 1; docs/cli.md "calibrate"). No
# timing value is asserted (the machine is noisy): the shapes of the outputs,
# the sizes of the GEMM grid (docs/cost-model.md "Host calibration"), and that
# `moeplan fit` of the points reproduces the profile's lines.
mkdir -p "$tmp/cal1" "$tmp/cal2"
calibrate_checks() {  # calibrate_checks DIR COLLECTIVES(0/1)
  COLLECTIVES=$2 pycheck "calibrate $1 profile" "$1/host.textproto" "$1/host.points.csv" "$1/refit.textproto" <<'PY'
import re
from cli_check import *
profile, points, refit = sys.argv[1:4]
collectives = os.environ["COLLECTIVES"] == "1"

def lines_of(path):
    text = open(path).read()
    out = {}
    for block in re.findall(r"costs \{(.*?)\n\}", text, re.S):
        f = dict(re.findall(r"^\s*(\w+): (.*)$", block, re.M))
        out[(f["op"], f["link"], int(f["group"]))] = {k: float(f[k]) for k in ("alpha_ms", "beta_ms", "r2", "points")}
    m = re.search(r"^overlap_compute_slowdown: (\S+)$", text, re.M)
    return out, float(m.group(1)) if m else 1.0

lines, slowdown = lines_of(profile)
want = [("GEMM", "LOCAL", 1), ("ATTENTION", "LOCAL", 1)]
if collectives:
    want += [(op, "INTRA", 2) for op in ("A2A", "ALLGATHER", "REDUCESCATTER", "ALLREDUCE", "P2P")]
expect(sorted(lines) == sorted(want), f"lines {sorted(lines)}, wanted {sorted(want)}")
for key, c in lines.items():
    expect(c["points"] >= 3, f"{key}: {c['points']} points")
    expect(math.isfinite(c["beta_ms"]) and c["beta_ms"] > 0, f"{key}: beta {c['beta_ms']}")
expect(slowdown >= 1, f"overlap_compute_slowdown {slowdown}")
# The --quick GEMM grid: tokens {16, 64, 256} x d_model {256} x ffn {512, 1024}, 2 m n k FLOPs each.
grid = sorted(2 * t * d * f for t in (16, 64, 256) for d in (256,) for f in (512, 1024))
rows = [r.split(",") for r in open(points).read().splitlines() if r and not r.startswith("#")]
expect(rows[0] == ["op", "link", "group", "size", "time_ms"], f"header {rows[0]}")
gemm_sizes = sorted(float(r[3]) for r in rows[1:] if r[0] == "gemm")
expect(gemm_sizes == grid, f"GEMM sizes {gemm_sizes}, wanted {grid}")
# The attention shape block, refitted here from the "# attention point" lines by
# normal equations (a second formulation of cost::fit_attention_shape): block 64,
# tile scores per head = sum over 64-row blocks of rows x (c - q + b0 + rows).
text = open(profile).read()
block = re.search(r"attention_shape \{(.*?)\n\}", text, re.S)
expect(block is not None, "the profile has an attention_shape block")
if block:
    a = dict(re.findall(r"^\s*(\w+): (.*)$", block.group(1), re.M))
    pts = [tuple(float(x) for x in l.split(":")[1].split(","))
           for l in open(points) if l.startswith("# attention point")]
    expect(len(pts) == 6 and int(a["points"]) == 6, f"{len(pts)} attention points, profile says {a['points']}")
    def scores(q, c, b=64):
        out, b0 = 0, 0
        while b0 < q:
            rows = min(b, q - b0)
            out += rows * (c - q + b0 + rows)
            b0 += b
        return out
    X = [[1.0, 4 * k * h * scores(int(q), int(c)) / 1e9, h * scores(int(q), int(c)) / 1e6] for q, c, h, k, _ in pts]
    t = [p[4] for p in pts]
    def solve(cols):
        n = len(cols)
        A = [[sum(X[r][cols[i]] * X[r][cols[j]] for r in range(len(X))) for j in range(n)] +
             [sum(X[r][cols[i]] * t[r] for r in range(len(X)))] for i in range(n)]
        for i in range(n):  # Gauss-Jordan
            piv = max(range(i, n), key=lambda r: abs(A[r][i]))
            A[i], A[piv] = A[piv], A[i]
            for r in range(n):
                if r != i:
                    f = A[r][i] / A[i][i]
                    A[r] = [x - f * y for x, y in zip(A[r], A[i])]
        return {cols[i]: A[i][n] / A[i][i] for i in range(n)}
    kept = [0, 1, 2]
    while True:
        coef = solve(kept)
        worst = min(kept, key=lambda j: coef[j])
        if coef[worst] >= 0 or len(kept) == 1:
            break
        kept.remove(worst)
    want = [coef.get(j, 0.0) for j in range(3)]
    got = [float(a[k]) for k in ("alpha_ms", "matmul_ms_per_gflop", "score_ms_per_melement")]
    for w, g, name in zip(want, got, ("alpha", "matmul", "score")):
        expect(abs(w - g) <= 1e-6 * max(1.0, abs(w)), f"attention_shape {name}: profile {g}, refit {w}")
# moeplan fit of the points: the same lines.
again, _ = lines_of(refit)
expect(sorted(again) == sorted(lines), f"refit lines {sorted(again)}")
for key in lines:
    if key in again:
        for field in ("alpha_ms", "beta_ms", "r2", "points"):
            expect_close(again[key][field], lines[key][field], f"{key} {field} refit", rel=1e-9)
done()
PY
}
# Single process: compute and overlap only, with a note; communication then fails on the missing line.
check "calibrate --quick, one process" 0 "$bin" calibrate --backend host --quick -o "$tmp/cal1/host.textproto"
calibrate_progress() {  # calibrate_progress NAME GROUP...: one stderr line per benchmark group
  local name=$1 group
  shift
  for group in "$@"; do
    [[ $(grep -c "^moeplan calibrate: $group" "$tmp/err") == 1 ]] && pass=$((pass + 1)) ||
      { fail=$((fail + 1)); echo "FAIL $name: no one progress line for $group:"; cat "$tmp/err"; }
  done
}
calibrate_progress "calibrate progress, one process" "gemm: 6 shapes" "attention: 6 shapes" "overlap: " "note: "
grep -q "no collective lines were measured" "$tmp/err" && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL calibrate without MPI: no note:"; cat "$tmp/err"; }
grep -q "^# No collective lines" "$tmp/cal1/host.textproto" && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL calibrate without MPI: no comment in the profile"; }
check "calibrate profile validates" 0 "$bin" validate "$tmp/cal1/host.textproto"
check "fit calibrate points" 0 "$bin" fit "$tmp/cal1/host.points.csv" --cluster host-2 -o "$tmp/cal1/refit.textproto"
calibrate_checks "$tmp/cal1" 0
check "simulate without collective lines" 2 "$bin" simulate host-flowmoe-small --set profile_ref="$tmp/cal1/host.textproto"
expect_err "simulate without collective lines" "has no a2a line on link intra"
# --backend cuda: a build without CUDA refuses (exit 2); a CUDA build on a
# machine with no GPU fails at run time (exit 1); with a GPU the gpu-labelled
# CTest gpu-calibrate runs it (tests/cli/gpu_calibrate_test.sh).
"$bin" calibrate --backend cuda -o "$tmp/cal1/x.textproto" >"$tmp/out" 2>"$tmp/err"
cuda_rc=$?
case $cuda_rc in
  2) expect_err "calibrate --backend cuda, no CUDA build" "--backend cuda: the cuda backend needs the GPU build" ;;
  1) expect_err "calibrate --backend cuda, no GPU" "moeplan: error: --backend cuda: no CUDA GPU found (" ;;
  0) echo "calibrate --backend cuda: a GPU is present; checked by CTest gpu-calibrate"
     rm -f "$tmp/cal1/x.textproto" "$tmp/cal1/x.points.csv" ;;
  *) fail=$((fail + 1)); echo "FAIL calibrate --backend cuda: exit $cuda_rc"; cat "$tmp/err" ;;
esac
check "calibrate --backend bogus" 2 "$bin" calibrate --backend bogus -o "$tmp/cal1/x.textproto"
expect_err "calibrate --backend bogus" "--backend"
[[ ! -e $tmp/cal1/x.textproto && ! -e $tmp/cal1/x.points.csv ]] && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL calibrate with a bad --backend wrote files"; }
# Two MPI processes: the five collectives too (skipped, and said, without mpirun or an MPI build).
if command -v mpirun >/dev/null && ! grep -q "built without MPI" "$tmp/cal1/host.textproto"; then
  # Under ASan, LeakSanitizer would abort on Open MPI's own allocations (tests/lsan-openmpi.supp).
  mpi=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
       "LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$src/tests/lsan-openmpi.supp"
       OMPI_MCA_mca_base_component_disable_dlclose=1 mpirun -n 2 --oversubscribe)
  [[ $(id -u) == 0 ]] && mpi+=(--allow-run-as-root)
  echo "calibrate: under ${mpi[*]}"
  check "calibrate --quick, mpirun -n 2" 0 "${mpi[@]}" "$bin" calibrate --backend host --quick -o "$tmp/cal2/host.textproto"
  calibrate_progress "calibrate progress, mpirun" "gemm: 6 shapes" "attention: 6 shapes" "overlap: GEMM 256" \
    "overlap: GEMM beside a polled MPI_Iallreduce" "alltoall: 2 ranks" "allgather: 2 ranks" "reducescatter: 2 ranks" \
    "allreduce: 2 ranks" "p2p (sendrecv): 2 ranks"
  check "calibrate mpi profile validates" 0 "$bin" validate "$tmp/cal2/host.textproto"
  check "fit calibrate mpi points" 0 "$bin" fit "$tmp/cal2/host.points.csv" --cluster host-2 -o "$tmp/cal2/refit.textproto"
  calibrate_checks "$tmp/cal2" 1
  check "simulate host-flowmoe-small on the calibrated profile" 0 "$bin" simulate host-flowmoe-small \
    --set profile_ref="$tmp/cal2/host.textproto"
else
  echo "calibrate: single process only (no mpirun, or moeplan built without MPI): collective lines not checked"
fi
# Issue 17, item 2: plans round-trip. `simulate PLAN` rebuilds the planned run from the plan alone
# (its scenario, its --set overrides, its knobs) and must give the plan's iteration time exactly:
# the same graph built from the same fields is the same bytes, so the two JSON numbers are equal
# as written (shortest round-trip form), not just close.
rt=$tmp/roundtrip
mkdir -p "$rt/elsewhere" "$rt/plans"
roundtrip() {  # roundtrip NAME PLAN_FILE PLAN_ARGS...: plan -o PLAN_FILE, then simulate PLAN_FILE
  local name=$1 planfile=$2
  shift 2
  check "round trip: plan $name" 0 "$bin" plan "$@" --json -o "$planfile"
  cp "$tmp/out" "$rt/plan.json"
  check "round trip: simulate $name" 0 "$bin" simulate "$planfile" --json
  python3 - "$rt/plan.json" "$tmp/out" "$name" <<'PY' && pass=$((pass + 1)) || fail=$((fail + 1))
import json, sys
plan, sim, name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
# A folding plan's "schedule" names the search (folded), simulate's the pipeline (1f1b): times only.
if plan["iteration_ms"] != sim["iteration_ms"] or (name != "folding" and plan["schedule"] != sim["schedule"]):
    print(f"FAIL round trip {name}: plan {plan['schedule']} {plan['iteration_ms']!r} ms, "
          f"simulate {sim['schedule']} {sim['iteration_ms']!r} ms")
    sys.exit(1)
PY
}
roundtrip foldmoe "$rt/plans/foldmoe.textproto" foldmoe-gpt-moe-s-4k --set workload.seq_len=2048
roundtrip fsmoe "$rt/plans/fsmoe.textproto" fsmoe-testbed-b-gpt2-xl
roundtrip flowmoe "$rt/plans/flowmoe.textproto" flowmoe-gpt2-tiny-moe-c1 --set model.num_layers=4
roundtrip folding "$rt/plans/folding.textproto" folding-qwen2-57b-a14b-64
# The --set of the plan is in the file: without it the foldmoe plan's degree would be the 4K run's.
grep -q '^scenario_overrides: "workload.seq_len=2048"' "$rt/plans/foldmoe.textproto" && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL round trip: the plan file does not keep its --set"; }
# A scenario given by a relative path is found beside the plan, from any directory.
cp "$src/scenarios/foldmoe-gpt-moe-s-8k.textproto" "$rt/elsewhere/mine.textproto"
(cd "$rt/elsewhere" && "$bin" plan mine.textproto -o p.textproto >/dev/null 2>&1)
(cd / && "$bin" simulate "$rt/elsewhere/p.textproto" --json >"$tmp/out" 2>"$tmp/err") && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL round trip: a plan's relative scenario is not found beside it:"; cat "$tmp/err"; }
# A plan without what rebuilds the run (written before it carried it) says so, naming the field.
grep -v '^scenario_ref' "$rt/plans/fsmoe.textproto" >"$rt/plans/old.textproto"
check "round trip: plan without scenario_ref" 2 "$bin" simulate "$rt/plans/old.textproto"
expect_err "round trip: plan without scenario_ref" "old.textproto: scenario_ref: missing: a plan names scenario_ref"
# A knob the scenario refuses is blamed on the plan's line.
sed 's/^  degree: .*/  degree: 0/' "$rt/plans/flowmoe.textproto" >"$rt/plans/bad.textproto"
check "round trip: plan with a bad knob" 2 "$bin" simulate "$rt/plans/bad.textproto"
expect_err "round trip: plan with a bad knob" "bad.textproto"

# Issue 17, item 2: --emit prints the plan as its system takes it. Each flag must carry the value of
# the knob it names in the same plan's JSON (Megatron-LM's argument names, docs/cli.md).
check "plan --emit megatron" 0 "$bin" plan folding-qwen2-57b-a14b-64 --emit megatron
cp "$tmp/out" "$tmp/emit-megatron.txt"
check "plan --json (folding, for --emit)" 0 "$bin" plan folding-qwen2-57b-a14b-64 --json
python3 - "$tmp/emit-megatron.txt" "$tmp/out" <<'PY' && pass=$((pass + 1)) || fail=$((fail + 1))
import json, sys
words = open(sys.argv[1]).read().splitlines()[0].split()
flags = {w: (words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else True)
         for i, w in enumerate(words) if w.startswith("--")}
plan = json.load(open(sys.argv[2]))
p = plan["knobs"]["parallelism"]
want = {"--tensor-model-parallel-size": str(p["tp"]), "--pipeline-model-parallel-size": str(p["pp"]),
        "--context-parallel-size": str(p["cp"]), "--expert-model-parallel-size": str(p["ep"]),
        "--expert-tensor-parallel-size": str(p["etp"]),
        "--micro-batch-size": str(plan["knobs"]["micro_batch_size"])}
bad = {k: (flags.get(k), v) for k, v in want.items() if flags.get(k) != v}
if p["sequence_parallel"] != ("--sequence-parallel" in flags):
    bad["--sequence-parallel"] = (flags.get("--sequence-parallel"), p["sequence_parallel"])
if bad:
    print("FAIL --emit megatron disagrees with the plan:", bad)
    sys.exit(1)
PY
check "plan --emit knobs (flowmoe)" 0 "$bin" plan flowmoe-gpt2-tiny-moe-c1 --emit knobs
cp "$tmp/out" "$tmp/emit-knobs.txt"
check "plan --json (flowmoe, for --emit)" 0 "$bin" plan flowmoe-gpt2-tiny-moe-c1 --json
python3 - "$tmp/emit-knobs.txt" "$tmp/out" <<'PY' && pass=$((pass + 1)) || fail=$((fail + 1))
import json, sys
kv = dict(l.split("=", 1) for l in open(sys.argv[1]).read().splitlines() if "=" in l and not l.startswith("#"))
k = json.load(open(sys.argv[2]))["knobs"]
if kv.get("R") != str(k["degree"]) or kv.get("Sp_bytes") != str(k["ar_chunk_bytes"]):
    print("FAIL --emit knobs disagrees with the plan:", kv, k)
    sys.exit(1)
PY
check "plan --emit megatron on foldmoe" 2 "$bin" plan foldmoe-gpt-moe-s-4k --emit megatron
expect_err "plan --emit megatron on foldmoe" "--emit megatron: applies to folding scenarios"
check "plan --emit knobs on folding" 2 "$bin" plan folding-qwen2-57b-a14b-64 --emit knobs
expect_err "plan --emit knobs on folding" "--emit knobs: applies to foldmoe, fsmoe and flowmoe scenarios"
check "plan --emit with --json" 2 "$bin" plan foldmoe-gpt-moe-s-4k --emit knobs --json
check "plan --emit bogus" 2 "$bin" plan foldmoe-gpt-moe-s-4k --emit bogus

# execute (issue 16): replay the task graph on this host and compare with the simulation.
check "execute --iterations 0" 2 "$bin" execute host-flowmoe-small --backend host --iterations 0
expect_err "execute --iterations 0" "--iterations"
check "execute --backend bogus" 2 "$bin" execute host-flowmoe-small --backend bogus --set model.num_layers=1
expect_err "execute --backend bogus" "--backend"
check "execute a folding scenario" 2 "$bin" execute folding-mixtral-8x22b-128 --backend host
expect_err "execute a folding scenario" "schedule.family"
check "execute a symmetric graph" 2 "$bin" execute host-flowmoe-small --backend host --set schedule.mode=symmetric \
  --set model.num_layers=1
expect_err "execute a symmetric graph" "schedule.mode"
check "execute -o without --compare" 2 "$bin" execute host-flowmoe-small --backend host -o "$tmp/x.json"
expect_err "execute -o without --compare" "--compare"
# The measured trace obeys every stream's rule; the comparison's figures are
# finite and agree with each other and with the trace. Error sizes are not
# asserted: this machine is shared and noisy (docs/validation.md has them).
cat >"$tmp/exec_check.py" <<'PY'
import glob, math, sys
from cli_check import load, expect, expect_close, done

prefix, priority_streams = sys.argv[1], set(sys.argv[2].split(",")) - {""}
files = sorted(f for f in glob.glob(prefix + ".*.json") if ".trace." not in f)
expect(len(files) >= 4, f"{prefix}: {len(files)} schedules")
for f in files:
    schedule = f[len(prefix) + 1:-len(".json")]
    j = load(f)
    def finite(v):
        return isinstance(v, (int, float)) and math.isfinite(v)
    for key in ("simulated_iteration_ms", "measured_iteration_ms", "iteration_error_pct",
                "simulated_exposed_comm_ms", "measured_exposed_comm_ms"):
        expect(finite(j.get(key)), f"{schedule}: {key} = {j.get(key)}")
    sim, real = j["simulated_iteration_ms"], j["measured_iteration_ms"]
    expect(sim > 0 and real > 0, f"{schedule}: iterations {sim}, {real}")
    expect_close(j["iteration_error_pct"], 100 * (sim - real) / real, f"{schedule}: iteration_error_pct", 1e-9)
    its = sorted(j["measured_iterations_ms"])
    expect_close(real, its[(len(its) - 1) // 2], f"{schedule}: the median iteration", 1e-12)
    expect(j["proxied_tasks"] == [], f"{schedule}: the host proxies nothing")
    expect(sum(o["tasks"] for o in j["ops"]) == j["tasks"], f"{schedule}: op classes cover the tasks")
    for o in j["ops"]:
        for key in ("simulated_median_ms", "simulated_p95_ms", "measured_median_ms", "measured_p95_ms", "error_pct"):
            expect(finite(o[key]), f"{schedule} {o['op']}: {key}")
        expect(o["simulated_median_ms"] <= o["simulated_p95_ms"] + 1e-12, f"{schedule} {o['op']}: sim median > p95")
        expect(o["measured_median_ms"] <= o["measured_p95_ms"] + 1e-12, f"{schedule} {o['op']}: median > p95")
        if o["measured_median_ms"] > 0:
            expect_close(o["error_pct"], 100 * (o["simulated_median_ms"] - o["measured_median_ms"]) /
                         o["measured_median_ms"], f"{schedule} {o['op']}: error_pct", 1e-9)
    trace = load(f"{prefix}.trace.{schedule}.json")
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    streams = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            streams.setdefault((e["pid"], e["tid"]), []).append(e)
    expect(len({e["args"]["task"] for s in streams.values() for e in s}) == j["tasks"], f"{schedule}: trace tasks")
    end = max(e["ts"] + e["dur"] for s in streams.values() for e in s) / 1000
    expect_close(end, real, f"{schedule}: the trace ends with the measured iteration", 1e-9)
    for key, events in streams.items():
        events.sort(key=lambda e: (e["ts"], e["args"]["task"]))
        in_order = names[key] not in priority_streams
        for a, b in zip(events, events[1:]):
            # ts and dur are ms x 1000 in doubles: 1e-6 us of rounding
            expect(a["ts"] + a["dur"] <= b["ts"] + 1e-6,
                   f"{schedule} rank {key[0]} {names[key]}: {a['name']} overlaps {b['name']}")
            if in_order:
                expect(a["args"]["task"] < b["args"]["task"],
                       f"{schedule} rank {key[0]} {names[key]}: {b['name']} ran before {a['name']} (issue order)")
    # Every dependency of the graph (the trace's flow events, one pair per edge): the later task
    # starts no earlier than the earlier one ends, on every rank, across processes.
    span = {}
    for s in streams.values():
        for e in s:
            span[e["args"]["task"]] = (e["ts"], e["ts"] + e["dur"])
    starts = {e["id"]: e["args"]["from"] for e in trace["traceEvents"] if e["ph"] == "s"}
    ends = {e["id"]: e["args"]["to"] for e in trace["traceEvents"] if e["ph"] == "f"}
    expect(len(starts) > 0 and starts.keys() == ends.keys(), f"{schedule}: dependency flow events pair up")
    for k, a in starts.items():
        b = ends[k]
        expect(span[a][1] <= span[b][0] + 1e-6, f"{schedule}: task {b} started before its dependency {a} ended")
done()
PY
if command -v mpirun >/dev/null && ! grep -q "built without MPI" "$tmp/cal1/host.textproto"; then
  mpi=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
       "LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$src/tests/lsan-openmpi.supp"
       OMPI_MCA_mca_base_component_disable_dlclose=1 mpirun -n 2 --oversubscribe)
  [[ $(id -u) == 0 ]] && mpi+=(--allow-run-as-root)
  where="mpirun -n 2"
else
  mpi=()
  where="one process"
fi
echo "execute: under ${where}"
mkdir -p "$tmp/exec"
# Scaled down to about a second each: 2 blocks, short sequences, one measured iteration.
check "execute host-flowmoe-small --schedule all, $where" 0 "${mpi[@]}" "$bin" execute host-flowmoe-small \
  --backend host --schedule all --compare --json --iterations 1 --warmup 0 --set model.num_layers=2 \
  --set workload.seq_len=64 --set workload.micro_batch_size=2 -o "$tmp/exec/flow.json" --trace "$tmp/exec/flow.trace.json"
pycheck "execute host-flowmoe-small: trace order and comparison" "$tmp/exec/flow" comm <"$tmp/exec_check.py"
check "execute host-foldmoe-small --schedule all, $where" 0 "${mpi[@]}" "$bin" execute host-foldmoe-small \
  --backend host --schedule all --compare --json --iterations 1 --warmup 0 --set model.num_layers=2 \
  --set workload.seq_len=256 -o "$tmp/exec/fold.json" --trace "$tmp/exec/fold.trace.json"
pycheck "execute host-foldmoe-small: trace order and comparison" "$tmp/exec/fold" "" <"$tmp/exec_check.py"
check "validate-hw host-flowmoe-small, $where" 0 "${mpi[@]}" "$bin" validate-hw host-flowmoe-small --backend host \
  --json --iterations 1 --warmup 0 --set model.num_layers=1 --set workload.seq_len=64 --set workload.micro_batch_size=2
cp "$tmp/out" "$tmp/exec/validate-hw.json"
pycheck "validate-hw: rankings and errors agree with the times" "$tmp/exec/validate-hw.json" <<'PY'
import sys
from cli_check import load, expect, expect_close, done
j = load(sys.argv[1])
rows = j["schedules"]
expect([r["schedule"] for r in rows] == ["none", "tutel", "flowmoe-at", "flowmoe-ar", "flowmoe"], "every schedule")
for key, rank in (("simulated_iteration_ms", "simulated_rank"), ("measured_iteration_ms", "measured_rank")):
    expect(sorted(r[rank] for r in rows) == list(range(1, len(rows) + 1)), f"{rank} is a permutation")
    by_rank = sorted(rows, key=lambda r: r[rank])
    expect(all(a[key] <= b[key] for a, b in zip(by_rank, by_rank[1:])), f"{rank} follows {key}")
best = {"simulated_best": "simulated_rank", "measured_best": "measured_rank"}
for key, rank in best.items():
    expect(next(r for r in rows if r[rank] == 1)["schedule"] == j[key], key)
for r in rows:
    expect_close(r["iteration_error_pct"], 100 * (r["simulated_iteration_ms"] - r["measured_iteration_ms"]) /
                 r["measured_iteration_ms"], f"{r['schedule']}: iteration_error_pct", 1e-9)
done()
PY
# validate-hw --calibrate: the whole loop in one run (calibrate, simulate, execute). Refusals first (one process).
check "validate-hw --calibrate with --profile" 2 "$bin" validate-hw host-flowmoe-small --backend host \
  --calibrate "$tmp/exec/vh.textproto" --profile host-2
expect_err "validate-hw: --calibrate and --profile" "--calibrate and --profile: give one"
check "validate-hw --quick alone" 2 "$bin" validate-hw host-flowmoe-small --backend host --quick
expect_err "validate-hw: --quick needs --calibrate" "--quick: only with --calibrate"
check "validate-hw --calibrate -" 2 "$bin" validate-hw host-flowmoe-small --backend host --calibrate -
expect_err "validate-hw: --calibrate -" "--calibrate -: calibrate writes the points beside the profile"
if [[ ${#mpi[@]} -gt 0 ]]; then
  vh=(--iterations 1 --warmup 0 --set model.num_layers=1 --set workload.seq_len=64 --set workload.micro_batch_size=2)
  check "validate-hw --calibrate --quick, $where" 0 "${mpi[@]}" "$bin" validate-hw host-flowmoe-small --backend host \
    --calibrate "$tmp/exec/vh.textproto" --quick --json "${vh[@]}"
  cp "$tmp/out" "$tmp/exec/vh.json"
  check "validate the profile validate-hw measured" 0 "$bin" validate "$tmp/exec/vh.textproto"
  # The run priced every schedule with the profile it wrote: simulate with that file gives the same times.
  check "simulate with the measured profile" 0 "$bin" simulate host-flowmoe-small --schedule all --json \
    --set profile_ref="$tmp/exec/vh.textproto" --set model.num_layers=1 --set workload.seq_len=64 \
    --set workload.micro_batch_size=2
  pycheck "validate-hw --calibrate priced with the profile it wrote" "$tmp/exec/vh.json" "$tmp/out" \
    "$tmp/exec/vh.textproto" <<'PY'
import json, os, sys
from cli_check import load, expect, done
run, sims = load(sys.argv[1]), json.load(open(sys.argv[2]))
expect(run["calibrated_profile"] == sys.argv[3], "calibrated_profile names the written file")
expect(run["profile"] == "vh", "the profile is named after the file")
expect(os.path.exists(sys.argv[3].replace(".textproto", ".points.csv")), "the points are written beside it")
by_schedule = {s["schedule"]: s["iteration_ms"] for s in sims}
for r in run["schedules"]:
    expect(r["simulated_iteration_ms"] == by_schedule[r["schedule"]],
           f"{r['schedule']}: validate-hw simulated {r['simulated_iteration_ms']!r}, simulate with the file {by_schedule[r['schedule']]!r}")
done()
PY
else
  check "validate-hw --calibrate without mpirun" 2 "$bin" validate-hw host-flowmoe-small --backend host \
    --calibrate "$tmp/exec/vh.textproto"
  expect_err "validate-hw: --calibrate needs mpirun" "--calibrate: not started by mpirun"
fi
# Issue 17 item 2 with issue 16: execute takes a plan too, and simulates the planned run (one process).
check "plan host-flowmoe-small -o" 0 "$bin" plan host-flowmoe-small --set model.num_layers=2 --json -o "$tmp/hostplan.textproto"
cp "$tmp/out" "$tmp/hostplan.json"
check "execute PLAN" 0 "$bin" execute "$tmp/hostplan.textproto" --backend host --compare --json --iterations 1 --warmup 0
python3 - "$tmp/hostplan.json" "$tmp/out" <<'PY' && pass=$((pass + 1)) || fail=$((fail + 1))
import json, sys
plan, run = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
if run["simulated_iteration_ms"] != plan["iteration_ms"] or run["schedule"] != plan["schedule"]:
    print(f"FAIL execute PLAN simulates {run['schedule']} {run['simulated_iteration_ms']!r}, plan {plan['schedule']} {plan['iteration_ms']!r}")
    sys.exit(1)
PY
# Issue 17, item 6: a progress bar on stderr when it is a terminal (script(1) gives the command one),
# none with --quiet, none in a pipe or a file; the result is the same.
if command -v script >/dev/null; then
  script -qc "$bin plan foldmoe-gpt-moe-s-4k --threads 2" /dev/null >"$tmp/tty.out" 2>&1
  grep -q "plan: [0-9]*/[0-9]* ([0-9]*%)" "$tmp/tty.out" && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL: no progress bar on a terminal:"; cat -v "$tmp/tty.out" | head -5; }
  script -qc "$bin plan foldmoe-gpt-moe-s-4k --threads 2 --quiet" /dev/null >"$tmp/tty.out" 2>&1
  ! grep -q "plan: [0-9]*/" "$tmp/tty.out" && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL: a progress bar with --quiet"; }
fi
check "plan, stderr not a terminal" 0 "$bin" plan foldmoe-gpt-moe-s-4k
! grep -q "plan: [0-9]*/" "$tmp/err" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: a progress bar in a file"; }

# Issue 18 item 5: import-hf writes a model from a Hugging Face config.json (tests/data/hf/SOURCES.md).
hf=$src/tests/data/hf
check "import-hf deepseek-v3 without --drop-mtp" 2 "$bin" import-hf "$hf/deepseek-v3.json" -o "$tmp/dsv3.textproto"
expect_err "import-hf names the MTP key" "deepseek-v3.json: num_nextn_predict_layers: 1 multi-token prediction module(s)"
is_true "import-hf refused writes nothing" test ! -e "$tmp/dsv3.textproto"
check "import-hf deepseek-v3 --drop-mtp" 0 "$bin" import-hf "$hf/deepseek-v3.json" -o "$tmp/dsv3.textproto" --drop-mtp --json
cp "$tmp/out" "$tmp/dsv3.json"
check "import-hf llama (dense)" 2 "$bin" import-hf "$hf/llama-3-8b.json" -o "$tmp/llama.textproto"
expect_err "import-hf refuses a dense model" "llama-3-8b.json: model_type: 'llama' is a dense model"
sed 's/"vocab_size": 32000/"vocab_size": 32000, "num_experts_per_group": 2/' "$hf/mixtral-8x7b.json" >"$tmp/odd.json"
check "import-hf unknown key" 2 "$bin" import-hf "$tmp/odd.json" -o "$tmp/odd.textproto"
expect_err "import-hf names an unknown key" "odd.json: num_experts_per_group: not read for model_type mixtral"
check "import-hf -o - --json" 2 "$bin" import-hf "$hf/mixtral-8x7b.json" -o - --json
check "import-hf -o -" 0 "$bin" import-hf "$hf/mixtral-8x7b.json" -o -
is_true "import-hf -o - prints the model alone" grep -q '^# proto-message: Model' "$tmp/out"
check "import-hf qwen2" 0 "$bin" import-hf "$hf/qwen2-57b-a14b.json" -o "$tmp/qwen2.textproto"
is_true "import-hf reports the counts" grep -q "57.409 B total, 14.249 B active" "$tmp/out"
pycheck "import-hf: validate reads the written model with the reported counts" "$tmp" <<'PY'
import sys
from cli_check import moeplan, load, expect, expect_close, done
tmp = sys.argv[1]
imported = load(f"{tmp}/dsv3.json")
checked = moeplan("validate", f"{tmp}/dsv3.textproto")[0]
expect(checked["ok"] and checked["kind"] == "model", "the written model validates")
expect(imported["params_total"] == checked["params_total"], "the same total")
expect(imported["params_active"] == checked["params_active"], "the same active count")
# DeepSeek-V3 report: 671B total (main model); 37B active, our count with the embedding table 37.55B.
expect_close(imported["params_total"], 671e9, "DeepSeek-V3 total", 0.01)
expect_close(imported["params_active"], 37e9, "DeepSeek-V3 active", 0.03)
expect(any("multi-token prediction" in n for n in imported["notes"]), "the dropped MTP module is said")
# The imported model plans: MLA and the three dense blocks on FoldMoE's schedules.
run = moeplan("simulate", "foldmoe-gpt-moe-m-16k", "--set", f"model_ref={tmp}/dsv3.textproto", "--set", "model.num_layers=5")
expect(run["iteration_ms"] > 0 and run["tasks"] > 0, "the imported model simulates")
done()
PY
check "imported metadata is refused as an option" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set "model_ref=$tmp/dsv3.textproto" --set model.moe.topk_groups=2
expect_err "metadata option named" "model.moe.topk_groups: cannot act on this foldmoe scenario: routing metadata"
# Issue 17 items 3 and 4: the joint mapping x overlap search (plan --joint) and `capacity`.
check "plan --joint" 0 "$bin" plan folding-mixtral-8x22b-128k-1024 --joint --threads 2
grep -q "^joint plan for folding-mixtral-8x22b-128k-1024" "$tmp/out" && grep -q "  no overlap: " "$tmp/out" &&
  grep -q "  default mapping: " "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL plan --joint text"; cat "$tmp/out"; }
check "plan --joint --json" 0 "$bin" plan folding-mixtral-8x22b-128k-1024 --joint --threads 2 --json
pycheck "plan --joint: the joint optimum against the two single searches" "$tmp/out" <<'PY'
import sys
from cli_check import *
j = load(sys.argv[1])
best, none, own = j["joint"], j["no_overlap"], j["default_mapping"]
expect(j["family"] == "joint", "family")
expect(best["iteration_ms"] == j["iteration_ms"] == j["chosen"]["iteration_ms"], "the plan keys are the joint optimum's")
expect(best["iteration_ms"] <= none["iteration_ms"], "no worse than the best mapping with no overlap")
expect(best["iteration_ms"] <= best["no_overlap_ms"], "no worse than its own mapping with no overlap")
expect(none["overlap"]["family"] == "none" and none["no_overlap_ms"] == none["iteration_ms"], "the no-overlap baseline")
expect_close(j["speedup_vs_no_overlap"], none["iteration_ms"] / best["iteration_ms"], "speedup_vs_no_overlap")
expect_close(j["speedup_vs_default_mapping"], own["iteration_ms"] / best["iteration_ms"], "speedup_vs_default_mapping")
expect(j["baselines"][0]["name"] == "no-overlap" and j["baselines"][1]["name"] == "default-mapping", "baselines")
# The scenario's own parallelism (tp 8 cp 8 pp 4 ep 8 etp 1) is the default mapping.
p = own["parallelism"]
expect((p["tp"], p["cp"], p["pp"], p["ep"], p["etp"]) == (8, 8, 4, 8, 1), f"default mapping {p}")
expect(all(a["iteration_ms"] <= b["iteration_ms"] for a, b in zip(j["joint_top10"], j["joint_top10"][1:])), "top10 order")
expect(j["search"]["evaluated"] <= j["search"]["fitting"] <= j["search"]["mappings"], "search counts")
done()
PY
check "plan --joint --emit megatron" 0 "$bin" plan folding-mixtral-8x22b-128k-1024 --joint --emit megatron
grep -q "^--tensor-model-parallel-size" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --joint --emit megatron"; }
check "plan --joint -o" 2 "$bin" plan folding-mixtral-8x22b-128k-1024 --joint -o "$tmp/joint.textproto"
expect_err "plan --joint -o" "moeplan: error: -o: a joint plan cannot be written as a plan file yet"
[[ ! -e $tmp/joint.textproto ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL plan --joint -o wrote a file"; }
check "plan --joint of an overlap scenario" 2 "$bin" plan foldmoe-gpt-moe-s-4k --joint
expect_err "plan --joint of an overlap scenario" "moeplan: error: --joint: searches the mappings of a folding scenario"
check "plan --joint --schedule" 2 "$bin" plan folding-mixtral-8x22b-128k-1024 --joint --schedule tutel
expect_err "plan --joint --schedule" "moeplan: error: --schedule: the joint search tries every schedule"
check "plan --joint --emit knobs" 2 "$bin" plan folding-mixtral-8x22b-128k-1024 --joint --emit knobs
expect_err "plan --joint --emit knobs" "moeplan: error: --emit knobs: applies to foldmoe, fsmoe and flowmoe scenarios"

cap=(capacity gpt-moe-s --cluster dgx-h100 --gpus 8..16 --global-batch 64 --threads 2)
check "capacity" 0 "$bin" "${cap[@]}" --tokens 100B --days 30 --cost-per-gpu-hour 2
grep -q "^capacity: gpt-moe-s on dgx-h100" "$tmp/out" && grep -q "  answer: 8 GPUs train it in" "$tmp/out" &&
  pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL capacity text"; cat "$tmp/out"; }
check "capacity --json -o csv" 0 "$bin" "${cap[@]}" --tokens 100B --days 30 --cost-per-gpu-hour 2 --json -o "$tmp/cap.csv"
cp "$tmp/out" "$tmp/cap.json"
python3 "$src/tests/cli/json_schema.py" "$src/docs/capacity.schema.json" "$tmp/cap.json" && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL capacity --json against docs/capacity.schema.json"; }
pycheck "capacity: days, GPU-hours, cost and the marks from the rows' own numbers" "$tmp/cap.json" "$tmp/cap.csv" <<'PY'
import csv, sys
from cli_check import *
j = load(sys.argv[1])
expect(j["tokens"] == 1e11 and j["deadline_days"] == 30 and j["cost_per_gpu_hour"] == 2, "the request")
expect([r["gpus"] for r in j["rows"]] == [8, 16], "8 and 16 GPUs: the node size times 1 and 2")
tokens_per_iteration = 64 * 4096
for r in j["rows"]:
    p = r["plan"]
    expect_close(r["tokens_per_s"], tokens_per_iteration / (p["iteration_ms"] / 1000), f"{r['gpus']}: tokens/s")
    expect_close(r["days"], 1e11 / r["tokens_per_s"] / 86400, f"{r['gpus']}: days")
    expect_close(r["gpu_hours"], r["gpus"] * r["days"] * 24, f"{r['gpus']}: GPU-hours")
    expect_close(r["cost"], 2 * r["gpu_hours"], f"{r['gpus']}: cost")
    expect(r["meets_deadline"] == (r["days"] <= 30), f"{r['gpus']}: meets_deadline")
    expect(p["iteration_ms"] <= p["no_overlap_ms"], f"{r['gpus']}: the overlap is no slower than none")
in_time = [r for r in j["rows"] if r["meets_deadline"]]
expect(j["smallest_gpus"] == min(r["gpus"] for r in in_time), "smallest_gpus")
expect(j["cost_optimal_gpus"] == min(in_time, key=lambda r: r["gpu_hours"])["gpus"], "cost_optimal_gpus: fewest GPU-hours")
rows = list(csv.DictReader(open(sys.argv[2])))
expect([int(r["gpus"]) for r in rows] == [8, 16], "CSV rows")
expect(all(float(c["days"]) == r["days"] for c, r in zip(rows, j["rows"])), "CSV days are the JSON's")
expect(rows[0]["mark"].startswith("smallest"), f"CSV mark {rows[0]['mark']}")
done()
PY
check "capacity --csv" 0 "$bin" "${cap[@]}" --tokens 100B --days 30 --cost-per-gpu-hour 2 --csv
cmp -s "$tmp/out" "$tmp/cap.csv" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL capacity --csv differs from -o x.csv"; }
check "capacity, no budget" 0 "$bin" "${cap[@]}" --json
pycheck "capacity without --tokens: no days, no marks of a deadline" "$tmp/out" <<'PY'
import sys
from cli_check import *
j = load(sys.argv[1])
expect(all(r["days"] is None and r["meets_deadline"] is None and r["cost"] is None for r in j["rows"]), "null budget figures")
expect(j["smallest_gpus"] is None, "no deadline: no smallest count")
best = max(j["rows"], key=lambda r: r["tokens_per_s"] / r["gpus"])
expect(j["cost_optimal_gpus"] == best["gpus"], "cost-optimal: the most tokens per GPU-second")
done()
PY
check "capacity: a model no count fits" 0 "$bin" capacity mixtral-8x22b --cluster dgx-h100 --gpus 8 --tokens 1T --days 10 --json
pycheck "capacity: no plan, bound by memory" "$tmp/out" <<'PY'
import sys
from cli_check import *
r = load(sys.argv[1])["rows"][0]
expect(r["plan"] is None and r["bound_by"] == "memory" and r["meets_deadline"] is False, f"row {r}")
done()
PY
check "capacity --days without --tokens" 2 "$bin" "${cap[@]}" --days 30
expect_err "capacity --days without --tokens" "moeplan: error: --days: a deadline needs a token budget (--tokens)"
check "capacity --cost-per-gpu-hour without --tokens" 2 "$bin" "${cap[@]}" --cost-per-gpu-hour 2
expect_err "capacity --cost-per-gpu-hour without --tokens" "moeplan: error: --cost-per-gpu-hour: a cost needs a token budget"
check "capacity --tokens 2X" 2 "$bin" "${cap[@]}" --tokens 2X
expect_err "capacity --tokens 2X" "moeplan: error: --tokens: expected a positive token count such as 2T, 500B or 3e11, got '2X'"
check "capacity --gpus 4096..64" 2 "$bin" capacity gpt-moe-s --cluster dgx-h100 --gpus 4096..64
expect_err "capacity --gpus 4096..64" "moeplan: error: --gpus: expected a count N or a range LO..HI"
check "capacity --gpus 3..5" 2 "$bin" capacity gpt-moe-s --cluster dgx-h100 --gpus 3..5
expect_err "capacity --gpus 3..5" "moeplan: error: --gpus: 3..5 holds no count of whole 8-GPU nodes times a power of two"
check "capacity --json --csv" 2 "$bin" "${cap[@]}" --json --csv
expect_err "capacity --json --csv" "moeplan: error: --csv:"
check "capacity --days 0" 2 "$bin" "${cap[@]}" --tokens 1T --days 0
expect_err "capacity --days 0" "--days"
check "capacity without --cluster" 2 "$bin" capacity gpt-moe-s
expect_err "capacity without --cluster" "--cluster"
check "capacity --cluster nosuch" 2 "$bin" capacity gpt-moe-s --cluster nosuch-cluster
expect_err "capacity --cluster nosuch" "nosuch-cluster"
check "capacity: an fp32 model on a half-precision profile" 2 "$bin" capacity gpt2-tiny-moe --cluster dgx-h100 --gpus 8
expect_err "capacity: an fp32 model on a half-precision profile" "moeplan: error: --profile: dgx-h100-datasheet prices GEMMs at 593.7 TFLOP/s, above H100-SXM5-80GB's fp32 peak of 67.0 TFLOP/s"
check "capacity --profile of another kind" 2 "$bin" capacity gpt-moe-s --cluster dgx-h100 --profile gpt-moe-s
expect_err "capacity --profile of another kind" "moeplan: error:"
if command -v script >/dev/null; then
  script -qc "$bin ${cap[*]}" /dev/null >"$tmp/tty.out" 2>&1
  grep -q "capacity: [0-9]*/[0-9]* ([0-9]*%)" "$tmp/tty.out" && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL: no capacity progress bar on a terminal:"; cat -v "$tmp/tty.out" | head -5; }
fi

echo "$pass passed, $fail failed"
[[ $fail == 0 ]]
