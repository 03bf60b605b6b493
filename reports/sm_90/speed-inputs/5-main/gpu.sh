#!/usr/bin/env bash
# Session 17, call 2: M (3ca8943, main: jobs beside the builds on GPU backends only) cold
# against T (f0a42eb: every build first), each with a fresh cache, then M warm and issue 15's
# five ops on the cases of its pytest comparison at --jobs 2 and the default 4. Carry .device
# with contracts-m and contracts-t.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
M=".device/contracts-m --cache-dir /tmp/cache-m"
T=".device/contracts-t --cache-dir /tmp/cache-t"
(nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv,noheader; nproc; lscpu | grep -E "Model name|Thread|Core|Socket" | cut -c1-200; grep -E "MemTotal|MemAvailable" /proc/meminfo) > $OUT/device.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
run warm-up .device/contracts-m --cache-dir /tmp/cache-w --only tf_add --no-controls
run m-whole-cold $M --timings
run t-whole-cold $T --timings
run m-whole-1 $M --timings
grep -E "^[a-z_0-9]+ \(" /tmp/m-whole-1.txt | LC_ALL=C sort > $OUT/m-whole-1.lines
run m-like-j2 $M --contracts $C $FIVE --no-controls --timings --jobs 2
run m-like-j4 $M --contracts $C $FIVE --no-controls --timings
run m-like-j2-again $M --contracts $C $FIVE --no-controls --timings --jobs 2
grep -h wall $OUT/log.txt
