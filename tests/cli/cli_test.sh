#!/usr/bin/env bash
# CLI contract tests (shared/CLI.md): exit codes, one-line errors, --help and
# --version, JSON on stdout only. Usage: cli_test.sh MOEPLAN_BINARY SOURCE_DIR
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

check version 0 "$bin" --version
grep -qE '^moeplan [0-9]+\.[0-9]+\.[0-9]+$' "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL version text"; }
check help 0 "$bin" --help
for cmd in validate cost fit datasheet-profile simulate plan sweep mappings bench; do
  check "help $cmd" 0 "$bin" "$cmd" --help
  grep -q "Usage" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL help $cmd text"; }
done
check "no command" 2 "$bin"
check "unknown command" 2 "$bin" frobnicate
expect_err "unknown command" "moeplan: error:"
check "unknown flag" 2 "$bin" validate --frob models/gpt-moe-m.textproto
expect_err "unknown flag" "moeplan: error:"

# Bundled default scenario and every bundled file validate.
check "default scenario" 0 "$bin" validate foldmoe-gpt-moe-m-16k
check "bundled files" 0 "$bin" validate "$src"/models/*.textproto "$src"/scenarios/clusters/*.textproto "$src"/scenarios/*.textproto
check "json" 0 "$bin" validate mixtral-8x22b --json
grep -q '"params_total"' "$tmp/out" && [[ ! -s $tmp/err ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL json keys"; }

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
check "cost unknown op" 2 "$bin" cost --profile fsmoe-testbed-a --op broadcast --size 1
expect_err "cost unknown op" "--op: unknown operation 'broadcast'"
check "cost negative size" 2 "$bin" cost --profile fsmoe-testbed-a --op gemm --size -5
expect_err "cost negative size" "--size"
check "cost missing profile" 2 "$bin" cost --profile nope --op gemm --size 1
expect_err "cost missing profile" "no bundled profile named 'nope'"

# fit: nccl-tests logs -> profile that validates; malformed inputs -> exit 2, nothing written.
check "fit logs" 0 "$bin" fit "$src"/tests/data/calibration/*.log -o "$tmp/fitted.textproto" --cluster dgx-h100 --json
[[ $(grep -c '"alpha_ms"' "$tmp/out") == 4 ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL fit json"; }
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
for key in tasks tasks_per_s bytes_per_task multi_rank_1024_s; do
  grep -q "\"$key\"" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL bench engine key $key"; }
done
grep -q '"tasks": 1000000' "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL bench engine size"; }
check "bench what" 2 "$bin" bench nothing

# simulate and plan on the default FoldMoE scenario.
check "simulate all" 0 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule all --json --trace "$tmp/trace.json" --svg "$tmp/gantt.svg"
for s in none tutel aaam 1a1m 1a1m-uniform; do
  grep -q "\"schedule\": \"$s\"" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL simulate all lacks $s"; }
  [[ -s $tmp/trace.$s.json && -s $tmp/gantt.$s.svg ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL no trace/svg for $s"; }
done
for key in iteration_ms forward_ms backward_ms compute_ms comm_ms exposed_comm_ms bubble_ms tasks degree; do
  [[ $(grep -c "\"$key\"" "$tmp/out") == 5 ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL simulate key $key"; }
done
check "simulate one" 0 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule 1a1m --degree 6 --json
head -c 1 "$tmp/out" | grep -q '{' && grep -q '"degree": 6' "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL simulate one object"; }
check "simulate bad schedule" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule fsmoe
expect_err "simulate bad schedule" "--schedule: 'fsmoe' is not a foldmoe schedule"
check "simulate bad degree" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule 1a1m --degree 100000
expect_err "simulate bad degree" "degree 100000 is outside"
check "plan" 0 "$bin" plan foldmoe-gpt-moe-m-16k --json -o "$tmp/plan.textproto"
for key in scenario schedule iteration_ms baseline_ms speedup knobs degree slicing speedup_vs_tutel; do
  grep -q "\"$key\"" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL plan key $key"; }
done
check "plan file validates" 0 "$bin" validate "$tmp/plan.textproto"
check "plan json file" 0 "$bin" plan foldmoe-gpt-moe-s-4k --schedule 1a1m -o "$tmp/plan.json"
grep -q '"knobs"' "$tmp/plan.json" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL plan json file"; }
check "plan with --set" 0 "$bin" plan foldmoe-gpt-moe-m-16k --set workload.seq_len=8192 --json
grep -q '"scenario": "foldmoe-gpt-moe-m-16k"' "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL plan --set"; }
check "plan without profile" 2 "$bin" plan foldmoe-gpt-moe-m-16k --set profile_ref=nope
expect_err "plan without profile" "profile_ref"

# FSMoE: six schedules, and the plan's closed-form keys.
check "fsmoe simulate all" 0 "$bin" simulate fsmoe-testbed-b-gpt2-xl --schedule all --json
for s in none tutel tutel-improved pipemoe-lina fsmoe-no-iio fsmoe; do
  grep -q "\"schedule\": \"$s\"" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL fsmoe simulate lacks $s"; }
done
check "fsmoe plan" 0 "$bin" plan fsmoe-testbed-a-gpt2-xl --json
for key in degree_forward degree_backward grad_partition_bytes closed_form case_forward t_moe_forward_ms case_backward t_moe_backward_ms overlap_gap_ms; do
  grep -q "\"$key\"" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL fsmoe plan key $key"; }
done

# sweep: same CSV bytes whatever the thread count; JSON summary per schedule.
check "sweep 1 thread" 0 "$bin" sweep "$src/tests/data/sweeps/small-fsmoe.textproto" --threads 1 -o "$tmp/s1.csv"
check "sweep 2 threads" 0 "$bin" sweep "$src/tests/data/sweeps/small-fsmoe.textproto" --threads 2 -o "$tmp/s2.csv" --json
cmp -s "$tmp/s1.csv" "$tmp/s2.csv" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL sweep differs across threads"; }
[[ $(wc -l <"$tmp/s1.csv") == $((1 + 8 * 6)) ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL sweep rows"; }
for key in schedule points mean_speedup_vs_none geomean_speedup_vs_none; do
  grep -q "\"$key\"" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL sweep key $key"; }
done
check "sweep validates" 0 "$bin" validate fsmoe-table4

# FlowMoE: five schedules; the plan carries R, Sp and the BO trace.
check "flowmoe simulate all" 0 "$bin" simulate flowmoe-bert-large-moe-c1 --schedule all --json
for s in none tutel flowmoe-at flowmoe-ar flowmoe; do
  grep -q "\"schedule\": \"$s\"" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL flowmoe simulate lacks $s"; }
done
check "flowmoe plan" 0 "$bin" plan flowmoe-bert-large-moe-c1 --json
for key in degree iteration_ms bo_trace samples ar_chunk_bytes; do
  grep -q "\"$key\"" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL flowmoe plan key $key"; }
done
check "flowmoe straggler" 0 "$bin" simulate flowmoe-gpt2-tiny-moe-c1 --schedule flowmoe --set schedule.mode=multi_rank --set schedule.slow_ranks_compute_factor=2 --json

# mappings: the example, JSON keys and the intra/inter marks.
check "mappings" 0 "$bin" mappings --world 16 --tp 2 --cp 2 --pp 2 --ep 4 --etp 1 --json --gpus-per-node 8
tr -d ' \n' <"$tmp/out" >"$tmp/flat"
for want in '"tp":[[0,1],[2,3]' '"cp":[[0,2],[1,3]' '"dp":[[0,4],[1,5]' '"pp":[[0,8],[1,9]' '"ep":[[0,1,2,3],[4,5,6,7]' '"edp":[[0,4],[1,5]' '"attention_links"' '"inter"'; do
  grep -qF -- "$want" "$tmp/flat" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL mappings lacks $want"; }
done
check "folding plan" 0 "$bin" plan folding-mixtral-8x22b-128 --json
tr -d ' \n' <"$tmp/out" >"$tmp/flat"
for want in '"knobs":{"parallelism":{' '"coupled":{"parallelism"' '"iteration_ms"' '"mfu"' '"memory_bytes_per_gpu"' '"top10"'; do
  grep -qF -- "$want" "$tmp/flat" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL folding plan lacks $want"; }
done
# folded never worse than coupled: speedup = coupled / folded >= 1.
awk -F'"speedup":' '{ split($2, a, ","); exit !(a[1] + 0 >= 1.0) }' "$tmp/flat" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL folded worse than coupled"; }
check "folding simulate" 0 "$bin" simulate folding-qwen2-57b-a14b-64 --json
check "mappings bad order" 2 "$bin" mappings --world 16 --tp 2 --pp 2 --ep 8 --etp 1 --order tp-cp-ep-pp-dp
expect_err "mappings bad order" "parallelism.order: attention and expert pipeline groups differ"
check "mappings bad world" 2 "$bin" mappings --world 10 --tp 4
expect_err "mappings bad world" "parallelism.dp: world 10 is not divisible by tp*cp*pp = 4"

echo "$pass passed, $fail failed"
[[ $fail == 0 ]]
