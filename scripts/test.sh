#!/usr/bin/env bash
# Quick start, command 2: install the test suite's tools (if missing), build
# moeplan with its tests, and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/install-test-deps.sh
MOEPLAN_TESTS=ON scripts/build.sh
# --timeout: a test that hangs fails after 15 minutes instead of holding CI (the
# slowest, under ASan, takes under 4).
ctest --test-dir "${MOEPLAN_BUILD_DIR:-build}" --output-on-failure --timeout 900 -j"$(nproc)"
