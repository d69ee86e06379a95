#!/usr/bin/env bash
# The contract every command keeps (docs/cli.md; docs/reliability.md): exit
# codes and one-line errors for usage mistakes, --help and --version; inputs
# (regular files of at most 64 MiB, UTF-8 strings, long values cut in errors);
# outputs (-o through links, FIFOs and devices, -o -, stdout that cannot be
# written, a command's files all or none, SIGTERM at commit).
# Usage: general_test.sh MOEPLAN_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
source "$src/tests/cli/lib.sh"

# --version, --help and usage errors.
check version 0 "$bin" --version
grep -qE '^moeplan [0-9]+\.[0-9]+\.[0-9]+$' "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL version text"; }
check help 0 "$bin" --help
for cmd in validate cost fit datasheet-profile simulate plan sweep mappings bench calibrate; do
  check "help $cmd" 0 "$bin" "$cmd" --help
  grep -q "Usage" "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL help $cmd text"; }
done
check "no command" 2 "$bin"
expect_err "no command" "moeplan: error: no command given (commands: validate, cost, fit, datasheet-profile, simulate, plan, sweep, mappings, bench, calibrate, execute, validate-hw"
# Issue 14 item 8d: it said "A subcommand is required".
check "unknown command" 2 "$bin" frobnicate
expect_err "unknown command" "moeplan: error: unknown command 'frobnicate' (commands: validate, cost, fit, datasheet-profile, simulate, plan, sweep, mappings, bench, calibrate, execute, validate-hw"
check "unknown command after an option" 2 "$bin" frobnicate --json
expect_err "unknown command after an option" "moeplan: error: unknown command 'frobnicate' (commands: validate,"
check "unknown flag" 2 "$bin" validate --frob models/gpt-moe-m.textproto
expect_err "unknown flag" "moeplan: error:"

# Issue 13, item 9: zero and negative sizes, counts and degrees are errors everywhere, never "default".
# Options say their range (issue 28: io/number_options.hpp, at least 1 for
# these); scenario fields say they must be positive (model/validate.cpp).
while IFS='|' read -r name want args; do
  read -r -a argv <<<"$args"
  check "$name" 2 "$bin" "${argv[@]}"
  expect_err "$name" "$want"
done <<EOF
simulate --degree 0|--degree: must be at least 1, got 0|simulate foldmoe-gpt-moe-m-16k --degree 0
simulate --degree -2|--degree: must be at least 1, got -2|simulate foldmoe-gpt-moe-m-16k --degree -2
plan --threads 0|--threads: must be at least 1 thread, got 0|plan foldmoe-gpt-moe-m-16k --threads 0
sweep --threads 0|--threads: must be at least 1 thread, got 0|sweep $src/tests/data/sweeps/small-fsmoe.textproto --threads 0
cost --group 0|--group: must be at least 1 rank, got 0|cost --profile foldmoe-g5-datasheet --op a2a --link inter --size 1e6 --group 0
cost --ranks-per-node 0|--ranks-per-node: must be at least 1 rank, got 0|cost --profile foldmoe-g5-datasheet --op a2a --link inter --size 1e6 --ranks-per-node 0
mappings --gpus-per-node 0|--gpus-per-node: must be at least 1 GPU, got 0|mappings --world 16 --gpus-per-node 0
mappings --tp 0|--tp: must be at least 1, got 0|mappings --world 16 --tp 0
fit --group -3|--group: must be at least 1 rank, got -3|fit $src/tests/data/calibration/all_gather_perf.log -o $tmp/f.textproto --group -3
set schedule.degree=0|must be positive, got|simulate foldmoe-gpt-moe-m-16k --set schedule.degree=0
set schedule.slicing=-5|must be positive, got|simulate foldmoe-gpt-moe-m-16k --set schedule.slicing=-5,16389
EOF

# Issue 14, item 8e: a directory given as a file says so (it said "no such file").
for cmd in validate simulate; do
  check "$cmd of a directory" 2 "$bin" "$cmd" "$tmp"
  expect_err "$cmd of a directory" "is a directory"
done

# Issue 14, item 4: inputs are regular files of at most 64 MiB. /dev/zero was
# read until std::bad_alloc; a FIFO with no writer blocked fit for ever (the
# timeout turns a hang into exit 124, which fails the check).
mkdir -p "$tmp/i4" && mkfifo "$tmp/i4/fifo"
check "fit /dev/zero" 2 timeout 20 "$bin" fit /dev/zero -o "$tmp/i4/p.textproto" --cluster dgx-h100
expect_err "fit /dev/zero" "/dev/zero: is a character device; moeplan reads its inputs from regular files only"
check "fit a FIFO" 2 timeout 20 "$bin" fit "$tmp/i4/fifo" -o "$tmp/i4/p.textproto" --cluster dgx-h100
expect_err "fit a FIFO" "fifo: is a FIFO"
check "validate a FIFO" 2 timeout 20 "$bin" validate "$tmp/i4/fifo"
expect_err "validate a FIFO" "fifo: is a FIFO"
check "simulate a FIFO" 2 timeout 20 "$bin" simulate "$tmp/i4/fifo"
expect_err "simulate a FIFO" "fifo: is a FIFO"
# A sparse file one byte past 64 MiB (64 x 2^20 + 1), and one of exactly 64 MiB
# which is read (and then refused for what it holds, not for its size).
truncate -s $((64 * 1048576 + 1)) "$tmp/i4/big.csv"
check "fit of a file past 64 MiB" 2 "$bin" fit "$tmp/i4/big.csv" -o "$tmp/i4/p.textproto" --cluster dgx-h100
expect_err "fit of a file past 64 MiB" "big.csv: is larger than 64 MiB, the limit on an input file"
truncate -s $((64 * 1048576)) "$tmp/i4/limit.textproto"
check "validate of a 64 MiB file" 2 "$bin" validate "$tmp/i4/limit.textproto"
grep -q "larger than" "$tmp/err" && { fail=$((fail + 1)); echo "FAIL 64 MiB refused for its size"; } || pass=$((pass + 1))
rm -f "$tmp/i4/big.csv" "$tmp/i4/limit.textproto"

# Issue 14, item 7: strings that are not UTF-8 are input errors naming the
# field, and --json never carries raw invalid bytes (a path from the command
# line is written with U+FFFD for each bad byte).
utf=$tmp/utf8
mkdir -p "$utf"
sed 's/^name: .*/name: "\xff\xfe"/' "$src/scenarios/foldmoe-gpt-moe-m-16k.textproto" >"$utf/bad-name.textproto"
check "name not UTF-8" 2 "$bin" plan "$utf/bad-name.textproto" --json
expect_err "name not UTF-8" "bad-name.textproto:8:1: name: not valid UTF-8 (byte 0xff at offset 0)"
check "--set name not UTF-8" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set "name=$(printf 'a\xfe')" --json
# Every option's text is checked for UTF-8 before the command runs (issue 28): the offset is in "name=a\xfe".
expect_err "--set name not UTF-8" "--set: not valid UTF-8 (byte 0xfe at offset 6)"
check "fit --name not UTF-8" 2 "$bin" fit "$src/tests/data/calibration/all_gather_perf.log" -o "$utf/f.textproto" --name "$(printf '\xc0\xaf')"
expect_err "fit --name not UTF-8" "--name: not valid UTF-8 (byte 0xc0 at offset 0)"
odd="$utf/$(printf 'odd\xff').textproto"
cp "$src/scenarios/foldmoe-gpt-moe-m-16k.textproto" "$odd"
check "validate --json of an odd path" 0 "$bin" validate "$odd" --json
pycheck "validate --json of an odd path is UTF-8 JSON" "$tmp/out" <<'PY'
from cli_check import *
raw = open(sys.argv[1], "rb").read()
doc = json.loads(raw.decode("utf-8"))  # strict: raw FF would raise here
expect(doc[0]["file"].endswith("odd\ufffd.textproto"), f"file: {doc[0]['file']!r}")
done()
PY

# Issue 14, item 8g: a huge value is cut to 60 bytes and its length; the error
# stays one short line. A command-line argument is at most 128 KiB (Linux's
# MAX_ARG_STRLEN): 100 kB there, 1 MB in files.
mkdir -p "$tmp/i8"
short_err() {  # short_err NAME: the last command's stderr is one line under 300 bytes, with the cut value's length
  local lines bytes
  lines=$(wc -l <"$tmp/err")
  bytes=$(wc -c <"$tmp/err")
  if [[ $lines == 1 && $bytes -lt 300 ]] && grep -q "\.\.\. ([0-9]* bytes)" "$tmp/err"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL $1: stderr of $lines lines, $bytes bytes:"; head -c 400 "$tmp/err"; echo; fi
}
big=$(head -c 100000 /dev/zero | tr '\0' 7)
check "--set of 100 kB" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set "model.d_model=$big"
short_err "--set of 100 kB"
expect_err "--set of 100 kB" "--set: model.d_model: expected an integer, got '7777777777"
check "--set of a 100 kB field" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set "model.$big=1"
short_err "--set of a 100 kB field"
check "--set of a 100 kB enum" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set "model.moe.expert_type=$big"
short_err "--set of a 100 kB enum"
check "--set without = of 100 kB" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --set "$big"
short_err "--set without = of 100 kB"
check "--schedule of 100 kB" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule "$big"
short_err "--schedule of 100 kB"
check "--degree of 100 kB" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --degree "$big"
short_err "--degree of 100 kB"
check "command of 100 kB" 2 "$bin" "$big"
short_err "command of 100 kB"
check "scenario of 100 kB" 2 "$bin" simulate "$big"
short_err "scenario of 100 kB"
huge=$(head -c 1000000 /dev/zero | tr '\0' 7)
# (Bash substitutions: sed could not take 1 MB as an argument.)
text=$(<"$src/scenarios/foldmoe-gpt-moe-m-16k.textproto")
printf '%s\n' "${text/name: \"1a1m-uniform\"/name: \"$huge\"}" >"$tmp/i8/huge-schedule.textproto"
check "schedule.name of 1 MB in a file" 2 "$bin" simulate "$tmp/i8/huge-schedule.textproto"
short_err "schedule.name of 1 MB in a file"
expect_err "schedule.name of 1 MB in a file" "huge-schedule.textproto:27:3: schedule.name: unknown schedule '7777"
printf '%s\n' "${text/model_ref: \"gpt-moe-m\"/model_ref: \"$huge\"}" >"$tmp/i8/huge-ref.textproto"
check "model_ref of 1 MB in a file" 2 "$bin" simulate "$tmp/i8/huge-ref.textproto"
short_err "model_ref of 1 MB in a file"
cat >"$tmp/i8/huge-sweep.textproto" <<SWEEP
# proto-message: Sweep
name: "huge-axis"
scenarios: "fsmoe-table4-testbed-b"
axes { field: "model.d_model" values: "$huge" }
SWEEP
check "sweep axis value of 1 MB" 2 "$bin" sweep "$tmp/i8/huge-sweep.textproto" -o "$tmp/i8/s.csv"
short_err "sweep axis value of 1 MB"

# Issue 14, items 2, 5, 6 and 7: outputs (docs/cli.md, "Output files"; docs/reliability.md, "Outputs").
out=$tmp/outputs
mkdir -p "$out"
no_temporaries() {  # no_temporaries NAME FOLDER...: no staged temporary (.NAME.tmpPID.N) is left behind
  local name=$1 left
  shift
  left=$(find "$@" -name '*.tmp*' 2>/dev/null)
  [[ -z $left ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL $name: left $left"; }
}
# The reference: the plan as a fresh regular file.
check "plan -o a new file" 0 "$bin" plan foldmoe-gpt-moe-m-16k -o "$out/ref.textproto"

# Item 2: -o writes through a symlink (the link stays, its target in another
# folder gets the content), keeps a file's mode, writes a FIFO or a device in
# place and "-" to stdout.
mkdir -p "$out/real" "$out/links"
echo old >"$out/real/plan.textproto"
ln -s ../real/plan.textproto "$out/links/plan.textproto"
check "-o symlink" 0 "$bin" plan foldmoe-gpt-moe-m-16k -o "$out/links/plan.textproto"
is_true "-o symlink stays a link" test -L "$out/links/plan.textproto"
is_true "-o symlink target has the plan" cmp -s "$out/real/plan.textproto" "$out/ref.textproto"
no_temporaries "-o symlink" "$out/real" "$out/links"
echo old >"$out/private.textproto"
chmod 600 "$out/private.textproto"
check "-o 0600 file" 0 "$bin" plan foldmoe-gpt-moe-m-16k -o "$out/private.textproto"
is_true "-o keeps mode 600" test "$(stat -c %a "$out/private.textproto")" = 600
is_true "-o 0600 file has the plan" cmp -s "$out/private.textproto" "$out/ref.textproto"
mkfifo "$out/fifo"
cat "$out/fifo" >"$out/fifo.read" &
reader=$!
check "-o FIFO" 0 "$bin" plan foldmoe-gpt-moe-m-16k -o "$out/fifo"
is_true "-o FIFO stays a FIFO" test -p "$out/fifo"
# The old code replaced the FIFO: its reader would wait forever.
for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$reader" 2>/dev/null || break; sleep 0.5; done
kill "$reader" 2>/dev/null
wait "$reader" 2>/dev/null
is_true "-o FIFO reader got the plan" cmp -s "$out/fifo.read" "$out/ref.textproto"
# Devices: copies of /dev/null (1,3) and /dev/full (1,7), never the real ones
# (the old code replaced the device node). mknod needs root, as CI runs.
if mknod "$out/null" c 1 3 2>/dev/null && mknod "$out/full" c 1 7 2>/dev/null && echo >"$out/null" 2>/dev/null; then
  check "-o null device" 0 "$bin" plan foldmoe-gpt-moe-m-16k -o "$out/null"
  is_true "-o null device stays a device" test -c "$out/null"
  check "-o full device" 1 "$bin" plan foldmoe-gpt-moe-m-16k -o "$out/full"
  expect_err "-o full device" "full: cannot write: No space left on device"
  is_true "-o full device stays a device" test -c "$out/full"
else
  echo "note: mknod not permitted, device outputs not tested"
fi
check "-o - is stdout" 0 "$bin" plan foldmoe-gpt-moe-m-16k -o -
is_true "-o - prints the plan only" cmp -s "$tmp/out" "$out/ref.textproto"
is_true "-o - makes no file named -" test ! -e -
check "sweep -o -" 0 "$bin" sweep "$src/tests/data/sweeps/small-fsmoe.textproto" -o -
is_true "sweep -o - prints the CSV" grep -q '^point,scenario' "$tmp/out"
check "datasheet-profile -o -" 0 "$bin" datasheet-profile dgx-h100 -o -
is_true "datasheet-profile -o - prints the profile" grep -q '^# proto-message: CostProfile' "$tmp/out"
check "simulate --trace -" 0 "$bin" simulate foldmoe-gpt-moe-m-16k --trace -
pycheck "simulate --trace - prints the trace only" "$tmp/out" <<'PY'
from cli_check import *
doc = load(sys.argv[1])
expect("traceEvents" in doc, f"not a trace: {list(doc)[:5]}")
done()
PY
check "plan -o - --json" 2 "$bin" plan foldmoe-gpt-moe-m-16k -o - --json
expect_err "plan -o - --json" "-o -: standard output would carry both"
check "simulate --trace - --svg -" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --trace - --svg -
expect_err "simulate --trace - --svg -" "--svg -: standard output already carries the --trace output"
check "simulate --schedule all --trace -" 2 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule all --trace -
expect_err "simulate --schedule all --trace -" "--trace -: several schedules write one file each"
check "fit -o - without --name" 2 "$bin" fit "$src/tests/data/calibration/all_gather_perf.log" -o -
expect_err "fit -o - without --name" "-o -: give the profile a --name"
check "fit -o -" 0 "$bin" fit "$src/tests/data/calibration/all_gather_perf.log" -o - --name ag
is_true "fit -o - prints the profile" grep -q '^name: "ag"' "$tmp/out"

# Item 5: stdout that cannot be written is a failure (exit 1, one line).
"$bin" plan foldmoe-gpt-moe-m-16k --json >/dev/full 2>"$tmp/err"
is_true "--json > /dev/full exits 1" test $? = 1
expect_err "--json > /dev/full" "standard output: cannot write: No space left on device"
"$bin" validate foldmoe-gpt-moe-m-16k >&- 2>"$tmp/err"
is_true "closed stdout exits 1" test $? = 1
expect_err "closed stdout" "standard output: cannot write"
"$bin" --help >/dev/full 2>"$tmp/err"
is_true "--help > /dev/full exits 1" test $? = 1
# stdout fails: the files of the command do not appear either.
"$bin" plan foldmoe-gpt-moe-m-16k -o "$out/unseen.textproto" >/dev/full 2>/dev/null
is_true "stdout fails: no -o file" test ! -e "$out/unseen.textproto"
no_temporaries "stdout fails" "$out"

# Item 6: a command's files appear together or not at all.
mkdir -p "$out/all"
mkdir "$out/all/t.1a1m.json"  # the fourth schedule's trace cannot be written
check "simulate all, fourth trace fails" 1 "$bin" simulate foldmoe-gpt-moe-m-16k --schedule all --trace "$out/all/t.json" --svg "$out/all/t.svg"
expect_err "simulate all, fourth trace fails" "t.1a1m.json: cannot write the output file: Is a directory"
is_true "simulate all, fourth trace fails: no file" test "$(ls "$out/all")" = t.1a1m.json
no_temporaries "simulate all, fourth trace fails" "$out/all"
mkdir -p "$out/half"
check "--svg unwritable" 1 "$bin" simulate foldmoe-gpt-moe-m-16k --trace "$out/half/t.json" --svg "$out/half/missing/t.svg"
expect_err "--svg unwritable" "missing/t.svg: cannot create the output file: No such file or directory"
is_true "--svg unwritable: no trace" test ! -e "$out/half/t.json"
no_temporaries "--svg unwritable" "$out/half"
if [[ $(id -u) != 0 ]]; then  # root writes into a read-only folder anyway
  mkdir -p "$out/ro"
  chmod 555 "$out/ro"
  check "--svg in a read-only folder" 1 "$bin" simulate foldmoe-gpt-moe-m-16k --trace "$out/half/t.json" --svg "$out/ro/t.svg"
  is_true "--svg in a read-only folder: no trace" test ! -e "$out/half/t.json"
  chmod 755 "$out/ro"
fi
# SIGTERM while the trace is staged: the --svg FIFO has no reader, so the
# command waits at commit with the trace's temporary on disk; the signal must
# remove it and end the command with SIGTERM's status (128 + 15).
mkdir -p "$out/sig"
mkfifo "$out/sig/t.svg"
"$bin" simulate foldmoe-gpt-moe-m-16k --trace "$out/sig/t.json" --svg "$out/sig/t.svg" >/dev/null 2>&1 &
job=$!
for _ in $(seq 100); do
  [[ -n $(find "$out/sig" -name '*.tmp*') ]] && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
kill -TERM "$job" 2>/dev/null
wait "$job"
is_true "SIGTERM at commit exits 143" test $? = 143
no_temporaries "SIGTERM at commit" "$out/sig"
is_true "SIGTERM at commit: no trace" test ! -e "$out/sig/t.json"
is_true "SIGTERM at commit: FIFO kept" test -p "$out/sig/t.svg"
# SIGTERM during a long plan: no file, no temporary, a failing status.
mkdir -p "$out/long"
# (2^17 GPUs: about 10 s; the 1,024-GPU plan this used took under a second
# once mappings were priced from their first groups.)
"$bin" plan folding-qwen2-57b-a14b-64 --set cluster.num_nodes=16384 --set workload.global_batch_size=524288 \
  -o "$out/long/p.textproto" >/dev/null 2>&1 &
job=$!
sleep 1
kill -TERM "$job" 2>/dev/null
wait "$job"
is_true "SIGTERM during plan fails" test $? != 0
is_true "SIGTERM during plan: no plan" test ! -e "$out/long/p.textproto"
no_temporaries "SIGTERM during plan" "$out/long"

# Issue 28: sweep -o and capacity -o interrupted by SIGINT, SIGTERM or SIGHUP,
# early or late, leave the old file or the complete new one (the same bytes as
# an uninterrupted run) and no temporary. A signal before the rename ends the
# run with the signal's status and the old file; one during or after it (the
# commit defers it until the outputs are in place) with that status and the
# new file; a run the signal missed exits 0 with the new file.
# (A background job of a script starts with SIGINT ignored: env gives it the
# default action back, as a terminal's job would have.)
mkdir -p "$out/intr"
sweep_args=(sweep "$src/tests/data/sweeps/small-fsmoe.textproto" --threads 1 --quiet)
capacity_args=(capacity gpt-moe-s --cluster dgx-h100 --gpus 8..32 --global-batch 64 --threads 1 --quiet)
"$bin" "${sweep_args[@]}" -o "$out/intr/sweep.ref" >/dev/null 2>&1
"$bin" "${capacity_args[@]}" -o "$out/intr/capacity.ref" >/dev/null 2>&1
interrupted=0 completed=0
for signal in INT:130 TERM:143 HUP:129; do
  for delay in 0.02 0.2 1; do
    for what in sweep capacity; do
      echo old >"$out/intr/$what.csv"
      args_name="${what}_args[@]"
      env --default-signal=INT "$bin" "${!args_name}" -o "$out/intr/$what.csv" >/dev/null 2>&1 &
      job=$!
      sleep "$delay"
      kill -"${signal%%:*}" "$job" 2>/dev/null
      wait "$job" 2>/dev/null
      rc=$?
      if [[ $rc == 0 || $rc == "${signal##*:}" ]] && cmp -s "$out/intr/$what.csv" "$out/intr/$what.ref"; then
        completed=$((completed + 1)); pass=$((pass + 1))
      elif [[ $rc == "${signal##*:}" && $(cat "$out/intr/$what.csv") == old ]]; then
        interrupted=$((interrupted + 1)); pass=$((pass + 1))
      else
        fail=$((fail + 1)); echo "FAIL $what -o, SIG${signal%%:*} after ${delay} s: exit $rc, file $(head -c 40 "$out/intr/$what.csv")"
      fi
      no_temporaries "$what -o, SIG${signal%%:*} after ${delay} s" "$out/intr"
    done
  done
done
# Both outcomes happened (an interrupt that always came too late would test nothing).
is_true "interrupted runs: $interrupted, completed: $completed" test "$interrupted" -gt 0

summary
