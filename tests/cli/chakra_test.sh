#!/usr/bin/env bash
# Chakra execution traces (issue 18 item 1; docs/formats.md, "Chakra execution
# traces"): export-chakra's files decode with protoc against a schema with
# Chakra's field numbers (and with --decode_raw, against those numbers as this
# script writes them from Chakra's et_def.proto); export, import, simulate
# gives simulate's iteration for one scenario of each family; a trace in the
# shape of Chakra's PyTorch converter runs to its time by hand; every bad
# fixture of tests/data/chakra/bad is refused with exit 2 and one line naming
# the file and the reason. Usage: chakra_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"
proto=$src/proto/chakra/et_def.proto

# messages FILE DIR: each length-delimited message of FILE into DIR/N (0 = the GlobalMetadata).
messages() {
  mkdir -p "$2"
  python3 - "$1" "$2" <<'PY'
import sys
data, out = open(sys.argv[1], "rb").read(), sys.argv[2]
at = k = 0
while at < len(data):
    n = shift = 0
    while True:
        b = data[at]; at += 1; n |= (b & 0x7F) << shift; shift += 7
        if b < 0x80:
            break
    open(f"{out}/{k}", "wb").write(data[at:at + n]); at += n; k += 1
PY
}
# raw_attr FILE NAME FIELD VALUE: a `10 { 1: "NAME" FIELD: VALUE }` block in protoc --decode_raw output.
raw_attr() { grep -A1 -x "  1: \"$2\"" "$1" | grep -qx "  $3: $4"; }
# after_line FILE LINE REGEX: the line after LINE (whole) in FILE matches REGEX.
# (A check is one command: a pipe after is_true would run it in a subshell,
# where its pass or fail is never counted.)
after_line() { grep -A1 -x "$2" "$1" | tail -n +2 | grep -qE "$3"; }
# fixture SRC OUT: tests/data/chakra fixture folder -> trace files.
fixture() { python3 "$src/tests/cli/chakra_fixture.py" "$proto" "$1" "$2"; }

check "help export-chakra" 0 "$bin" export-chakra --help
check "help import-chakra" 0 "$bin" import-chakra --help

# --- Field numbers. Chakra's et_def.proto (package ChakraProtoMsg): Node id 1,
# name 2, type 3, ctrl_deps 4, data_deps 5, start_time_micros 6,
# duration_micros 7, attr 10; NodeType COMP_NODE 4, COMM_SEND_NODE 5,
# COMM_RECV_NODE 6, COMM_COLL_NODE 7; AttributeProto name 1, int32_val 7,
# int64_val 9, double_val 3, bool_val 27, string_val 29, string_list 30;
# CollectiveCommType ALL_TO_ALL 6; GlobalMetadata version 1, attr 2.
check "export flowmoe multi-rank" 0 "$bin" export-chakra flowmoe-gpt2-tiny-moe-c1 --set schedule.mode=multi_rank -o "$tmp/flow"
messages "$tmp/flow/trace.3.et" "$tmp/m3"
check "decode GlobalMetadata" 0 protoc --decode=ChakraProtoMsg.GlobalMetadata --proto_path="$src/proto/chakra" et_def.proto <"$tmp/m3/0"
is_true "GlobalMetadata: version and rank" grep -qx 'version: "0.0.4"' "$tmp/out"
protoc --decode_raw <"$tmp/m3/0" >"$tmp/raw"
is_true "GlobalMetadata raw: version is field 1" grep -qx '1: "0.0.4"' "$tmp/raw"
is_true "GlobalMetadata raw: moeplan_rank int64_val 3" raw_attr "$tmp/raw" moeplan_rank 9 3
# An AlltoAll of rank 3's file (FlowMoE's dispatch or combine): type
# COMM_COLL_NODE (7) at field 3, comm_type ALL_TO_ALL (6) as int64_val (9).
coll=
for m in "$tmp"/m3/*; do
  [[ $m == */0 ]] && continue
  protoc --decode_raw <"$m" >"$tmp/raw"
  if grep -qx '3: 7' "$tmp/raw" && raw_attr "$tmp/raw" comm_type 9 6; then coll=$m; break; fi
done
is_true "an ALL_TO_ALL COMM_COLL_NODE in rank 3's file" test -n "$coll"
check "decode Node" 0 protoc --decode=ChakraProtoMsg.Node --proto_path="$src/proto/chakra" et_def.proto <"$coll"
is_true "decoded type" grep -qx 'type: COMM_COLL_NODE' "$tmp/out"
is_true "decoded comm_type" after_line "$tmp/out" '  name: "comm_type"' '^  int64_val: 6$'
# is_cpu_op = false as bool_val (27); decode_raw may read its 9-byte name as a message, so only the value is matched.
is_true "raw: a bool_val (27) attribute, is_cpu_op false" grep -qx '  27: 0' "$tmp/raw"
is_true "raw: comm_size is int64_val (9)" raw_attr "$tmp/raw" comm_size 9 1048576
is_true "raw: pg_name is string_val (29)" after_line "$tmp/raw" '  1: "pg_name"' '^  29: "'
is_true "raw: duration_micros is field 7" grep -qE '^7: [0-9]+$' "$tmp/raw"
is_true "raw: start_time_micros is field 6" grep -qE '^6: [0-9]+$' "$tmp/raw"
# FlowMoE's EP groups of 16 ranks with ep 16: one group, every rank.
is_true "comm_groups.json: one group of the 16 ranks" python3 -c "
import json, sys
g = json.load(open(sys.argv[1]))
sys.exit(0 if g == {'1': list(range(16))} else 1)" "$tmp/flow/comm_groups.json"

# --- Round trip: export, import, simulate: simulate's figures, exactly (the
# trace carries each task's duration as a double beside duration_micros; the
# cost model prices every collective again from comm_type, comm_size and the
# group's ranks, and must give the builder's price to the last bit).
roundtrip() {  # roundtrip NAME COMM SCENARIO CLUSTER PROFILE [ARGS...]
  local name=$1 comm=$2 scenario=$3 cluster=$4 profile=$5
  shift 5
  rm -rf "$tmp/rt"
  check "$name: export" 0 "$bin" export-chakra "$scenario" -o "$tmp/rt" "$@"
  check "$name: simulate" 0 "$bin" simulate "$scenario" --json "$@"
  cp "$tmp/out" "$tmp/simulated.json"
  check "$name: import" 0 "$bin" import-chakra "$tmp/rt" --cluster "$cluster" --profile "$profile" --comm "$comm" --json
  is_true "$name: the same iteration" python3 - "$tmp/simulated.json" "$tmp/out" "$comm" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
keys = ["iteration_ms", "tasks"]
if a["schedule"] not in ("1f1b", "interleaved-1f1b"):  # folding's simulate keys are its own
    keys += ["forward_ms", "backward_ms", "compute_ms", "comm_ms", "exposed_comm_ms", "bubble_ms", "a2a_total_ms",
             "a2a_critical_ms", "attention_flops"]
bad = [f"{k}: {a[k]} vs {b[k]}" for k in keys if a[k] != b[k]]
if sys.argv[3] == "model" and b["priced_by_model"] != b["collectives"] + b["transfers"]:
    bad.append(f"priced_by_model {b['priced_by_model']}")
sys.exit("\n".join(bad) if bad else 0)
PY
}
roundtrip "foldmoe" model foldmoe-gpt-moe-m-16k foldmoe-g5 foldmoe-g5-datasheet --set schedule.mode=multi_rank
roundtrip "fsmoe" model fsmoe-testbed-b-gpt2-xl fsmoe-testbed-b fsmoe-testbed-b --set schedule.mode=multi_rank
roundtrip "flowmoe" model flowmoe-gpt2-tiny-moe-c1 flowmoe-cluster1 flowmoe-cluster1-datasheet --set schedule.mode=multi_rank
roundtrip "flowmoe, stragglers" model flowmoe-gpt2-tiny-moe-c1 flowmoe-cluster1 flowmoe-cluster1-datasheet \
  --set schedule.mode=multi_rank --set schedule.slow_ranks_compute_factor=2
# Issue 29: a graph whose ranks stand for others (folding's pipeline stages,
# a symmetric graph's rank 0) is refused, saying what it stands for: ASTRA-sim
# would wait for files that are not there. No folder is made.
check "folding refused" 2 "$bin" export-chakra folding-mixtral-8x22b-128 -o "$tmp/fold"
expect_err "folding refused" "scenario: folding-mixtral-8x22b-128's pipeline graph has one rank per pipeline stage (4)"
expect_err "folding refused: why" "folding builds no graph of every rank; ASTRA-sim needs a file for every rank"
check "symmetric refused" 2 "$bin" export-chakra foldmoe-gpt-moe-m-16k -o "$tmp/sym"
expect_err "symmetric refused" "foldmoe-gpt-moe-m-16k runs in symmetric mode: its graph holds rank 0 alone, standing for every rank (schedule.mode=multi_rank builds every rank)"
is_true "refused exports made no folder" test ! -e "$tmp/fold" -a ! -e "$tmp/sym"
# A plan: the planned run's graph.
check "plan" 0 "$bin" plan flowmoe-gpt2-tiny-moe-c1 --quiet -o "$tmp/plan.textproto"
roundtrip "plan" model "$tmp/plan.textproto" flowmoe-cluster1 flowmoe-cluster1-datasheet --set schedule.mode=multi_rank

# Same input, same bytes.
rm -rf "$tmp/again"
check "export again" 0 "$bin" export-chakra flowmoe-gpt2-tiny-moe-c1 --set schedule.mode=multi_rank -o "$tmp/again"
is_true "the same bytes" diff -r "$tmp/flow" "$tmp/again"
check "export over its own files" 0 "$bin" export-chakra flowmoe-gpt2-tiny-moe-c1 --set schedule.mode=multi_rank -o "$tmp/again"

# --- Issue 29: comm_size as Chakra's and ASTRA-sim's generators mean it
# (docs/formats.md, "What export-chakra writes"): ASTRA-sim's Ring reads an
# ALL_GATHER's comm_size as each rank's input (Ring.cc lines 75-77:
# final_data_size = data_size x nodes_in_ring), a REDUCE_SCATTER's as its
# input, an ALL_REDUCE's and an ALL_TO_ALL's as the buffer (lines 71-74,
# 79-86). The files are read by tests/cli/chakra_read.py, a reader of the
# wire format written from Chakra's field numbers, not by moeplan. Expected
# sizes by hand from the scenarios' files:
# - FoldMoE foldmoe-gpt-moe-m-16k (gpt-moe-m: d_model 768, 2-byte dtype; seq
#   16,384, micro-batch 1, tp 8 with sequence parallelism): the FFN's
#   all-gather takes each rank's 16,384 / 8 tokens: 2,048 x 768 x 2 =
#   3,145,728 bytes; its reduce-scatter reduces the whole 16,384 x 768 x 2 =
#   25,165,824 (Megatron's sequence parallelism: the all-gather's output and
#   the reduce-scatter's input are one [s, b, h] activation).
# - FSMoE fsmoe-testbed-b-gpt2-xl (d_model 1600, fp32 by the scenario's set;
#   seq 1,024, micro-batch 4, tp 4, sequence parallel): attention's
#   all-gather 4 x 1,024 x 1,600 x 4 / 4 = 6,553,600; its reduce-scatter
#   26,214,400.
# - FlowMoE flowmoe-gpt2-tiny-moe-c1 (d_model 256, fp32, top-2; seq 256,
#   micro-batch 4): a micro-batch dispatches 1,024 tokens x 2 copies x 256 x 4
#   = 2,097,152 bytes, in R chunks (R = the dispatches per layer and
#   micro-batch in the file): 2,097,152 / R each. Its all-reduces over the 16
#   ranks (2 nodes of 8) are checked against `moeplan cost` for that group:
#   the size it prices from comm_size is the one the builder priced.
# - Every all-gather's comm_size x its group's ranks is its partner
#   reduce-scatter's comm_size (FoldMoE's and FSMoE's pairs, by name), and
#   none carries moeplan_comm_bytes (the sizes are whole: comm_size gives the
#   priced size back).
# - Every COMP_NODE carries num_ops and tensor_size (uint64_val), ASTRA-sim's
#   roofline inputs; FlowMoE's "fwd L0 experts m0" by hand: 1,024 rows (the
#   2,048 top-2 slots of the 16 ranks' 1,024 tokens each land, spread evenly,
#   on one expert per rank: 2,048 per micro-batch, 1,024 per chunk) through a
#   256 -> 512 -> 256 GELU FFN: 2 x 1,024 x 256 x 512 x 2 = 536,870,912 FLOPs;
#   bytes (fp32) 4 x [(1,024 x 256 + 256 x 512 + 1,024 x 512) + (1,024 x 512 +
#   512 x 256 + 1,024 x 256)] = 4 x 1,835,008 = 7,340,032.
rm -rf "$tmp/conv"
for s in foldmoe-gpt-moe-m-16k fsmoe-testbed-b-gpt2-xl; do
  check "export $s" 0 "$bin" export-chakra "$s" --set schedule.mode=multi_rank -o "$tmp/conv/$s"
done
is_true "comm_size in ASTRA-sim's convention" python3 - "$src/tests/cli" "$tmp/conv" "$tmp/flow" "$bin" <<'PY'
import collections, glob, json, re, subprocess, sys
sys.path.insert(0, sys.argv[1])
import chakra_read as cr
conv, flow, binary = sys.argv[2:5]
bad, checked = [], collections.Counter()
def collectives(folder):
    groups = json.load(open(f"{folder}/comm_groups.json"))
    for path in sorted(glob.glob(f"{folder}/trace.*.et")):
        for n in cr.nodes(path):
            if n["type"] == "COMM_COLL_NODE":
                a = n["attr"]
                yield n["name"], a["comm_type"][1], a["comm_size"][1], len(groups[a["pg_name"][1]]), a
def expect(what, got, want):
    checked[what] += 1
    if got != want:
        bad.append(f"{what}: {got}, expected {want}")
for folder, ag_name, ag_want, rs_want in [(f"{conv}/foldmoe-gpt-moe-m-16k", "ffn-ag", 3145728, 25165824),
                                          (f"{conv}/fsmoe-testbed-b-gpt2-xl", "attn-ag", 6553600, 26214400)]:
    by_name = {}
    for name, kind, size, members, a in collectives(folder):
        by_name[name] = (kind, size, members)
        if "moeplan_comm_bytes" in a:
            bad.append(f"{folder} {name}: moeplan_comm_bytes beside a whole comm_size")
        if name.endswith(ag_name):
            expect(f"{folder} {ag_name} ALL_GATHER", (kind, size), (2, ag_want))
        if name.endswith(ag_name.replace("-ag", "-rs")):
            expect(f"{folder} REDUCE_SCATTER", (kind, size), (7, rs_want))
    for name, (kind, size, members) in by_name.items():
        if kind == 2:
            partner = by_name.get(name.replace("-ag", "-rs"))
            if partner is None or partner[0] != 7:
                bad.append(f"{name}: no reduce-scatter partner")
            else:
                expect("all-gather x ranks = its reduce-scatter", size * members, partner[1])
dispatch = collections.Counter()
for name, kind, size, members, a in collectives(flow):
    m = re.match(r"fwd L(\d+) dispatch m(\d+)", name)
    if m:
        dispatch[m.group(1)] += 1
chunks = dispatch["0"] // 16  # 16 files, each with the layer's chunks
prices = {}
for name, kind, size, members, a in collectives(flow):
    if " dispatch " in name:
        expect("FlowMoE dispatch ALL_TO_ALL", (kind, size), (6, 2097152 // chunks))
    if kind == 0:
        if size not in prices:
            r = subprocess.run([binary, "cost", "--profile", "flowmoe-cluster1-datasheet", "--cluster", "flowmoe-cluster1",
                                "--op", "allreduce", "--size", str(size), "--group", "16", "--ranks-per-node", "8",
                                "--json"], capture_output=True, text=True)
            prices[size] = json.loads(r.stdout)["time_ms"]
        expect("FlowMoE ALL_REDUCE priced from comm_size", abs(prices[size] - a["moeplan_duration_ms"][1]) <= 1e-12 * prices[size], True)
roofline = 0
for path in [f"{flow}/trace.0.et", f"{conv}/foldmoe-gpt-moe-m-16k/trace.5.et", f"{conv}/fsmoe-testbed-b-gpt2-xl/trace.9.et"]:
    for n in cr.nodes(path):
        if n["type"] == "COMP_NODE":
            a = n["attr"]
            ok = a.get("tensor_size", ("", 0))[0] == "uint64_val" and a["tensor_size"][1] > 0 and a.get("num_ops", ("", 0))[1] > 0
            roofline += 1
            if not ok:
                bad.append(f"{path} {n['name']}: num_ops {a.get('num_ops')} tensor_size {a.get('tensor_size')}")
            if path.startswith(flow) and n["name"] == "fwd L0 experts m0":
                expect("FlowMoE fwd L0 experts m0", (a["num_ops"][1], a["tensor_size"][1]), (536870912, 7340032))
# Each kind was checked, more than once (a loop that checked nothing fails).
for what in ["ALL_GATHER", "REDUCE_SCATTER", "all-gather x ranks", "ALL_TO_ALL", "ALL_REDUCE", "experts m0"]:
    if sum(v for k, v in checked.items() if what in k) < 1:
        bad.append(f"nothing checked: {what}")
if chunks < 1 or roofline < 100:
    bad.append(f"chunks {chunks}, compute nodes {roofline}")
sys.exit("\n".join(bad[:20]) if bad else 0)
PY

# --- Issue 29: 1,024 ranks (past the 256 temporaries of a fixed table before):
# FlowMoE's tiny model with dp = ep x 64 on 128 nodes. Every file, each with
# its GlobalMetadata's rank, and groups of ranks up to 1,023.
rm -rf "$tmp/k"
check "export 1,024 ranks" 0 "$bin" export-chakra flowmoe-gpt2-tiny-moe-c1 --set schedule.mode=multi_rank \
  --set cluster.num_nodes=128 --set parallelism.dp=1024 -o "$tmp/k" --json
is_true "1,024 rank files and comm_groups.json" test "$(find "$tmp/k" -name 'trace.*.et' | wc -l)" -eq 1024 -a -s "$tmp/k/comm_groups.json"
is_true "1,024 ranks: the report" python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if r['ranks'] == 1024 and len(r['files']) == 1025 else 1)" "$tmp/out"
is_true "1,024 ranks: each file is its rank's" python3 - "$src/tests/cli" "$tmp/k" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import chakra_read as cr
wrong = [r for r in range(1024) if cr.metadata(f"{sys.argv[2]}/trace.{r}.et")["attr"]["moeplan_rank"][1] != r]
sys.exit(f"ranks {wrong[:5]}" if wrong else 0)
PY
is_true "no temporary left" test -z "$(find "$tmp/k" -name '.*')"

# --- A trace as Chakra's PyTorch converter writes it (no moeplan attributes).
# tests/data/chakra/good/two-ranks, in microseconds: both ranks compute 100,
# allreduce (rank 0 saw 40, rank 1 30: the slowest), compute 50, rank 0 sends
# 4096 bytes to rank 1 (8), rank 1 computes 20 after it: 100 + 40 + 50 + 8 + 20.
fixture "$src/tests/data/chakra/good/two-ranks" "$tmp/two"
check "two ranks, trace times" 0 "$bin" import-chakra "$tmp/two" --cluster host-2 --profile host-2 --comm trace --json
is_true "two ranks: 0.218 ms" python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if abs(r['iteration_ms'] - 0.218) < 1e-12 and r['tasks'] == 7 and r['collectives'] == 1 and r['transfers'] == 1 else 1)" "$tmp/out"
# With the cost model: the allreduce and the transfer as `moeplan cost` prices them on the placed pair.
check "two ranks, cost model" 0 "$bin" import-chakra "$tmp/two" --cluster host-2 --profile host-2 --json
cp "$tmp/out" "$tmp/two.json"
is_true "two ranks: compute + cost's allreduce and p2p" python3 - "$bin" "$tmp/two.json" <<'PY'
import json, subprocess, sys
def cost(op, size):
    r = subprocess.run([sys.argv[1], "cost", "--profile", "host-2", "--op", op, "--size", str(size), "--group", "2",
                        "--ranks-per-node", "2", "--cluster", "host-2", "--json"], capture_output=True, text=True)
    return json.loads(r.stdout)["time_ms"]
want = 0.1 + cost("allreduce", 1048576) + 0.05 + cost("p2p", 4096) + 0.02
got = json.load(open(sys.argv[2]))["iteration_ms"]
sys.exit(0 if abs(got - want) <= 1e-12 * want else print(got, want) or 1)
PY

# --- Refusals.
refused=0
while IFS='|' read -r name expected; do
  [[ -z $name || $name == \#* ]] && continue
  fixture "$src/tests/data/chakra/bad/$name" "$tmp/bad/$name"
  check "bad $name" 2 "$bin" import-chakra "$tmp/bad/$name" --cluster host-2 --profile host-2 --comm trace
  expect_err "bad $name" "$expected"
  refused=$((refused + 1))
done <"$src/tests/data/chakra/bad/EXPECTED"
# Every fixture folder was listed in EXPECTED, and each was tried.
fixtures=$(find "$src/tests/data/chakra/bad" -mindepth 1 -maxdepth 1 -type d | wc -l)
is_true "every bad fixture refused ($refused of $fixtures)" test "$refused" -eq "$fixtures" -a "$fixtures" -gt 0
check "not a folder" 2 "$bin" import-chakra "$tmp/flow/trace.0.et" --cluster host-2 --profile host-2
expect_err "not a folder" "trace.0.et: is not a directory"
mkdir -p "$tmp/none"
check "no trace" 2 "$bin" import-chakra "$tmp/none" --cluster host-2 --profile host-2
expect_err "no trace" "holds no Chakra trace"
check "more ranks than GPUs" 2 "$bin" import-chakra "$tmp/flow" --cluster host-2 --profile host-2
expect_err "more ranks than GPUs" "holds the files of 16 ranks, but cluster host-2 has 2 GPUs"
check "--comm" 2 "$bin" import-chakra "$tmp/flow" --cluster host-2 --profile host-2 --comm guess
check "export all" 2 "$bin" export-chakra foldmoe-gpt-moe-m-16k --set schedule.mode=multi_rank --schedule all -o "$tmp/all"
expect_err "export all" "--schedule: a trace holds one schedule"
check "export noise" 2 "$bin" export-chakra foldmoe-gpt-moe-m-16k --set schedule.mode=multi_rank --set schedule.compute_jitter_cv=0.1 -o "$tmp/noise"
expect_err "export noise" "schedule.compute_jitter_cv: export-chakra writes the noiseless graph"
check "export folding --degree" 2 "$bin" export-chakra folding-mixtral-8x22b-128 --degree 2 -o "$tmp/deg"
expect_err "export folding --degree" "--degree: a folding scenario's pipeline degree is parallelism.pp"
check "export onto a file" 2 "$bin" export-chakra foldmoe-gpt-moe-m-16k --set schedule.mode=multi_rank -o "$tmp/flow/trace.0.et"
expect_err "export onto a file" "exists and is not a directory"
# A folder with the files of a larger run (ranks 16 and 17 beside FlowMoE's 16).
cp -r "$tmp/flow" "$tmp/larger"
cp "$tmp/flow/trace.0.et" "$tmp/larger/trace.16.et"
cp "$tmp/flow/trace.0.et" "$tmp/larger/trace.17.et"
check "export beside a larger trace" 2 "$bin" export-chakra flowmoe-gpt2-tiny-moe-c1 --set schedule.mode=multi_rank -o "$tmp/larger"
expect_err "export beside a larger trace" "already holds trace.16.et and 1 more .et files, which this export (16 ranks) would not replace"
[[ ! -e $tmp/all && ! -e $tmp/noise ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL a refused export made its folder"; }

# --- Issue 28: import-chakra's work is linear in the trace, and its bounds are
# checked before what they count is held.
synthetic() { python3 "$src/tests/cli/chakra_synthetic.py" "$@"; }
# 50,000 METADATA and INVALID nodes in a chain after node 0 (10 us), and
# 50,000 compute nodes of 1 us after the chain's end: each waits, through the
# chain, for node 0 alone, and the one compute pool runs them one after
# another: 10 + 50,000 x 1 us = 50.01 ms, 50,001 tasks. Walking the chain once
# per dependent took minutes; `timeout` makes that a failure.
synthetic chain "$tmp/chain" 50000 50000
check "a chain of 50,000 METADATA nodes" 0 timeout 60 "$bin" import-chakra "$tmp/chain" --cluster host-2 --profile host-2 \
  --comm trace --json
is_true "the chain: 50,001 tasks in 50.01 ms" python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if r['tasks'] == 50001 and abs(r['iteration_ms'] - 50.01) < 1e-9 else 1)" "$tmp/out"
# 250,000 groups beside the two-rank trace (which uses none of them): read in
# time linear in them, and the trace runs to its 0.218 ms as without them.
fixture "$src/tests/data/chakra/good/two-ranks" "$tmp/groups"
synthetic groups "$tmp/groups/comm_groups.json" 250000
check "250,000 groups" 0 timeout 60 "$bin" import-chakra "$tmp/groups" --cluster host-2 --profile host-2 --comm trace --json
is_true "250,000 groups: 0.218 ms" python3 -c "
import json, sys
sys.exit(0 if abs(json.load(open(sys.argv[1]))['iteration_ms'] - 0.218) < 1e-12 else 1)" "$tmp/out"
synthetic groups "$tmp/groups/comm_groups.json" 262145
check "groups past the bound" 2 "$bin" import-chakra "$tmp/groups" --cluster host-2 --profile host-2 --comm trace
expect_err "groups past the bound" "groups/comm_groups.json: holds 262145 groups, more than 262144, the limit of one import"
# Rank 0 with 1,048,576 nodes, rank 1 with 1,048,577: one past 2,097,152 together,
# refused from the framing alone, before a node is read (the files repeat one message).
synthetic count "$tmp/count" 1048576 1048577
check "nodes past the bound" 2 "$bin" import-chakra "$tmp/count" --cluster host-2 --profile host-2 --comm trace
expect_err "nodes past the bound" "count/trace.1.et: holds 1048577 nodes and the files before it 1048576, more than 2097152, the limit of one import (all its files together)"

# --- Issue 28: export-chakra's folder appears with its files or not at all.
in_tmp() { (cd "$tmp" && "$@"); }
check "export -o -" 2 in_tmp "$bin" export-chakra foldmoe-gpt-moe-m-16k --set schedule.mode=multi_rank -o -
expect_err "export -o -" "-o: export-chakra writes a folder of files, which cannot be standard output ('-')"
is_true "export -o - made no folder named -" test ! -e "$tmp/-"
# Standard output that cannot take the report: exit 1, and neither the folder
# nor its missing parent is left (nor a hidden temporary beside them).
"$bin" export-chakra foldmoe-gpt-moe-m-16k --set schedule.mode=multi_rank -o "$tmp/closed/out" >&- 2>"$tmp/err"
is_true "export, stdout closed: exit 1" test $? -eq 1
is_true "export, stdout closed: no folder" test ! -e "$tmp/closed"
if [[ -w /dev/full ]]; then
  "$bin" export-chakra foldmoe-gpt-moe-m-16k --set schedule.mode=multi_rank -o "$tmp/full" >/dev/full 2>"$tmp/err"
  is_true "export, stdout full: exit 1" test $? -eq 1
  is_true "export, stdout full: no folder" test ! -e "$tmp/full"
fi
is_true "no staged folder left" test -z "$(find "$tmp" -maxdepth 1 -name '.*.tmp*')"
check "export into new nested folders" 0 "$bin" export-chakra foldmoe-gpt-moe-m-16k --set schedule.mode=multi_rank -o "$tmp/new/nested"
is_true "export into new nested folders: the files" test -s "$tmp/new/nested/trace.0.et" -a -s "$tmp/new/nested/comm_groups.json"

summary
