#!/usr/bin/env bash
# Session 21, call 12: T (contracts-t: a drawn input's written words sent as (word, value)
# pairs made on all cores wherever at most one word in 8 is written, where S, contracts-s at
# 5a557e8, made them on one thread and sent the tensor whole past one in 256) against S: the
# five ops with cases of gigabytes and the whole suite warm, alternated, after one cold run of
# T that fills the cache. tf_score_keys' 4 GiB caches and tf_apply_values' values (a few words
# of every row of 64) go up as pairs in T. Carry .device with contracts-s and contracts-t.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
S=".device/contracts-s --cache-dir /tmp/cache-st"
T=".device/contracts-t --cache-dir /tmp/cache-st"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
 grep -E "MemTotal|MemAvailable" /proc/meminfo) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; grep -E "^units of cases of gigabytes" /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
GIANT="--only tf_embed_dense --only tf_embed_rows --only tf_sum_partials --only tf_apply_values --only tf_score_keys"
run t-whole-cold $T --timings
for i in 1 2; do for b in s t; do B=$(eval echo \$${b^^}); run $b-giant-$i $B $GIANT --timings; [ $i = 1 ] && gzip -c reports/last/sm_90.json > $OUT/$b-giant-1.json.gz; done; done
for i in 1 2; do for b in t s; do B=$(eval echo \$${b^^}); run $b-whole-$i $B --timings; [ $i = 1 ] && gzip -c reports/last/sm_90.json > $OUT/$b-whole-1.json.gz; done; done
for b in s t; do B=$(eval echo \$${b^^}); run $b-giant-in-process $B $GIANT --timings --in-process; gzip -c reports/last/sm_90.json > $OUT/$b-giant-in-process.json.gz; done
grep -h wall $OUT/log.txt
