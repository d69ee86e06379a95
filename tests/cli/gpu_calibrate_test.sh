#!/usr/bin/env bash
# GPU test (CTest label gpu): moeplan calibrate --backend cuda --quick writes a
# profile that validates and whose points `moeplan fit` reads. Exit 77 (CTest
# SKIP_RETURN_CODE) when there is no CUDA plug-in (a build without CUDA) or no
# GPU is present.
#   gpu_calibrate_test.sh MOEPLAN
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" calibrate --backend cuda --quick -o "$tmp/gpu.textproto" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [[ $rc == 2 ]] && grep -q "the cuda backend is the plug-in" "$tmp/err"; then echo "skip: $(cat "$tmp/err")"; exit 77; fi
if [[ $rc == 1 ]] && grep -q "no CUDA GPU found" "$tmp/err"; then echo "skip: $(cat "$tmp/err")"; exit 77; fi
cat "$tmp/err"
[[ $rc == 0 ]] || { echo "FAIL calibrate --backend cuda exited $rc"; exit 1; }
for group in "gemm: 9 shapes" "attention: 2 shapes" "overlap: GEMM 8192x4096x14336"; do
  grep -q "^moeplan calibrate: $group" "$tmp/err" || { echo "FAIL no progress line '$group'"; exit 1; }
done
"$bin" validate "$tmp/gpu.textproto" || { echo "FAIL the profile does not validate"; exit 1; }
"$bin" fit "$tmp/gpu.points.csv" --cluster host-2 -o "$tmp/refit.textproto" || { echo "FAIL fit of the points"; exit 1; }
# 9 GEMM and 2 attention points, and a comment that says the overlap partner was the copy proxy.
[[ $(grep -c '^gemm,local,1,' "$tmp/gpu.points.csv") == 9 ]] || { echo "FAIL gemm points"; exit 1; }
[[ $(grep -c '^attention,local,1,' "$tmp/gpu.points.csv") == 2 ]] || { echo "FAIL attention points"; exit 1; }
grep -q "device-to-device copies" "$tmp/gpu.textproto" || { echo "FAIL no overlap partner in the comment"; exit 1; }
echo "pass"
