#!/usr/bin/env bash
# capacity (issue 17 item 4): GPU counts against a token budget and deadline;
# days, GPU-hours, cost and marks from the rows' own numbers; JSON against
# docs/capacity.schema.json; the CSV; refusals; the progress bar.
# Usage: capacity_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"

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
# Tight by hand: the H100's 80 GiB less the CUDA context (287,047,680 B) over
# 1.04 is what it holds of tensors; tight when the plan's bytes / (1 - 0.066)
# (the peak they stand for if under-predicted by the memory model's largest
# under-prediction of a measured peak, a share of it) exceed that.
usable = (80 * 2**30 - 287047680) / 1.04
for r, c in zip(j["rows"], rows):
    held = r["memory_bytes_per_gpu"]
    expect(r["memory_tight"] == (held <= usable and held / (1 - 0.066) > usable), f"{r['gpus']}: memory_tight by hand")
    expect(c["memory_tight"] == ("true" if r["memory_tight"] else "false"), f"{r['gpus']}: CSV memory_tight")
done()
PY
# A tight plan (docs/cost-model.md, "Memory"): Mixtral-8x22B on 512 H100s
# holds 72.1 GiB of the 76.7 usable, and 72.1 / (1 - 0.066) = 77.2 is over it. The
# JSON flags it and the text names it under the table.
check "capacity: a tight plan" 0 "$bin" capacity mixtral-8x22b --cluster dgx-h100 --gpus 512..512 --threads 2 --json
pycheck "capacity: memory_tight by hand" "$tmp/out" <<'PY'
import sys
from cli_check import *
r = load(sys.argv[1])["rows"][0]
usable = (80 * 2**30 - 287047680) / 1.04
held = r["memory_bytes_per_gpu"]
expect(held <= usable < held / (1 - 0.066), f"{held / 2**30:.2f} GiB fits by less than 6.6% of {usable / 2**30:.2f}")
expect(r["memory_tight"] is True, "memory_tight")
done()
PY
check "capacity: a tight plan, text" 0 "$bin" capacity mixtral-8x22b --cluster dgx-h100 --gpus 512..512 --threads 2
grep -q "^  tight: the plans of 512 GPUs fit in the 76.7 GiB usable by less than the memory model's largest under-prediction of a measured peak (6.6%): they may not fit$" "$tmp/out" &&
  pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL capacity text without the tight line"; cat "$tmp/out"; }
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
expect_err "capacity --tokens 2X" "moeplan: error: --tokens: expected a decimal number, got '2X'"

# Issue 28: numbers are read by one parser against one table of ranges
# (io/number_options.hpp), before any work is sized by them. Each line was
# accepted (exit 0 with a nonsense answer), ran past 120 s, or ended in
# std::bad_alloc (exit 1) before.
q28=(capacity qwen2-57b-a14b --cluster dgx-h100 --quiet)
while IFS='|' read -r name want args; do
  read -r -a argv <<<"$args"
  check "issue 28: capacity $name" 2 timeout 60 "$bin" "${q28[@]}" "${argv[@]}"
  expect_err "issue 28: capacity $name" "$want"
done <<EOF
--tokens 1e-300|--tokens: must be at least 1 token, got 1e-300|--tokens 1e-300
--tokens 0x10T|--tokens: expected a decimal number, got '0x10'|--tokens 0x10T
--seq-len 1000000000|--seq-len: must be at most 134217728 tokens, got 1000000000|--tokens 500B --seq-len 1000000000
--gpus 2097152|--gpus: must be at most 1048576 GPUs, got 2097152|--tokens 500B --gpus 2097152
--gpus 8388608|--gpus: must be at most 1048576 GPUs, got 8388608|--tokens 500B --gpus 8388608
--gpus 8..1000000000000|--gpus: must be at most 1048576 GPUs, got 1000000000000|--tokens 500B --gpus 8..1000000000000
--gpus 1099511627776|--gpus: must be at most 1048576 GPUs, got 1099511627776|--tokens 500B --gpus 1099511627776
--global-batch 1048576|--global-batch: must be at most 65536 sequences, got 1048576|--tokens 500B --gpus 16 --global-batch 1048576
--global-batch 1e12|--global-batch: must be at most 65536 sequences, got 1000000000000|--tokens 500B --global-batch 1000000000000
--global-batch 2^63-1|--global-batch: must be at most 65536 sequences, got 9223372036854775807|--tokens 500B --global-batch 9223372036854775807
--days nan|--days: expected a decimal number, got 'nan'|--tokens 500B --days nan
--cost-per-gpu-hour 0x1p3|--cost-per-gpu-hour: expected a decimal number, got '0x1p3'|--tokens 500B --cost-per-gpu-hour 0x1p3
--profile host-2|--profile: profile 'host-2' belongs to cluster 'host-2', not 'dgx-h100'|--tokens 500B --profile host-2
EOF
# An empty value is refused, not read as no option at all (every option's
# value is non-empty and UTF-8, cli/cli_common.cpp check_option_text).
check "issue 28: capacity --gpus ''" 2 "$bin" "${q28[@]}" --gpus ''
expect_err "issue 28: capacity --gpus ''" "--gpus: is empty; give a value or leave the option out"
check "issue 28: capacity --tokens ''" 2 "$bin" "${q28[@]}" --tokens ''
expect_err "issue 28: capacity --tokens ''" "--tokens: is empty; give a value or leave the option out"
check "issue 28: capacity --profile ''" 2 "$bin" "${q28[@]}" --profile ''
expect_err "issue 28: capacity --profile ''" "--profile: is empty; give a value or leave the option out"
check "capacity --gpus 4096..64" 2 "$bin" capacity gpt-moe-s --cluster dgx-h100 --gpus 4096..64
expect_err "capacity --gpus 4096..64" "moeplan: error: --gpus: a range LO..HI needs LO <= HI, got '4096..64'"
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
# 989.5 TFLOP/s x the H100 cluster file's measured gemm_efficiency 0.77 = 761.9 TFLOP/s.
check "capacity: an fp32 model on a half-precision profile" 2 "$bin" capacity gpt2-tiny-moe --cluster dgx-h100 --gpus 8
expect_err "capacity: an fp32 model on a half-precision profile" "moeplan: error: --profile: dgx-h100-datasheet prices GEMMs at 761.9 TFLOP/s, above H100-SXM5-80GB's fp32 peak of 67.0 TFLOP/s"
check "capacity --profile of another kind" 2 "$bin" capacity gpt-moe-s --cluster dgx-h100 --profile gpt-moe-s
expect_err "capacity --profile of another kind" "moeplan: error:"
# --search opens precision and recomputation (recompute by default): every row
# names both, the precision one of those the H100 prices; an unknown knob is refused.
check "capacity --search precision,recompute" 0 "$bin" capacity gpt-moe-s --cluster dgx-h100 --gpus 8 --search precision,recompute --json
pycheck "capacity rows name their precision and recomputation" "$tmp/out" <<'PY'
from cli_check import *
r = load(sys.argv[1])
plans = [row["plan"] for row in r["rows"] if row["plan"]]
expect(len(plans) == 1, f"{len(plans)} plans")
for p in plans:
    expect(p["precision"] in ("bf16", "fp8_tensorwise", "fp8_blockwise"), f"precision {p['precision']}")
    expect(p["recompute"].split(":")[0] in ("none", "selective", "full"), f"recompute {p['recompute']}")
    # An FP8 mapping keeps Megatron's schedule: the overlap families price BF16.
    expect(p["precision"] == "bf16" or p["overlap"] == "none", f"{p['precision']} with overlap {p['overlap']}")
done()
PY
check "capacity --search bogus" 2 "$bin" "${cap[@]}" --search bogus
expect_err "capacity --search bogus" "moeplan: error: --search: 'bogus' is not a knob capacity searches"
if command -v script >/dev/null; then
  script -qc "$bin ${cap[*]}" /dev/null >"$tmp/tty.out" 2>&1
  grep -q "capacity: [0-9]*/[0-9]* ([0-9]*%)" "$tmp/tty.out" && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL: no capacity progress bar on a terminal:"; cat -v "$tmp/tty.out" | head -5; }
fi

summary
