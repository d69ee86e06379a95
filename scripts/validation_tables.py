#!/usr/bin/env python3
"""Regenerates the tables of docs/validation.md from the moeplan CLI.

Usage: scripts/validation_tables.py [--moeplan build/moeplan] [--family NAME]...
Prints Markdown tables, one section per family, in the order of
docs/validation.md. Every number in those tables comes from a command printed
above its table, so a reader can re-run it.
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_json(moeplan, args):
    out = subprocess.run([moeplan] + args, cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def bundled(prefix):
    names = [os.path.basename(p)[: -len(".textproto")] for p in glob.glob(os.path.join(ROOT, "scenarios", prefix + "*.textproto"))]
    return sorted(names)


def foldmoe(moeplan):
    print("`moeplan plan <scenario> --json`:\n")
    print("| scenario | best schedule, d | iteration ms | vs none | vs tutel | best d per schedule (speed-up vs none): tutel / aaam / 1a1m / 1a1m-uniform |")
    print("| --- | --- | --- | --- | --- | --- |")
    order = {"s": 0, "m": 1, "l": 2}
    names = sorted(bundled("foldmoe-gpt-moe-"), key=lambda n: (order[n.split("-")[3]], int(n.split("-")[4][:-1])))
    for name in names:
        p = run_json(moeplan, ["plan", name, "--json"])
        per = {s["schedule"]: s for s in p["schedules"]}
        cells = " / ".join(f"{per[s]['degree']} ({per[s]['speedup_vs_none']:.2f})" for s in ["tutel", "aaam", "1a1m", "1a1m-uniform"])
        label = name.replace("foldmoe-gpt-moe-", "").upper()
        print(f"| {label} | {p['schedule']}, {p['knobs']['degree']} | {p['iteration_ms']:.2f} | {p['speedup']:.3f} | {p['speedup_vs_tutel']:.3f} | {cells} |")
    print()


def fsmoe(moeplan):
    start = time.time()
    summary = run_json(moeplan, ["sweep", "fsmoe-table4", "--threads", "2", "--json"])
    wall = time.time() - start
    print(f"`moeplan sweep fsmoe-table4 --threads 2 --json` ({wall:.1f} s here):\n")
    print("| schedule | points | mean speed-up vs none | geomean vs none | mean speed-up vs tutel |")
    print("| --- | --- | --- | --- | --- |")
    for s in summary:
        print(f"| {s['schedule']} | {s['points']} | {s['mean_speedup_vs_none']:.3f} | {s['geomean_speedup_vs_none']:.3f} | {s['mean_speedup_vs_tutel']:.3f} |")
    print()
    print("`moeplan plan fsmoe-testbed-{a,b}-gpt2-xl --json`:\n")
    print("| testbed | closed form (forward / backward) | r fwd / bwd (Tutel) | none | tutel | tutel-improved | pipemoe-lina | fsmoe-no-iio | fsmoe |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for tb in ["a", "b"]:
        p = run_json(moeplan, ["plan", f"fsmoe-testbed-{tb}-gpt2-xl", "--json"])
        c = p["closed_form"]
        k = p["knobs"]
        per = {s["schedule"]: s for s in p["schedules"]}
        times = " | ".join(f"{per[s]['iteration_ms']:.0f} ({per[s]['speedup_vs_tutel']:.2f}x)" for s in ["none", "tutel", "tutel-improved", "pipemoe-lina", "fsmoe-no-iio", "fsmoe"])
        print(f"| {tb.upper()} | {c['case_forward']} {c['t_moe_forward_ms']:.2f} ms / {c['case_backward']} {c['t_moe_backward_ms']:.2f} ms | {k['degree_forward']} / {k['degree_backward']} ({k['tutel_degree']}) | {times} |")
    print("\n(in parentheses: speed-up over tutel)\n")


def flowmoe(moeplan):
    print("`moeplan plan <scenario> --json`:\n")
    print("| scenario | speed-up vs none: tutel | flowmoe-at | flowmoe-ar | flowmoe | flowmoe's R | BO's Sp (bytes) | none (ms) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in bundled("flowmoe-"):
        p = run_json(moeplan, ["plan", name, "--json"])
        per = {s["schedule"]: s for s in p["schedules"]}
        sp = " | ".join(f"{per[s]['speedup_vs_none']:.3f}" for s in ["tutel", "flowmoe-at", "flowmoe-ar", "flowmoe"])
        print(f"| {name} | {sp} | {per['flowmoe']['degree']} | {per['flowmoe'].get('ar_chunk_bytes', '-')} | {per['none']['iteration_ms']:.1f} |")
    print()


def mapping(r):
    c = r["parallelism"]
    return (f"TP{c['tp']} CP{c['cp']} PP{c['pp']}" + (f" VPP{c['vpp']}" if c.get("vpp", 1) > 1 else "")
            + f" EP{c['ep']} ETP{c['etp']} (DP{c['dp']} EDP{c['edp']})" + (f" mb{c['micro_batch_size']}" if c.get("micro_batch_size", 1) > 1 else ""))


def folding(moeplan):
    print("`moeplan plan <scenario> --json`:\n")
    print("| scenario | best folded | best coupled | folded over coupled |")
    print("| --- | --- | --- | --- |")
    for name in bundled("folding-"):
        p = run_json(moeplan, ["plan", name, "--json"])
        f = p["folded"]
        c = p["coupled"]
        fcell = f"{mapping(f)}: {f['iteration_ms']:.0f} ms, MFU {100 * f['mfu']:.1f}%, {f['memory_bytes_per_gpu'] / 2**30:.1f} GiB"
        if c is None:
            ccell, gain = "no coupled mapping fits", "-"
        else:
            same = mapping(c) == mapping(f)
            ccell = "the same mapping" if same else f"{mapping(c)}: {c['iteration_ms']:.0f} ms, MFU {100 * c['mfu']:.1f}%, {c['memory_bytes_per_gpu'] / 2**30:.1f} GiB"
            gain = f"{c['iteration_ms'] / f['iteration_ms']:.3f}x"
        print(f"| {name.replace('folding-', '')} | {fcell} | {ccell} | {gain} |")
    print()


def joint_mapping(c):
    # docs/validation.md's joint tables: no DP/EDP, VPP only when > 1.
    return (f"TP{c['tp']} CP{c['cp']} PP{c['pp']}" + (f" VPP{c['vpp']}" if c.get("vpp", 1) > 1 else "")
            + f" EP{c['ep']} ETP{c['etp']}" + (f" mb{c['micro_batch_size']}" if c.get("micro_batch_size", 1) > 1 else ""))


# The families' degree symbols (plan::overlap_degree_text): FSMoE's per phase.
DEGREE_SYMBOL = {"flowmoe": "R", "foldmoe": "d", "fsmoe": "r"}


def overlap_text(o):
    if o["family"] == "none":
        return "no overlap"
    degree = (f"{o['degree_forward']}/{o['degree_backward']}" if o["family"] == "fsmoe" else f"{o['degree_forward']}")
    return f"{o['family']}/{o['schedule']} {DEGREE_SYMBOL[o['family']]}{degree}"


def joint(moeplan):
    for title, extra in (("Overlap as the datasheet profiles price it (no slow-down beside communication):", []),
                         ("The same with Echo's mean compute slow-down beside communication\n"
                          "(`--set profile.overlap_compute_slowdown=1.38`, arXiv 2412.12487; docs/cost-model.md, "
                          "\"Overlap slow-down\"):", ["--set", "profile.overlap_compute_slowdown=1.38"])):
        print(f"`moeplan plan <scenario> --joint --json{' ' + ' '.join(extra) if extra else ''}`. {title}\n")
        print("| scenario | best mapping, no overlap | default mapping, best overlap | joint optimum | gain over no overlap | gain over default |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name in bundled("folding-"):
            p = run_json(moeplan, ["plan", name, "--joint", "--json"] + extra)
            n, d, j = p["no_overlap"], p["default_mapping"], p["joint"]
            ncell = f"{joint_mapping(n['parallelism'])}: {n['iteration_ms']:.0f} ms, MFU {100 * n['mfu']:.1f}%"
            dcell = (f"{joint_mapping(d['parallelism'])}{'' if d['fits'] else ' (does not fit)'}, "
                     f"{overlap_text(d['overlap'])}: {d['iteration_ms']:.0f} ms")
            where = "the same mapping" if joint_mapping(j["parallelism"]) == joint_mapping(n["parallelism"]) else joint_mapping(j["parallelism"])
            # A plan within the memory model's error of the usable memory: the plan says "may not fit".
            tight = "may not fit" in p["explanation"]["binding_constraint"]["detail"]
            jcell = (f"{where}, {overlap_text(j['overlap'])}: {j['iteration_ms']:.0f} ms, MFU {100 * j['mfu']:.1f}%, "
                     f"{j['memory_bytes_per_gpu'] / 2**30:.1f} GiB{' (tight)' if tight else ''}")
            print(f"| {name.replace('folding-', '')} | {ncell} | {dcell} | {jcell} | "
                  f"{p['speedup_vs_no_overlap']:.3f}x | {p['speedup_vs_default_mapping']:.3f}x |")
        print()


CONTENTION_SCENARIOS = ["foldmoe-gpt-moe-m-16k", "fsmoe-testbed-a-gpt2-xl", "fsmoe-testbed-b-gpt2-xl",
                        "flowmoe-gpt2-tiny-moe-c1", "flowmoe-llama2-moe-l-c1"]
SLOWDOWNS = ["1.0", "1.1", "1.2", "1.3"]


def plan_choice(p):
    k = p.get("knobs", {})
    knobs = ", ".join(f"{key} {k[key]}" for key in ["degree", "degree_forward", "degree_backward", "ar_chunk_bytes"] if key in k)
    return f"{p['schedule']} ({knobs})" if knobs else p["schedule"]


def contention(moeplan):
    """How each schedule's speed-up over none moves as compute slows beside communication."""
    for name in CONTENTION_SCENARIOS:
        print(f"`moeplan simulate {name} --schedule all --json --set profile.overlap_compute_slowdown=S` and `moeplan plan {name} --json --set ...`:\n")
        rows = {}
        plans = {}
        for slow in SLOWDOWNS:
            sets = ["--set", f"profile.overlap_compute_slowdown={slow}"]
            for e in run_json(moeplan, ["simulate", name, "--schedule", "all", "--json"] + sets):
                rows.setdefault(e["schedule"], {})[slow] = e["iteration_ms"]
            plans[slow] = run_json(moeplan, ["plan", name, "--json"] + sets)
        print("| schedule (scenario knobs) | " + " | ".join(f"S = {s}: ms (vs none)" for s in SLOWDOWNS) + " |")
        print("| --- |" + " --- |" * len(SLOWDOWNS))
        for sched, per in rows.items():
            cells = " | ".join(f"{per[s]:.2f} ({rows['none'][s] / per[s]:.3f}x)" for s in SLOWDOWNS)
            print(f"| {sched} | {cells} |")
        print("| plan's choice | " + " | ".join(f"{plan_choice(plans[s])}: {plans[s]['iteration_ms']:.2f} ms" for s in SLOWDOWNS) + " |")
        print()
    name = "folding-mixtral-8x22b-16k-128"
    print(f"`moeplan plan {name} --json --set profile.overlap_compute_slowdown=S`:\n")
    print("| S | best folded mapping | iteration ms | MFU |")
    print("| --- | --- | --- | --- |")
    for slow in SLOWDOWNS:
        f = run_json(moeplan, ["plan", name, "--json", "--set", f"profile.overlap_compute_slowdown={slow}"])["folded"]
        print(f"| {slow} | {mapping(f)} | {f['iteration_ms']:.0f} | {100 * f['mfu']:.1f}% |")
    print()


def published(moeplan):
    """The per-row tables of 'Published Megatron-Core runs' (bench published --json)."""
    runs = run_json(moeplan, ["bench", "published", "--json"])["runs"]
    print("`moeplan bench published --json`:\n")
    print("| id | model | mapping | global batch | measured s | predicted s | error | predicted GiB | peak GiB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in runs:
        if not r["id"].startswith("S1-"):
            continue
        peak = r.get("measured_peak_alloc_gib")
        print(f"| {r['id']} | {r['model']} | {r['mapping']} | {r['global_batch']} | {r['measured_iteration_s']:.4f} | "
              f"{r['predicted_iteration_s']:.4f} | {r['error_pct']:+.1f}% | {r['predicted_memory_gib']:.1f} | "
              f"{peak if peak is not None else '-'} |")
    print("\nThe other rows (iteration seconds: `gbs x seq / (tokens/s/GPU x GPUs)`; no published peak memory):\n")
    print("| id | model | cluster | GPUs | mapping | global batch | measured s | predicted s | error | predicted GiB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in runs:
        if r["id"].startswith("S1-"):
            continue
        print(f"| {r['id']} | {r['model']} | {r['cluster']} | {r['gpus']} | {r['mapping']} | {r['global_batch']} | "
              f"{r['measured_iteration_s']:.4f} | {r['predicted_iteration_s']:.4f} | {r['error_pct']:+.1f}% | "
              f"{r['predicted_memory_gib']:.1f} |")
    print()


FAMILIES = {"foldmoe": foldmoe, "fsmoe": fsmoe, "flowmoe": flowmoe, "folding": folding, "joint": joint, "contention": contention,
            "published": published}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--moeplan", default=os.path.join(ROOT, "build", "moeplan"))
    ap.add_argument("--family", action="append", choices=sorted(FAMILIES))
    a = ap.parse_args()
    for fam in a.family or list(FAMILIES):
        print(f"### {fam}\n")
        FAMILIES[fam](os.path.abspath(a.moeplan))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
