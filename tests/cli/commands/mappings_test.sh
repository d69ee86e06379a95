#!/usr/bin/env bash
# mappings: the rank groups of the example, JSON keys, intra/inter
# marks, and orders or worlds that cannot be mapped.
# Usage: mappings_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"

# mappings: the example, JSON keys and the intra/inter marks.
check "mappings" 0 "$bin" mappings --world 16 --tp 2 --cp 2 --pp 2 --ep 4 --etp 1 --json --gpus-per-node 8
tr -d ' \n' <"$tmp/out" >"$tmp/flat"
for want in '"tp":[[0,1],[2,3]' '"cp":[[0,2],[1,3]' '"dp":[[0,4],[1,5]' '"pp":[[0,8],[1,9]' '"ep":[[0,1,2,3],[4,5,6,7]' '"edp":[[0,4],[1,5]' '"attention_links"' '"inter"'; do
  grep -qF -- "$want" "$tmp/flat" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL mappings lacks $want"; }
done
check "mappings bad order" 2 "$bin" mappings --world 16 --tp 2 --pp 2 --ep 8 --etp 1 --order tp-cp-ep-pp-dp
expect_err "mappings bad order" "--order: attention and expert pipeline groups differ"
check "mappings bad world" 2 "$bin" mappings --world 10 --tp 4
expect_err "mappings bad world" "parallelism.dp: world 10 is not divisible by tp*cp*pp = 4"

summary
