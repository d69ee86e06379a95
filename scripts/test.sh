#!/usr/bin/env bash
# Quick start, command 2: install the test suite's tools (if missing), build
# moeplan with its tests, and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/install-test-deps.sh
MOEPLAN_TESTS=ON scripts/build.sh
ctest --test-dir "${MOEPLAN_BUILD_DIR:-build}" --output-on-failure -j"$(nproc)"
