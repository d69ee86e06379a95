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
          clang libclang-rt-14-dev llvm-14)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "moeplan: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) == 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
