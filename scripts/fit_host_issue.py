#!/usr/bin/env python3
"""Fits the host-issue model (docs/cost-model.md, "Host time") to the published runs.

The model's four parts (ms of host time per MoE block forward pass: attention,
router with the dispatcher's preprocessing, the rest of the MoE layer, and each
local expert) are global: one value each for every row. No microbenchmark gives
them (Megatron-Core's Python around each kernel is the bulk), so they are
fitted to end-to-end runs, which the project's rules allow only with the rows
named and a leave-one-source-out error reported. This script does both:

- the rows: every MoE row of the table whose blocks wait on the host (dropless;
  not under a full-iteration CUDA graph) -- the only rows the parts act on;
- the loss: the sum over those rows of |ln(predicted / measured)| (a median-like,
  outlier-robust fit), minimised by a pattern search over non-negative parts;
- leave-one-source-out: for each source (the id's prefix: S1, S5, S9, S12) the
  fit on the other sources' rows, and the held-out source's median |error| over
  all its MoE rows; and, since one source (S5) holds nearly every fitted row,
  leave-one-GPU-out inside it (fit on its other machines' rows and the other
  sources', predict this machine's).

It runs `moeplan bench published --json` on a copy of the table with the parts
written on the fitted rows (`profile.host_issue.*` in their `set` column), so
the model fitted is the one moeplan runs. Usage:

    scripts/fit_host_issue.py --moeplan build-dev/moeplan [--runs tests/data/published-runs.tsv]

It prints the fit and the leave-one-source-out table; docs/validation.md
records them, and src's DatasheetAssumptions (kHost*) carry the fitted parts.
"""

import argparse
import atexit
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

PARTS = ("attention_ms", "router_ms", "moe_ms", "local_expert_ms")
STEPS = (0.5, 0.5, 0.5, 0.05)  # first step of each part's search (ms)


def read_table(path):
    header, rows, preamble = None, [], []
    with open(path, encoding="utf-8") as f:
        for line in f.read().split("\n"):
            if line.startswith("#") or not line:
                preamble.append(line) if header is None else None
                continue
            fields = line.split("\t")
            if header is None:
                header = fields
                continue
            rows.append(dict(zip(header, fields)))
    return preamble, header, rows


def is_dense(row):
    return "(dense)" in row["model"] or row["model_ref"].startswith("llama")


def waits_on_host(row):
    s = row["set"]
    # A token-drop row (a capacity factor: padded, static shapes) never waits.
    return (not is_dense(row) and "model.moe.capacity_factor" not in s
            and "schedule.cuda_graphs=full_iteration" not in s)


def source(row):
    return row["id"].split("-")[0]


class Bench:
    def __init__(self, moeplan, runs):
        self.moeplan = moeplan
        self.preamble, self.header, self.rows = read_table(runs)
        self.dir = tempfile.mkdtemp(prefix="fit-host-issue-")
        atexit.register(shutil.rmtree, self.dir, True)
        # The rows' model files are relative to the table's folder.
        os.symlink(os.path.join(os.path.dirname(os.path.abspath(runs)), "published-runs"),
                   os.path.join(self.dir, "published-runs"))
        self.cache = {}

    def errors(self, parts):
        key = tuple(round(p, 6) for p in parts)
        if key in self.cache:
            return self.cache[key]
        lines = ["\t".join(self.header)]
        for r in self.rows:
            r = dict(r)
            if waits_on_host(r):
                r["set"] += "".join(f";profile.host_issue.{n}={v:g}" for n, v in zip(PARTS, key))
            lines.append("\t".join(r[h] for h in self.header))
        table = os.path.join(self.dir, "runs.tsv")
        with open(table, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        out = subprocess.run([self.moeplan, "bench", "published", "--json", "--runs", table],
                             check=True, capture_output=True, text=True).stdout
        runs = json.loads(out)["runs"]
        result = {r["id"]: (r["predicted_iteration_s"], r["measured_iteration_s"]) for r in runs}
        self.cache[key] = result
        return result


def loss(bench, parts, ids):
    e = bench.errors(parts)
    return sum(abs(math.log(e[i][0] / e[i][1])) for i in ids)


def pattern_search(bench, ids, start):
    x, steps = list(start), list(STEPS)
    best = loss(bench, x, ids)
    while max(s / s0 for s, s0 in zip(steps, STEPS)) > 0.01:
        improved = False
        for k in range(len(x)):
            for sign in (1, -1):
                y = list(x)
                y[k] = max(0.0, y[k] + sign * steps[k])
                v = loss(bench, y, ids)
                if v < best - 1e-12:
                    x, best, improved = y, v, True
                    break
        if not improved:
            steps = [s / 2 for s in steps]
    return x, best


def fit(bench, ids):
    # A few starts: the loss is piecewise smooth, not convex.
    # Zero first: where the rows do not determine the parts (no row's host time
    # exceeds its GPU time) the loss is flat and the fit stays at no host time.
    starts = [(0.0, 0.0, 0.0, 0.0), (2.5, 0.5, 2.5, 0.1), (0.0, 0.0, 5.0, 0.0), (4.0, 1.0, 1.0, 0.05)]
    results = [pattern_search(bench, ids, s) for s in starts]
    best = min(r[1] for r in results)
    return next(r[0] for r in results if r[1] <= best + 1e-9)


def median_abs_error(bench, parts, ids):
    e = bench.errors(parts)
    return statistics.median(abs(100 * (e[i][0] - e[i][1]) / e[i][1]) for i in ids)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--moeplan", required=True)
    ap.add_argument("--runs", default="tests/data/published-runs.tsv")
    a = ap.parse_args()
    bench = Bench(a.moeplan, a.runs)
    moe = [r for r in bench.rows if not is_dense(r)]
    fitted = [r["id"] for r in moe if waits_on_host(r)]
    sources = sorted({source(r) for r in moe}, key=lambda s: int(s[1:]))
    parts = fit(bench, fitted)
    zero = (0.0, 0.0, 0.0, 0.0)
    print("fitted rows: " + ", ".join(f"{s} {sum(1 for r in moe if source(r) == s and r['id'] in fitted)}"
                                      for s in sources) + f" ({len(fitted)} of {len(moe)} MoE rows)")
    print("parts (ms): " + ", ".join(f"{n} {v:.3f}" for n, v in zip(PARTS, parts)))
    all_moe = [r["id"] for r in moe]
    print(f"MoE rows, median |error|: without host time {median_abs_error(bench, zero, all_moe):.2f}%, "
          f"fitted {median_abs_error(bench, parts, all_moe):.2f}%")
    print("source | MoE rows | without | in-sample | left out (fit on the others) | parts fitted without it")
    held_errors = []
    for s in sources:
        ids = [r["id"] for r in moe if source(r) == s]
        others = [i for i in fitted if not i.startswith(s + "-")]
        loso = fit(bench, others)
        e = bench.errors(loso)
        held_errors += [abs(100 * (e[i][0] - e[i][1]) / e[i][1]) for i in ids]
        print(f"{s} | {len(ids)} | {median_abs_error(bench, zero, ids):.2f}% | "
              f"{median_abs_error(bench, parts, ids):.2f}% | {median_abs_error(bench, loso, ids):.2f}% | "
              + ", ".join(f"{v:.3f}" for v in loso))
    print(f"left-out median |error| over all {len(held_errors)} MoE rows: {statistics.median(held_errors):.2f}%")
    print("S5 machine | MoE rows | fitted rows | in-sample | left out | parts fitted without it")
    for machine in sorted({r["cluster_ref"] for r in moe if source(r) == "S5"}):
        ids = [r["id"] for r in moe if source(r) == "S5" and r["cluster_ref"] == machine]
        others = [i for i in fitted if i not in ids]
        loso = fit(bench, others)
        print(f"{machine} | {len(ids)} | {sum(1 for i in ids if i in fitted)} | "
              f"{median_abs_error(bench, parts, ids):.2f}% | {median_abs_error(bench, loso, ids):.2f}% | "
              + ", ".join(f"{v:.3f}" for v in loso))


if __name__ == "__main__":
    sys.exit(main())
