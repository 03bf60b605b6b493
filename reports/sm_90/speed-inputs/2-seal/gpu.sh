#!/usr/bin/env bash
# Session 15, call 2: Z (009071f) against W (+ the special values and band rows planted in
# parallel) and V (+ large host buffers on transparent huge pages, and gate 3's large inputs
# sealed as they go up: each later check hashes on the device alone). The whole suite warm,
# interleaved; each GPU-only case alone on all three; the five ops; gate 3 through the seal
# against a kernel that flips a byte of its 8 GiB table every launch (case 9) and on a small
# case (1). Carry .device with contracts-z, contracts-w, contracts-v.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
Z=".device/contracts-z --cache-dir /tmp/cache"
W=".device/contracts-w --cache-dir /tmp/cache"
V=".device/contracts-v --cache-dir /tmp/cache"
(nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv,noheader; nproc; lscpu | grep -E "Model name|Thread|Core|Socket"; grep -E "MemTotal|MemAvailable" /proc/meminfo; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; uname -r) > $OUT/device.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
run v-whole-cold $V --timings --strict-limits
run z-whole-1 $Z --timings
run v-whole-1 $V --timings; cp reports/last/sm_90.json $OUT/v-whole-1.json
run z-whole-2 $Z --timings
run v-whole-2 $V --timings
for oc in "tf_score_keys 10" "tf_sum_partials 10" "tf_embed_rows 19" "tf_apply_values 14" "tf_embed_dense 9"; do
  set -- $oc
  for b in z w v; do
    eval B=\$${b^^}
    run "alone-$b-$1-$2" $B --only $1 --case $2 --no-controls --in-process --timings
  done
done
run z-five-1 $Z $FIVE --no-controls --timings
run v-five-1 $V $FIVE --no-controls --timings
run z-five-2 $Z $FIVE --no-controls --timings
run v-five-2 $V $FIVE --no-controls --timings
K=/tmp/kernels-write-table
rm -rf $K && cp -r kernels $K && sed -i 's|^  tf_store(out, out_kind, i, v);|  if (i == 0) ((unsigned char*)table)[(long long)ids[n - 1] * k * 2] ^= 1;\n  tf_store(out, out_kind, i, v);|' $K/tf_embed_dense.hip
grep -n "ids\[n - 1\]" $K/tf_embed_dense.hip >> $OUT/log.txt
run v-writes-table-9 $V --kernels $K --only tf_embed_dense --case 9 --no-controls
run v-writes-table-1 $V --kernels $K --only tf_embed_dense --case 1 --no-controls
grep -E "^[a-z_0-9]+ \(" /tmp/z-whole-1.txt | LC_ALL=C sort > $OUT/z-whole-1.lines
grep -E "^[a-z_0-9]+ \(" /tmp/v-whole-1.txt | LC_ALL=C sort > $OUT/v-whole-1.lines
gzip $OUT/*.json
grep -h wall $OUT/log.txt
