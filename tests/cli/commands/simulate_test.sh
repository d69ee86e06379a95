#!/usr/bin/env bash
# simulate: every family's schedules (--schedule all = each schedule alone;
# attention FLOPs by hand), multi-rank graphs and stragglers, ep = 1, the
# overlap slowdown, noise over seeds, uneven expert load (routing), traces at
# scale and --trace-ranks, and --max-memory.
# Usage: simulate_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"

# simulate on the default FoldMoE scenario.
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
expect_err "simulate bad degree" "--degree: must be at most 4096, got 100000"
# --schedule on the command line is what is blamed (a file's schedule.name: validate_test.sh).
check "--schedule of another family" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule flowmoe
expect_err "--schedule of another family" "moeplan: error: --schedule: 'flowmoe' is a flowmoe schedule; this scenario is foldmoe"

# FSMoE: six schedules.
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

# FlowMoE: five schedules.
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

# Multi-rank graphs: identical ranks give the symmetric run; stragglers slow it.
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
expect_err "--max-memory 0" "--max-memory: must be at least 0.001 GiB, got 0"

# The scenario's mapping against its GPU (docs/cost-model.md, "Memory"):
# Mixtral-8x22B on 128 H100s needs 73.6 GiB of the 76.7 usable (80 GiB less
# the CUDA context, over the allocator's 4%): it fits, by less than the memory
# model's 6.6% under-prediction of measured peaks (73.6 / 0.934 = 78.8), which
# simulate says; FlowMoE's ablation scenario needs 30.8 GiB of a 24 GiB GPU.
check "simulate: a tight mapping" 0 "$bin" simulate folding-mixtral-8x22b-128
expect_err "a tight mapping is said" "needs 73.6 GiB per GPU of the 76.7 GiB usable, within the memory model's largest under-prediction of a measured peak (6.6%): the run may not fit"
check "simulate: a mapping that does not fit" 0 "$bin" simulate flowmoe-ablation-c1
expect_err "a mapping that does not fit is said" "needs 30.8 GiB per GPU, more than the 22.8 GiB usable: these times are for a run that would not fit"

summary
