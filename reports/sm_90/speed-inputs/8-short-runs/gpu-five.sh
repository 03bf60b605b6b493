#!/usr/bin/env bash
# Session 19, call 8 cut short (the session's device time left after gpu.sh's six refused
# starts was 259 s): issue 15's five ops on the cases of its pytest comparison at --jobs 2, P
# against R alternated, each warm on one shared cache (P's first run builds the five kernels),
# then the five ops with GPU-only cases of gigabytes once each. P and R as in gpu.sh.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
P=".device/contracts-p --cache-dir /tmp/cache-pr"
R=".device/contracts-r --cache-dir /tmp/cache-pr"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
run p-like-cold $P --contracts $C $FIVE --no-controls --timings --jobs 2
for i in 1 2 3; do
  run r-like-j2-$i $R --contracts $C $FIVE --no-controls --timings --jobs 2
  run p-like-j2-$i $P --contracts $C $FIVE --no-controls --timings --jobs 2
done
GIANT="--only tf_embed_dense --only tf_embed_rows --only tf_sum_partials --only tf_apply_values --only tf_score_keys"
run p-giant-cold $P $GIANT --timings
run r-giant-1 $R $GIANT --timings; gzip -c reports/last/sm_90.json > $OUT/r-giant-1.json.gz
run p-giant-1 $P $GIANT --timings; gzip -c reports/last/sm_90.json > $OUT/p-giant-1.json.gz
grep -h wall $OUT/log.txt
