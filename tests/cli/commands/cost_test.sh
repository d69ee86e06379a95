#!/usr/bin/env bash
# cost: collective and GEMM times from a profile's lines, checked against the
# lines' arithmetic by hand (Testbed-A's AlltoAll, placed groups on DGX H100),
# and its refusals. Usage: cost_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"

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

check "cost --size -5" 2 "$bin" cost --profile foldmoe-g5-datasheet --op a2a --link inter --size -5
expect_err "cost --size -5" "--size: must be at least 0 FLOPs or bytes, got -5"

summary
