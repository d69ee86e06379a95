#!/usr/bin/env bash
# Quick start's dependencies: what building moeplan (the CLI and the Python
# module, not the tests) needs, from Debian 12 packages, only the ones missing
# (idempotent). The test suite's tools are scripts/install-test-deps.sh's.
# CUDA and NCCL are optional and never installed here.
set -euo pipefail
source "$(dirname "$0")/apt-install.sh"
apt_install_missing g++ make cmake ninja-build pkg-config \
  libboost-graph-dev libeigen3-dev libnlopt-cxx-dev \
  libprotobuf-dev protobuf-compiler libfmt-dev libcli11-dev \
  openmpi-bin libopenmpi-dev `# moeplan calibrate --backend host: collectives between MPI processes` \
  python3-dev pybind11-dev `# the moeplan Python module (docs/python.md)`
