#!/usr/bin/env bash
# Session 20, call 9 cut to the device time left: S against R (see gpu.sh), one cache that S's
# cold run fills; the five ops on issue 15's cases at --jobs 2, the five ops with cases of
# gigabytes and the whole suite warm, alternated. Carry .device with contracts-r and contracts-s.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
R=".device/contracts-r --cache-dir /tmp/cache-rs"
S=".device/contracts-s --cache-dir /tmp/cache-rs"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
 grep -E "MemTotal|MemAvailable" /proc/meminfo; cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory.current /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; grep -E "^units of cases of gigabytes" /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
lines() { grep -E "^[a-z_0-9]+ \(" /tmp/$1.txt | LC_ALL=C sort > $OUT/$1.lines; }
GIANT="--only tf_embed_dense --only tf_embed_rows --only tf_sum_partials --only tf_apply_values --only tf_score_keys"
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
run s-whole-cold $S --timings
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
for i in 1 2; do for b in r s; do B=$(eval echo \$${b^^}); run $b-like-j2-$i $B --contracts $C $FIVE --no-controls --timings --jobs 2; done; done
for b in r s; do B=$(eval echo \$${b^^}); run $b-giant-1 $B $GIANT --timings; gzip -c reports/last/sm_90.json > $OUT/$b-giant-1.json.gz; done
for b in r s; do B=$(eval echo \$${b^^}); run $b-whole-1 $B --timings; lines $b-whole-1; gzip -c reports/last/sm_90.json > $OUT/$b-whole-1.json.gz; done
grep -h wall $OUT/log.txt
