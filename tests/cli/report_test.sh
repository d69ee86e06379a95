#!/usr/bin/env bash
# moeplan report and the SVG Gantt chart (issue 18 items 2 and 3): exit codes
# and one-line errors, pages that name no URL, and the numbers a page carries
# checked against other commands (plan --json, simulate --json, the sweep's
# CSV), never against the report's own code. Runs under ASan too (CTest
# report-cli); the browser checks are tests/browser/. Usage:
# report_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"

# report_check: cli_check's moeplan, expect and done (tests/cli/lib.sh), and the page's data.
cat >"$tmp/report_check.py" <<'PY'
import json, re, sys

from cli_check import done, expect, moeplan


def page_data(path):
    # The JSON in script#moeplan-data, as the page's script reads it.
    html = open(path, encoding="utf-8").read()
    m = re.search(r'<script type="application/json" id="moeplan-data">(.*?)</script>', html, re.S)
    if not m:
        sys.exit(f"{path}: no moeplan-data element")
    return json.loads(m.group(1))


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)
PY

# --- A page per family, its numbers against plan --json and simulate --json.
scenarios=(foldmoe-gpt-moe-s-4k fsmoe-testbed-b-gpt2-xl flowmoe-gpt2-tiny-moe-c1 folding-mixtral-8x22b-32k-256)
for s in "${scenarios[@]}"; do
  check "report $s" 0 "$bin" report "$s" -o "$tmp/$s.html" --threads 2 --quiet
  grep -q "^wrote $tmp/$s.html: " "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL report $s: stdout:"; cat "$tmp/out"; }
  # Self-contained: no address a browser could fetch.
  ! grep -qE "https?://" "$tmp/$s.html" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL report $s names a URL:"; grep -oE ".{30}https?://.{30}" "$tmp/$s.html" | head -3; }
done
pycheck "report pages carry plan --json's plan, its chosen and baseline runs, and bars that add up" "$tmp" "${scenarios[@]}" <<'PY'
from report_check import *
tmp, names = sys.argv[1], sys.argv[2:]
for s in names:
    d = page_data(f"{tmp}/{s}.html")
    plan = moeplan("plan", s, "--threads", "2", "--quiet")
    expect(d["plan"] == plan, f"{s}: the page's plan is not plan --json's")
    chosen, *rest = d["timelines"]
    expect(chosen["label"] == "chosen" and close(chosen["iteration_ms"], plan["iteration_ms"]),
           f"{s}: chosen timeline ends at {chosen['iteration_ms']}, the plan says {plan['iteration_ms']}")
    base = plan["baselines"][0]
    expect(len(rest) == 1 and close(rest[0]["iteration_ms"], base["iteration_ms"]),
           f"{s}: baseline timeline vs {base['name']} {base['iteration_ms']}")
    for t in d["timelines"]:
        tasks = t["tasks"]
        expect(len(tasks) % 6 == 0 and len(tasks) > 0, f"{s} {t['label']}: tasks")
        ends = tasks[2::6]
        expect(close(max(ends), t["iteration_ms"]), f"{s} {t['label']}: last task ends at {max(ends)}")
        expect(all(0 <= lane < len(t["lanes"]) for lane in tasks[0::6]), f"{s} {t['label']}: lanes")
    for b in d["bars"]:
        total = b["compute_ms"] + b["exposed_comm_ms"] + b["idle_ms"]
        expect(close(total, b["iteration_ms"]) and min(b["compute_ms"], b["exposed_comm_ms"], b["idle_ms"]) >= 0,
               f"{s}: bar {b['name']} splits {b['iteration_ms']} into {total}")
    roles = [b["role"] for b in d["bars"]]
    expect(roles.count("chosen") == 1 and roles.count("baseline") == 1, f"{s}: roles {roles}")
    bar = next(b for b in d["bars"] if b["role"] == "chosen")
    expect(close(bar["iteration_ms"], plan["iteration_ms"]), f"{s}: chosen bar {bar['iteration_ms']}")
    if d["family"] != "folding":
        # The none bar and timeline are simulate's none: compute, exposed communication, tasks.
        none = moeplan("simulate", s, "--schedule", "none")
        nb = next(b for b in d["bars"] if b["name"].startswith("none "))
        expect(close(nb["compute_ms"], none["compute_ms"]) and close(nb["exposed_comm_ms"], none["exposed_comm_ms"]),
               f"{s}: none bar {nb} vs simulate {none['compute_ms']} {none['exposed_comm_ms']}")
        expect(len(rest[0]["tasks"]) == 6 * none["tasks"], f"{s}: none timeline has {len(rest[0]['tasks']) // 6} tasks, simulate {none['tasks']}")
    else:
        expect(d["chart"] == "mfu-memory" and d["bars_by"] == "mapping", f"{s}: chart {d['chart']}, bars by {d['bars_by']}")
        m = d["chart_data"]
        expect(len(m["mode"]) == plan["mappings_searched"], f"{s}: {len(m['mode'])} mappings, plan searched {plan['mappings_searched']}")
        i = m["chosen"]
        p = plan["knobs"]["parallelism"]
        want = f"tp{p['tp']} cp{p['cp']} pp{p['pp']} vpp{p['vpp']} ep{p['ep']} etp{p['etp']} mb{plan['knobs']['micro_batch_size']}"
        expect(i is not None and m["label"][i] == want and close(m["mfu"][i], plan["mfu"]), f"{s}: chosen mapping {i}")
        expect(all(t["stages"] for t in d["timelines"]), f"{s}: folding timelines have stage lanes")
        expect(sorted({l["rank"] for l in chosen["lanes"]}) == list(range(p["pp"])), f"{s}: one lane group per stage")
done()
PY

# Same input, same bytes, at any thread count.
check "report --threads 1" 0 "$bin" report fsmoe-testbed-b-gpt2-xl -o "$tmp/t1.html" --threads 1 --quiet
check "report --threads 2" 0 "$bin" report fsmoe-testbed-b-gpt2-xl -o "$tmp/t2.html" --threads 2 --quiet
is_true "report: the same bytes at --threads 1 and 2" cmp -s "$tmp/t1.html" "$tmp/t2.html"
check "report -o -" 0 "$bin" report flowmoe-gpt2-tiny-moe-c1 -o - --quiet
is_true "report -o -: the page alone on stdout" test "$(head -c 15 "$tmp/out")" == "<!DOCTYPE html>"

# --- A plan file: its own choice is drawn; a plan that re-planning would not make says so.
check "plan -o" 0 "$bin" plan foldmoe-gpt-moe-s-4k -o "$tmp/p.textproto" --quiet
check "report PLAN" 0 "$bin" report "$tmp/p.textproto" -o "$tmp/p.html"
sed -e 's/^  degree: .*/  degree: 2/' -e '/^  slicing:/d' "$tmp/p.textproto" >"$tmp/q.textproto"
check "report an edited PLAN" 0 "$bin" report "$tmp/q.textproto" -o "$tmp/q.html"
pycheck "report PLAN draws the plan file's knobs and notes where planning again differs" "$tmp" <<'PY'
from report_check import *
tmp = sys.argv[1]
p, q = page_data(f"{tmp}/p.html"), page_data(f"{tmp}/q.html")
plan = moeplan("plan", "foldmoe-gpt-moe-s-4k", "--quiet")
expect(p["notes"] == [] and close(p["timelines"][0]["iteration_ms"], plan["iteration_ms"]), f"plan file as planned: notes {p['notes']}")
expect(p["input"] == f"{tmp}/p.textproto", f"input {p['input']}")
# The edited plan runs d = 2 (simulate of the edited plan, another path, gives its time).
sim = moeplan("simulate", f"{tmp}/q.textproto")
expect(close(q["timelines"][0]["iteration_ms"], sim["iteration_ms"]) and sim["degree"] == 2,
       f"edited plan: timeline {q['timelines'][0]['iteration_ms']} vs simulate {sim['iteration_ms']} (d {sim['degree']})")
expect(any("the plan file says" in n for n in q["notes"]) and any("planning the scenario again chooses" in n for n in q["notes"]),
       f"edited plan notes {q['notes']}")
expect(q["plan"]["iteration_ms"] == plan["iteration_ms"], "the candidates come from planning again")
done()
PY

# --- A sweep's CSV: every row and axis, the figures as the CSV has them.
check "sweep small-fsmoe -o" 0 "$bin" sweep "$src/tests/data/sweeps/small-fsmoe.textproto" -o "$tmp/s.csv" --threads 2 --quiet
check "report SWEEP.csv" 0 "$bin" report "$tmp/s.csv" -o "$tmp/s.html"
pycheck "report of a sweep's CSV holds its rows" "$tmp" <<'PY'
import csv
from report_check import *
tmp = sys.argv[1]
d = page_data(f"{tmp}/s.html")["sweep"]
rows = list(csv.DictReader(open(f"{tmp}/s.csv")))
head = list(rows[0].keys())
axes = head[head.index("scenario") + 1:head.index("schedule")]
expect([a["name"] for a in d["axes"]] == axes, f"axes {d['axes']} vs {axes}")
expect(d["points"] == 8 and len(d["rows"]["schedule"]) == len(rows) == 48, f"{d['points']} points, {len(rows)} rows")
for i, r in enumerate(rows):
    expect(d["schedules"][d["rows"]["schedule"][i]] == r["schedule"], f"row {i}: schedule")
    for k in ("iteration_ms", "speedup_vs_none", "speedup_vs_tutel"):
        got = d["rows"][k][i]
        expect((got is None and r[k] == "") or (r[k] != "" and got == float(r[k])), f"row {i}: {k} {got} vs {r[k]!r}")
    for a, axis in enumerate(d["axes"]):
        expect(axis["values"][d["rows"]["axes"][a][i]] == r[axis["name"]], f"row {i}: axis {axis['name']}")
done()
PY

# --- Errors: one line, exit 2 for input and usage, exit 1 for a file that cannot be written.
printf 'point,scenario,schedule,speedup_vs_none,speedup_vs_tutel\n0,a,none,1,1\n' >"$tmp/bad.csv"
head -1 "$tmp/s.csv" >"$tmp/header.csv"
{ head -2 "$tmp/s.csv"; head -3 "$tmp/s.csv" | tail -1 | awk -F, 'BEGIN{OFS=","} {$8="fast"; print}'; } >"$tmp/cell.csv"
# Issue 28: line 3's scenario cell "ba\xffd" (it starts at byte 3, after the point and its comma).
{ head -2 "$tmp/s.csv"; head -3 "$tmp/s.csv" | tail -1 | awk -F, 'BEGIN{OFS=","} {$2="ba\377d"; print}'; } >"$tmp/utf8.csv"
mkdir -p "$tmp/noise" && sed 's/^name: .*/name: "noisy"/' "$src/scenarios/foldmoe-gpt-moe-s-4k.textproto" >"$tmp/noise/n.textproto"
while IFS='|' read -r name rc message args; do
  read -r -a argv <<<"$args"
  check "$name" "$rc" "$bin" "${argv[@]}"
  expect_err "$name" "$message"
done <<EOF
no -o|2|--output is required|report foldmoe-gpt-moe-s-4k
unknown scenario|2|no-such-scenario|report no-such-scenario -o $tmp/x.html
a sweep file|2|is a sweep: run it first (moeplan sweep fsmoe-table4 -o F.csv) and report the CSV|report fsmoe-table4 -o $tmp/x.html
CSV without iteration_ms|2|$tmp/bad.csv:1:1: header: the header has no column 'iteration_ms'|report $tmp/bad.csv -o $tmp/x.html
CSV with no rows|2|$tmp/header.csv:1:1: no rows after the header|report $tmp/header.csv -o $tmp/x.html
CSV with a word for a number|2|iteration_ms: expected a finite number, got 'fast'|report $tmp/cell.csv -o $tmp/x.html
CSV with a byte that is not UTF-8|2|$tmp/utf8.csv:3:3: scenario: not valid UTF-8 (byte 0xff at offset 2)|report $tmp/utf8.csv -o $tmp/x.html
CSV and --schedule|2|--schedule: a sweep's CSV holds finished runs; this option cannot act on it|report $tmp/s.csv -o $tmp/x.html --schedule fsmoe
CSV and --threads|2|--threads: a sweep's CSV holds finished runs|report $tmp/s.csv -o $tmp/x.html --threads 2
CSV and --quiet|2|--quiet: a sweep's CSV holds finished runs|report $tmp/s.csv -o $tmp/x.html --quiet
PLAN and --schedule|2|--schedule: a plan file fixes its schedule|report $tmp/p.textproto -o $tmp/x.html --schedule aaam
PLAN and --set|2|--set: a plan file fixes its scenario's overrides|report $tmp/p.textproto -o $tmp/x.html --set workload.seq_len=8192
folding and --schedule|2|--schedule: a folding scenario has no overlap schedule|report folding-mixtral-8x22b-32k-256 -o $tmp/x.html --schedule folded
noise|2|schedule.compute_jitter_cv: report ranks schedules on the noiseless model|report foldmoe-gpt-moe-s-4k -o $tmp/x.html --set schedule.compute_jitter_cv=0.1
unknown schedule|2|--schedule:|report foldmoe-gpt-moe-s-4k -o $tmp/x.html --schedule fsmoe
unwritable|1|$tmp/missing/x.html|report foldmoe-gpt-moe-s-4k -o $tmp/missing/x.html
EOF
is_true "no page after the errors" test ! -e "$tmp/x.html"

# Issue 28: a plan file is input. Each edit below was accepted (nan and inf
# printed into the page), or its error blamed an option never given.
sed 's/^iteration_ms: .*/iteration_ms: nan/' "$tmp/p.textproto" >"$tmp/nan.textproto"
sed 's/^baseline_ms: .*/baseline_ms: inf/' "$tmp/p.textproto" >"$tmp/inf.textproto"
sed 's/^speedup: .*/speedup: nan/' "$tmp/p.textproto" >"$tmp/sp.textproto"
sed 's/^  degree: .*/  degree: 0/' "$tmp/p.textproto" >"$tmp/d0.textproto"
sed 's/^  degree: .*/  degree: 4000/' "$tmp/p.textproto" >"$tmp/d4000.textproto"
{ cat "$tmp/p.textproto"; echo 'scenario_overrides: "no-equals-sign"'; } >"$tmp/ov.textproto"
while IFS='|' read -r name message file; do
  check "issue 28: report PLAN with $name" 2 "$bin" report "$file" -o "$tmp/x.html"
  expect_err "issue 28: report PLAN with $name" "$message"
done <<EOF
iteration_ms nan|$tmp/nan.textproto: iteration_ms: must be a finite time above 0 and at most 1e12 ms, got nan|$tmp/nan.textproto
baseline_ms inf|$tmp/inf.textproto: baseline_ms: must be a finite time above 0 and at most 1e12 ms, got inf|$tmp/inf.textproto
speedup nan|$tmp/sp.textproto: speedup: nan is not baseline_ms / iteration_ms|$tmp/sp.textproto
knobs.degree 0|$tmp/d0.textproto: knobs.degree: must be from 1 to 4096, got 0|$tmp/d0.textproto
knobs.degree 4000 against its slicing|$tmp/d4000.textproto: knobs.degree: 4000 disagrees with schedule.slicing's|$tmp/d4000.textproto
a malformed override|$tmp/ov.textproto: scenario_overrides[0]: expects field.path=value, got 'no-equals-sign'|$tmp/ov.textproto
EOF
is_true "issue 28: no page from an edited plan" test ! -e "$tmp/x.html"

# A name that would end a script element stays text.
sed 's/^name: .*/name: "x<\/script><b>bold"/' "$src/scenarios/foldmoe-gpt-moe-s-4k.textproto" >"$tmp/evil.textproto"
check "report of a scenario named x</script>" 0 "$bin" report "$tmp/evil.textproto" -o "$tmp/evil.html" --quiet
is_true "the name cannot end the page's script" test "$(grep -o '</script>' "$tmp/evil.html" | wc -l)" == 2

# --- The SVG Gantt chart (issue 18 item 3): title, ms ticks, divider, legend, stage lanes.
check "simulate --svg (foldmoe)" 0 "$bin" simulate foldmoe-gpt-moe-s-4k --schedule 1a1m --svg "$tmp/g.svg"
check "simulate --svg (folding)" 0 "$bin" simulate folding-mixtral-8x22b-32k-256 --svg "$tmp/f.svg" --trace "$tmp/f.json"
pycheck "SVG: title, round ms ticks, the forward/backward divider at simulate's forward_ms, legend of the ops drawn, one lane per stage" "$tmp" <<'PY'
import math, re
from report_check import *
tmp = sys.argv[1]
g = open(f"{tmp}/g.svg").read()
sim = moeplan("simulate", "foldmoe-gpt-moe-s-4k", "--schedule", "1a1m")
title = re.search(r'class="title"[^>]*>([^<]*)<', g).group(1)
expect(title == f"foldmoe-gpt-moe-s-4k \u00b7 1a1m \u00b7 iteration {sim['iteration_ms']:.3f} ms", f"title {title!r}")
ticks = [float(t) for t in re.findall(r'class="tick-label"[^>]*>([^<]*)<', g)]
step = ticks[1] - ticks[0]
mantissa = step / 10 ** math.floor(math.log10(step) + 1e-9)
expect(ticks[0] == 0 and any(abs(mantissa - m) < 1e-9 for m in (1, 2, 5)), f"ticks {ticks}")
expect(all(abs(b - a - step) < 1e-9 * step for a, b in zip(ticks, ticks[1:])) and ticks[-1] <= sim["iteration_ms"], f"ticks {ticks}")
divider = re.findall(r'class="phase-divider" data-ms="([^"]*)"', g)
expect(len(divider) == 1 and close(float(divider[0]), sim["forward_ms"]), f"divider {divider} vs forward_ms {sim['forward_ms']}")
legend = re.findall(r'class="legend-item" data-op="([^"]*)"', g)
drawn = sorted(set(re.findall(r'<title>[^\[]*\[(\w+) ', g)))
expect(sorted(legend) == drawn, f"legend {legend} vs ops drawn {drawn}")
f = open(f"{tmp}/f.svg").read()
stages = re.findall(r'<text x="4"[^>]*>stage (\d+)</text>', f)
fsim = moeplan("simulate", "folding-mixtral-8x22b-32k-256")
expect(stages == [str(i) for i in range(fsim["degree"])], f"stage lanes {stages} for pp {fsim['degree']}")
expect("phase-divider" not in f and 'data-phase="backward"' in f, "an interleaved pipeline: no divider, backward lighter")
trace = json.load(open(f"{tmp}/f.json"))
expect(len([e for e in trace["traceEvents"] if e["ph"] == "X"]) == fsim["tasks"], "the folding trace has every task")
done()
PY

summary
