#!/usr/bin/env bash
# fit and datasheet-profile: profiles from nccl-tests logs (least squares
# recomputed here) and from a cluster's datasheet, both of which validate;
# malformed logs write nothing. Usage: fit_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"

# fit: nccl-tests logs -> profile that validates; malformed inputs -> exit 2, nothing written.
check "fit logs" 0 "$bin" fit "$src"/tests/data/calibration/*.log -o "$tmp/fitted.textproto" --cluster dgx-h100 --json
pycheck "fit --json is least squares of the logs' out-of-place times" "$tmp/out" "$src"/tests/data/calibration/*.log <<'PY'
# Ordinary least squares t = alpha + beta size, recomputed here from each log's
# rows (size in bytes, out-of-place time in us), its group from the "#  Rank"
# lines and its link from their host names (docs/cost-model.md "Fitting").
import os
from cli_check import *
ops = {"all_gather": "allgather", "all_reduce": "allreduce", "alltoall": "a2a", "reduce_scatter": "reducescatter"}
fitted = {r["op"]: r for r in load(sys.argv[1])}
expect(len(fitted) == 4, f"ops fitted: {sorted(fitted)}")
for path in sys.argv[2:]:
    op = ops[os.path.basename(path).replace("_perf.log", "")]
    hosts, xs, ys = {}, [], []
    for line in open(path):
        w = line.split()
        if line.startswith("#  Rank"):
            host = w[w.index("on") + 1]
            hosts[host] = hosts.get(host, 0) + 1
        elif w and not line.startswith("#"):
            xs.append(float(w[0]))
            ys.append(float(w[-8]) / 1e3)
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    beta = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    alpha = my - beta * mx
    r2 = 1 - sum((y - alpha - beta * x) ** 2 for x, y in zip(xs, ys)) / sum((y - my) ** 2 for y in ys)
    r = fitted.get(op, {})
    expect(r.get("group") == sum(hosts.values()), f"{op} group {r.get('group')}")
    expect(r.get("ranks_per_node") == max(hosts.values()), f"{op} ranks_per_node {r.get('ranks_per_node')}")
    expect(r.get("link") == ("intra" if len(hosts) == 1 else "inter"), f"{op} link {r.get('link')}")
    expect(r.get("points") == n, f"{op} points {r.get('points')}")
    expect_close(r.get("alpha_ms"), alpha, f"{op} alpha_ms", 1e-9)
    expect_close(r.get("beta_ms"), beta, f"{op} beta_ms", 1e-9)
    expect_close(r.get("r2"), r2, f"{op} r2", 1e-9)
done()
PY
check "fitted profile validates" 0 "$bin" validate "$tmp/fitted.textproto"
while IFS='|' read -r file expected; do
  [[ -z $file || $file == \#* ]] && continue
  check "fit bad $file" 2 "$bin" fit "$src/tests/data/bad/fit/$file" -o "$tmp/never.textproto"
  expect_err "fit bad $file" "$expected"
  [[ ! -e $tmp/never.textproto ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL fit $file wrote output"; }
done <"$src/tests/data/bad/fit/EXPECTED"
check "datasheet profile" 0 "$bin" datasheet-profile dgx-h100 -o "$tmp/ds.textproto"
check "datasheet profile validates" 0 "$bin" validate "$tmp/ds.textproto"

summary
