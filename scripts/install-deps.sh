#!/usr/bin/env bash
# Installs moeplan's build dependencies from Debian 12 packages, only the ones
# missing (idempotent). CUDA and NCCL are optional and never installed here.
set -euo pipefail
packages=(g++ make cmake pkg-config
          libboost-graph-dev libeigen3-dev libnlopt-cxx-dev
          libprotobuf-dev protobuf-compiler libfmt-dev
          catch2 libcli11-dev libbenchmark-dev
          # moeplan calibrate --backend host: collectives between MPI processes
          openmpi-bin libopenmpi-dev
          # the moeplan Python module (docs/python.md)
          python3-dev pybind11-dev
          # scripts/fuzz.sh: clang with libFuzzer and the sanitizer runtimes;
          # llvm-14 has llvm-symbolizer, for reports with file and line
          # (a Recommends of clang-14 that --no-install-recommends leaves out).
          clang libclang-rt-14-dev llvm-14
          # tests/browser: moeplan report pages in headless Chromium
          chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node and npm for tests/browser: Debian's, unless a node is already installed
# (another package, e.g. NodeSource's nodejs, may provide both).
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
  echo "moeplan: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) == 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# tests/browser's pinned playwright-core (package-lock.json), once per lock file:
# the CTest report-browser drives the system's Chromium with it.
browser=$(dirname "$0")/../tests/browser
if ! cmp -s "$browser/package-lock.json" "$browser/node_modules/.moeplan-lock"; then
  echo "moeplan: npm ci in tests/browser" >&2
  (cd "$browser" && npm ci --no-audit --no-fund >&2 && cp package-lock.json node_modules/.moeplan-lock)
fi
