#!/usr/bin/env bash
# Session 21, call 10: S (contracts-s, 5a557e8) alone, the whole suite warm at --jobs 4 (the
# default), 5, 6 and 8, alternated twice after one cold run that fills the cache. Call 9 showed
# all five units of cases of gigabytes fit the memory budgets, yet tf_score_keys' unit waited
# for a slot (4 jobs) and ran alone from 4.3 to 8.6 s. Then issue 15's five ops at the default
# jobs and at --jobs 2. Carry .device with contracts-s.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
S=".device/contracts-s --cache-dir /tmp/cache-s"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
 grep -E "MemTotal|MemAvailable" /proc/meminfo) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; grep -E "^units of cases of gigabytes" /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
run s-whole-cold $S --timings
for i in 1 2; do for j in 4 5 6 8; do run s-whole-j$j-$i $S --timings --jobs $j; done; done
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
for i in 1 2; do run s-like-default-$i $S --contracts $C $FIVE --no-controls --timings; run s-like-j2-$i $S --contracts $C $FIVE --no-controls --timings --jobs 2; done
run s-whole-j8-3 $S --timings --jobs 8; gzip -c reports/last/sm_90.json > $OUT/s-whole-j8-3.json.gz
run s-whole-j4-3 $S --timings --jobs 4; gzip -c reports/last/sm_90.json > $OUT/s-whole-j4-3.json.gz
grep -h wall $OUT/log.txt
