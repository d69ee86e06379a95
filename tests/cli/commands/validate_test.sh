#!/usr/bin/env bash
# validate and the scenario loader every command shares: bundled files
# validate, Mixtral-8x22B's parameters by hand, malformed fixtures name the file
# and the field, --set, references resolved beside their file, and errors that
# point at the place that is wrong (tensor-parallel heads, a schedule of
# another family, figures out of range).
# Usage: validate_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"

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

# Issue 14, item 8b: a schedule of another family in a scenario without
# schedule.family is blamed on the file's schedule.name, which says that the
# family defaulted to foldmoe (it said "--schedule: ..." with no --schedule).
mkdir -p "$tmp/i8"
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

summary
