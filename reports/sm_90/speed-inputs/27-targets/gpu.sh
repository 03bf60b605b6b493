#!/usr/bin/env bash
# Session 27, call 2: G (.device/contracts-g, a release build of main with the static check of
# the lines each target compiles, the checked math routines and printf, and the brief threads)
# on this machine's g++ 13: the host suite (no clang here: the four host-path controls, whose
# sources branch on the target, must go red all the same), then the whole suite on the GPU,
# cold then warm twice (every record green, every control red), then issue 15's five ops
# three times without their 2^31 cases (as calls 27 and 30).
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
G=".device/contracts-g --cache-dir /tmp/cache-g"
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; g++ --version | head -1; command -v clang++-22 clang-22 || echo "no clang-22"; nproc) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s" "$@" > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; grep -E "FAIL|MISSED|ERROR|error:|^timings|^processes that ended|^SUMMARY|wall|rc=" /tmp/$name.txt | cut -c1-600 >> $OUT/log.txt; }
run h-whole $G --backend host
grep -h "host_path\|plain C++\|x86 path\|C library routine" /tmp/h-whole.txt | cut -c1-700 >> $OUT/log.txt
run g-whole-cold $G --backend cuda --timings
run g-whole-1 $G --backend cuda --timings
run g-whole-2 $G --backend cuda --timings
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
for i in 1 2 3; do run g-five-$i $G --backend cuda --contracts $C $FIVE --no-controls --timings; done
grep -h wall $OUT/log.txt
cp reports/last/sm_90.json $OUT/whole-sm_90.json 2>/dev/null; gzip -f $OUT/whole-sm_90.json 2>/dev/null
cd /tmp && tar czf $OUT/runs.tgz h-*.txt g-*.txt
