#!/usr/bin/env bash
# Session 26, call 1 (takes 25-warps/gpu.sh's place): G (.device/contracts-g, a release build of
# main at db9ac2e or later) on the whole suite, cold then warm twice: every record green, every
# control red (the GPU runs' static checks now include what kernel code uses of the C library
# beyond device code's or calls an x86 intrinsic; the three new controls are host-only). Then every tf_kv_append mutant on the
# GPU: its new lines' GPU-only survivors must be the five known gaps mutants.toml lists.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
G=".device/contracts-g --cache-dir /tmp/cache-g"
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s" "$@" > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; grep -E "FAIL|MISSED|ERROR|STALE|SURVIVED|^timings|^processes that ended|^SUMMARY|wall|rc=" /tmp/$name.txt | cut -c1-600 >> $OUT/log.txt; }
run g-whole-cold $G --backend cuda --timings
run g-whole-1 $G --backend cuda --timings
run g-whole-2 $G --backend cuda --timings
run g-mutate-kv $G mutate --backend cuda --only tf_kv_append
# issue 15's five ops, without their 2^31 cases (as call 27)
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
for i in 1 2 3; do run g-five-$i $G --backend cuda --contracts $C $FIVE --no-controls --timings; done
grep -h wall $OUT/log.txt
cp reports/last/mutate-sm_90.json $OUT/ 2>/dev/null
cd /tmp && tar czf $OUT/runs.tgz g-*.txt
