#!/usr/bin/env bash
# Session 14, call 2: X (the working tree after 28dd9fd: large inputs drawn and checked on the
# device by default, `--host-inputs` for the host's way; kernels built in the order jobs start,
# each job started as soon as its own are built) against D (6f6724e with --device-inputs:
# builds first, then jobs). Whole suite cold on fresh cache folders, one each, then X warm:
# the five ops, the same with --host-inputs, and the five without their cases past 2^31
# elements (issue 15's like-for-like of its pytest + CuPy figures).
# Build `cargo build --release --bin contracts` into .device/contracts-x, keep .device/contracts-d,
# carry .device.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
X=".device/contracts-x --cache-dir /tmp/cache-x"
D=".device/contracts-d --device-inputs --cache-dir /tmp/cache-d"
(nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv,noheader; nproc; lscpu | grep -E "Model name|Thread|Core|Socket"; grep -E "MemTotal|MemAvailable" /proc/meminfo) > $OUT/device.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
LFL=/tmp/contracts-without-2-31
rm -rf $LFL && cp -r contracts $LFL && sed -i '/gpu_only = "[^"]*2^31/d' $LFL/*.toml
run x-whole-cold $X --timings --strict-limits; cp reports/last/sm_90.json $OUT/x-whole-cold.json
run d-whole-cold $D --timings --strict-limits
run x-five-1 $X $FIVE --no-controls --timings
run x-five-host-1 $X $FIVE --no-controls --timings --host-inputs
run x-five-2 $X $FIVE --no-controls --timings
run x-five-lfl-1 $X --contracts $LFL $FIVE --no-controls --timings
run x-whole-1 $X --timings
grep -E "^[a-z_0-9]+ \(" /tmp/x-whole-1.txt | LC_ALL=C sort > $OUT/x-whole-1.lines
gzip $OUT/*.json
grep -h wall $OUT/log.txt
