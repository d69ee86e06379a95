#!/bin/bash
# On a GPU machine, from the repository root, with scripts/gpu-bundle.sh's bundle in $BUNDLE (default
# .gpu/bundle): calibrate, execute --compare of the four scenarios here, the PyTorch probe.
# Results to $OUT (default /tmp/out). NO_CAL=1 and NO_TORCH=1 skip those steps.
set -u
B=${BUNDLE:-.gpu/bundle}; D=calibration/gpu-runs/h200-2026-11-26; O=${OUT:-/tmp/out}; mkdir -p "$O"
exec >"$O/run.log" 2>&1
echo "== machine $(date -u)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
nvidia-smi | head -5
nvcc --version 2>&1 | tail -2
python3 -c "import torch;print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cublas/nccl', torch.cuda.nccl.version())" 2>&1
echo "== ldd (missing)"; ldd $B/bin/moeplan | grep -i "not found"; (source /dev/null; bash -c "LD_LIBRARY_PATH= ldd $B/bin/libmoeplan_cuda.so" | grep -iE "not found|cuda|cublas|nccl")
$B/moeplan --version
echo "== calibrate"; SECONDS=0
[[ -z ${NO_CAL:-} ]] && timeout 170 $B/moeplan calibrate --backend cuda -o "$O/h200-measured.textproto" --cluster h200-x2
echo "calibrate rc=$? in ${SECONDS}s"
prof=${PROF:-$D/h200-measured-compute.textproto}
for s in gpu-flowmoe-bert-large-moe gpu-foldmoe-gpt-moe-s gpu-flowmoe-mixtral-8x7b gpu-foldmoe-mixtral-8x7b; do
  echo "== execute $s"; SECONDS=0
  timeout 45 $B/moeplan execute $D/$s.textproto --backend cuda --profile "$prof" --schedule all --compare --json \
    --iterations 5 --warmup 2 >"$O/exec-$s.json"
  echo "execute $s rc=$? in ${SECONDS}s"
done
[[ -n ${NO_TORCH:-} ]] && exit 0
echo "== torch probe"; SECONDS=0
timeout 100 python3 $D/torch_probe.py "$O/torch.json"
echo "torch rc=$? in ${SECONDS}s"
echo "== end $(date -u)"
