#!/bin/bash
# sm_90: the planted copies of the small GPU-only cases, and the red-team bugs that only a GPU-only case reaches
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=$KERNEL_CONTRACTS_NVRTC_DIR
B=.device/contracts
R=$OUT/r; mkdir -p $R; LOG=$R/log.txt
GIANT="tf_sum_partials tf_score_keys tf_embed_rows tf_embed_dense tf_apply_values"
only=""; for f in contracts/*.toml; do o=$(basename $f .toml); [[ " $GIANT " == *" $o "* ]] || only="$only --only $o"; done
run() { echo "== $*" >> $LOG; local t0=$(date +%s%N); "$@" >> $LOG 2>&1; echo "== rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms" >> $LOG; }
run $B --backend cuda --strict-limits --timings --jobs 12 $only --report $R/small.json
run $B --backend cuda --strict-limits --no-controls --only tf_sum_partials --case 9 --report $R/sum_partials_rows.json
run $B --backend cuda --strict-limits --no-controls --only tf_apply_values --case 13 --report $R/c1.json
run $B --backend cuda --strict-limits --no-controls --only tf_apply_values --case 15 --report $R/c2.json
run $B --backend cuda --strict-limits --no-controls --only tf_score_keys --case 11 --report $R/c3.json
run $B --backend cuda --strict-limits --no-controls --only tf_embed_dense --case 10 --report $R/c4.json
bug() { local key=$1 op=$2 rec=$3 case=$4; run $B --backend cuda --no-controls --kernels .device/bugs/$key/kernels --only $op --record "$rec" --case $case --report $R/bug-$key.json; }
bug g1__tf_embed_dense__block_index_16bit tf_embed_dense "fp32 table, f32 out" 10
bug g2__tf_rms__row_index_16bit tf_rms f32 7
bug g2__tf_kv_append__page_index_u16 tf_kv_append "f32 rows, f16 cache" 11
bug g3__tf_sum_partials_act__nan_gate_large_row tf_sum_partials_act "f32 gate, f32 out" 9
bug g3__tf_score_keys__adversarial_far_blocks tf_score_keys "f32 q, f16 cache" 10
bug g1__tf_embed_rows__int32_word_offset tf_embed_rows "f16 scales, f32 out" 19
bug g1__common.h__load_index_int tf_embed_dense "fp32 table, f32 out" 9
grep -h "^==\|^SUMMARY\| FAIL \| ERROR" $LOG | cut -c1-400 > $OUT/summary.txt
tar czf $OUT/verify.tgz -C $OUT r
