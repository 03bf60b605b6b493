#!/usr/bin/env bash
# Session 26, call 2: call 1's GPU mutate of tf_kv_append left `long long b = blockIdx.x` ->
# `int b` (line 27) alive, which the Debian host (g++ 12) kills by the static check of `b * d`
# widened late; this machine's static checks are g++ 13 (Ubuntu). So: the host suite and
# that mutant on this machine's g++ (the host backend), its SSA dump, and the GPU mutate of
# tf_kv_append again with mutants.toml corrected from call 1. The binary carried reads a
# statement whose column GCC 13 follows with its discriminator (`34:58 discrim 1`), which the
# lint passed over (the guess this call tests), and builds with -U_FORTIFY_SOURCE.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
G=".device/contracts-g --cache-dir /tmp/cache-g"
(g++ --version | head -1; nproc) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s" "$@" > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; grep -E "FAIL|MISSED|ERROR|STALE|KILLED BUT|SURVIVED|^SUMMARY|wall|rc=" /tmp/$name.txt | cut -c1-700 >> $OUT/log.txt; }
M=/tmp/mutant && rm -rf $M && mkdir $M && cp -r contracts controls kernels mutants.toml $M/
sed -i '27s/long long b = blockIdx.x;/int b = blockIdx.x;/' $M/kernels/tf_kv_append.hip && sed -n 27p $M/kernels/tf_kv_append.hip >> $OUT/log.txt
run h-mutant $G --backend host --root $M --only tf_kv_append --no-controls
run h-whole $G --backend host
grep -h "whole vectors\|through a C library\|x86 path of intrinsics" /tmp/h-whole.txt | cut -c1-600 >> $OUT/log.txt
(cd $M/kernels && g++ -x c++ -std=c++20 -O2 -fPIC -fvisibility=hidden -ffp-contract=off -fsanitize=thread -g1 \
  --param=tsan-instrument-func-entry-exit=0 -DSIMT_WARP=32 -DSIMT_KERNEL_TU -include host/prelude.h \
  -fdump-tree-ssa-lineno -c tf_kv_append.hip -o /tmp/k.o) >> $OUT/log.txt 2>&1
cp $M/kernels/*.ssa $OUT/ 2>/dev/null; ls $M/kernels/*ssa* /tmp/*.ssa >> $OUT/log.txt 2>&1; cp /tmp/*ssa $OUT/ 2>/dev/null
run g-mutate-kv $G mutate --backend cuda --only tf_kv_append
grep -h wall $OUT/log.txt
cd /tmp && tar czf $OUT/runs.tgz h-*.txt g-*.txt
