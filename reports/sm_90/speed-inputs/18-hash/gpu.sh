#!/usr/bin/env bash
# Session 21, call 18: V (contracts-v: U with the keyed hash's host terms made eight to a vector
# where the CPU has AVX-512 DQ, 4.4 times one core's rate on the 2-core machine, and a drawn
# input's written words counted on all cores, where a serial scan of the marks decided between
# pairs and the whole tensor) against U (contracts-u, 2f3f9c4): the five ops with cases of
# gigabytes in one process, the same isolated, the whole suite warm, alternated after one cold
# run of V. Carry .device with contracts-u and contracts-v.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
U=".device/contracts-u --cache-dir /tmp/cache-uv"
V=".device/contracts-v --cache-dir /tmp/cache-uv"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; grep -o -w "avx512dq\|avx512f" /proc/cpuinfo | sort | uniq -c) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; grep -E "^units of cases of gigabytes" /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
GIANT="--only tf_embed_dense --only tf_embed_rows --only tf_sum_partials --only tf_apply_values --only tf_score_keys"
run v-whole-cold $V --timings
for i in 1 2; do for b in u v; do B=$(eval echo \$${b^^}); run $b-giant-in-process-$i $B $GIANT --timings --in-process; [ $i = 1 ] && gzip -c reports/last/sm_90.json > $OUT/$b-giant-in-process-1.json.gz; done; done
for i in 1 2; do for b in v u; do B=$(eval echo \$${b^^}); run $b-giant-$i $B $GIANT --timings; done; done
for i in 1 2; do for b in u v; do B=$(eval echo \$${b^^}); run $b-whole-$i $B --timings; [ $i = 1 ] && gzip -c reports/last/sm_90.json > $OUT/$b-whole-1.json.gz; [ $i = 1 ] && grep -E "^[a-z_0-9]+ \(" /tmp/$b-whole-1.txt | LC_ALL=C sort > $OUT/$b-whole-1.lines; done; done
grep -h wall $OUT/log.txt
