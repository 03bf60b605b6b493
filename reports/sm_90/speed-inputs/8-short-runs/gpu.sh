#!/usr/bin/env bash
# Session 19, call 8: R (9584b61: whether a drawn tensor's written words are few is counted
# from the marks' bits before any list of runs; spares ahead of controls on GPU backends; a
# pooled worker's CPU limit covering the run's largest job; the first children started before
# the parent opens the device) against
# P (dd028f9, the one-in-256 rule as call 7 ran it), sharing one cache (P's cold run fills it;
# R builds nothing new): issue 15's five ops on the cases of its pytest comparison at --jobs 2
# (first: the device time left may cut the call short), then the five ops with GPU-only cases
# of gigabytes alone and the whole suite warm, alternated.
# Carry .device with contracts-p and contracts-r.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
P=".device/contracts-p --cache-dir /tmp/cache-pr"
R=".device/contracts-r --cache-dir /tmp/cache-pr"
(nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv,noheader; nproc; lscpu | grep -E "Model name" | cut -c1-200) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
lines() { grep -E "^[a-z_0-9]+ \(" /tmp/$1.txt | LC_ALL=C sort > $OUT/$1.lines; }
GIANT="--only tf_embed_dense --only tf_embed_rows --only tf_sum_partials --only tf_apply_values --only tf_score_keys"
run p-whole-cold $P --timings
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
run p-like-j2 $P --contracts $C $FIVE --no-controls --timings --jobs 2
run r-like-j2 $R --contracts $C $FIVE --no-controls --timings --jobs 2
run p-like-j2-again $P --contracts $C $FIVE --no-controls --timings --jobs 2
run r-like-j2-again $R --contracts $C $FIVE --no-controls --timings --jobs 2
for i in 1 2; do
  run p-giant-$i $P $GIANT --timings; [ $i = 1 ] && gzip -c reports/last/sm_90.json > $OUT/p-giant-1.json.gz
  run r-giant-$i $R $GIANT --timings; [ $i = 1 ] && gzip -c reports/last/sm_90.json > $OUT/r-giant-1.json.gz
done
for i in 1 2; do
  run p-whole-$i $P --timings; [ $i = 1 ] && { lines p-whole-1; gzip -c reports/last/sm_90.json > $OUT/p-whole-1.json.gz; }
  run r-whole-$i $R --timings; [ $i = 1 ] && { lines r-whole-1; gzip -c reports/last/sm_90.json > $OUT/r-whole-1.json.gz; }
done
grep -h wall $OUT/log.txt
