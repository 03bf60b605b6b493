#!/usr/bin/env bash
# Session 20, call 9: S (the units of cases of gigabytes taken to hold what they keep, in two
# thirds of the host's available memory, so that the five run side by side; a unit's records
# grouped by the types of their large inputs; `--timings` saying when each such unit ran and
# both budgets) against R (9584b61, call 8's, not run before) and P (dd028f9), one cache (R's
# cold run fills it): issue 15's five ops on the cases of its pytest comparison at --jobs 2
# first (the device time left may cut the call short), then the five ops with GPU-only cases
# of gigabytes alone, then the whole suite warm, each alternated (P in the five ops alone: the
# device time left was short).
# Carry .device with contracts-p, contracts-r and contracts-s.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
P=".device/contracts-p --cache-dir /tmp/cache-prs"
R=".device/contracts-r --cache-dir /tmp/cache-prs"
S=".device/contracts-s --cache-dir /tmp/cache-prs"
(nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode,compute_mode --format=csv,noheader; nproc; lscpu | grep -E "Model name" | cut -c1-200
 grep -E "MemTotal|MemAvailable" /proc/meminfo; cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory.current /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory/memory.usage_in_bytes) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; grep -E "^units of cases of gigabytes" /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
lines() { grep -E "^[a-z_0-9]+ \(" /tmp/$1.txt | LC_ALL=C sort > $OUT/$1.lines; }
GIANT="--only tf_embed_dense --only tf_embed_rows --only tf_sum_partials --only tf_apply_values --only tf_score_keys"
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
run r-whole-cold $R --timings
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
for i in 1 2; do
  for b in p r s; do B=$(eval echo \$${b^^}); run $b-like-j2-$i $B --contracts $C $FIVE --no-controls --timings --jobs 2; done
done
for i in 1 2; do
  for b in r s; do B=$(eval echo \$${b^^}); run $b-giant-$i $B $GIANT --timings
    [ $i = 1 ] && gzip -c reports/last/sm_90.json > $OUT/$b-giant-1.json.gz; done
done
for i in 1 2; do
  for b in r s; do B=$(eval echo \$${b^^}); run $b-whole-$i $B --timings
    [ $i = 1 ] && { lines $b-whole-1; gzip -c reports/last/sm_90.json > $OUT/$b-whole-1.json.gz; }; done
done
grep -h wall $OUT/log.txt
