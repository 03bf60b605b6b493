#!/usr/bin/env bash
# Session 21, call 19: the session's net, W (contracts-w, built at 313786f: the code at the end of the
# session) against S (contracts-s, 5a557e8, main at the session's start), one cache
# that W's cold run fills: the five ops with cases of gigabytes in one process and isolated,
# issue 15's five ops at --jobs 2 and the default, and the whole suite warm, alternated.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
S=".device/contracts-s --cache-dir /tmp/cache-sw"
W=".device/contracts-w --cache-dir /tmp/cache-sw"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; grep -E "^units of cases of gigabytes" /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
GIANT="--only tf_embed_dense --only tf_embed_rows --only tf_sum_partials --only tf_apply_values --only tf_score_keys"
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
run w-whole-cold $W --timings
for i in 1 2; do for b in s w; do B=$(eval echo \$${b^^}); run $b-whole-$i $B --timings; done; done
for i in 1 2; do for b in w s; do B=$(eval echo \$${b^^}); run $b-giant-$i $B $GIANT --timings; run $b-like-j2-$i $B --contracts $C $FIVE --no-controls --timings --jobs 2; run $b-like-default-$i $B --contracts $C $FIVE --no-controls --timings; done; done
for b in s w; do B=$(eval echo \$${b^^}); run $b-giant-in-process $B $GIANT --timings --in-process; done
grep -h wall $OUT/log.txt
