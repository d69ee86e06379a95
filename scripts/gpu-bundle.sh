#!/usr/bin/env bash
# Builds a self-contained bundle that runs moeplan's CUDA backend on a GPU
# machine with no packages and no network (docs/validation.md, "GPU runs"):
#   bin/moeplan       built with CUDA and NCCL, Release, stripped, without MPI
#                     (one GPU: no ranks to bootstrap); it links no CUDA library
#   bin/libmoeplan_cuda.so   the CUDA plug-in (execute and calibrate --backend
#                     cuda), beside bin/moeplan where moeplan looks for it first
#   lib/              the non-CUDA shared libraries both need (from ldd), but not
#                     glibc, libstdc++/libgcc_s (the GPU machine's own are newer)
#                     nor libcuda/libcudart/libcublas/libcublasLt/libnccl, which
#                     the GPU machine provides (its nvidia-* Python wheels)
#   models/ scenarios/ calibration/profiles/   the bundled data (MOEPLAN_DATA_DIR)
#   moeplan           the launcher: finds the CUDA libraries, then runs bin/moeplan
#   run-on-gpu.sh     calibrate, then execute --compare of the bundled scenarios
#
#   scripts/gpu-bundle.sh [BUNDLE_DIR]        (default build-gpu/bundle)
# Environment: MOEPLAN_GPU_BUILD_DIR (default build-gpu), reused when present.
# Fails when the bundle is 64 MiB or more (the GPU machine's transfer limit).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=${MOEPLAN_GPU_BUILD_DIR:-build-gpu}
bundle=${1:-$build/bundle}

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMOEPLAN_WITH_CUDA=ON -DMOEPLAN_WITH_MPI=OFF \
  -DMOEPLAN_BUILD_TESTS=OFF -DMOEPLAN_BUILD_BENCH=OFF -DMOEPLAN_WERROR="${MOEPLAN_WERROR:-OFF}" >/dev/null
cmake --build "$build" -j"${MOEPLAN_JOBS:-2}" --target moeplan moeplan_cuda_plugin

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/calibration"
cp "$build/moeplan" "$bundle/bin/moeplan"
cp "$build/libmoeplan_cuda.so" "$bundle/bin/libmoeplan_cuda.so"
strip --strip-unneeded "$bundle/bin/moeplan" "$bundle/bin/libmoeplan_cuda.so"
# Libraries the GPU machine brings (CUDA) or that must be its own (glibc, the C++ runtime).
provided='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl)\.'
ldd "$build/moeplan" "$build/libmoeplan_cuda.so" | awk '$3 ~ /^\// {print $1, $3}' | sort -u | while read -r name path; do
  if [[ $name =~ $provided ]]; then continue; fi
  cp -L "$path" "$bundle/lib/$name"
  strip --strip-unneeded "$bundle/lib/$name" 2>/dev/null || true
done
cp -r models scenarios "$bundle/"
cp -r calibration/profiles "$bundle/calibration/"

cat >"$bundle/moeplan" <<'LAUNCHER'
#!/usr/bin/env bash
# Runs the bundled moeplan with the GPU machine's CUDA libraries: the lib dirs
# of the nvidia-* Python wheels (cuda_runtime, cublas, nccl), then the usual
# toolkit and driver paths; the bundle's own lib/ comes first.
here=$(cd "$(dirname "$0")" && pwd)
dirs=$here/lib
for py in python3 /opt/torch/.venv/bin/python3; do
  root=$("$py" -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__))' 2>/dev/null) || continue
  for d in "$root"/*/lib "$root"/cu*/lib; do [[ -d $d ]] && dirs=$dirs:$d; done
  break
done
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu; do
  [[ -d $d ]] && dirs=$dirs:$d
done
export LD_LIBRARY_PATH=$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export MOEPLAN_DATA_DIR=${MOEPLAN_DATA_DIR:-$here}
exec "$here/bin/moeplan" "$@"
LAUNCHER

cat >"$bundle/run-on-gpu.sh" <<'RUN'
#!/usr/bin/env bash
# On the GPU machine: calibrate this GPU, then replay the bundled scenarios
# with execute --backend cuda --compare. Every result goes to $OUT (or the
# first argument, or ./results); a step that fails is logged and the next runs.
#   run-on-gpu.sh [OUT_DIR]      SCENARIOS="a b" overrides the scenario list
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${OUT:-$PWD/results}}
mkdir -p "$out"
moeplan=$here/moeplan
scenarios=${SCENARIOS:-"host-flowmoe-small host-foldmoe-small"}
step() {  # step NAME COMMAND...: stdout to NAME.txt, stderr to NAME.log
  local name=$1; shift
  "$@" >"$out/$name.txt" 2>"$out/$name.log"
  local rc=$?
  echo "$name: exit $rc" | tee -a "$out/steps.txt"
  tail -3 "$out/$name.log"
}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1; ldd "$here/bin/moeplan" "$here/bin/libmoeplan_cuda.so"; } >"$out/machine.txt"
step calibrate "$moeplan" calibrate --backend cuda -o "$out/gpu.textproto" --cluster dgx-h100
if "$moeplan" execute --help >/dev/null 2>&1; then
  for s in $scenarios; do
    [[ -e $here/scenarios/$s.textproto ]] || { echo "$s: not in this bundle" | tee -a "$out/steps.txt"; continue; }
    step "execute-$s" "$moeplan" execute "$s" --backend cuda --compare
  done
else
  echo "execute: this moeplan has no execute command (built before the executor landed)" | tee -a "$out/steps.txt"
fi
RUN
chmod +x "$bundle/moeplan" "$bundle/run-on-gpu.sh"

bytes=$(du -sb "$bundle" | cut -f1)
echo "bundle: $bundle, $((bytes / 1024)) KiB ($(ls "$bundle/lib" | wc -l) libraries: $(ls "$bundle/lib" | tr '\n' ' '))"
if ((bytes >= 64 * 1024 * 1024)); then
  echo "gpu-bundle: the bundle is 64 MiB or more; the GPU machine takes at most 64 MiB" >&2
  exit 1
fi
