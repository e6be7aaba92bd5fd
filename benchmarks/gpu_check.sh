#!/usr/bin/env bash
# The GPU path in one short run (results in benchmarks/results/engine_h200.json and gpu_sweep_h200.json):
#   1. the inference core against a plain torch loop on cpu and cuda (bench_engine.py)
#   2. the same small sweep on cuda and on cpu, each with a cold embedding cache, wall time of each
# Compare the two sweeps' cells with benchmarks/compare_sweeps.py. Usage: bash benchmarks/gpu_check.sh OUTDIR
set -u
OUT=${1:-benchmarks/_out/gpu}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
timeout 300 $PY benchmarks/bench_engine.py --devices cpu,cuda --out "$OUT/engine_gpu.json" 2>&1 | tail -12
for dev in cuda cpu; do
  t0=$(date +%s.%N)
  ROBUSTLAB_CACHE=$OUT/cache_img_$dev timeout 200 $PY -m robustlab.cli bench --models builtin:tiny-clip --dataset builtin \
    --n 500 --perturbations gaussian_noise,shot_noise,defocus_blur,jpeg_compression,contrast --severities 1,3,5 \
    --device $dev --out "$OUT/sw_img_$dev" --quiet 2>&1 | tail -2
  t1=$(date +%s.%N); echo "img $dev $($PY -c "print(round($t1-$t0,2))") s" | tee -a "$OUT/sweep_times.txt"
  t0=$(date +%s.%N)
  ROBUSTLAB_CACHE=$OUT/cache_vid_$dev timeout 200 $PY -m robustlab.cli bench --models builtin:tiny-clip-video-seqtransf \
    --dataset builtin-videos --n 200 --perturbations gaussian_noise,defocus_blur --severities 1,3,5 \
    --device $dev --out "$OUT/sw_vid_$dev" --quiet 2>&1 | tail -2
  t1=$(date +%s.%N); echo "vid $dev $($PY -c "print(round($t1-$t0,2))") s" | tee -a "$OUT/sweep_times.txt"
done
$PY benchmarks/compare_sweeps.py "$OUT/sw_img_cuda" "$OUT/sw_img_cpu"
$PY benchmarks/compare_sweeps.py "$OUT/sw_vid_cuda" "$OUT/sw_vid_cpu"
