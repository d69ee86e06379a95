#!/bin/bash
# On the lent GPU machine, from the repository root, with scripts/gpu-bundle.sh's bundle in $BUNDLE (default
# build-gpu/bundle): calibrate this GPU (twice more for its noise), compose the measured-compute profile,
# execute --compare of the four scenarios of calibration/gpu-runs/h100-2026-11-26 with it and with the
# datasheet profile, then the gradient-buffer probe. The cluster (h100-x2 or h200-x2) follows nvidia-smi's name.
# Results to $OUT (default /tmp/out).
set -u
B=${BUNDLE:-build-gpu/bundle}; S=calibration/gpu-runs/h100-2026-11-26; D=calibration/gpu-runs/h200-2026-11-27
O=${OUT:-/tmp/out}; mkdir -p "$O"
exec >"$O/run.log" 2>&1
echo "== machine $(date -u)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv
python3 -c "import torch;print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())" 2>&1
echo "== ldd (not found)"; ldd $B/bin/moeplan $B/bin/libmoeplan_cuda.so | grep -i "not found"
$B/moeplan --version | head -2
g=h100; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && g=h200
[[ $g == h200 ]] && S=calibration/gpu-runs/h200-2026-11-26  # the same four scenarios on h200-x2
echo "== gradient-buffer probe"; SECONDS=0
timeout 90 python3 $D/grad_buffer_probe.py "$O/grad-buffer-probe.json"; echo "probe rc=$? in ${SECONDS}s"
echo "== calibrate ($g)"; SECONDS=0
timeout 120 $B/moeplan calibrate --backend cuda -o "$O/$g-measured.textproto" --cluster $g-x2
echo "calibrate rc=$? in ${SECONDS}s"
python3 calibration/gpu-runs/h100-2026-11-26/compose_profile.py "$O/$g-measured.textproto" calibration/profiles/$g-x2-datasheet.textproto \
  $g-measured-compute "$O/$g-measured-compute.textproto"
for prof in measured datasheet; do
  p=$O/$g-measured-compute.textproto; [[ $prof == datasheet ]] && p=calibration/profiles/$g-x2-datasheet.textproto
  for s in gpu-flowmoe-bert-large-moe gpu-foldmoe-gpt-moe-s gpu-flowmoe-mixtral-8x7b gpu-foldmoe-mixtral-8x7b; do
    SECONDS=0
    timeout 60 $B/moeplan execute $S/$s.textproto --backend cuda --profile "$p" --schedule all --compare --json \
      --iterations 7 --warmup 2 >"$O/$prof-$s.json" 2>"$O/$prof-$s.err"
    echo "execute $prof $s rc=$? in ${SECONDS}s"; tail -2 "$O/$prof-$s.err"
  done
done
for i in 1 2; do SECONDS=0
  timeout 60 $B/moeplan calibrate --backend cuda -o "$O/calibrate-repeat$i.textproto" --cluster $g-x2 >"$O/calibrate-repeat$i.log" 2>&1
  echo "calibrate repeat $i rc=$? in ${SECONDS}s"
done
echo "== end $(date -u)"
tar -C "$O" -czf /tmp/results.tgz . && mv /tmp/results.tgz "$O/results.tgz"
