#!/usr/bin/env bash
# Session 22, call 21: P, a probe build of b55a560 (not committed: each CUDA driver call and
# each step of a case timed and counted, printed at exit where KC_PROBE is set), on issue 15's
# five ops in one process and isolated at --jobs 1; A (b55a560) beside it for the walls.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
A=".device/contracts-a --cache-dir /tmp/cache-a"
P=".device/contracts-p --cache-dir /tmp/cache-a"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
run a-like-cold $A --contracts $C $FIVE --no-controls --timings
for i in 1 2; do
  run a-like-j1-$i $A --contracts $C $FIVE --no-controls --timings --jobs 1
  run p-like-j1-$i $P --contracts $C $FIVE --no-controls --timings --jobs 1
  run a-like-in-process-$i $A --contracts $C $FIVE --no-controls --timings --in-process
  KC_PROBE=1 run p-like-in-process-probe-$i $P --contracts $C $FIVE --no-controls --timings --in-process
done
KC_PROBE=1 run p-like-j1-probe $P --contracts $C $FIVE --no-controls --timings --jobs 1
for t in tf_add tf_embed_dense tf_rms tf_sum_partials; do KC_PROBE=1 run p-$t-in-process-probe $P --contracts $C --only $t --no-controls --timings --in-process; done
grep -h PROBE /tmp/p-like-in-process-probe-2.txt > $OUT/probe-in-process.txt
for t in tf_add tf_embed_dense tf_rms tf_sum_partials; do echo "== $t" >> $OUT/probe-ops.txt; grep -h PROBE /tmp/p-$t-in-process-probe.txt >> $OUT/probe-ops.txt; done
grep -h wall $OUT/log.txt
