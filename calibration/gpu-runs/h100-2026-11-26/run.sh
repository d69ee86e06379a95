#!/bin/bash
# On the lent GPU machine, from the repository root, with scripts/gpu-bundle.sh's bundle in $BUNDLE (default
# build-gpu/bundle): calibrate, compose the measured-compute profile, execute --compare of the four scenarios here
# with it and with the datasheet profile, then the PyTorch kernel probe. Results to $OUT (default /tmp/out).
# NO_CAL=1 skips calibrate; NO_DATASHEET=1 skips the datasheet profile's replays; NO_TORCH=1 skips the probe.
set -u
B=${BUNDLE:-build-gpu/bundle}; D=calibration/gpu-runs/h100-2026-11-26; O=${OUT:-/tmp/out}; mkdir -p "$O"
exec >"$O/run.log" 2>&1
echo "== machine $(date -u)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv
nvcc --version 2>&1 | tail -2
python3 -c "import torch;print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'nccl', torch.cuda.nccl.version())" 2>&1
echo "== ldd (not found)"; ldd $B/bin/moeplan $B/bin/libmoeplan_cuda.so | grep -i "not found"
$B/moeplan --version | head -2
echo "== calibrate"; SECONDS=0
if [[ -z ${NO_CAL:-} ]]; then
  timeout 240 $B/moeplan calibrate --backend cuda -o "$O/h100-measured.textproto" --cluster h100-x2
  echo "calibrate rc=$? in ${SECONDS}s"
  python3 $D/compose_profile.py "$O/h100-measured.textproto" calibration/profiles/h100-x2-datasheet.textproto \
    h100-measured-compute $D/h100-measured-compute.textproto && cp $D/h100-measured-compute.textproto "$O/"
fi
profiles="measured datasheet"; [[ -n ${NO_DATASHEET:-} ]] && profiles=measured
for prof in $profiles; do
  p=$D/h100-measured-compute.textproto; [[ $prof == datasheet ]] && p=calibration/profiles/h100-x2-datasheet.textproto
  for s in gpu-flowmoe-bert-large-moe gpu-foldmoe-gpt-moe-s gpu-flowmoe-mixtral-8x7b gpu-foldmoe-mixtral-8x7b; do
    SECONDS=0
    timeout 60 $B/moeplan execute $D/$s.textproto --backend cuda --profile "$p" --schedule all --compare --json \
      --iterations 7 --warmup 2 >"$O/$prof-$s.json" 2>"$O/$prof-$s.err"
    echo "execute $prof $s rc=$? in ${SECONDS}s"; tail -2 "$O/$prof-$s.err"
  done
done
[[ -n ${NO_TORCH:-} ]] && exit 0
echo "== kernel probe"; SECONDS=0
timeout 150 python3 $D/kernel_probe.py "$O/kernel-probe.json"
echo "probe rc=$? in ${SECONDS}s"
echo "== end $(date -u)"
