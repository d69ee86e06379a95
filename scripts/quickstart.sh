#!/usr/bin/env bash
# Quick start, command 1: install what is missing, build, and run the main job
# on the bundled default scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build/moeplan plan foldmoe-gpt-moe-m-16k
