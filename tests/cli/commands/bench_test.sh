#!/usr/bin/env bash
# bench engine: the benchmark DAGs' sizes by hand and its multi-rank run
# against simulate of the same graph; speeds are only present.
# Usage: bench_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"

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

# Issue 26 item 10: the published runs, each simulated at its exact configuration.
check "bench published" 0 "$bin" bench published --json
cp "$tmp/out" "$tmp/published.json"
# S1-01 written by hand as a scenario (SimuMax's Llama3-70B cut to 12 layers,
# tp 1 pp 2 dp 4 on one DGX B200, 4 micro-batches of one 4096-token sequence,
# its loss on Transformer Engine's fused kernels): simulate must give the bench's prediction.
cat >"$tmp/s1-01.textproto" <<'EOF'
name: "s1-01-by-hand"
model_ref: "llama3-70b"
cluster_ref: "dgx-b200"
profile_ref: "dgx-b200-datasheet"
set: "cluster.num_nodes=1"
set: "model.num_layers=12"
parallelism { tp: 1 pp: 2 }
workload { seq_len: 4096 micro_batch_size: 1 global_batch_size: 16 }
schedule { family: "folding" recompute: "none" cross_entropy_fusion: "te" }
EOF
check "simulate S1-01 by hand" 0 "$bin" simulate "$tmp/s1-01.textproto" --json
pycheck "bench published: rows, errors and the summary" "$tmp/published.json" "$tmp/out" "$src/scenarios/clusters" <<'PY'
import json, os, re, sys
from cli_check import load, expect, expect_close, done
b, sim = load(sys.argv[1]), json.load(open(sys.argv[2]))
runs = {r["id"]: r for r in b["runs"]}
expect(len(runs) == len(b["runs"]) == b["summary"]["rows"], "one row per run, ids unique")
expect(len(runs) >= 37, f"{len(runs)} runs")
s1 = runs["S1-01"]
expect(s1["measured_iteration_s"] == 0.843, "S1-01 measured 0.843 s (SimuMax real_ms 843.0)")
expect_close(s1["predicted_iteration_s"], sim["iteration_ms"] / 1000, "S1-01 is simulate's figure", 1e-12)
expect_close(s1["error_pct"], 100 * (s1["predicted_iteration_s"] - 0.843) / 0.843, "signed error", 1e-9)
expect_close(s1["memory_error_pct"], 100 * (s1["predicted_memory_gib"] - 66.55) / 66.55, "memory error", 1e-9)
errors = sorted(abs(r["error_pct"]) for r in b["runs"])
n = len(errors)
median = errors[n // 2] if n % 2 else (errors[n // 2 - 1] + errors[n // 2]) / 2
expect_close(b["summary"]["median_abs_error_pct"], median, "median |error|", 1e-12)
# Pairs by hand: same model (as the source names it and as run: its file and
# model overrides), cluster, GPU count, sequence and batch, another mapping.
def key(r):
    return (r["model"], r["model_as_run"], r["cluster"], r["gpus"], r["seq"], r["global_batch"])
expect(runs["S1-44"]["model_as_run"] == "llama3-70b;model.num_layers=8", "S1-44 runs Llama3-70B at 8 layers")
expect(runs["S1-02"]["model_as_run"] == "llama3-70b;model.num_layers=12", "S1-02 at 12: another model")
pairs = ok = 0
rows = b["runs"]
for i in range(n):
    for j in range(i + 1, n):
        a, c = rows[i], rows[j]
        if key(a) != key(c):
            continue
        if a["mapping"] == c["mapping"] or a["measured_iteration_s"] == c["measured_iteration_s"]:
            continue
        pairs += 1
        d_meas = a["measured_iteration_s"] - c["measured_iteration_s"]
        d_pred = a["predicted_iteration_s"] - c["predicted_iteration_s"]
        ok += d_pred != 0 and (d_meas < 0) == (d_pred < 0)
expect(b["summary"]["pairs"] == pairs and b["summary"]["pairs_in_measured_order"] == ok, f"pairs {pairs}, in order {ok}")
expect(pairs > 0, "the table has pairs to rank")
# Groups by hand: rows sharing that key with two or more mappings; a hit when
# the row predicted fastest (the first on a tie) has the mapping of the row
# measured fastest (the first on a tie), or the group's least measured time.
groups = {}
for r in rows:
    groups.setdefault(key(r), []).append(r)
g = hit = 0
for v in groups.values():
    if len({r["mapping"] for r in v}) < 2:
        continue
    g += 1
    pick = min(v, key=lambda r: r["predicted_iteration_s"])
    fastest = min(v, key=lambda r: r["measured_iteration_s"])
    hit += pick["mapping"] == fastest["mapping"] or pick["measured_iteration_s"] == fastest["measured_iteration_s"]
expect(b["summary"]["groups"] == g and b["summary"]["groups_fastest_predicted"] == hit, f"groups {g}, fastest predicted {hit}")
expect(len(b["summary"]["group_misses"]) == g - hit, "one miss per group the model ranks otherwise")
# Recorded 17 of 19 (docs/validation.md): S1-31, within the runs' noise, and
# Qwen3-30B on 16 H100 (S5-042, pp 2 x vpp 12 at ep 8, ran 2.6% faster than
# S5-012 at ep 16 in another container; the host-issue model prices ep 8's 16
# local experts a rank above the 8 of ep 16: docs/validation.md) are the misses.
expect(b["summary"]["groups_fastest_predicted"] >= 17, f"{b['summary']['groups_fastest_predicted']} groups' fastest predicted (recorded 17 of 19)")
# The accuracy gate (issue 27): docs/validation.md records median |error| 6.5%
# (8.5% over the 89 MoE rows), 48 of 52 pairs in the measured order and
# memory 2.85% (the largest 6.6%) for this table; a change that loses more than
# 2 points of any of these errors, or a pair, or puts a row's memory more than
# 10% off (issue 27's bound), fails here.
expect(b["summary"]["median_abs_error_pct"] <= 6.5 + 2, f"median |error| {b['summary']['median_abs_error_pct']:.2f}% (recorded 6.5%)")
moe_errs = sorted(abs(r["error_pct"]) for r in b["runs"] if not r["model"].endswith("(dense)"))
moe_median = (moe_errs[(len(moe_errs) - 1) // 2] + moe_errs[len(moe_errs) // 2]) / 2
expect(len(moe_errs) >= 80 and moe_median <= 8.5 + 2, f"MoE rows: median |error| {moe_median:.2f}% over {len(moe_errs)} (recorded 8.5%)")
# SimuMax's own predictions of its B200 rows (S1): 6.4% median |error| on the
# MoE rows, 5.5% on the dense ones (its v1.2 release summary); issue 27 asks
# moeplan to be at or below them. Recorded 6.3% and 4.9% since Megatron-Core
# DDP's passes over the gradient buffers are priced (docs/cost-model.md,
# "Gradient buffer passes"): at or below SimuMax's, the MoE rows by 0.1 point
# (docs/validation.md); a change that loses 2 more points fails here.
def median(xs):
    xs = sorted(xs)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2
for kind, recorded, simumax in (("(MoE)", 6.3, 6.4), ("(dense)", 4.9, 5.5)):
    errs = [abs(r["error_pct"]) for r in b["runs"] if r["id"].startswith("S1-") and r["model"].endswith(kind)]
    expect(len(errs) >= 12 and median(errs) <= recorded + 2, f"S1 {kind} rows: median |error| {median(errs):.2f}% over {len(errs)} (recorded {recorded}%, SimuMax's {simumax}%)")
expect(b["summary"]["median_abs_memory_error_pct"] <= 2.9 + 2, f"memory median |error| {b['summary']['median_abs_memory_error_pct']:.2f}% (recorded 2.85%)")
mem_errs = [abs(r["memory_error_pct"]) for r in b["runs"] if r.get("memory_error_pct") is not None]
expect(len(mem_errs) >= 40 and max(mem_errs) <= 10, f"memory: the largest |error| {max(mem_errs):.2f}% over {len(mem_errs)} rows (recorded 6.6%, issue 27's bound 10%)")
# The tight line's margin (cost::MemoryModel::largest_underprediction, 0.066)
# must cover every published peak the model under-predicts: if a change makes
# one worse, this fails and the margin must be revisited.
under = [-r["memory_error_pct"] for r in b["runs"] if r.get("memory_error_pct") is not None and r["memory_error_pct"] < 0]
expect(under and max(under) <= 6.6, f"the largest under-prediction of a published peak {max(under):.2f}% (the tight margin 6.6%)")
expect(b["summary"]["pairs_in_measured_order"] >= 48, f"{b['summary']['pairs_in_measured_order']} pairs in order (recorded 48 of 52: issue 27 asks for 90%)")
# What fits, by hand (docs/cost-model.md, "Memory"): the cluster file's GPU
# memory less PyTorch's lazy-loaded CUDA context (287,047,680 B), over the
# allocator's median 4.0% above the peak; tight when the prediction / (1 -
# 0.066) (the peak it stands for if under-predicted by the model's largest
# under-prediction of a published peak, a share of that peak) is over that.
# Every row ran, so every row must be predicted to fit (issue 27).
gib = 2.0 ** 30
memory = {}
for r in b["runs"]:
    if r["cluster"] not in memory:
        text = open(os.path.join(sys.argv[3], r["cluster"] + ".textproto")).read()
        memory[r["cluster"]] = float(re.search(r"memory_gib:\s*([0-9.]+)", text).group(1)) * gib
    usable = (memory[r["cluster"]] - 287047680) / 1.04
    held = r["predicted_memory_gib"] * gib
    expect(r["predicted_fits"] == (held <= usable), f"{r['id']}: fits by hand")
    expect(r["predicted_tight"] == (held <= usable and held / (1 - 0.066) > usable), f"{r['id']}: tight by hand")
expect(b["summary"]["rows_predicted_to_fit"] == len(b["runs"]), f"{b['summary']['rows_predicted_to_fit']} of {len(b['runs'])} rows predicted to fit")
expect(b["summary"]["tight_rows"] == [r["id"] for r in b["runs"] if r["predicted_tight"]], "the tight rows listed")
done()
PY
printf 'id\tsource\n' >"$tmp/short.tsv"
check "bench published: a table without the columns" 2 "$bin" bench published --runs "$tmp/short.tsv"
expect_err "bench published names the missing column" "short.tsv:1:1: header: column model is missing"
check "bench --runs on another bench" 2 "$bin" bench engine --runs "$tmp/short.tsv"
expect_err "--runs is published's" "--runs: only bench published reads a table"

summary
