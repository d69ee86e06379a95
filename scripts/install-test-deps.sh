#!/usr/bin/env bash
# The test suite's tools (Quick start, command 2), on top of
# scripts/install-deps.sh's: Catch2 and Google Benchmark; clang with libFuzzer
# and the sanitizer runtimes (scripts/fuzz.sh; llvm-14 has llvm-symbolizer,
# for reports with file and line, a Recommends of clang-14 that
# --no-install-recommends leaves out); Chromium, Node and npm, and
# tests/browser's pinned playwright-core, for the report page's browser test.
set -euo pipefail
source "$(dirname "$0")/apt-install.sh"
packages=(catch2 libbenchmark-dev clang libclang-rt-14-dev llvm-14 chromium)
# Node and npm: Debian's, unless a node is already installed (another package,
# e.g. NodeSource's nodejs, may provide both).
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
apt_install_missing "${packages[@]}"

# tests/browser's pinned playwright-core (package-lock.json), once per lock file:
# the CTest report-browser drives the system's Chromium with it.
browser=$(dirname "$0")/../tests/browser
if ! cmp -s "$browser/package-lock.json" "$browser/node_modules/.moeplan-lock"; then
  echo "moeplan: npm ci in tests/browser" >&2
  (cd "$browser" && npm ci --no-audit --no-fund >&2 && cp package-lock.json node_modules/.moeplan-lock)
fi
