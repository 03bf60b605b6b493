#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 60), one after the other, and prints each
# one's exec count. Exits non-zero on any finding (a panic, a hang, an allocation over the
# limit) and prints the path of the input that caused it.
#   bash fuzz/run.sh        the CI's short run
#   bash fuzz/run.sh 600    the longer run before a release or after a parser change
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
targets=(contract_parser shape_expr)
# A hang (over 10 s for one input), a process over 2 GiB, or one allocation over 512 MiB is
# a finding, as a panic is.
limits=(-rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10)

command -v cargo-fuzz >/dev/null || {
  echo "fuzz/run.sh: cargo-fuzz is missing: cargo install cargo-fuzz --locked" >&2
  exit 2
}
# cargo-fuzz passes -Z flags (the address sanitizer) that a stable rustc takes only with this
export RUSTC_BOOTSTRAP=1

# cargo fuzz has no --locked: refuse a Cargo.lock that the build would rewrite
cargo metadata --locked --manifest-path fuzz/Cargo.toml --format-version 1 >/dev/null

# The address sanitizer is what makes -malloc_limit_mb catch one oversized allocation.
# cargo-fuzz builds with one codegen unit unless told otherwise, which leaves one of two
# cores idle on the big crates. `cargo fuzz run` must get the same flags, or it builds everything again.
build=(--release --sanitizer address --codegen-units 16)
build_start=$SECONDS
cargo fuzz build "${build[@]}"
echo "fuzz/run.sh: built in $((SECONDS - build_start)) s"

mkdir -p fuzz/logs
status=0
summary=()
for target in "${targets[@]}"; do
  # new inputs go to corpus-grown/ (ignored by git); the committed seeds in corpus/ are read only
  mkdir -p "fuzz/corpus-grown/$target" "fuzz/artifacts/$target"
  log="fuzz/logs/$target.log"
  marker="$(mktemp)"
  dictionary=()
  [ -f "fuzz/dictionaries/$target.dict" ] && dictionary=("-dict=fuzz/dictionaries/$target.dict")
  echo "fuzz/run.sh: $target for $seconds s (log: $log)"
  set +e
  cargo fuzz run "${build[@]}" "$target" "fuzz/corpus-grown/$target" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -print_final_stats=1 "${limits[@]}" "${dictionary[@]}" >"$log" 2>&1
  code=$?
  set -e
  executed="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  per_second="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  corpus="$(find "fuzz/corpus-grown/$target" -type f | wc -l)"
  line="$target: ${executed:-?} executions (${per_second:-?}/s) in $seconds s, grown corpus $corpus inputs"
  findings="$(find "fuzz/artifacts/$target" -type f -newer "$marker")"
  rm -f "$marker"
  if [ "$code" -ne 0 ] || [ -n "$findings" ]; then
    status=1
    line="$line: FINDING (exit $code)"
    tail -n 40 "$log"
    for input in $findings; do
      echo "fuzz/run.sh: $target: crashing input $input (replay: RUSTC_BOOTSTRAP=1 cargo fuzz run ${build[*]} $target $input)"
    done
  fi
  echo "fuzz/run.sh: $line"
  summary+=("$line")
done

echo
printf '%s\n' "${summary[@]}"
exit "$status"
