# Sourced by the CLI test scripts (tests/cli/commands/*_test.sh, chakra_test.sh,
# report_test.sh) once they have set bin (the moeplan binary) and src (the
# source tree), under set -u:
#
#   set -u
#   bin=$1
#   src=$2
#   source "$src/tests/cli/lib.sh"
#   ... checks ...
#   summary
#
# It gives the script a temporary folder ($tmp, removed on exit), the pass and
# fail counters and the helpers that count them, cli_check (the Python module
# the value checks import), and summary, the script's last command.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

check() {  # check NAME EXPECTED_RC COMMAND...
  local name=$1 want=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [[ $rc == "$want" ]]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL $name: exit $rc, wanted $want"; head -3 "$tmp/err"
    # The error line of a command that printed progress first is at the end.
    if (($(wc -l <"$tmp/err") > 6)); then echo "..."; tail -3 "$tmp/err"; fi; fi
}
expect_err() {  # expect_err NAME SUBSTRING: the last command's stderr is one line holding SUBSTRING
  local lines
  lines=$(wc -l <"$tmp/err")
  if [[ $lines == 1 ]] && grep -qF -- "$2" "$tmp/err"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL $1: stderr was:"; cat "$tmp/err"; fi
}
is_true() {  # is_true NAME TEST...: a [[ ]]-style test that must hold
  local name=$1
  shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $name: $*"; fi
}
# Value checks in Python: pycheck NAME [ARGS...] <<'PY' ... PY passes when the
# script exits 0. Scripts import cli_check (below): moeplan(...) runs the binary
# with --json and parses the answer, expect() collects failures, done() reports.
export MOEPLAN_BIN=$bin PYTHONPATH=$tmp
cat >"$tmp/cli_check.py" <<'PY'
import json, math, os, subprocess, sys

failures = []


def moeplan(*args):
    r = subprocess.run([os.environ["MOEPLAN_BIN"], *args, "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"moeplan {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def load(path):
    with open(path) as f:
        return json.load(f)


def close(a, b, rel=1e-12):
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def expect(ok, what):
    if not ok:
        failures.append(what)


def expect_close(got, want, what, rel=1e-12):
    expect(close(got, want, rel), f"{what}: got {got}, want {want}")


def same_evaluation(got, want, what):
    # Two evaluations of one schedule: the same numbers, whichever command made them.
    for key in ("schedule", "degree", "tasks"):
        expect(got[key] == want[key], f"{what}: {key} {got[key]} vs {want[key]}")
    for key in ("iteration_ms", "forward_ms", "backward_ms", "compute_ms", "comm_ms", "exposed_comm_ms", "bubble_ms"):
        expect_close(got[key], want[key], f"{what}: {key}")


def done():
    if failures:
        print("\n".join(failures[:12]))
        sys.exit(1)
PY
pycheck() {  # pycheck NAME [ARGS...] < SCRIPT
  local name=$1
  shift
  if python3 - "$@" >"$tmp/py" 2>&1; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL $name:"; head -12 "$tmp/py"; fi
}

# as_limited_prefix: sets the array as_limited to the prefix that lets a
# command's own `ulimit -u 1` bite (one process allowed, RLIMIT_NPROC: no second
# thread can start). Root ignores the limit, so as root the run is made as user
# nobody; () where that cannot be done (root without runuser or user nobody).
as_limited_prefix() {
  as_limited=()
  if [[ $EUID == 0 ]]; then
    command -v runuser >/dev/null && id nobody >/dev/null 2>&1 && as_limited=(runuser -u nobody --)
  else
    as_limited=(env)
  fi
  return 0
}

# mpi_prefix PROFILE: sets the array mpi to the launcher of two MPI processes
# (mpirun -n 2, oversubscribed, as root when root), or to () without mpirun or
# when PROFILE, a profile written by `calibrate --backend host`, says that this
# moeplan was built without MPI.
mpi_prefix() {
  mpi=()
  if command -v mpirun >/dev/null && ! grep -q "built without MPI" "$1"; then
    # Under ASan, leaks are not checked under mpirun (tests/cli/mpi_run.sh says
    # why; the same code runs leak-checked in one process), and so allocations
    # keep the fast unwinder: with the slow one, which LeakSanitizer needed to
    # match suppressions of Open MPI's own allocations, cli-execute took 9x the
    # plain build's time.
    mpi=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
         OMPI_MCA_mca_base_component_disable_dlclose=1 mpirun -n 2 --oversubscribe)
    if [[ $(id -u) == 0 ]]; then mpi+=(--allow-run-as-root); fi
  fi
}

summary() {  # summary: the counts; fails on any failure, and when no check ran (a script that tested nothing)
  echo "$(basename "$0" .sh): $pass passed, $fail failed"
  [[ $fail == 0 && $pass -gt 0 ]]
}
