#!/usr/bin/env bash
# Configures and builds moeplan. Environment: MOEPLAN_BUILD_DIR (default build),
# MOEPLAN_TESTS=ON|OFF (default ON: the test suite and the Google Benchmark
# programs too; the Quick start builds the tool alone), MOEPLAN_WERROR=ON|OFF,
# MOEPLAN_SANITIZE=ON|OFF, MOEPLAN_WITH_CUDA=AUTO|ON|OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${MOEPLAN_BUILD_DIR:-build}
tests=${MOEPLAN_TESTS:-ON}
# Ninja when the folder is new (a folder configured by make keeps make): it starts
# a target's compiles before the libraries it links are linked, which keeps both
# CI cores busy at each library boundary (docs/reliability.md, "CI").
generator=()
[[ -f $dir/CMakeCache.txt ]] || generator=(-G Ninja)
cmake -S . -B "$dir" "${generator[@]}" \
  -DMOEPLAN_BUILD_TESTS="$tests" -DMOEPLAN_BUILD_BENCH="$tests" \
  -DMOEPLAN_WERROR="${MOEPLAN_WERROR:-OFF}" \
  -DMOEPLAN_SANITIZE="${MOEPLAN_SANITIZE:-OFF}" \
  -DMOEPLAN_WITH_CUDA="${MOEPLAN_WITH_CUDA:-AUTO}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
