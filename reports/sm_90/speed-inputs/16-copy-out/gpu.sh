#!/usr/bin/env bash
# Session 21, call 16: U (contracts-u: T with a staged copy's pieces copied on every core by
# rayon's threads, where T spawned up to 8 threads a piece; a read-back's copy-out into fresh
# pages bounded it, call 14) against T (contracts-t, ba05995): the five ops with cases of
# gigabytes in one process (their inputs phase is most of it), the same isolated, and the
# whole suite warm, alternated, after one cold run of U. Carry .device with contracts-t, -u.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
T=".device/contracts-t --cache-dir /tmp/cache-tu"
U=".device/contracts-u --cache-dir /tmp/cache-tu"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; grep -E "^units of cases of gigabytes" /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
GIANT="--only tf_embed_dense --only tf_embed_rows --only tf_sum_partials --only tf_apply_values --only tf_score_keys"
run u-whole-cold $U --timings
for i in 1 2; do for b in t u; do B=$(eval echo \$${b^^}); run $b-giant-in-process-$i $B $GIANT --timings --in-process; [ $i = 1 ] && gzip -c reports/last/sm_90.json > $OUT/$b-giant-in-process-1.json.gz; done; done
for i in 1 2; do for b in u t; do B=$(eval echo \$${b^^}); run $b-giant-$i $B $GIANT --timings; done; done
for i in 1 2; do for b in t u; do B=$(eval echo \$${b^^}); run $b-whole-$i $B --timings; [ $i = 1 ] && gzip -c reports/last/sm_90.json > $OUT/$b-whole-1.json.gz; done; done
grep -h wall $OUT/log.txt
