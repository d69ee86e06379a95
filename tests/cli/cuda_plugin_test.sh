#!/usr/bin/env bash
# The CUDA plug-in (include/moeplan/hostrt/cuda_plugin.hpp): the moeplan binary
# (and the Python module) link no CUDA library and start without one; the
# cuda backend of execute, calibrate and validate-hw, asked for where the
# plug-in is not, fails in one line naming it (exit 2); with the plug-in (a
# build with CUDA) but one of its CUDA libraries hidden, in one line naming
# that library (exit 1); with everything there but no GPU, "no CUDA GPU found"
# (exit 1), the plug-in's error caught by the binary.
# Usage: cuda_plugin_test.sh MOEPLAN SOURCE_DIR [--plugin LIBMOEPLAN_CUDA] [--python-module MODULE]
set -u
bin=$1
src=$2
shift 2
plugin=""
module=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --plugin) plugin=$2; shift 2 ;;
    --python-module) module=$2; shift 2 ;;
    *) echo "unknown argument $1"; exit 2 ;;
  esac
done
source "$src/tests/cli/lib.sh"

cuda_libraries='libcudart|libcublas|libcublasLt|libnccl|libcuda\.'
# No CUDA library among what the binary and the module load.
for file in "$bin" $module; do
  linked=$(ldd "$file" | grep -E "$cuda_libraries")
  is_true "$(basename "$file") links no CUDA library: ${linked:-none}" test -z "$linked"
done
# It starts with no library path at all (nothing of CUDA's needed).
check "--version without LD_LIBRARY_PATH" 0 env -u LD_LIBRARY_PATH "$bin" --version
is_true "--version prints the version" grep -q "^moeplan " "$tmp/out"

# MOEPLAN_CUDA_PLUGIN naming no file: the cuda backend of every command that has one, exit 2.
missing=$tmp/nowhere/libmoeplan_cuda.so
want="moeplan: error: --backend: the cuda backend is the plug-in libmoeplan_cuda.so, and MOEPLAN_CUDA_PLUGIN=$missing names no such file"
check "execute --backend cuda, no plug-in" 2 env MOEPLAN_CUDA_PLUGIN="$missing" "$bin" execute host-flowmoe-small --backend cuda
expect_err "execute --backend cuda, no plug-in" "$want"
check "calibrate --backend cuda, no plug-in" 2 env MOEPLAN_CUDA_PLUGIN="$missing" "$bin" calibrate --backend cuda \
  -o "$tmp/gpu.textproto"
expect_err "calibrate --backend cuda, no plug-in" "$want"
is_true "calibrate --backend cuda, no plug-in: no profile" test ! -e "$tmp/gpu.textproto"
check "validate-hw --backend cuda, no plug-in" 2 env MOEPLAN_CUDA_PLUGIN="$missing" "$bin" validate-hw host-flowmoe-small \
  --backend cuda
expect_err "validate-hw --backend cuda, no plug-in" "$want"
# Where no plug-in was built, the search itself: the binary's directory first.
if [[ -z $plugin ]]; then
  check "execute --backend cuda, none built" 2 env -u MOEPLAN_CUDA_PLUGIN "$bin" execute host-flowmoe-small --backend cuda
  expect_err "execute --backend cuda, none built" \
    "which is not installed (looked for $(cd "$(dirname "$bin")" && pwd -P)/libmoeplan_cuda.so, "
  echo "cuda-plugin: no plug-in in this build (MOEPLAN_WITH_CUDA off): the checks with one are skipped"
  summary
  exit
fi

# The plug-in itself: it links the CUDA libraries, and exports one symbol of moeplan's.
needed=$(readelf -d "$plugin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for lib in libcudart libcublas libnccl; do
  is_true "the plug-in needs $lib" grep -q "^$lib\.so" <<<"$needed"
done
exported=$(nm -D --defined-only "$plugin" | awk '{print $3}' | grep -E 'moeplan' | tr '\n' ' ')
is_true "the plug-in exports its entry point alone (got: $exported)" test "$exported" = "moeplan_cuda_plugin_v1 "
# One of its CUDA libraries hidden: a file of the same name that is not a
# library, first on the loader's path (LD_LIBRARY_PATH comes before the
# plug-in's RUNPATH and ldconfig's cache). Exit 1, naming that library.
runpath_kind=$(readelf -d "$plugin" | grep -oE '\((RPATH|RUNPATH)\)' | head -1)
if [[ $runpath_kind == "(RPATH)" ]]; then
  echo "cuda-plugin: the plug-in has a DT_RPATH, which LD_LIBRARY_PATH cannot override: hidden-library checks skipped"
else
  for lib in libcudart libcublas libnccl; do
    soname=$(grep "^$lib\.so" <<<"$needed" | head -1)
    mkdir -p "$tmp/hide-$lib"
    : >"$tmp/hide-$lib/$soname"
    check "execute --backend cuda, $soname hidden" 1 env MOEPLAN_CUDA_PLUGIN="$plugin" \
      LD_LIBRARY_PATH="$tmp/hide-$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin" execute host-flowmoe-small \
      --backend cuda
    expect_err "execute --backend cuda, $soname hidden" "moeplan: error: cannot load the CUDA plug-in $plugin: "
    is_true "execute --backend cuda, $soname hidden: the error names it" grep -qF "$soname" "$tmp/err"
  done
fi
# Everything there: without a GPU the backend's own runtime error crosses from
# the plug-in to the binary (exit 1); with one, a symmetric graph replays on it.
env MOEPLAN_CUDA_PLUGIN="$plugin" "$bin" execute host-flowmoe-small --backend cuda --set schedule.mode=symmetric \
  --set model.num_layers=1 --iterations 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
case $rc in
  1) expect_err "execute --backend cuda, no GPU" "moeplan: error: --backend: no CUDA GPU found (" ;;
  0) pass=$((pass + 1)); echo "cuda-plugin: a GPU is present: execute --backend cuda replayed the graph" ;;
  *) fail=$((fail + 1)); echo "FAIL execute --backend cuda with the plug-in: exit $rc"; cat "$tmp/err" ;;
esac
# Found beside the binary, without the variable (the build puts it there).
if [[ $(dirname "$plugin") -ef $(dirname "$bin") ]]; then
  env -u MOEPLAN_CUDA_PLUGIN "$bin" execute host-flowmoe-small --backend cuda --set schedule.mode=symmetric \
    --set model.num_layers=1 --iterations 1 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  is_true "execute --backend cuda finds the plug-in beside the binary (exit $rc)" \
    test "$rc" = 0 -o "$(grep -c 'no CUDA GPU found' "$tmp/err")" = 1
fi
summary
