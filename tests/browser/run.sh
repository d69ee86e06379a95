#!/usr/bin/env bash
# The report pages in headless Chromium (issue 18 item 2; CTest report-browser).
# Writes `moeplan report` pages for one scenario per family and for the FSMoE
# Table 4 sweep's CSV, then runs report.test.mjs on them with node's test
# runner and playwright-core driving the system's Chromium.
# Usage: run.sh MOEPLAN_BINARY SOURCE_DIR
# Environment: MOEPLAN_SCREENSHOTS=DIR keeps the screenshots (docs/img takes them
# from here: MOEPLAN_SCREENSHOTS=docs/img tests/browser/run.sh build/moeplan .).
#
# Set-up (scripts/install-deps.sh, the README's quick start): the Debian
# packages chromium, nodejs and npm, then `npm ci` here. Without
# tests/browser/node_modules that set-up never ran on this machine: the test
# is skipped (exit 77, which CTest reports as skipped, not passed). With it,
# a missing node or chromium is a failure: the set-up ran, so CI would
# otherwise pass without a browser.
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # absolute: the sweep report runs in its folder
src=$2
here=$src/tests/browser
if [[ ! -d $here/node_modules/playwright-core ]]; then
  echo "SKIP: $here/node_modules is missing: scripts/install-deps.sh (the README's set-up) installs chromium, node and playwright-core"
  exit 77
fi
node=$(command -v node) || { echo "FAIL: node is not installed, but the browser tests were set up (run scripts/install-deps.sh)"; exit 1; }
browser=${MOEPLAN_CHROMIUM:-$(command -v chromium || command -v chromium-browser)} ||
  { echo "FAIL: chromium is not installed, but the browser tests were set up (run scripts/install-deps.sh)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One scenario per family, each a bundled one the docs show.
pages=(foldmoe:foldmoe-gpt-moe-m-16k fsmoe:fsmoe-testbed-a-gpt2-xl flowmoe:flowmoe-gpt2-tiny-moe-c1
  folding:folding-mixtral-8x22b-32k-256)
for page in "${pages[@]}"; do
  if ! "$bin" report "${page#*:}" -o "$tmp/${page%%:*}.html" --threads 2 >"$tmp/out" 2>"$tmp/err"; then
    echo "FAIL: moeplan report ${page#*:}:"; cat "$tmp/err"; exit 1
  fi
done
# From inside the folder, so the page names the CSV as table4.csv (the same screenshot on every run).
if ! "$bin" sweep fsmoe-table4 --threads 2 --quiet -o "$tmp/table4.csv" >/dev/null 2>"$tmp/err" ||
  ! (cd "$tmp" && "$bin" report table4.csv -o table4.html >/dev/null 2>>"$tmp/err"); then
  echo "FAIL: the FSMoE Table 4 sweep and its report:"; cat "$tmp/err"; exit 1
fi
[[ -z ${MOEPLAN_SCREENSHOTS:-} ]] || mkdir -p "$MOEPLAN_SCREENSHOTS"
MOEPLAN_REPORT_DIR=$tmp MOEPLAN_CHROMIUM=$browser MOEPLAN_SCREENSHOTS=${MOEPLAN_SCREENSHOTS:+$(cd "$MOEPLAN_SCREENSHOTS" && pwd)} \
  "$node" --test "$here/report.test.mjs"
