#!/usr/bin/env bash
# Session 21, call 13: where a large input's first record spends its inputs and upload phases: a
# probe build of ba05995 (uncommitted: eprintln! of each step of drawing, reading back, modifying,
# sealing) runs the five ops with cases of gigabytes in one process, twice (the first fills the cache).
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
(which nsys perf ncu; ls /usr/local/cuda-13.0/bin | head -50; lscpu | grep -E "Model name|Socket|Thread|NUMA") > $OUT/env.txt 2>&1
P=".device/contracts-probe --cache-dir /tmp/cache-p"
GIANT="--only tf_embed_dense --only tf_embed_rows --only tf_sum_partials --only tf_apply_values --only tf_score_keys"
$P $GIANT --timings --in-process --backend cuda > $OUT/probe-1.txt 2>&1
$P $GIANT --timings --in-process --backend cuda > $OUT/probe-2.txt 2>&1
tail -3 $OUT/probe-2.txt
