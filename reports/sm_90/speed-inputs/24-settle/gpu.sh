#!/usr/bin/env bash
# Session 24, call 27: N (.device/contracts-n: main with a job's end waiting up to 20 ms for
# threads that are ending, and -fsanitize=bounds on the host) against H (994b939) on the whole
# suite, alternated: the "processes that ended after a job" line of each warm run says whether
# workers are still retired for "N thread(s) it did not start with". Then the five ops.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
N=".device/contracts-n --cache-dir /tmp/cache-nh"
H=".device/contracts-h --cache-dir /tmp/cache-nh"
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; grep -E "FAIL|^timings|^processes that ended|^SUMMARY|wall|rc=" /tmp/$name.txt | cut -c1-900 >> $OUT/log.txt; }
run n-whole-cold $N --timings
for i in 1 2; do run h-whole-$i $H --timings; run n-whole-$i $N --timings; done
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
for i in 1 2; do run h-five-$i $H --contracts $C $FIVE --no-controls --timings; run n-five-$i $N --contracts $C $FIVE --no-controls --timings; done
grep -h wall $OUT/log.txt
