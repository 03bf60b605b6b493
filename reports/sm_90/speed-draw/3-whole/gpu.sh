#!/usr/bin/env bash
# Session 14, call 3: Y (the commit that makes device-drawn inputs the default) on the whole
# suite, cold with --strict-limits (which fills the cache), then warm with and without
# --host-inputs, one after another in one call (the five ops were measured in calls 1 and 2).
# Build `cargo build --release --bin contracts` into .device/contracts-y, carry .device.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
Y=".device/contracts-y --cache-dir /tmp/cache-y"
(nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv,noheader; nproc; lscpu | grep -E "Model name|Thread|Core|Socket"; grep -E "MemTotal|MemAvailable" /proc/meminfo) > $OUT/device.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
run y-whole-cold $Y --timings --strict-limits
run y-whole-1 $Y --timings; cp reports/last/sm_90.json $OUT/y-whole-1.json
run y-whole-host-1 $Y --timings --host-inputs; cp reports/last/sm_90.json $OUT/y-whole-host-1.json
grep -E "^[a-z_0-9]+ \(" /tmp/y-whole-1.txt | LC_ALL=C sort > $OUT/y-whole-1.lines
grep -E "^[a-z_0-9]+ \(" /tmp/y-whole-host-1.txt | LC_ALL=C sort > $OUT/y-whole-host-1.lines
gzip $OUT/*.json
grep -h wall $OUT/log.txt
