#!/usr/bin/env bash
# Session 18: N (large inputs drawn into their own tensors, only the words the host's modifiers
# wrote sent up again: `DeviceDraw::seal_drawn`, `kc_patch`) against M (3ca8943, main before it:
# drawn into a scratch buffer, read back, modified, the whole tensor sent up again), sharing one
# cache (M's cold run fills it; N's warm-up builds its changed drawing kernel): the whole suite
# warm and the five ops with GPU-only cases of gigabytes alone, alternated. Then, from
# 5-main/gpu.sh (never run): issue 15's five ops on the cases of its pytest comparison at
# --jobs 2 and 4, and T (f0a42eb, every build first) cold against M's cold run here. The
# most telling runs first: what the device time left cuts off is the last. Carry .device with
# contracts-m, contracts-n and contracts-t.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
M=".device/contracts-m --cache-dir /tmp/cache-mn"
N=".device/contracts-n --cache-dir /tmp/cache-mn"
T=".device/contracts-t --cache-dir /tmp/cache-t"
(nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv,noheader; nproc; lscpu | grep -E "Model name|Thread|Core|Socket" | cut -c1-200; grep -E "MemTotal|MemAvailable" /proc/meminfo) > $OUT/device.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
lines() { grep -E "^[a-z_0-9]+ \(" /tmp/$1.txt | LC_ALL=C sort > $OUT/$1.lines; }
# a device's opening, step by step: alone twice, then four processes at once
D=reports/sm_90/speed-inputs/6-patch
(python3 $D/cuda_init.py; python3 $D/cuda_init.py; for i in 1 2 3 4; do python3 $D/cuda_init.py "of four, $i" & done; wait) > $OUT/cuda-init.txt 2>&1
GIANT="--only tf_embed_dense --only tf_embed_rows --only tf_sum_partials --only tf_apply_values --only tf_score_keys"
run m-whole-cold $M --timings
run n-warm-up $N --only tf_score_keys --case 10 --no-controls
run m-whole-1 $M --timings; lines m-whole-1; gzip -c reports/last/sm_90.json > $OUT/m-whole-1.json.gz
run n-whole-1 $N --timings; lines n-whole-1; gzip -c reports/last/sm_90.json > $OUT/n-whole-1.json.gz
for i in 1 2; do
  run m-giant-$i $M $GIANT --timings
  run n-giant-$i $N $GIANT --timings
done
run m-whole-2 $M --timings
run n-whole-2 $N --timings
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
run m-like-j2 $M --contracts $C $FIVE --no-controls --timings --jobs 2
run m-like-j4 $M --contracts $C $FIVE --no-controls --timings
run m-like-j2-again $M --contracts $C $FIVE --no-controls --timings --jobs 2
run t-whole-cold $T --timings
grep -h wall $OUT/log.txt
