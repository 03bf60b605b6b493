#!/usr/bin/env bash
# Sessions 16-17: U (e005d32: gate 3's large inputs sealed as they go up, the seal's host hash
# beside the upload) against T (f0a42eb: f16 decoded with F16C, bf16 by a shift, score_keys'
# dot products in eight partial sums, gate 5's large pieces sealed as copied on the device,
# a job slot whose next large unit does not fit the memory budget running the small units
# meanwhile) and S (4fdc19d: T, each job starting once its own kernels are built, beside the
# builds left). Cold runs first (each binary its own cache), then the whole suite warm, the
# five ops on the cases of issue 15's pytest comparison (the two cases past 2^31 elements taken
# out of a copy of the contracts), the five ops as they are, --jobs 8 and 12, then two
# GPU-only cases alone. Carry .device with contracts-u, contracts-t and contracts-s.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
U=".device/contracts-u --cache-dir /tmp/cache-t"
T=".device/contracts-t --cache-dir /tmp/cache-t"
S=".device/contracts-s --cache-dir /tmp/cache-s"
(nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv,noheader; nproc; lscpu | grep -E "Model name|Thread|Core|Socket|Flags" | cut -c1-400; grep -E "MemTotal|MemAvailable" /proc/meminfo) > $OUT/device.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
lines() { grep -E "^[a-z_0-9]+ \(" /tmp/$1.txt | LC_ALL=C sort > $OUT/$1.lines; }
# the contracts as issue 15's pytest + CuPy comparison had them: without the two GPU-only cases
# past 2^31 elements (tf_embed_dense's 8 GiB table, tf_sum_partials' 8.25 GiB of partials)
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
diff -r contracts $C > $OUT/contracts.diff
# the driver and the files warmed by a small run first (its own cache)
run warm-up .device/contracts-s --cache-dir /tmp/cache-w --only tf_add --no-controls
# the most telling runs first: what a time limit cuts off is the last
run t-whole-cold $T --timings
run s-whole-cold $S --timings
run u-whole-1 $U --timings; lines u-whole-1
run t-whole-1 $T --timings; lines t-whole-1; gzip -c reports/last/sm_90.json > $OUT/t-whole-1.json.gz
run s-whole-1 $S --timings; lines s-whole-1; gzip -c reports/last/sm_90.json > $OUT/s-whole-1.json.gz
for i in 1 2; do
  run s-like-$i $S --contracts $C $FIVE --no-controls --timings
  run s-like-inproc-$i $S --contracts $C $FIVE --no-controls --timings --in-process
  run t-like-$i $T --contracts $C $FIVE --no-controls --timings
done
for b in u t s; do eval B=\$${b^^}; run $b-five-1 $B $FIVE --no-controls --timings; done
run s-whole-j8 $S --timings --jobs 8
run t-whole-j8 $T --timings --jobs 8
run u-whole-2 $U --timings
run t-whole-2 $T --timings
run s-whole-2 $S --timings
run s-whole-j12 $S --timings --jobs 12
for oc in "tf_score_keys 10" "tf_sum_partials 10"; do
  set -- $oc
  for b in u t; do eval B=\$${b^^}; run "alone-$b-$1-$2" $B --only $1 --case $2 --no-controls --in-process --timings; done
done
grep -h wall $OUT/log.txt
