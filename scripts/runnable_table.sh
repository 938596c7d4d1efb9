#!/usr/bin/env bash
# The README's "price of the runtime" table: for each mixed cluster and
# model, `search --runnable megatron` and the comparison it prints
# (unrestricted best, Megatron-runnable best, best uniform plan on the
# fastest device alone, best uniform plan over all GPUs), and whether
# `export --to megatron` runs the plan (exit 0: a complete launch).
# Usage: scripts/runnable_table.sh [AUTOHAAP]   (default: build/autohaap)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
autohaap=${1:-$here/build/autohaap}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
clusters=(mixed-a100-v100 mixed-h100-a100 mixed-h100-a100-v100
          "$here/tests/bench/clusters/a100-v100-64.yaml" "$here/tests/bench/clusters/h100-a100-256.yaml"
          "$here/tests/bench/clusters/h100-a100-v100-1024.yaml")
models=(llama3-8b llama3-70b)
value() { sed -n "s/^$1 *: //p" "$work/out.txt"; }
echo "| cluster | GPUs | model | unrestricted | Megatron-runnable | uniform, fastest device alone | uniform, all GPUs | export |"
echo "|---|---|---|---|---|---|---|---|"
for c in "${clusters[@]}"; do
  for m in "${models[@]}"; do
    set +e
    "$autohaap" search -m "$m" -c "$c" --runnable megatron -o "$work/plan.json" > "$work/out.txt" 2>&1
    set -e
    name=$(basename "$c" .yaml)
    gpus=$(sed -n 's/^AutoHAAP search: .* (\([0-9]*\) GPUs.*/\1/p' "$work/out.txt")
    best=$(value iteration_time_s)
    if [ "$(value status)" != found ]; then best="none fits"; fi
    exported=-
    if [ "$best" != "none fits" ]; then
      if "$autohaap" export "$work/plan.json" --to megatron > /dev/null 2>&1; then exported="runs"; else exported="refused"; fi
      best="$(printf '%.2f s' "$best")"
    fi
    fmt() { case "$1" in none|"") echo "none fits" ;; *) printf '%.2f s' "$1" ;; esac; }
    echo "| $name | $gpus | $m | $(fmt "$(value unrestricted_time_s)") | $best | $(fmt "$(value uniform_alone_time_s)") | $(fmt "$(value uniform_all_time_s)") | $exported |"
    rm -f "$work/plan.json"
  done
done
