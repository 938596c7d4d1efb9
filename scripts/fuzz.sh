#!/usr/bin/env bash
# Fuzzes every reader of outside input: builds the `fuzz` preset (clang,
# libFuzzer, AddressSanitizer, UndefinedBehaviorSanitizer) into build-fuzz/
# and runs each target of tests/fuzz/ for SECONDS (default 60), as many at
# once as there are cores (FUZZ_JOBS to change).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     targets: spec plan profiles manifest decoders
#
# Each target starts from a copy of its seed corpus (tests/fuzz/<target>/
# stays as it is) with its dictionary, under -rss_limit_mb=2048 (one
# allocation over 2 GiB is a finding too) and -timeout=10 (an input that
# takes longer is a hang). Runs, logs, the grown corpora and any finding
# land in build-fuzz/fuzz-run/<target>/. Exit status 1 when a target found
# something: the input that did it is printed, with the command that
# replays it.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -gt 0 ]] || { echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2; }
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for d in tests/fuzz/*/; do targets+=("$(basename "$d")"); done
fi
jobs=${FUZZ_JOBS:-$(nproc)}

bash scripts/setup.sh --fuzz
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j"$(nproc)"

root=$PWD
run=$root/build-fuzz/fuzz-run
rm -rf "$run"
echo "fuzz: ${targets[*]}, ${seconds} s each, $jobs at a time, in $run"

fuzz_one() {
  local t=$1 dir=$run/$1
  mkdir -p "$dir/tmp"
  cp -r "$root/tests/fuzz/$t" "$dir/corpus"
  local dict=()
  [[ -f "$root/tests/fuzz/$t.dict" ]] && dict=(-dict="$root/tests/fuzz/$t.dict")
  # TMPDIR: the files a target writes for path-only readers stay in the run.
  (cd "$dir" && TMPDIR="$dir/tmp" "$root/build-fuzz/tests/fuzz/fuzz_$t" \
     -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
     -artifact_prefix="$dir/" "${dict[@]}" corpus >"$dir/log" 2>&1)
}

pids=() names=()
for t in "${targets[@]}"; do
  [[ -x build-fuzz/tests/fuzz/fuzz_$t ]] || { echo "fuzz: no target '$t'" >&2; exit 2; }
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n || true; done
  fuzz_one "$t" &
  pids+=($!) names+=("$t")
done

failed=0
printf '%-10s %10s %8s %16s %7s %7s  %s\n' target execs exec/s corpus cov ft result
for i in "${!pids[@]}"; do
  t=${names[$i]} dir=$run/${names[$i]}
  status=0
  wait "${pids[$i]}" || status=$?
  log=$dir/log
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  last_line=$(grep -E '^#[0-9]+.* cov: ' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last_line")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last_line")
  corpus=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<<"$last_line")
  artifacts=$(find "$dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
                -o -name 'oom-*' \) | sort)
  if [[ $status -eq 0 && -z "$artifacts" ]]; then
    result=ok
  else
    result="FINDING (exit $status)"
    failed=1
  fi
  printf '%-10s %10s %8s %16s %7s %7s  %s\n' "$t" "${execs:--}" "${rate:--}" "${corpus:--}" "${cov:--}" \
    "${ft:--}" "$result"
  if [[ "$result" != ok ]]; then
    grep -E 'ERROR|FUZZ FINDING|runtime error|SUMMARY' "$log" | head -5 | sed 's/^/    /' || true
    for a in $artifacts; do
      echo "    input: $a"
      echo "    replay: build-fuzz/tests/fuzz/fuzz_$t $a"
    done
    echo "    log: $log"
  fi
done
exit $failed
