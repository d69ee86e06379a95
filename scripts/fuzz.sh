#!/usr/bin/env bash
# Fuzzing (docs/reliability.md): builds the libFuzzer targets of fuzz/ with
# clang under ASan + UBSan, makes their seed corpora from the bundled files and
# runs each target for SECONDS (default 60). Installs nothing: needs clang and
# libclang-rt-14-dev (llvm-symbolizer, from llvm, for readable reports).
# Exits 1 if any target found something, naming the input that shows it.
# Environment: MOEPLAN_FUZZ_BUILD_DIR (default build-fuzz), MOEPLAN_FUZZ_TARGETS
# (default all five), MOEPLAN_WERROR=ON|OFF.
# Under the build folder, fuzz-work/ keeps seeds/ (remade on every run),
# corpus/ (grows from run to run), artifacts/ (inputs that failed) and logs/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
dir=${MOEPLAN_FUZZ_BUILD_DIR:-build-fuzz}
read -r -a targets <<<"${MOEPLAN_FUZZ_TARGETS:-fuzz_text_format fuzz_calibration fuzz_json fuzz_set fuzz_chakra fuzz_hf_config fuzz_plan}"

# Only the libraries the targets link are built: no planners, CLI, tests or benchmarks.
generator=()
[[ -f $dir/CMakeCache.txt ]] || generator=(-G Ninja)
cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_CXX_COMPILER=clang++ -DMOEPLAN_FUZZ=ON -DMOEPLAN_WITH_CUDA=OFF \
  -DMOEPLAN_BUILD_TESTS=OFF -DMOEPLAN_BUILD_BENCH=OFF -DMOEPLAN_WERROR="${MOEPLAN_WERROR:-OFF}" >/dev/null
cmake --build "$dir" -j"$(nproc)" --target "${targets[@]}"

work=$dir/fuzz-work
rm -rf "$work/seeds"
mkdir -p "$work"/{seeds,corpus,artifacts,logs}

# seed TARGET PREFIX FILE...: each file, after the prefix bytes (a printf format), as one seed.
seed() {
  local target=$1 prefix=$2 file
  shift 2
  mkdir -p "$work/seeds/$target"
  for file in "$@"; do
    [[ -f $file ]] || continue
    { printf "$prefix"; cat "$file"; } >"$work/seeds/$target/${file//\//_}"
  done
}

# Text format: the first byte picks the kind (fuzz/fuzz_text_format.cpp).
seed fuzz_text_format 0 models/*.textproto tests/data/bad/models/* tests/data/bad/misc/*
seed fuzz_text_format 1 scenarios/clusters/*.textproto tests/data/bad/clusters/*
seed fuzz_text_format 2 calibration/profiles/*.textproto tests/data/bad/profiles/*
seed fuzz_text_format 3 scenarios/*.textproto tests/data/bad/scenarios/*
seed fuzz_text_format 4 scenarios/sweeps/*.textproto tests/data/sweeps/*.textproto
# Calibration: the first byte holds the options (fuzz/fuzz_calibration.cpp); 0 CSV, \x01 nccl-tests, \x03 in-place.
seed fuzz_calibration 0 tests/data/bad/fit/*.csv
seed fuzz_calibration '\x01' tests/data/calibration/*.log tests/data/bad/fit/*.log
seed fuzz_calibration '\x03' tests/data/calibration/*.log
# Plan files: one plan per family, as `moeplan plan -o` writes them (made here
# by the build's own binary when there is one; the hand-made seeds otherwise),
# after '0' (the plan alone) and '1' (the planned run).
mkdir -p "$work/seeds/fuzz_plan" "$work/plans"
if [[ -x ${MOEPLAN_BIN:-build/moeplan} ]]; then
  for scenario in foldmoe-gpt-moe-s-4k fsmoe-testbed-b-gpt2-xl flowmoe-gpt2-tiny-moe-c1 folding-qwen2-57b-a14b-64; do
    "${MOEPLAN_BIN:-build/moeplan}" plan "$scenario" -o "$work/plans/$scenario.textproto" --quiet >/dev/null 2>&1 || continue
    seed fuzz_plan 0 "$work/plans/$scenario.textproto"
    seed fuzz_plan 1 "$work/plans/$scenario.textproto"
  done
fi
# Hugging Face configs (import-hf): the public models' config.json files.
seed fuzz_hf_config '' tests/data/hf/*.json
# --set: the `set:` lines of bundled scenarios and the values of sweep axes, as overrides.
mkdir -p "$work/seeds/fuzz_set"
for file in scenarios/*.textproto; do
  lines=$(sed -nE 's/^set: "([^"]*)".*/\1/p' "$file")
  [[ -z $lines ]] || printf '3%s\n' "$lines" >"$work/seeds/fuzz_set/${file//\//_}"
done
for file in scenarios/sweeps/*.textproto tests/data/sweeps/*.textproto; do
  lines=$(grep -oE 'field: "[^"]*" values: "[^"]*"' "$file" | sed -E 's/field: "([^"]*)" values: "([^"]*)"/\1=\2/')
  [[ -z $lines ]] || printf '1%s\n' "$lines" >"$work/seeds/fuzz_set/${file//\//_}"
done
# Chakra traces: every fixture folder of tests/data/chakra made into trace
# files (tests/cli/chakra_fixture.py, python3 and protoc), its ranks joined by
# "=RANK=", after '0' (times from the trace) and '1' (the cost model).
mkdir -p "$work/seeds/fuzz_chakra"
for fixture in tests/data/chakra/good/*/ tests/data/chakra/bad/*/; do
  name=$(basename "$fixture")
  rm -rf "$work/chakra/$name"
  python3 tests/cli/chakra_fixture.py proto/chakra/et_def.proto "$fixture" "$work/chakra/$name"
  for selector in 0 1; do
    {
      printf '%s' "$selector"
      separator=
      for file in $(find "$work/chakra/$name" -name 'trace.*.et' | sort -V); do
        printf '%s' "$separator"
        cat "$file"
        separator='=RANK='
      done
    } >"$work/seeds/fuzz_chakra/$name.$selector"
  done
done
# Hand-made seeds (complete inputs, selector byte included).
for target in "${targets[@]}"; do
  mkdir -p "$work/seeds/$target"
  [[ ! -d fuzz/seeds/${target#fuzz_} ]] || cp fuzz/seeds/"${target#fuzz_}"/* "$work/seeds/$target/"
done

# The text-format dictionary: every field and enum value name of the schema, and the syntax around them.
proto=src/io/proto/moeplan.proto
{
  printf '"%s"\n' '{' '}' ':' '\"' '#' '# proto-message: ' '=' '.' 'true' 'false' 'nan' 'inf' '-' '1e18' '1e308' \
    '9223372036854775807' '-9223372036854775808' '4611686018427387904' '-4611686018427387905' '2147483648'
  sed -nE 's/^ *(optional +|repeated +)?[A-Za-z_.][A-Za-z0-9_.]* +([a-z_][a-z0-9_]*) *= *[0-9]+.*/"\2"/p' "$proto"
  sed -nE 's/^ *([A-Z][A-Z0-9_]*) *= *[0-9]+;.*/"\1"/p' "$proto"
  sed -nE 's/^message +([A-Za-z]+).*/"\1"/p' "$proto"
} | sort -u >"$work/textproto.dict"

dict_of() {
  case $1 in
    fuzz_text_format | fuzz_set | fuzz_plan) echo "$work/textproto.dict" ;;
    fuzz_calibration) echo fuzz/calibration.dict ;;
    fuzz_json | fuzz_hf_config) echo fuzz/json.dict ;;
    fuzz_chakra) echo fuzz/chakra.dict ;;
  esac
}

# Leaks are findings; a sanitizer report stops the run (the build has -fno-sanitize-recover).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:symbolize=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if ! command -v llvm-symbolizer >/dev/null; then
  for symbolizer in /usr/lib/llvm-*/bin/llvm-symbolizer; do
    [[ ! -x $symbolizer ]] || export ASAN_SYMBOLIZER_PATH=$symbolizer
  done
fi
failed=()
for target in "${targets[@]}"; do
  log=$work/logs/$target.log
  mkdir -p "$work/corpus/$target" "$work/artifacts/$target"
  echo "moeplan fuzz: $target for ${seconds}s (log: $log)"
  if "$dir/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -dict="$(dict_of "$target")" -artifact_prefix="$work/artifacts/$target/" \
    "$work/corpus/$target" "$work/seeds/$target" >"$log" 2>&1; then
    grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" || true
  else
    failed+=("$target")
    tail -n 60 "$log"
    grep -E 'Test unit written to|artifact_prefix' "$log" | sed "s/^/moeplan fuzz: $target: /" || true
  fi
done
if ((${#failed[@]})); then
  echo "moeplan fuzz: findings in ${failed[*]}; the failing inputs are under $work/artifacts/ (rerun one with" \
    "$dir/fuzz/TARGET INPUT)" >&2
  exit 1
fi
echo "moeplan fuzz: no findings in ${targets[*]}"
