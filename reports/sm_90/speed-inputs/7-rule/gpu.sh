#!/usr/bin/env bash
# Session 19: P (dd028f9: a drawn tensor's written words go up alone only where they are at
# most one word in 256, else the tensor whole) against M (3ca8943, main before session 18:
# drawn into a scratch buffer, read back, modified, the whole tensor sent up again), sharing
# one cache (M's cold run fills it; P's warm-up builds its changed drawing kernel): the whole
# suite warm and the five ops with GPU-only cases of gigabytes alone, alternated; then issue
# 15's five ops on the cases of its pytest comparison, P at --jobs 2 and 4. Then Q (P with
# spare processes started ahead for a slot's turn to controls and beside each control, and the
# --timings line that says why each process started and ended; 34d6235) against P, whole and
# five ops.
# Carry .device with contracts-m, contracts-p and contracts-q.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
M=".device/contracts-m --cache-dir /tmp/cache-mp"
P=".device/contracts-p --cache-dir /tmp/cache-mp"
Q=".device/contracts-q --cache-dir /tmp/cache-mp"
(nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv,noheader; nproc; lscpu | grep -E "Model name|Thread|Core|Socket" | cut -c1-200; grep -E "MemTotal|MemAvailable" /proc/meminfo) > $OUT/device.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
lines() { grep -E "^[a-z_0-9]+ \(" /tmp/$1.txt | LC_ALL=C sort > $OUT/$1.lines; }
GIANT="--only tf_embed_dense --only tf_embed_rows --only tf_sum_partials --only tf_apply_values --only tf_score_keys"
run m-whole-cold $M --timings
run p-warm-up $P --only tf_score_keys --case 10 --no-controls
run m-whole-1 $M --timings; lines m-whole-1
run p-whole-1 $P --timings; lines p-whole-1; gzip -c reports/last/sm_90.json > $OUT/p-whole-1.json.gz
for i in 1 2; do
  run m-giant-$i $M $GIANT --timings
  run p-giant-$i $P $GIANT --timings; [ $i = 1 ] && gzip -c reports/last/sm_90.json > $OUT/p-giant-1.json.gz
done
run m-whole-2 $M --timings
run p-whole-2 $P --timings
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
run p-like-j2 $P --contracts $C $FIVE --no-controls --timings --jobs 2
run p-like-j4 $P --contracts $C $FIVE --no-controls --timings
run p-like-j2-again $P --contracts $C $FIVE --no-controls --timings --jobs 2
run q-whole-1 $Q --timings; gzip -c reports/last/sm_90.json > $OUT/q-whole-1.json.gz
run p-whole-3 $P --timings
run q-whole-2 $Q --timings
run q-like-j2 $Q --contracts $C $FIVE --no-controls --timings --jobs 2
run q-like-j4 $Q --contracts $C $FIVE --no-controls --timings
grep -h wall $OUT/log.txt
