#!/usr/bin/env bash
# Session 24, call 28: N's whole suite warm with each worker's rayon pool at its default (one
# thread a core: 16, so 4 jobs run 64) and capped by RAYON_NUM_THREADS at 4 and 8, alternated:
# call 26's warm run spent 2-3 times on its gigabyte records' inputs what one process does.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
N=".device/contracts-n --cache-dir /tmp/cache-nh"
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; grep -E "FAIL|^timings|^SUMMARY|all 16|wall|rc=" /tmp/$name.txt | cut -c1-400 >> $OUT/log.txt; }
run n-whole-cold $N --timings
for i in 1 2; do
  run n-default-$i $N --timings
  run n-rayon4-$i env RAYON_NUM_THREADS=4 $N --timings
  run n-rayon8-$i env RAYON_NUM_THREADS=8 $N --timings
done
for f in /tmp/n-default-2.txt /tmp/n-rayon4-2.txt; do echo "== $f top"; grep -A12 "seconds  start-up" $f | head -13; done >> $OUT/log.txt
grep -h wall $OUT/log.txt
