#!/usr/bin/env python3
"""The golden regression tier (tests/regression/README.md).

Runs every case (each bundled scenario's `simulate` and `plan`, one sweep, one
capacity table), keeps a small normalised summary of each, and compares it
with tests/regression/golden/CASE.json: numbers within a relative tolerance of
1e-9 (absolute 1e-12 near zero), integers, strings, booleans and the keys
present exactly. Prints one line per mismatch and exits 1 on any mismatch, on
a case without a golden file and on a golden file without a case.

  run_golden.py MOEPLAN_BINARY SOURCE_DIR [--group G] [--golden DIR] [--write]

--group runs the cases of one group (foldmoe, fsmoe, flowmoe, folding: the
scenarios of that name; other: the rest), one CTest each. --write writes the
golden files instead of comparing (scripts/regen-golden.sh) and removes golden
files that no case writes. Python 3 standard library only.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

REL_TOL = 1e-9
ABS_TOL = 1e-12
GROUPS = ("foldmoe", "fsmoe", "flowmoe", "folding", "other")

# simulate --json: what a schedule's evaluation says, whichever of these its family prints.
SIMULATE_KEYS = ("schedule", "degree", "iteration_ms", "forward_ms", "backward_ms", "exposed_comm_ms", "bubble_ms",
                 "tasks", "mfu", "memory_bytes_per_gpu")
SWEEP = "tests/data/sweeps/small-fsmoe.textproto"
CAPACITY = ["capacity", "gpt-moe-s", "--cluster", "dgx-h100", "--gpus", "8..32", "--global-batch", "64", "--tokens",
            "100B", "--days", "30", "--json"]


class CaseFailed(Exception):
    pass


def run(binary, src, args):
    # Relative paths in args are the source tree's (the sweep file).
    argv = [binary] + [os.path.join(src, a) if a == SWEEP else a for a in args]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        last = r.stderr.strip().splitlines()[-1:] or [""]
        raise CaseFailed(f"moeplan {' '.join(args)}: exit {r.returncode}: {last[0]}")
    return json.loads(r.stdout)


def pick(d, keys):
    return {k: d[k] for k in keys if k in d}


def scenario_case(binary, src, name):
    # Folding scenarios have no overlap schedules: simulate prices the scenario's own mapping.
    sim_args = ["simulate", name, "--json"] if name.startswith("folding-") else \
        ["simulate", name, "--schedule", "all", "--json"]
    plan_args = ["plan", name, "--json"]
    sim = run(binary, src, sim_args)
    if isinstance(sim, dict):
        sim = [sim]
    p = run(binary, src, plan_args)
    return {
        "commands": [sim_args, plan_args],
        "simulate": [pick(e, SIMULATE_KEYS) for e in sim],
        "plan": {
            "family": p["family"],
            "chosen": pick(p["chosen"], ("schedule", "knobs", "iteration_ms")),
            "baselines": [pick(b, ("name", "iteration_ms")) for b in p["baselines"]],
            "candidates_evaluated": p["candidates_evaluated"],
        },
    }


def sweep_case(binary, src):
    args = ["sweep", SWEEP, "--json"]
    return {"commands": [args], "sweep": run(binary, src, args)}


def capacity_case(binary, src):
    c = run(binary, src, CAPACITY)
    rows = []
    for r in c["rows"]:
        plan = r["plan"] and pick(r["plan"], ("parallelism", "overlap"))
        rows.append(dict(pick(r, ("gpus", "tokens_per_s", "mfu", "memory_bytes_per_gpu", "days", "bound_by")),
                         plan=plan))
    return {"commands": [CAPACITY], "rows": rows, "smallest_gpus": c["smallest_gpus"],
            "cost_optimal_gpus": c["cost_optimal_gpus"]}


def cases(src):
    """Every case: name -> function(binary, src) giving its summary."""
    out = {}
    for path in sorted(glob.glob(os.path.join(src, "scenarios", "*.textproto"))):
        name = os.path.basename(path)[:-len(".textproto")]
        out[name] = lambda b, s, name=name: scenario_case(b, s, name)
    out["sweep-small-fsmoe"] = sweep_case
    out["capacity-gpt-moe-s"] = capacity_case
    return out


def group_of(case):
    prefix = case.split("-")[0]
    return prefix if prefix in GROUPS else "other"


def dump(v, indent=0):
    """JSON with sorted keys, one key per line, lists of plain values on one line: short diffs."""
    pad = " " * (indent + 1)
    if isinstance(v, dict):
        if not v:
            return "{}"
        items = [f"{pad}{json.dumps(k)}: {dump(v[k], indent + 1)}" for k in sorted(v)]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(v, list) and any(isinstance(x, (dict, list)) for x in v):
        return "[\n" + ",\n".join(pad + dump(x, indent + 1) for x in v) + "\n" + " " * indent + "]"
    return json.dumps(v)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def label(item, i):
    # A list item by what names it (a schedule, a baseline, a capacity row), else by its index.
    if isinstance(item, dict):
        for key in ("schedule", "name", "gpus"):
            if key in item:
                return f"[{key}={item[key]}]"
    return f"[{i}]"


def compare(golden, got, path, out):
    """Appends (path, golden, got) for each difference."""
    if is_number(golden) and is_number(got):
        if isinstance(golden, int) and isinstance(got, int):
            if golden != got:
                out.append((path, golden, got))
        elif abs(golden - got) > max(REL_TOL * max(abs(golden), abs(got)), ABS_TOL):
            out.append((path, golden, got))
    elif isinstance(golden, dict) and isinstance(got, dict):
        for k in sorted(set(golden) | set(got)):
            if k not in got:
                out.append((f"{path}.{k}", golden[k], "(missing)"))
            elif k not in golden:
                out.append((f"{path}.{k}", "(missing)", got[k]))
            else:
                compare(golden[k], got[k], f"{path}.{k}", out)
    elif isinstance(golden, list) and isinstance(got, list):
        if len(golden) != len(got):
            out.append((f"{path}.length", len(golden), len(got)))
        for i, (a, b) in enumerate(zip(golden, got)):
            compare(a, b, path + label(a, i), out)
    elif type(golden) is not type(got) or golden != got:
        out.append((path, golden, got))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("src")
    ap.add_argument("--group", choices=GROUPS)
    ap.add_argument("--golden", help="the golden folder (default SOURCE_DIR/tests/regression/golden)")
    ap.add_argument("--write", action="store_true", help="write the golden files instead of comparing")
    a = ap.parse_args()
    golden_dir = a.golden or os.path.join(a.src, "tests", "regression", "golden")
    wanted = {c: f for c, f in cases(a.src).items() if a.group in (None, group_of(c))}
    stored = {os.path.basename(p)[:-len(".json")] for p in glob.glob(os.path.join(golden_dir, "*.json"))}
    stored = {c for c in stored if a.group in (None, group_of(c))}
    what = f"golden{' ' + a.group if a.group else ''}"
    if not wanted:
        print(f"FAIL {what}: no case to run")
        return 1
    start = time.monotonic()
    problems = 0
    for case, make in wanted.items():
        t = time.monotonic()
        try:
            summary = dict(make(a.binary, a.src), case=case)
        except CaseFailed as e:
            print(f"FAIL {case}: {e}")
            problems += 1
            continue
        file = os.path.join(golden_dir, case + ".json")
        if a.write:
            os.makedirs(golden_dir, exist_ok=True)
            with open(file, "w") as f:
                f.write(dump(summary) + "\n")
            print(f"wrote {os.path.relpath(file, a.src)} ({time.monotonic() - t:.1f} s)")
            continue
        if case not in stored:
            print(f"FAIL {case}: no golden file {os.path.relpath(file, a.src)} (scripts/regen-golden.sh writes it)")
            problems += 1
            continue
        with open(file) as f:
            golden = json.load(f)
        diffs = []
        compare(golden, summary, "", diffs)
        for path, want, got in diffs:
            print(f"MISMATCH {case} {path.lstrip('.') or '(top)'}: golden {json.dumps(want)}, got {json.dumps(got)}")
        problems += len(diffs)
    for case in sorted(stored - set(wanted)):
        file = os.path.join(golden_dir, case + ".json")
        if a.write:
            os.remove(file)
            print(f"removed {os.path.relpath(file, a.src)}: no case writes it")
        else:
            print(f"FAIL {case}: golden file {os.path.relpath(file, a.src)} has no case (a scenario removed or renamed?)")
            problems += 1
    verb = "written" if a.write else "compared"
    print(f"{what}: {len(wanted)} cases {verb}, {problems} problems, {time.monotonic() - start:.1f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
