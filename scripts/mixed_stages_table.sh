#!/usr/bin/env bash
# The README's "Mixed stages" table: for each long-tail cluster and model,
# the best plan of `autohaap search` with mixed stages (the default) and
# with --no-mixed-stages, and how much faster mixing makes it.
# Usage: scripts/mixed_stages_table.sh [AUTOHAAP]   (default: build/autohaap)
#   TRAIN=FILE: a training file for every search (default: the built-in),
#   e.g. tests/data/replicas/per-replica.yaml for micro-batch sizes per replica.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
autohaap=${1:-$here/build/autohaap}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
clusters=("$here/tests/bench/clusters/longtail-h100-v100-t4.yaml"
          "$here/tests/bench/clusters/longtail-a100-a10040-v100.yaml"
          "$here/tests/bench/clusters/longtail-h100-a100-l40s.yaml"
          "$here/tests/data/replicas/h100-a100-pair.yaml")
models=(gpt3-125m gpt3-1.3b gpt3-6.7b llama3-8b gpt3-13b)
value() { sed -n "s/^$1 *: //p" "$2"; }
echo "| cluster | GPUs | model | mixed stages | one device per stage | faster by | best plan |"
echo "|---|---|---|---|---|---|---|"
for c in "${clusters[@]}"; do
  for m in "${models[@]}"; do
    "$autohaap" search -m "$m" -c "$c" ${TRAIN:+-t "$TRAIN"} > "$work/mixed.txt" 2>&1 || true
    "$autohaap" search -m "$m" -c "$c" ${TRAIN:+-t "$TRAIN"} --no-mixed-stages > "$work/plain.txt" 2>&1 || true
    gpus=$(sed -n 's/^AutoHAAP search: .* (\([0-9]*\) GPUs.*/\1/p' "$work/mixed.txt")
    if [ "$(value status "$work/mixed.txt")" != found ]; then
      echo "| $(basename "$c" .yaml) | $gpus | $m | none fits | none fits | - | - |"
      continue
    fi
    a=$(value iteration_time_s "$work/mixed.txt")
    b=$(value iteration_time_s "$work/plain.txt")
    gain=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f%%", 100 * (b - a) / b }')
    plan=$(value stages "$work/mixed.txt")
    case "$plan" in *+*) ;; *) plan="(one device per stage)" ;; esac
    printf '| %s | %s | %s | %.3f s | %.3f s | %s | %s |\n' "$(basename "$c" .yaml)" "$gpus" "$m" "$a" "$b" "$gain" "$plan"
  done
done
