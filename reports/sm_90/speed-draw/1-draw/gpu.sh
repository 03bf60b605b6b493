#!/usr/bin/env bash
# Session 13, call 1: H (e5b21b8, the last session's end) against D (large inputs drawn on
# the device by the harness's kernel, harness/src/inputs/draw.hip, and gate 3 checking them
# by a keyed hash on the device): issue 15's five ops, D's whole suite warm and its record
# lines, and gate 3 on the hash against a kernel that writes into its table.
# Session 14: D is 6f6724e's build (session 13's flag, and the drawing kernel's source checked
# once a process), P 28dd9fd's (kernels built in the order jobs start, each job started as
# soon as its own are built): P and D cold on fresh cache folders, at the end.
# Build the binary of the commit to measure (`cargo build --release --bin contracts`), copy it
# to .device/contracts-d, keep .device/contracts-h (7cb56e5's build: e5b21b8 runs the same records), carry .device. Compare D's
# record lines with H's whole run of reports/sm_90/speed-3791c17/5-head (the same records;
# only the two race controls' differing elements change from run to run).
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
H=.device/contracts-h
D=".device/contracts-d --device-inputs"
P=".device/contracts-p --device-inputs"
(nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv,noheader; nproc; lscpu | grep -E "Model name|Thread|Core|Socket"; grep -E "MemTotal|MemAvailable" /proc/meminfo) > $OUT/device.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
# gate 3 on the hash: a copy of tf_embed_dense's kernel that flips one bit of the table at the
# last id's row (4 GiB in), on the GPU-only case of an 8 GiB table (case 9) and a small one (1)
W=/tmp/kernels-write-table
rm -rf $W && cp -r kernels $W && sed -i 's|^  tf_store(out, out_kind, i, v);|  if (i == 0) ((unsigned char*)table)[(long long)ids[n - 1] * k * 2] ^= 1;\n  tf_store(out, out_kind, i, v);|' $W/tf_embed_dense.hip
grep -n "ids\[n - 1\]" $W/tf_embed_dense.hip >> $OUT/log.txt
run d-five-cold $D $FIVE --no-controls --timings --strict-limits
run d-five-1 $D $FIVE --no-controls --timings
run h-five-1 $H $FIVE --no-controls --timings
run d-writes-table-9 $D --kernels $W --only tf_embed_dense --case 9 --no-controls
run d-whole-1 $D --timings; cp reports/last/sm_90.json $OUT/d-whole-1.json
run d-five-2 $D $FIVE --no-controls --timings
run d-writes-table-1 $D --kernels $W --only tf_embed_dense --case 1 --no-controls
run p-five-cold $P $FIVE --no-controls --timings --cache-dir /tmp/cold-p
run d-five-cold2 $D $FIVE --no-controls --timings --cache-dir /tmp/cold-d
run p-whole-1 $P --timings
# record and control lines (the timing columns apart), compared afterwards with H's whole run
# of reports/sm_90/speed-3791c17/5-head (the same record paths as e5b21b8)
grep -E "^[a-z_0-9]+ \(" /tmp/d-whole-1.txt | sort > $OUT/d-whole-1.lines
gzip $OUT/*.json
grep -h wall $OUT/log.txt
