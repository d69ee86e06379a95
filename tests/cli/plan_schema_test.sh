#!/usr/bin/env bash
# Issue 17 item 1: every bundled scenario's `plan --json` validates against
# docs/plan.schema.json, and its shared keys say what they claim (checked from
# the JSON's own numbers, not from the code that wrote them). Mutated documents
# must fail, so that the schema and the checker are known to bite.
# Usage: plan_schema_test.sh MOEPLAN_BIN SOURCE_DIR [--sample]
# --sample (the sanitizer build's run, docs/reliability.md "CI"): the first
# scenario of each name prefix (foldmoe, fsmoe, flowmoe, folding, host) and
# the joint plan, where the plain build plans every bundled scenario (and the
# golden tier compares them all): the same code paths, a fifth of the plans.
set -u
bin=$1
src=$2
sample=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
declare -A seen_prefix=()
for f in "$src"/scenarios/*.textproto; do
  name=$(basename "$f" .textproto)
  if [[ $sample == --sample ]]; then
    prefix=${name%%-*}
    [[ -n ${seen_prefix[$prefix]:-} ]] && continue
    seen_prefix[$prefix]=1
  fi
  if ! "$bin" plan "$name" --json --threads 2 >"$tmp/$name.json" 2>"$tmp/$name.err"; then
    echo "FAIL plan $name:"; cat "$tmp/$name.err"; fail=1
  fi
done
# The joint search's plan (issue 17 item 3) has the same shape, family joint.
"$bin" plan folding-mixtral-8x22b-128k-1024 --joint --json --threads 2 >"$tmp/joint.json" 2>"$tmp/joint.err" ||
  { echo "FAIL plan --joint:"; cat "$tmp/joint.err"; fail=1; }
python3 "$src/tests/cli/json_schema.py" "$src/docs/plan.schema.json" "$tmp"/*.json || fail=1
python3 - "$src" "$tmp" "$sample" <<'PY' || fail=1
import copy, glob, json, os, subprocess, sys
src, tmp, sample = sys.argv[1], sys.argv[2], sys.argv[3] == "--sample"
bad = []
docs = {os.path.basename(p): json.load(open(p)) for p in glob.glob(f"{tmp}/*.json")}
# Every bundled scenario's plan (sampled: one per name prefix) and the joint
# plan, or the checks below could pass on none.
names = [os.path.basename(p)[: -len(".textproto")] for p in sorted(glob.glob(f"{src}/scenarios/*.textproto"))]
scenarios = len({n.split("-")[0] for n in names}) if sample else len(names)
if scenarios == 0 or len(docs) != scenarios + 1:
    bad.append(f"{len(docs)} plans read for {scenarios} scenarios and the joint plan")
for name, d in docs.items():
    best = d["chosen"]["iteration_ms"]
    c = d["candidates"]
    # The chosen one is the best candidate, the list is best first, and the plan keys agree with it.
    if c[0]["iteration_ms"] != best or d["iteration_ms"] != best or d["schedule"] != d["chosen"]["schedule"]:
        bad.append(f"{name}: chosen {best} is not candidates[0] {c[0]['iteration_ms']} / plan {d['iteration_ms']}")
    if any(a["iteration_ms"] > b["iteration_ms"] for a, b in zip(c, c[1:])):
        bad.append(f"{name}: candidates not best first")
    for x in c:  # gap in percent of the best, by hand
        want = 100 * (x["iteration_ms"] - best) / best
        if abs(x["gap_pct"] - want) > 1e-9 * max(1, want):
            bad.append(f"{name}: gap_pct {x['gap_pct']} != {want}")
    ties = [x for x in c[1:] if x["iteration_ms"] <= best * 1.01]
    if d["candidates_evaluated"] <= len(c) and len(d["explanation"]["ties"]) != len(ties):
        bad.append(f"{name}: {len(d['explanation']['ties'])} ties listed, {len(ties)} candidates within 1%")
    for b in d["baselines"]:
        if abs(b["speedup"] - b["iteration_ms"] / best) > 1e-12 * b["speedup"]:
            bad.append(f"{name}: baseline {b['name']} speedup {b['speedup']}")
    if d["baselines"] and abs(d["speedup"] - d["baselines"][0]["iteration_ms"] / best) > 1e-12 * d["speedup"]:
        bad.append(f"{name}: speedup {d['speedup']} is not the first baseline over the chosen")
print("\n".join(bad))
# Mutations the schema must refuse (one document per family).
family_doc = {}
for name, d in sorted(docs.items()):
    family_doc.setdefault(d["family"], (name, d))
mutations = {
    "no chosen": lambda d: d.pop("chosen"),
    "unexpected top-level key": lambda d: d.__setitem__("bogus", 1),
    "negative gap": lambda d: d["candidates"][0].__setitem__("gap_pct", -1),
    "family's own key missing": lambda d: d.pop({"foldmoe": "a2a_critical_ms", "fsmoe": "closed_form",
                                                 "flowmoe": "bo_trace", "folding": "folded", "joint": "joint"}[d["family"]]),
    "zero iteration": lambda d: d.__setitem__("iteration_ms", 0),
    "unknown knob": lambda d: d["chosen"]["knobs"].__setitem__("degre", 2),
}
refused = 0
for family, (name, d) in family_doc.items():
    for what, mutate in mutations.items():
        m = copy.deepcopy(d)
        mutate(m)
        path = f"{tmp}/mutated.json"
        json.dump(m, open(path, "w"))
        r = subprocess.run([sys.executable, f"{src}/tests/cli/json_schema.py", f"{src}/docs/plan.schema.json", path],
                           capture_output=True, text=True)
        if r.returncode == 0:
            bad.append(f"{family} ({name}): the schema accepts a document with {what}")
        else:
            refused += 1
if len(family_doc) != 5:
    bad.append(f"families covered: {sorted(family_doc)}")
for b in bad:
    print("FAIL", b)
print(f"{len(docs)} plans checked, {refused} mutations refused")
sys.exit(1 if bad else 0)
PY
[[ $fail == 0 ]] && echo "plan schema: ${sample:+one scenario per name prefix, }all pass" || { echo "plan schema: FAILED"; exit 1; }
