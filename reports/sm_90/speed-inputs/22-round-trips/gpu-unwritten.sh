#!/usr/bin/env bash
# Session 22, call 23: call 22's moving kernel did not move (the engine restores module-scope
# storage before each launch, so its launches repeated; both builds said only the static check's
# finding). Here a kernel that leaves the last element of tf_add's 16 MiB case unwritten: its
# launches differ in that element (each launch's poison), which N's device hash must see, read
# back and name, as A's read-backs do.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
A=".device/contracts-a --cache-dir /tmp/cache-an"
N=".device/contracts-n --cache-dir /tmp/cache-an"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc) > $OUT/log.txt 2>&1
R=/tmp/contracts-repeat K=/tmp/kernels-unwritten
rm -rf $R $K && cp -r contracts $R && cp -r kernels $K
sed -i 's/^  { rows = 1025, k = 1 },$/  { rows = 1025, k = 1 },\n  { rows = 4100, k = 1024 },/' $R/tf_add.toml
sed -i 's|  if (i >= (long long)rows \* k) return;|  if (i >= (long long)rows * k \|\| (rows == 4100 \&\& i == (long long)rows * k - 1)) return;|' $K/tf_add.hip
cat $K/tf_add.hip >> $OUT/log.txt
for b in n a; do B=$(eval echo \$${b^^}); echo "== $b" >> $OUT/log.txt; $B --contracts $R --kernels $K --only tf_add --record f32 --case 8 --no-controls --timings --backend cuda >> $OUT/log.txt 2>&1; echo "rc=$?" >> $OUT/log.txt; done
cat $OUT/log.txt | grep -E "FAIL|rc="
