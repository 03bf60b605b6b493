#!/usr/bin/env bash
# Session 17, call 2, taken up in session 18 with 6-patch first (one machine's start for both):
# 6-patch's runs (M, main at 3ca8943, against N, the patched uploads, cold and warm), then T
# (f0a42eb: every build first) cold for M's cold figure in 6-patch, and issue 15's five ops on
# the cases of its pytest comparison at --jobs 2 and the default 4. Carry .device with
# contracts-m, contracts-n and contracts-t.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
bash reports/sm_90/speed-inputs/6-patch/gpu.sh
M=".device/contracts-m --cache-dir /tmp/cache-m"
T=".device/contracts-t --cache-dir /tmp/cache-t"
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
run t-whole-cold $T --timings
run m-like-j2 $M --contracts $C $FIVE --no-controls --timings --jobs 2
run m-like-j4 $M --contracts $C $FIVE --no-controls --timings
run m-like-j2-again $M --contracts $C $FIVE --no-controls --timings --jobs 2
grep -h wall $OUT/log.txt
