#!/usr/bin/env bash
# Session 22, call 20: where issue 15's five ops spend a record's "gates" (12-28 ms of a small
# record on the GPU against 2-5 ms on the host) and the rest. A (contracts-a, b55a560) alone:
# the five ops at --jobs 1, 2 and the default, twice; then in one process under nsys (the CUDA
# API calls, their counts and times) and perf where either exists.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
A=".device/contracts-a --cache-dir /tmp/cache-a"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
 ls /usr/local/cuda-13.0/bin | tr '\n' ' '; echo; which nsys perf ltrace strace; ls -d /opt/nvidia/nsight* /usr/local/cuda*/nsight* 2>/dev/null) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
run a-like-cold $A --contracts $C $FIVE --no-controls --timings
for i in 1 2; do for j in 1 2 4; do run a-like-j$j-$i $A --contracts $C $FIVE --no-controls --timings --jobs $j; done; done
run a-like-in-process $A --contracts $C $FIVE --no-controls --timings --in-process
NSYS=$(which nsys 2>/dev/null || ls /usr/local/cuda-13.0/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -n "$NSYS" ]; then
  echo "== nsys: $NSYS" >> $OUT/log.txt
  $NSYS profile -o /tmp/five --force-overwrite true --trace=cuda,osrt --sample=cpu .device/contracts-a --cache-dir /tmp/cache-a --contracts $C $FIVE --no-controls --timings --in-process --backend cuda > /tmp/nsys-run.txt 2>&1
  tail -5 /tmp/nsys-run.txt >> $OUT/log.txt
  $NSYS stats -r cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,osrt_sum -f csv -o /tmp/five-stats /tmp/five.nsys-rep >> $OUT/log.txt 2>&1
  for f in /tmp/five-stats*.csv; do echo "#### $f"; head -60 $f; done > $OUT/nsys-stats.txt
  $NSYS stats -r cuda_api_trace -f csv -o /tmp/five-trace /tmp/five.nsys-rep >> $OUT/log.txt 2>&1
  gzip -c /tmp/five-trace*.csv > $OUT/nsys-api-trace.csv.gz
fi
if which perf > /dev/null 2>&1; then
  perf record -F 2000 -g -o /tmp/perf.data .device/contracts-a --cache-dir /tmp/cache-a --contracts $C $FIVE --no-controls --in-process --backend cuda > /dev/null 2>&1
  perf report -i /tmp/perf.data --stdio --no-children --percent-limit 0.5 2>/dev/null | head -400 > $OUT/perf.txt
fi
grep -h wall $OUT/log.txt
