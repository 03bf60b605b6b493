#!/usr/bin/env bash
# Session 15, call 3: V (1b3a683: gate 3's large inputs sealed as they go up, the host's hash
# after the upload) against U (the host's hash made beside the upload): the five ops
# interleaved, the whole suite warm once each, and the GPU-only cases of 8 GiB inputs alone.
# Short: the session had 250 s of device time left. Carry .device with contracts-v and
# contracts-u.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
V=".device/contracts-v --cache-dir /tmp/cache"
U=".device/contracts-u --cache-dir /tmp/cache"
(nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv,noheader; nproc; lscpu | grep -E "Model name|Thread|Core|Socket"; grep -E "MemTotal|MemAvailable" /proc/meminfo) > $OUT/device.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
run u-five-cold $U $FIVE --no-controls --timings
run v-five-1 $V $FIVE --no-controls --timings
run u-five-1 $U $FIVE --no-controls --timings
run v-five-2 $V $FIVE --no-controls --timings
run u-five-2 $U $FIVE --no-controls --timings
for oc in "tf_embed_rows 19" "tf_embed_dense 9"; do
  set -- $oc
  run "alone-v-$1-$2" $V --only $1 --case $2 --no-controls --in-process --timings
  run "alone-u-$1-$2" $U --only $1 --case $2 --no-controls --in-process --timings
done
run u-whole-1 $U --timings
run v-whole-1 $V --timings
grep -E "^[a-z_0-9]+ \(" /tmp/u-whole-1.txt | LC_ALL=C sort > $OUT/u-whole-1.lines
grep -h wall $OUT/log.txt
