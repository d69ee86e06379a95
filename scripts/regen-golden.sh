#!/usr/bin/env bash
# Regenerates the golden regression tier (tests/regression/README.md): every
# case's summary from BINARY into tests/regression/golden/*.json, and removes
# golden files that no case writes. Review the diff and say in the commit
# message why each change is right. Usage: scripts/regen-golden.sh BINARY
set -euo pipefail
[[ $# == 1 ]] || { echo "usage: $0 MOEPLAN_BINARY" >&2; exit 2; }
bin=$(realpath "$1")
cd "$(dirname "$0")/.."
python3 tests/regression/run_golden.py "$bin" "$PWD" --write
