#!/usr/bin/env bash
# Quick start, command 2: build (if needed) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir "${MOEPLAN_BUILD_DIR:-build}" --output-on-failure -j"$(nproc)"
