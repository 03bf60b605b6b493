#!/usr/bin/env bash
# Session 22, call 22: N (this session's code: guard bands compared on the device, a large
# output's later launches held to its first by the keyed hash, 2 GPU jobs for small units)
# against A (b55a560). First what N must still catch: a kernel whose 16 MiB output's last
# element moves from launch to launch (red at repeat, the element named), the plain kernel on
# that case (pass), and the whole suite cold (115 pass, controls red as planted, the same
# record lines as A's). Then the walls: issue 15's five ops at the default and --jobs 2,
# alternated; in one process; the whole suite warm, alternated.
set -u
export KERNEL_CONTRACTS_NVRTC_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
export KERNEL_CONTRACTS_CUBLAS_DIR=/usr/local/cuda-13.0/targets/x86_64-linux/lib
A=".device/contracts-a --cache-dir /tmp/cache-an"
N=".device/contracts-n --cache-dir /tmp/cache-an"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc) > $OUT/log.txt 2>&1
run() { local name=$1; shift; echo "== $name: $*" >> $OUT/log.txt; /usr/bin/time -f "$name wall %e s user %U s sys %S s maxrss %M KB" "$@" --backend cuda > /tmp/$name.txt 2>&1; echo "rc=$?" >> /tmp/$name.txt; tail -4 /tmp/$name.txt >> $OUT/log.txt; (echo "==== $name: $*"; cat /tmp/$name.txt) >> $OUT/runs.txt; }
FIVE="--only tf_embed_dense --only tf_add --only tf_rms --only tf_softmax_stats --only tf_sum_partials"
C=/tmp/contracts-without-2-31
rm -rf $C && cp -r contracts $C && sed -i '/gpu_only = "[^"]*2^31/d' $C/tf_embed_dense.toml $C/tf_sum_partials.toml
R=/tmp/contracts-repeat K=/tmp/kernels-repeat
rm -rf $R $K && cp -r contracts $R && cp -r kernels $K
sed -i 's/^  { rows = 1025, k = 1 },$/  { rows = 1025, k = 1 },\n  { rows = 4100, k = 1024 },/' $R/tf_add.toml
grep -n "rows = 4100" $R/tf_add.toml >> $OUT/log.txt
python3 - $K/tf_add.hip <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
s = s.replace('extern "C"', '__device__ unsigned tf_add_launches;\n\nextern "C"', 1)
s = s.replace('  tf_store(out, out_kind, i, tf_load(a, a_kind, i) + tf_load(b, b_kind, i));',
 '  float sum = tf_load(a, a_kind, i) + tf_load(b, b_kind, i);\n  if (i == (long long)rows * k - 1) sum += (float)atomicAdd(&tf_add_launches, 1u);\n  tf_store(out, out_kind, i, sum);')
open(p, 'w').write(s)
PY
cat $K/tf_add.hip >> $OUT/log.txt
run n-repeat-moving $N --contracts $R --kernels $K --only tf_add --record f32 --case 8 --no-controls --timings
run a-repeat-moving $A --contracts $R --kernels $K --only tf_add --record f32 --case 8 --no-controls --timings
run n-repeat-plain $N --contracts $R --only tf_add --record f32 --case 8 --no-controls --timings
run n-whole-cold $N --timings
cp reports/last/sm_90.json /tmp/n-whole.json
run a-whole-1 $A --timings
cp reports/last/sm_90.json /tmp/a-whole.json
for i in 1 2 3; do for b in a n; do B=$(eval echo \$${b^^}); run $b-like-default-$i $B --contracts $C $FIVE --no-controls --timings; run $b-like-j2-$i $B --contracts $C $FIVE --no-controls --timings --jobs 2; done; done
for b in a n; do B=$(eval echo \$${b^^}); run $b-like-in-process $B --contracts $C $FIVE --no-controls --timings --in-process; done
for i in 2; do for b in n a; do B=$(eval echo \$${b^^}); run $b-whole-$i $B --timings; done; done
for b in a n; do grep -E " (pass|fail|red|missed|error|known)" /tmp/$b-whole-1.txt /tmp/$b-whole-cold.txt 2>/dev/null | sed -E 's/^[^:]*://; s/[0-9.]+ s\b//g' | sort > /tmp/$b-lines.txt; done
diff /tmp/a-lines.txt /tmp/n-lines.txt > $OUT/whole-lines.diff; echo "record-line diff rc=$? lines $(wc -l < $OUT/whole-lines.diff)" >> $OUT/log.txt
gzip -c /tmp/n-whole.json > $OUT/n-whole.json.gz
grep -h wall $OUT/log.txt
