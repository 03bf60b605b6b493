#!/usr/bin/env bash
# Session 16, call 1: U (e005d32: gate 3's large inputs sealed as they go up, the seal's host
# hash beside the upload) against T (this session: f16 decoded with F16C, bf16 by a shift,
# score_keys' dot products in eight partial sums, gate 5's large pieces sealed as copied on the
# device, and a job slot whose next large unit does not fit the memory budget running the
# small units meanwhile). The five ops and the whole suite interleaved, then --jobs 8 and 12,
# then two GPU-only cases alone. Short: the device refused nine starts before this one, and
# the session had 600 s of device time left. Carry .device with contracts-u and contracts-t.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
U=".device/contracts-u --cache-dir /tmp/cache"
T=".device/contracts-t --cache-dir /tmp/cache"
(nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv,noheader; nproc; lscpu | grep -E "Model name|Thread|Core|Socket|Flags" | cut -c1-400; grep -E "MemTotal|MemAvailable" /proc/meminfo) > $OUT/device.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
lines() { grep -E "^[a-z_0-9]+ \(" /tmp/$1.txt | LC_ALL=C sort > $OUT/$1.lines; }
# the most telling runs first: what a time limit cuts off is the last
run t-whole-cold $T --timings
run u-whole-1 $U --timings; lines u-whole-1; gzip -c reports/last/sm_90.json > $OUT/u-whole-1.json.gz
run t-whole-1 $T --timings; lines t-whole-1; gzip -c reports/last/sm_90.json > $OUT/t-whole-1.json.gz
run t-whole-j8 $T --timings --jobs 8
run u-whole-j8 $U --timings --jobs 8
for b in u t; do eval B=\$${b^^}; run $b-five-1 $B $FIVE --no-controls --timings; done
run u-whole-2 $U --timings
run t-whole-2 $T --timings
for b in u t; do eval B=\$${b^^}; run $b-five-2 $B $FIVE --no-controls --timings; done
run t-whole-j12 $T --timings --jobs 12
for oc in "tf_score_keys 10" "tf_sum_partials 10"; do
  set -- $oc
  for b in u t; do eval B=\$${b^^}; run "alone-$b-$1-$2" $B --only $1 --case $2 --no-controls --in-process --timings; done
done
grep -h wall $OUT/log.txt
