#!/usr/bin/env bash
# Session 15, call 1: speed-draw/3-whole's runs (Z = 009071f's binary, gate 5's piece inputs
# checked by the device hash; Y = eaaff51's, read back), then where a GPU-only case's first
# record spends its 3 to 6 s of "inputs": each giant case alone, in process, with --timings,
# and under `perf record` where the machine has perf.
# Carry .device with contracts-y and contracts-z (cargo build --release --bin contracts).
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
Y=".device/contracts-y --cache-dir /tmp/cache"
Z=".device/contracts-z --cache-dir /tmp/cache"
(nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv,noheader; nproc; lscpu | grep -E "Model name|Thread|Core|Socket"; grep -E "MemTotal|MemAvailable" /proc/meminfo; cat /sys/kernel/mm/transparent_hugepage/enabled; uname -r; command -v perf || echo "no perf") > $OUT/device.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
run z-whole-cold $Z --timings --strict-limits
run z-whole-1 $Z --timings; cp reports/last/sm_90.json $OUT/z-whole-1.json
run z-whole-host-1 $Z --timings --host-inputs
run y-five-1 $Y $FIVE --no-controls --timings
run z-five-1 $Z $FIVE --no-controls --timings
run y-five-2 $Y $FIVE --no-controls --timings
run z-five-2 $Z $FIVE --no-controls --timings
grep -E "^[a-z_0-9]+ \(" /tmp/z-whole-1.txt | LC_ALL=C sort > $OUT/z-whole-1.lines
grep -E "^[a-z_0-9]+ \(" /tmp/z-whole-host-1.txt | LC_ALL=C sort > $OUT/z-whole-host-1.lines
# each giant case alone (its records in turn, in this process)
for oc in "tf_score_keys 10" "tf_sum_partials 10" "tf_embed_rows 19" "tf_apply_values 14" "tf_embed_dense 9"; do
  set -- $oc
  run "alone-$1-$2" $Z --only $1 --case $2 --no-controls --in-process --timings
done
if command -v perf > /dev/null; then
  for oc in "tf_score_keys 10" "tf_sum_partials 10"; do
    set -- $oc
    perf record -F 499 -g -o /tmp/perf-$1.data $Z --backend cuda --only $1 --case $2 --no-controls --in-process > /tmp/perf-$1.out 2>&1
    perf report -i /tmp/perf-$1.data --no-children --sort dso,sym --stdio 2>/dev/null | grep -v "^$" | head -150 > $OUT/perf-$1.txt
    perf report -i /tmp/perf-$1.data --children --sort sym --stdio -g none 2>/dev/null | grep -v "^$" | head -80 > $OUT/perf-$1-children.txt
  done
fi
gzip $OUT/*.json
grep -h wall $OUT/log.txt
