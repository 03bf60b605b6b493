#!/usr/bin/env bash
# Session 25, call 1: G (.device/contracts-g, main at f4748db (binary of 6ff8a18): the host builds behind the GPU
# run's static checks carry session 24's bounds check, poisoned names and far-access check;
# tf_kv_append's cache rows vote on the slots; volatile reads have hooks of their own) on the whole suite, cold then warm twice: every
# record green, every control red. Then every tf_kv_append mutant on the GPU: the new lines'
# GPU-only survivors must be the five known gaps mutants.toml lists, and nothing else survives.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
G=".device/contracts-g --cache-dir /tmp/cache-g"
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s" "$@" > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; grep -E "FAIL|MISSED|ERROR|STALE|SURVIVED|^timings|^processes that ended|^SUMMARY|wall|rc=" /tmp/$name.txt | cut -c1-600 >> $OUT/log.txt; }
run g-whole-cold $G --backend cuda --timings
run g-whole-1 $G --backend cuda --timings
run g-whole-2 $G --backend cuda --timings
run g-mutate-kv $G mutate --backend cuda --only tf_kv_append
grep -h wall $OUT/log.txt
cp reports/last/mutate-sm_90.json $OUT/ 2>/dev/null
cd /tmp && tar czf $OUT/runs.tgz g-*.txt
