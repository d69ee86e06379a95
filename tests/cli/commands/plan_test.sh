#!/usr/bin/env bash
# plan: each family's plan against simulate of its choice and baselines, plan
# files (not scenarios; round trips through simulate; --emit), the joint
# search (--joint), refusals (noise, --max-memory), refused threads and the
# progress bar. Usage: plan_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"

# plan on the default FoldMoE scenario.
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

# FSMoE: the plan's closed-form keys.
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

# FlowMoE: the plan carries R, Sp and the BO trace.
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

# Folding: the mapping search.
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
        sets += ["--set", f"parallelism.{key}={str(value).lower() if isinstance(value, bool) else value}"]
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
# ep = 1 is legal (issue 14 item 3; every family's simulate and plan: simulate_test.sh).
check "folding plan ep 1" 0 "$bin" plan folding-qwen2-57b-a14b-64 --set parallelism.ep=1 --json

# Issue 13, item 3: a plan written by `plan` is not a scenario; say so (with or without its header line).
# Issue 17, item 2: simulate (and execute) take it: see "plans round-trip" below.
check "plan writes a plan" 0 "$bin" plan foldmoe-gpt-moe-m-16k -o "$tmp/p.textproto"
check "plan of a plan file" 2 "$bin" plan "$tmp/p.textproto"
expect_err "plan of a plan file" "this is a plan file, not a scenario"
tail -n +2 "$tmp/p.textproto" >"$tmp/p-noheader.textproto"
check "simulate of a plan without its header" 2 "$bin" simulate "$tmp/p-noheader.textproto"
expect_err "simulate of a plan without its header" "this is a plan file, not a scenario"

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
# An FP8 recipe reaches Megatron's arguments by its name there (and mxfp8 is refused on Hopper).
check "plan --emit megatron (fp8_tensorwise)" 0 "$bin" plan folding-llama3-70b-64 --set workload.precision=fp8_tensorwise --emit megatron
grep -q -- "--fp8-format hybrid --fp8-recipe tensorwise" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron without the FP8 recipe"; }
# Megatron's data-parallel overlap reaches its arguments; the joint search prices its own and refuses it.
check "plan --emit megatron (overlap_grad_reduce)" 0 "$bin" plan folding-llama3-70b-64 --set schedule.overlap_grad_reduce=true --set schedule.overlap_param_gather=true --emit megatron
grep -q -- "--overlap-grad-reduce --overlap-param-gather" "$tmp/out" && grep -q "behind the last backward pass" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron without the DP overlap"; }
# bf16 gradients and the precision-aware optimizer (Megatron-Bridge's BF16
# recipes) reach Megatron's arguments (one search for both: it is the
# sanitizer suite's slowest kind of check); a family that does not price them
# refuses the fields.
check "plan --emit megatron (grad_reduce_in_bf16, precision-aware optimizer, bf16 moments, gradient checks)" 0 "$bin" plan folding-llama3-70b-64 --set schedule.grad_reduce_in_bf16=true --set schedule.precision_aware_optimizer=true --set schedule.optimizer_moments_dtype=bf16 --set schedule.check_for_nan_in_grad=false --set schedule.average_in_collective=true --emit megatron
grep -q -- "--grad-reduce-in-bf16" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron without --grad-reduce-in-bf16"; }
grep -q -- "--no-check-for-nan-in-loss-and-grad --ddp-average-in-collective" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron without the gradient buffer's flags"; }
grep -q -- "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron without the precision-aware optimizer's flags"; }
check "grad_reduce_in_bf16 on FoldMoE" 2 "$bin" simulate foldmoe-gpt-moe-s-4k --set schedule.grad_reduce_in_bf16=true
expect_err "grad_reduce_in_bf16 named as the folding family's" "schedule.grad_reduce_in_bf16"
check "check_for_nan_in_grad on FoldMoE" 2 "$bin" simulate foldmoe-gpt-moe-s-4k --set schedule.check_for_nan_in_grad=false
expect_err "check_for_nan_in_grad named as the folding family's" "schedule.check_for_nan_in_grad"
# tp 8 x pp 8 on 64 GPUs leaves dp = edp = 1: no gradient collective to average.
check "average_in_collective without data parallelism" 2 "$bin" simulate folding-llama3-70b-64 --set schedule.average_in_collective=true --set parallelism.tp=8 --set parallelism.pp=8 --set parallelism.cp=1 --set parallelism.etp=8
expect_err "average_in_collective named" "schedule.average_in_collective: cannot act"
# What the precision-aware optimizer cannot be.
check "bf16 moments without the precision-aware optimizer" 2 "$bin" simulate folding-llama3-70b-64 --set schedule.optimizer_moments_dtype=bf16
expect_err "bf16 moments named" "schedule.optimizer_moments_dtype"
check "precision-aware optimizer under Megatron-FSDP" 2 "$bin" simulate folding-llama3-70b-64 --set schedule.precision_aware_optimizer=true --set schedule.data_parallel_sharding_strategy=optim_grads_params
expect_err "precision-aware optimizer named under FSDP" "schedule.precision_aware_optimizer"
check "fp16 moments are not priced" 2 "$bin" simulate folding-llama3-70b-64 --set schedule.optimizer_moments_dtype=fp16
expect_err "fp16 moments named" "schedule.optimizer_moments_dtype"
check "precision-aware optimizer on FoldMoE" 2 "$bin" simulate foldmoe-gpt-moe-s-4k --set schedule.precision_aware_optimizer=true
expect_err "precision-aware optimizer named as the folding family's" "schedule.precision_aware_optimizer"
# Transformer Engine's fused grouped MLP: MXFP8 on Blackwell (Qwen2-57B's
# SwiGLU experts moved onto DGX B200), faster than the unfused kernels (the
# activation and two casts per expert pass are not run: cost-model unit
# tests price them), its flags in Megatron's arguments, and what it refuses.
blackwell_mx="--set cluster_ref=dgx-b200 --set profile_ref=dgx-b200-datasheet --set workload.precision=mxfp8"
check "simulate: unfused grouped MLP on B200" 0 "$bin" simulate folding-qwen2-57b-a14b-64 $blackwell_mx
unfused_ms=$(grep -o '[0-9.]* ms per iteration' "$tmp/out" | cut -d' ' -f1)
check "simulate: fused grouped MLP on B200" 0 "$bin" simulate folding-qwen2-57b-a14b-64 $blackwell_mx --set schedule.fused_grouped_mlp=true
fused_ms=$(grep -o '[0-9.]* ms per iteration' "$tmp/out" | cut -d' ' -f1)
awk -v f="$fused_ms" -v u="$unfused_ms" 'BEGIN { exit !(f > 0 && f < u) }' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL fused grouped MLP not faster: $fused_ms ms against $unfused_ms"; }
check "plan --emit megatron (fused grouped MLP)" 0 "$bin" plan folding-qwen2-57b-a14b-64 $blackwell_mx --set schedule.fused_grouped_mlp=true --emit megatron
grep -q -- "--use-transformer-engine-op-fuser --moe-mlp-glu-interleave-size 32" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron without the op fuser's flags"; }
check "fused grouped MLP under bf16" 2 "$bin" simulate folding-qwen2-57b-a14b-64 --set schedule.fused_grouped_mlp=true
expect_err "fused grouped MLP under bf16 named" "schedule.fused_grouped_mlp: needs workload.precision mxfp8"
check "fused grouped MLP on a dense model" 2 "$bin" simulate folding-llama3-70b-64 $blackwell_mx --set schedule.fused_grouped_mlp=true
expect_err "fused grouped MLP on a dense model named" "schedule.fused_grouped_mlp: cannot act"
check "fused grouped MLP on GELU experts" 2 "$bin" simulate folding-qwen2-57b-a14b-64 $blackwell_mx --set schedule.fused_grouped_mlp=true --set model.moe.expert_type=GELU_FFN
expect_err "fused grouped MLP on GELU experts named" "schedule.fused_grouped_mlp: needs gated experts"
check "fused grouped MLP with moe_act recomputed" 2 "$bin" simulate folding-qwen2-57b-a14b-64 $blackwell_mx --set schedule.fused_grouped_mlp=true --set schedule.recompute=selective --set schedule.recompute_modules=moe_act
expect_err "moe_act recompute under the fused grouped MLP named" "schedule.recompute_modules: moe_act"
check "fused grouped MLP on FoldMoE" 2 "$bin" simulate foldmoe-gpt-moe-s-4k --set schedule.fused_grouped_mlp=true
expect_err "fused grouped MLP named as the folding family's" "schedule.fused_grouped_mlp: cannot act"
# MTP blocks in a pipeline layout: Megatron wants the model's 'm's before the
# L (81 blocks over 4 stages, uneven: the plan writes a layout), and a
# layout's 'm's number model.mtp_num_layers.
check "plan --emit megatron (an MTP block in the layout)" 0 "$bin" plan folding-llama3-70b-64 --set model.num_layers=81 --set parallelism.pp=1 --set parallelism.dp=8 --set model.mtp_num_layers=1 --emit megatron
grep -q -- '--pipeline-model-parallel-layout "E[^"]*mL"' "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron without the MTP block in its layout"; }
check "an 'm' the model does not have" 2 "$bin" simulate folding-mixtral-8x22b-128 --set "parallelism.pipeline_layout=Et*14|t*14|t*14|t*14mL"
expect_err "an 'm' the model does not have named" "parallelism.pipeline_layout: 1 'm' blocks, and model.mtp_num_layers is 0"
check "an MTP block before a transformer block" 2 "$bin" simulate folding-mixtral-8x22b-128 --set model.mtp_num_layers=1 --set "parallelism.pipeline_layout=Et*14|t*14|t*14|mt*14L"
expect_err "an MTP block before a transformer block named" "must follow every transformer block"
# GPT-OSS's GLU clamp: on gated experts only, within its bounds.
check "a GLU clamp on GELU experts" 2 "$bin" simulate folding-qwen2-57b-a14b-64 --set model.moe.glu_clamp=7 --set model.moe.expert_type=GELU_FFN
expect_err "a GLU clamp on GELU experts named" "moe.glu_clamp: clamps a GLU's two halves"
check "a negative GLU clamp" 2 "$bin" simulate folding-qwen2-57b-a14b-64 --set model.moe.glu_clamp=-1
expect_err "a negative GLU clamp named" "glu_clamp: -1 is outside [0, 65504]"
# The DeepEP dispatcher reaches Megatron's arguments as its flex dispatcher on the DeepEP backend
# (Megatron-LM's --moe-flex-dispatcher-backend, which replaced the deprecated --moe-enable-deepep).
check "plan --emit megatron (deepep)" 0 "$bin" plan folding-qwen2-57b-a14b-64 --set schedule.moe_dispatcher=deepep --emit megatron
grep -q -- "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep" "$tmp/out" && ! grep -q -- "--moe-token-dispatcher-type alltoall" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron without DeepEP's flex dispatcher"; }
# One plan of the scenario as written: the AlltoAll dispatcher, the unfused
# loss and no CUDA graphs by default; its token drop as priced, padded to the
# capacity (the scenario's capacity factor 1).
check "plan --emit megatron (defaults)" 0 "$bin" plan folding-qwen2-57b-a14b-64 --emit megatron
grep -q -- "--moe-token-dispatcher-type alltoall" "$tmp/out" && ! grep -q -- "flex" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron default is not the AlltoAll dispatcher"; }
! grep -q -- "--cross-entropy-loss-fusion" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron fuses the loss by default"; }
! grep -q -- "--cuda-graph" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron writes CUDA graphs unasked"; }
grep -q -- "--moe-expert-capacity-factor 1 --moe-pad-expert-input-to-capacity" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron without the padded token drop"; }
check "plan: an unknown dispatcher" 2 "$bin" plan folding-qwen2-57b-a14b-64 --set schedule.moe_dispatcher=allgather
expect_err "plan: an unknown dispatcher" "schedule.moe_dispatcher: must be alltoall, deepep or hybridep"
check "plan: DeepEP on a dense model" 2 "$bin" plan folding-llama3-70b-64 --set schedule.moe_dispatcher=deepep
expect_err "plan: DeepEP on a dense model" "schedule.moe_dispatcher: cannot act"
check "simulate: DeepEP on FoldMoE's schedules" 2 "$bin" simulate foldmoe-gpt-moe-s-4k --set schedule.moe_dispatcher=deepep
expect_err "simulate: DeepEP on FoldMoE's schedules" "schedule.moe_dispatcher: cannot act"
# HybridEP is the same flag's other backend; the fused loss reaches Megatron's
# arguments as its two flags, CUDA graphs as theirs. The scenario made
# dropless (its model file is; its two set lines make it token drop), so its
# blocks wait on the host and the graphs act (docs/cost-model.md, "Host time").
grep -v '^set: "model.moe' "$src/scenarios/folding-qwen2-57b-a14b-64.textproto" > "$tmp/dropless.textproto"
check "plan --emit megatron (hybridep, fused loss, CUDA graphs)" 0 "$bin" plan "$tmp/dropless.textproto" --set schedule.moe_dispatcher=hybridep --set schedule.cross_entropy_fusion=te --set schedule.cuda_graphs=attn+moe_router+moe_preprocess --emit megatron
grep -q -- "--moe-flex-dispatcher-backend hybridep" "$tmp/out" && grep -q -- "--cross-entropy-loss-fusion --cross-entropy-fusion-impl te" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron without HybridEP's backend or the fused loss"; }
grep -q -- "--cuda-graph-impl transformer_engine --cuda-graph-modules attn moe_router moe_preprocess" "$tmp/out" && ! grep -q -- "--moe-pad-expert-input-to-capacity" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron without the CUDA graphs' flags"; }
# The host's wait (the simulated iteration): eager it is priced, with the
# attention graphed it shrinks, under one graph for the whole iteration it is
# gone (the scenario's blocks at tp 4 take less GPU time than the host's issue).
check "simulate dropless, eager" 0 "$bin" simulate "$tmp/dropless.textproto" --json
cp "$tmp/out" "$tmp/eager.json"
check "simulate dropless, attention graphed" 0 "$bin" simulate "$tmp/dropless.textproto" --set schedule.cuda_graphs=attn --json
cp "$tmp/out" "$tmp/attn.json"
check "simulate dropless, full-iteration graph" 0 "$bin" simulate "$tmp/dropless.textproto" --set schedule.cuda_graphs=full_iteration --json
cp "$tmp/out" "$tmp/full.json"
pycheck "the host's wait by CUDA graphs" "$tmp/eager.json" "$tmp/attn.json" "$tmp/full.json" <<'PY'
from cli_check import *
eager, attn, full = (load(p)["iteration_ms"] for p in sys.argv[1:4])
expect(full < attn < eager, f"iteration ms: full graph {full}, attention graphed {attn}, eager {eager}")
PY
check "CUDA graphs on a token-drop model" 2 "$bin" simulate folding-qwen2-57b-a14b-64 --set schedule.cuda_graphs=attn
expect_err "CUDA graphs on a token-drop model named" "schedule.cuda_graphs: cannot act"
check "CUDA graphs on a dense model" 2 "$bin" simulate folding-llama3-70b-64 --set schedule.cuda_graphs=full_iteration
expect_err "CUDA graphs on a dense model named" "schedule.cuda_graphs: cannot act"
check "CUDA graphs of the router alone" 2 "$bin" simulate "$tmp/dropless.textproto" --set schedule.cuda_graphs=moe_router
expect_err "CUDA graphs of the router alone named" "schedule.cuda_graphs: moe_router without moe_preprocess cannot be priced"
check "CUDA graphs on FoldMoE" 2 "$bin" simulate foldmoe-gpt-moe-s-4k --set schedule.cuda_graphs=attn
expect_err "CUDA graphs on FoldMoE named" "schedule.cuda_graphs"
check "plan: Megatron's native fused loss" 2 "$bin" plan folding-qwen2-57b-a14b-64 --set schedule.cross_entropy_fusion=native
expect_err "plan: Megatron's native fused loss" "schedule.cross_entropy_fusion: must be none or te"
check "simulate: the fused loss on FoldMoE's schedules" 2 "$bin" simulate foldmoe-gpt-moe-s-4k --set schedule.cross_entropy_fusion=te
expect_err "simulate: the fused loss on FoldMoE's schedules" "schedule.cross_entropy_fusion: cannot act"
check "plan --joint refuses Megatron's DP overlap" 2 "$bin" plan folding-llama3-70b-64 --joint --set schedule.overlap_grad_reduce=true
grep -q "schedule.overlap_grad_reduce: the joint search prices its own overlap" "$tmp/err" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL joint's refusal does not name schedule.overlap_grad_reduce"; }
# Megatron-FSDP (schedule.data_parallel_sharding_strategy) reaches Megatron's
# arguments with the flags its user guide requires and the overlap it was priced
# with; Megatron's strategies that are not priced, the layer-schedule families,
# the joint search and the step's overlap flags beside it are refused, naming the field.
fsdp_set=(--set schedule.data_parallel_sharding_strategy=optim_grads_params)
# (The same search, without master weights and with bf16 moments, as NeMo
# Automodel's FSDP2 trains: Megatron-FSDP's main params and grads "auto", the
# gradients reduced in fp32, and the precision-aware optimizer that
# --exp-avg-dtype needs.)
check "plan --emit megatron (Megatron-FSDP, no master weights)" 0 "$bin" plan folding-llama3-70b-64 "${fsdp_set[@]}" --set schedule.master_weights=none --set schedule.optimizer_moments_dtype=bf16 --emit megatron
grep -q -- "--use-distributed-optimizer .*--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params --no-gradient-accumulation-fusion --ckpt-format fsdp_dtensor --overlap-grad-reduce --overlap-param-gather" "$tmp/out" && grep -q "Megatron-FSDP's AllGather of each block's parameters" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron without Megatron-FSDP's flags"; }
grep -q -- "--overlap-param-gather --megatron-fsdp-main-params-dtype auto --megatron-fsdp-main-grads-dtype auto --megatron-fsdp-grad-comm-dtype fp32" "$tmp/out" && grep -q -- "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron without the master-weight and moment flags"; }
# Megatron-FSDP's default-precision model holds more: 2 B of kept gradient,
# 4 of master weight and 4 of moments more per parameter, sharded.
check "simulate: Megatron-FSDP with master weights" 0 "$bin" simulate folding-llama3-70b-64 "${fsdp_set[@]}" --json
with_master=$(grep -o '"memory_bytes_per_gpu": [0-9.e+]*' "$tmp/out" | head -1 | awk '{print $2}')
check "simulate: Megatron-FSDP without master weights" 0 "$bin" simulate folding-llama3-70b-64 "${fsdp_set[@]}" --set schedule.master_weights=none --set schedule.optimizer_moments_dtype=bf16 --json
without_master=$(grep -o '"memory_bytes_per_gpu": [0-9.e+]*' "$tmp/out" | head -1 | awk '{print $2}')
awk -v a="$without_master" -v b="$with_master" 'BEGIN { exit !(a > 0 && a < b) }' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL no master weights holds no less: $without_master against $with_master"; }
check "master_weights none without Megatron-FSDP" 2 "$bin" simulate folding-llama3-70b-64 --set schedule.master_weights=none
expect_err "master_weights none named" "schedule.master_weights: none needs schedule.data_parallel_sharding_strategy optim_grads_params"
check "master_weights bf16 is not priced" 2 "$bin" simulate folding-llama3-70b-64 "${fsdp_set[@]}" --set schedule.master_weights=bf16
expect_err "master_weights bf16 named" "schedule.master_weights: must be fp32 or none"
check "master_weights on FoldMoE" 2 "$bin" simulate foldmoe-gpt-moe-s-4k --set schedule.master_weights=none
expect_err "master_weights named as the folding family's" "schedule.master_weights"
check "plan --emit megatron (no FSDP by default)" 0 "$bin" plan folding-llama3-70b-64 --emit megatron
grep -q -- "--use-megatron-fsdp" "$tmp/out" && { fail=$((fail + 1)); echo "FAIL --emit megatron writes Megatron-FSDP unasked"; } || pass=$((pass + 1))
check "plan: optim_grads is not priced" 2 "$bin" plan folding-llama3-70b-64 --set schedule.data_parallel_sharding_strategy=optim_grads
expect_err "optim_grads refusal names the field" "schedule.data_parallel_sharding_strategy: must be optim or optim_grads_params"
check "plan: FSDP on a layer-schedule family is refused" 2 "$bin" plan flowmoe-gpt2-tiny-moe-c1 "${fsdp_set[@]}"
expect_err "flowmoe's FSDP refusal names the field" "schedule.data_parallel_sharding_strategy"
check "plan --joint refuses Megatron-FSDP" 2 "$bin" plan folding-llama3-70b-64 --joint "${fsdp_set[@]}"
expect_err "joint's FSDP refusal names the field" "schedule.data_parallel_sharding_strategy: the joint search"
check "plan: the step's overlap flags beside FSDP are refused" 2 "$bin" plan folding-llama3-70b-64 "${fsdp_set[@]}" --set schedule.overlap_grad_reduce=true
expect_err "the overlap flag's refusal under FSDP names it" "schedule.overlap_grad_reduce"
check "plan: mxfp8 on H100 is refused" 2 "$bin" plan folding-llama3-70b-64 --set workload.precision=mxfp8
grep -q "cluster.gpu.mx_formats" "$tmp/err" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL mxfp8 refusal does not name cluster.gpu.mx_formats"; }
# schedule.search opens precision and recomputation to the folding planner:
# the plan names its choice and why, its file runs on simulate as that
# configuration, Megatron's arguments carry it; simulate refuses an open
# scenario, and a searched knob that is also set is refused.
open_sets=(--set schedule.search=precision,recompute)
check "plan (open precision and recompute)" 0 "$bin" plan folding-llama3-70b-64 "${open_sets[@]}" --json -o "$tmp/open.textproto"
cp "$tmp/out" "$tmp/open.json"
check "simulate the open plan's file" 0 "$bin" simulate "$tmp/open.textproto" --json
pycheck "open plan = simulate of its file" "$tmp/open.json" "$tmp/out" <<'PY'
# The chosen knobs are a precision and a recomputation; simulate of the plan
# file prices that configuration to the same iteration; the binding
# constraint lists the precisions' times at the chosen mapping.
from cli_check import *
p = load(sys.argv[1])
s = load(sys.argv[2])
k = p["knobs"]
expect(k["precision"] in ("bf16", "fp8_tensorwise", "fp8_blockwise"), f"precision {k.get('precision')}")
expect(k["recompute"].split(":")[0] in ("none", "selective", "full"), f"recompute {k.get('recompute')}")
expect_close(p["iteration_ms"], s["iteration_ms"], "iteration_ms")
detail = p["explanation"]["binding_constraint"]["detail"]
expect("precisions at this mapping: bf16" in detail, f"binding detail {detail}")
done()
PY
check "plan --emit megatron (open precision)" 0 "$bin" plan folding-llama3-70b-64 "${open_sets[@]}" --emit megatron
grep -q -- "--fp8-recipe" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --emit megatron of an open plan without its FP8 recipe"; }
check "simulate refuses an open scenario" 2 "$bin" simulate folding-llama3-70b-64 "${open_sets[@]}"
expect_err "simulate refuses an open scenario" "schedule.search: simulate runs one configuration"
check "plan: a searched knob also set is refused" 2 "$bin" plan folding-llama3-70b-64 "${open_sets[@]}" --set workload.precision=fp8_blockwise
expect_err "plan: a searched knob also set is refused" "workload.precision: set, and schedule.search leaves precision to the planner"
check "plan: search on a FoldMoE scenario is refused" 2 "$bin" plan foldmoe-gpt-moe-s-4k --set schedule.search=recompute
expect_err "plan: search on a FoldMoE scenario is refused" "schedule.search: cannot act on this foldmoe scenario"
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

# Issue 17 item 3: the joint mapping x overlap search (plan --joint).
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

# Issue 15 item 5: noise over seeds is simulate's (simulate_test.sh); plan ranks on the noiseless model.
check "plan refuses noise" 2 "$bin" plan flowmoe-gpt2-tiny-moe-c1 --set schedule.compute_jitter_cv=0.1
expect_err "plan refuses noise" "schedule.compute_jitter_cv: plan ranks schedules on the noiseless model"

# --max-memory (issue 14 item 4; simulate_test.sh has the estimate by hand).
# A search never skips a candidate for its size: the plan fails, naming the mapping.
mkdir -p "$tmp/i4"
check "plan past --max-memory" 2 "$bin" plan folding-qwen2-57b-a14b-64 --set workload.global_batch_size=262144 \
  --max-memory 0.01 -o "$tmp/i4/p.textproto"
expect_err "plan past --max-memory" "mapping tp "
[[ ! -e $tmp/i4/p.textproto ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL plan past --max-memory wrote a plan"; }

# Issue 14, item 1 (remainder): plan says when the system refused threads, as
# simulate and sweep do (as_limited_prefix: tests/cli/lib.sh).
as_limited_prefix
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

summary
