#!/usr/bin/env bash
# Session 22, call 23: M (N with kc_guards spread over 64 blocks a band, 4 bytes a thread, where
# call 22's one block a band waited on 256 loads a thread in turn and made gates slower than
# A's read-backs) against A (b55a560). First a kernel that leaves the last element of tf_add's
# 16 MiB case unwritten (call 22's moving kernel did not move: the engine restores module-scope
# storage before each launch): its launches differ there, which M's device hash must see, read
# back and name as A does. Then issue 15's five ops in one process and at the default jobs,
# alternated.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
A=".device/contracts-a --cache-dir /tmp/cache-am"
M=".device/contracts-m --cache-dir /tmp/cache-am"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; grep -E "FAIL|^timings|all 19|^SUMMARY|wall" /tmp/$name.txt | cut -c1-700 >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
R=/tmp/contracts-repeat K=/tmp/kernels-unwritten
rm -rf $R $K && cp -r contracts $R && cp -r kernels $K
sed -i 's/^  { rows = 1025, k = 1 },$/  { rows = 1025, k = 1 },\n  { rows = 4100, k = 1024 },/' $R/tf_add.toml
sed -i 's|  if (i >= (long long)rows \* k) return;|  if (i >= (long long)rows * k \|\| (rows == 4100 \&\& i == (long long)rows * k - 1)) return;|' $K/tf_add.hip
run m-unwritten $M --contracts $R --kernels $K --only tf_add --record f32 --case 8 --no-controls --timings
run a-unwritten $A --contracts $R --kernels $K --only tf_add --record f32 --case 8 --no-controls --timings
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
for i in 1 2; do for b in a m; do B=$(eval echo \$${b^^}); run $b-like-in-process-$i $B --contracts $C $FIVE --no-controls --timings --in-process; run $b-like-default-$i $B --contracts $C $FIVE --no-controls --timings; done; done
grep -h wall $OUT/log.txt
