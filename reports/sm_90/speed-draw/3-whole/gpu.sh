#!/usr/bin/env bash
# Session 14, call 3: Z (009071f: gate 5's check of a piece's input of 64 MiB or more by the
# device hash, where Y, eaaff51, reads the piece back) on the whole suite, cold with
# --strict-limits (which fills the cache), then warm with and without --host-inputs; then the
# five ops on Y and Z interleaved, one cache folder for both (their kernels are the same).
# Build `cargo build --release --bin contracts` into .device/contracts-z (and eaaff51's into
# .device/contracts-y), carry .device.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
Y=".device/contracts-y --cache-dir /tmp/cache"
Z=".device/contracts-z --cache-dir /tmp/cache"
(nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv,noheader; nproc; lscpu | grep -E "Model name|Thread|Core|Socket"; grep -E "MemTotal|MemAvailable" /proc/meminfo) > $OUT/device.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
run z-whole-cold $Z --timings --strict-limits
run z-whole-1 $Z --timings; cp reports/last/sm_90.json $OUT/z-whole-1.json
run z-whole-host-1 $Z --timings --host-inputs
run y-five-1 $Y $FIVE --no-controls --timings
run z-five-1 $Z $FIVE --no-controls --timings
run y-five-2 $Y $FIVE --no-controls --timings
run z-five-2 $Z $FIVE --no-controls --timings
grep -E "^[a-z_0-9]+ \(" /tmp/z-whole-1.txt | LC_ALL=C sort > $OUT/z-whole-1.lines
grep -E "^[a-z_0-9]+ \(" /tmp/z-whole-host-1.txt | LC_ALL=C sort > $OUT/z-whole-host-1.lines
gzip $OUT/*.json
grep -h wall $OUT/log.txt
