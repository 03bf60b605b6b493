#!/usr/bin/env bash
# Session 24, call 29: F (.device/contracts-f, main at 05e3d21: the host builds behind the GPU
# run's static checks now carry -fsanitize=bounds, the poisoned names and the far-access
# check) on the whole suite, cold then warm twice: every record green, every control red.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
F=".device/contracts-f --cache-dir /tmp/cache-f"
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; grep -E "FAIL|MISSED|ERROR|^timings|^processes that ended|^SUMMARY|wall|rc=" /tmp/$name.txt | cut -c1-600 >> $OUT/log.txt; }
run f-whole-cold $F --timings
run f-whole-1 $F --timings
run f-whole-2 $F --timings
grep -h wall $OUT/log.txt
