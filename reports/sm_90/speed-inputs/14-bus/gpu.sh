#!/usr/bin/env bash
# Session 21, call 14: what the bus and the host's copies can do on their own (bus.py, PyTorch),
# against the staged read-back of a large input: a probe build of ba05995 (uncommitted: the
# staging's DMA, its copy-out and each one's waiting for the other, summed over a read-back of a
# GiB or more) runs the five ops with cases of gigabytes in one process.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
python3 reports/sm_90/speed-inputs/14-bus/bus.py > $OUT/bus.txt 2>&1
P=".device/contracts-probe2 --cache-dir /tmp/cache-p"
GIANT="--only tf_embed_dense --only tf_embed_rows --only tf_sum_partials --only tf_apply_values --only tf_score_keys"
$P $GIANT --timings --in-process --backend cuda > $OUT/probe-1.txt 2>&1
$P $GIANT --timings --in-process --backend cuda > $OUT/probe-2.txt 2>&1
cat $OUT/bus.txt; grep PROBE $OUT/probe-2.txt | head -30
