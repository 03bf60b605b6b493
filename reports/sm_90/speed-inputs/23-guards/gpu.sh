#!/usr/bin/env bash
# Session 23, call 24: session 22's call 23 (its gpu-guards.sh, which did not run and is gone),
# with H (3f7a2bc and the names of a retired worker's new threads; guard bands read back as in A) beside M (kc_guards over 64 blocks a band)
# and A (b55a560). First a kernel that leaves the last element of tf_add's 16 MiB case unwritten:
# its launches differ there, which H's device hash must see, read back and name as A does.
# Then the three contracts changed in session 23 (tf_rope, tf_cast, tf_kv_append) with their controls.
# Then issue 15's five ops in one process and at the default jobs, alternated; then H's whole
# suite once, cold but for the five ops' kernels (the device time left was short: no A whole run).
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
A=".device/contracts-a --cache-dir /tmp/cache-amh"
M=".device/contracts-m --cache-dir /tmp/cache-amh"
H=".device/contracts-h --cache-dir /tmp/cache-amh"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; grep -E "FAIL|^timings|all 19|^SUMMARY|wall|rc=" /tmp/$name.txt | cut -c1-700 >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
R=/tmp/contracts-repeat K=/tmp/kernels-unwritten
rm -rf $R $K && cp -r contracts $R && cp -r kernels $K
sed -i 's/^  { rows = 1025, k = 1 },$/  { rows = 1025, k = 1 },\n  { rows = 4100, k = 1024 },/' $R/tf_add.toml
sed -i 's|  if (i >= (long long)rows \* k) return;|  if (i >= (long long)rows * k \|\| (rows == 4100 \&\& i == (long long)rows * k - 1)) return;|' $K/tf_add.hip
for b in h a; do B=$(eval echo \$${b^^}); run $b-unwritten $B --contracts $R --kernels $K --only tf_add --record f32 --case 8 --no-controls --timings; done
run h-changed-three $H --only tf_rope --only tf_cast --only tf_kv_append --timings
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
for i in 1 2; do for b in a m h; do B=$(eval echo \$${b^^}); run $b-five-in-process-$i $B --contracts $C $FIVE --no-controls --timings --in-process; run $b-five-default-$i $B --contracts $C $FIVE --no-controls --timings; done; done
run h-whole $H --timings
grep -h "did not start with" /tmp/*-whole.txt >> $OUT/log.txt
grep -h wall $OUT/log.txt
