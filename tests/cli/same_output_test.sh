#!/usr/bin/env bash
# Same input, same output at any thread count (issue 13, item 8): runs one
# moeplan command at --threads 1 and --threads 4, writing its JSON to stdout
# and, when the command takes -o, its output file, and compares them byte for
# byte. Usage: same_output_test.sh MOEPLAN_BINARY OUTPUT_SUFFIX|- COMMAND ARGS...
# (OUTPUT_SUFFIX: the -o file's extension, e.g. csv; - for no -o).
set -u
bin=$1 suffix=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in 1 4; do
  out=()
  [[ $suffix == - ]] || out=(-o "$tmp/out$n.$suffix")
  if ! "$bin" "$@" --threads "$n" --json "${out[@]}" >"$tmp/stdout$n" 2>"$tmp/stderr$n"; then
    echo "FAIL: moeplan $* --threads $n exited non-zero:"; cat "$tmp/stderr$n"; exit 1
  fi
done
status=0
cmp "$tmp/stdout1" "$tmp/stdout4" || { echo "FAIL: stdout differs between --threads 1 and 4"; status=1; }
[[ $suffix == - ]] || cmp "$tmp/out1.$suffix" "$tmp/out4.$suffix" ||
  { echo "FAIL: the -o file differs between --threads 1 and 4"; status=1; }
[[ -s $tmp/stdout1 ]] || { echo "FAIL: no JSON on stdout"; status=1; }
[[ $status == 0 ]] && echo "same output at --threads 1 and 4: moeplan $*"
exit $status
