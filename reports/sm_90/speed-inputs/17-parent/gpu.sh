#!/usr/bin/env bash
# Session 21, call 17: where the parent's time goes before a GPU run starts (a probe build of
# 2f3f9c4, uncommitted: with KC_PROBE set, the parent prints seconds since main at each step of
# its start) in issue 15's five ops at --jobs 2 and at the default, each twice after a cold run.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
P=".device/contracts-probe3 --cache-dir /tmp/cache-q"
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
$P --contracts $C $FIVE --no-controls --backend cuda > /dev/null 2>&1
for i in 1 2; do for j in 2 4; do
  echo "== jobs $j, $i" >> $OUT/log.txt
  ( time KC_PROBE=1 $P --contracts $C $FIVE --no-controls --timings --jobs $j --backend cuda ) > /tmp/p.txt 2>&1
  grep -E "PROBE|^timings|^real|all 19" /tmp/p.txt >> $OUT/log.txt
done; done
cat $OUT/log.txt
