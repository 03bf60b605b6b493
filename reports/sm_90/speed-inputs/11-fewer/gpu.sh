#!/usr/bin/env bash
# Session 21, call 11: S (contracts-s, 5a557e8) alone. Call 10 showed more jobs than 4 no
# faster (all five units of gigabytes side by side took longer each: they share something) and
# issue 15's five ops slower at 4 jobs than at 2 (each phase on the device slower: contexts of
# several processes take turns on one GPU). So fewer: the whole suite warm at --jobs 1, 2, 3 and
# 4 and in one process, alternated twice; the five ops at --jobs 1, 2, 3 and the default.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
S=".device/contracts-s --cache-dir /tmp/cache-s"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
 grep -E "MemTotal|MemAvailable" /proc/meminfo) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; grep -E "^units of cases of gigabytes" /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
run s-whole-cold $S --timings
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
for i in 1 2; do
  for j in 1 2 3; do run s-like-j$j-$i $S --contracts $C $FIVE --no-controls --timings --jobs $j; done
  run s-like-default-$i $S --contracts $C $FIVE --no-controls --timings
done
for i in 1 2; do
  for j in 1 2 3 4; do run s-whole-j$j-$i $S --timings --jobs $j; [ $i = 1 ] && gzip -c reports/last/sm_90.json > $OUT/s-whole-j$j-1.json.gz; done
  run s-whole-in-process-$i $S --timings --in-process; [ $i = 1 ] && gzip -c reports/last/sm_90.json > $OUT/s-whole-in-process-1.json.gz
done
grep -h wall $OUT/log.txt
