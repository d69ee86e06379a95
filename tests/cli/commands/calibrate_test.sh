#!/usr/bin/env bash
# calibrate --backend host: one process, then two under mpirun where this
# moeplan has MPI; the profile's lines and the GEMM grid, refitted here and by
# `moeplan fit`; --backend cuda and bad backends. Usage: calibrate_test.sh
# MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"

# calibrate --backend host (issue 16 item 1; docs/cli.md "calibrate"). No
# timing value is asserted (the machine is noisy): the shapes of the outputs,
# the sizes of the GEMM grid (docs/cost-model.md "Host calibration"), and that
# `moeplan fit` of the points reproduces the profile's lines.
mkdir -p "$tmp/cal1" "$tmp/cal2"
calibrate_checks() {  # calibrate_checks DIR COLLECTIVES(0/1)
  COLLECTIVES=$2 pycheck "calibrate $1 profile" "$1/host.textproto" "$1/host.points.csv" "$1/refit.textproto" <<'PY'
import re
from cli_check import *
profile, points, refit = sys.argv[1:4]
collectives = os.environ["COLLECTIVES"] == "1"

def lines_of(path):
    text = open(path).read()
    out = {}
    for block in re.findall(r"costs \{(.*?)\n\}", text, re.S):
        f = dict(re.findall(r"^\s*(\w+): (.*)$", block, re.M))
        out[(f["op"], f["link"], int(f["group"]))] = {k: float(f[k]) for k in ("alpha_ms", "beta_ms", "r2", "points")}
    m = re.search(r"^overlap_compute_slowdown: (\S+)$", text, re.M)
    return out, float(m.group(1)) if m else 1.0

lines, slowdown = lines_of(profile)
want = [("GEMM", "LOCAL", 1), ("ATTENTION", "LOCAL", 1)]
if collectives:
    want += [(op, "INTRA", 2) for op in ("A2A", "ALLGATHER", "REDUCESCATTER", "ALLREDUCE", "P2P")]
expect(sorted(lines) == sorted(want), f"lines {sorted(lines)}, wanted {sorted(want)}")
for key, c in lines.items():
    expect(c["points"] >= 3, f"{key}: {c['points']} points")
    expect(math.isfinite(c["beta_ms"]) and c["beta_ms"] > 0, f"{key}: beta {c['beta_ms']}")
expect(slowdown >= 1, f"overlap_compute_slowdown {slowdown}")
# The --quick GEMM grid: tokens {16, 64, 256} x d_model {256} x ffn {512, 1024}, 2 m n k FLOPs each.
grid = sorted(2 * t * d * f for t in (16, 64, 256) for d in (256,) for f in (512, 1024))
rows = [r.split(",") for r in open(points).read().splitlines() if r and not r.startswith("#")]
expect(rows[0] == ["op", "link", "group", "size", "time_ms"], f"header {rows[0]}")
gemm_sizes = sorted(float(r[3]) for r in rows[1:] if r[0] == "gemm")
expect(gemm_sizes == grid, f"GEMM sizes {gemm_sizes}, wanted {grid}")
# The attention shape block, refitted here from the "# attention point" lines by
# normal equations (a second formulation of cost::fit_attention_shape): block 64,
# tile scores per head = sum over 64-row blocks of rows x (c - q + b0 + rows).
text = open(profile).read()
block = re.search(r"attention_shape \{(.*?)\n\}", text, re.S)
expect(block is not None, "the profile has an attention_shape block")
if block:
    a = dict(re.findall(r"^\s*(\w+): (.*)$", block.group(1), re.M))
    pts = [tuple(float(x) for x in l.split(":")[1].split(","))
           for l in open(points) if l.startswith("# attention point")]
    expect(len(pts) == 6 and int(a["points"]) == 6, f"{len(pts)} attention points, profile says {a['points']}")
    def scores(q, c, b=64):
        out, b0 = 0, 0
        while b0 < q:
            rows = min(b, q - b0)
            out += rows * (c - q + b0 + rows)
            b0 += b
        return out
    X = [[1.0, 4 * k * h * scores(int(q), int(c)) / 1e9, h * scores(int(q), int(c)) / 1e6] for q, c, h, k, _ in pts]
    t = [p[4] for p in pts]
    def solve(cols):
        n = len(cols)
        A = [[sum(X[r][cols[i]] * X[r][cols[j]] for r in range(len(X))) for j in range(n)] +
             [sum(X[r][cols[i]] * t[r] for r in range(len(X)))] for i in range(n)]
        for i in range(n):  # Gauss-Jordan
            piv = max(range(i, n), key=lambda r: abs(A[r][i]))
            A[i], A[piv] = A[piv], A[i]
            for r in range(n):
                if r != i:
                    f = A[r][i] / A[i][i]
                    A[r] = [x - f * y for x, y in zip(A[r], A[i])]
        return {cols[i]: A[i][n] / A[i][i] for i in range(n)}
    kept = [0, 1, 2]
    while True:
        coef = solve(kept)
        worst = min(kept, key=lambda j: coef[j])
        if coef[worst] >= 0 or len(kept) == 1:
            break
        kept.remove(worst)
    want = [coef.get(j, 0.0) for j in range(3)]
    got = [float(a[k]) for k in ("alpha_ms", "matmul_ms_per_gflop", "score_ms_per_melement")]
    for w, g, name in zip(want, got, ("alpha", "matmul", "score")):
        expect(abs(w - g) <= 1e-6 * max(1.0, abs(w)), f"attention_shape {name}: profile {g}, refit {w}")
# moeplan fit of the points: the same lines.
again, _ = lines_of(refit)
expect(sorted(again) == sorted(lines), f"refit lines {sorted(again)}")
for key in lines:
    if key in again:
        for field in ("alpha_ms", "beta_ms", "r2", "points"):
            expect_close(again[key][field], lines[key][field], f"{key} {field} refit", rel=1e-9)
done()
PY
}
# Single process: compute and overlap only, with a note; communication then fails on the missing line.
check "calibrate --quick, one process" 0 "$bin" calibrate --backend host --quick -o "$tmp/cal1/host.textproto"
calibrate_progress() {  # calibrate_progress NAME GROUP...: one stderr line per benchmark group
  local name=$1 group
  shift
  for group in "$@"; do
    [[ $(grep -c "^moeplan calibrate: $group" "$tmp/err") == 1 ]] && pass=$((pass + 1)) ||
      { fail=$((fail + 1)); echo "FAIL $name: no one progress line for $group:"; cat "$tmp/err"; }
  done
}
calibrate_progress "calibrate progress, one process" "gemm: 6 shapes" "attention: 6 shapes" "overlap: " "note: "
grep -q "no collective lines were measured" "$tmp/err" && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL calibrate without MPI: no note:"; cat "$tmp/err"; }
grep -q "^# No collective lines" "$tmp/cal1/host.textproto" && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL calibrate without MPI: no comment in the profile"; }
check "calibrate profile validates" 0 "$bin" validate "$tmp/cal1/host.textproto"
check "fit calibrate points" 0 "$bin" fit "$tmp/cal1/host.points.csv" --cluster host-2 -o "$tmp/cal1/refit.textproto"
calibrate_checks "$tmp/cal1" 0
check "simulate without collective lines" 2 "$bin" simulate host-flowmoe-small --set profile_ref="$tmp/cal1/host.textproto"
expect_err "simulate without collective lines" "has no a2a line on link intra"
# --backend cuda: without the CUDA plug-in (a build without CUDA) it refuses
# (exit 2); with it, on a machine with no GPU it fails at run time (exit 1);
# with a GPU the gpu-labelled CTest gpu-calibrate runs it
# (tests/cli/gpu_calibrate_test.sh; the plug-in's own checks: cuda_plugin_test.sh).
"$bin" calibrate --backend cuda -o "$tmp/cal1/x.textproto" >"$tmp/out" 2>"$tmp/err"
cuda_rc=$?
case $cuda_rc in
  2) expect_err "calibrate --backend cuda, no plug-in" "moeplan: error: --backend: the cuda backend is the plug-in libmoeplan_cuda.so" ;;
  1) expect_err "calibrate --backend cuda, no GPU" "moeplan: error: --backend: no CUDA GPU found (" ;;
  0) echo "calibrate --backend cuda: a GPU is present; checked by CTest gpu-calibrate"
     rm -f "$tmp/cal1/x.textproto" "$tmp/cal1/x.points.csv" ;;
  *) fail=$((fail + 1)); echo "FAIL calibrate --backend cuda: exit $cuda_rc"; cat "$tmp/err" ;;
esac
# Issue 28: the profile prices a cluster scenarios name; a name that is no
# cluster made a profile no scenario would accept (exit 0 before).
check "calibrate --cluster nope" 2 "$bin" calibrate --backend host --quick --cluster nope -o "$tmp/cal1/x.textproto"
expect_err "calibrate --cluster nope" "--cluster: 'nope' is not a cluster (a bundled name or a cluster file):"
check "calibrate --backend bogus" 2 "$bin" calibrate --backend bogus -o "$tmp/cal1/x.textproto"
expect_err "calibrate --backend bogus" "--backend"
[[ ! -e $tmp/cal1/x.textproto && ! -e $tmp/cal1/x.points.csv ]] && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL calibrate with a bad --backend wrote files"; }
# Two MPI processes: the five collectives too (skipped, and said, without mpirun or an MPI build).
mpi_prefix "$tmp/cal1/host.textproto"
if [[ ${#mpi[@]} -gt 0 ]]; then
  echo "calibrate: under ${mpi[*]}"
  check "calibrate --quick, mpirun -n 2" 0 "${mpi[@]}" "$bin" calibrate --backend host --quick -o "$tmp/cal2/host.textproto"
  calibrate_progress "calibrate progress, mpirun" "gemm: 6 shapes" "attention: 6 shapes" "overlap: GEMM 256" \
    "overlap: GEMM beside a polled MPI_Iallreduce" "alltoall: 2 ranks" "allgather: 2 ranks" "reducescatter: 2 ranks" \
    "allreduce: 2 ranks" "p2p (sendrecv): 2 ranks"
  check "calibrate mpi profile validates" 0 "$bin" validate "$tmp/cal2/host.textproto"
  check "fit calibrate mpi points" 0 "$bin" fit "$tmp/cal2/host.points.csv" --cluster host-2 -o "$tmp/cal2/refit.textproto"
  calibrate_checks "$tmp/cal2" 1
  check "simulate host-flowmoe-small on the calibrated profile" 0 "$bin" simulate host-flowmoe-small \
    --set profile_ref="$tmp/cal2/host.textproto"
else
  echo "calibrate: single process only (no mpirun, or moeplan built without MPI): collective lines not checked"
fi

summary
