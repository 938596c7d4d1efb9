#!/usr/bin/env bash
# Distributed-search benchmark: `autohaap search` in one process and under
# mpirun with 1, 2 and 4 ranks, with and without the exchange of latency-
# cache entries, on the largest case of tests/bench/search_bench.cpp
# (llama3-405b on 1024 GPUs of three types) and on searches that keep more
# skeletons in play (--top 1000 there; llama3-8b with --top 5000 on the
# three-type test cluster). Per run: wall time, CPU time, bytes exchanged,
# share of rank time spent exchanging and waiting, cache hit rate.
#
# usage: scripts/dist_bench.sh [OUT.md] [--repeat N]
#   AUTOHAAP (default build/autohaap) and MPIEXEC (default mpirun) from the
#   environment. Each configuration runs N times (default 3); the fastest
#   run is reported, since other load on the machine only ever adds time.
#   Threads per rank: cores / ranks (at least 1), so runs compare the same
#   cores. Writes a markdown table to OUT.md (default: stdout only).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-}
repeat=3
[[ ${2:-} == --repeat ]] && repeat=$3
autohaap=${AUTOHAAP:-build/autohaap}
mpiexec=${MPIEXEC:-mpirun}
cores=$(nproc)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# search_bench's "mixed-1024": 64 nodes of H100 SXM, 32 of A100 80GB, 32 of
# V100 32GB, eight GPUs each, default links.
cat >"$work/mixed-1024.yaml" <<'YAML'
name: mixed-1024
groups:
  - device: h100-sxm
    nodes: 64
    gpus_per_node: 8
  - device: a100-80gb
    nodes: 32
    gpus_per_node: 8
  - device: v100-32gb
    nodes: 32
    gpus_per_node: 8
YAML

cases=(
  "llama3-405b, 1024 GPUs (3 types), top 1|-m llama3-405b -c $work/mixed-1024.yaml"
  "llama3-405b, 1024 GPUs (3 types), top 1000|-m llama3-405b -c $work/mixed-1024.yaml --top 1000"
  "llama3-8b, 40 GPUs (3 types), top 5000|-m llama3-8b -c configs/clusters/mixed-h100-a100-v100.yaml --top 5000"
)

# One run: prints "wall_s cpu_s summary_wall_s bytes exch_s idle_s search_s hits peer_hits lookups rounds_ok".
measure() {
  local ranks=$1 flags=$2
  shift 2
  local threads=$(((cores / (ranks > 0 ? ranks : 1)) > 0 ? cores / (ranks > 0 ? ranks : 1) : 1))
  local cmd=("$autohaap" search "$@" --threads "$threads")
  if [[ $ranks -gt 0 ]]; then
    cmd=("$mpiexec" --oversubscribe --bind-to none -n "$ranks" "${cmd[@]}" --rank-report $flags)
  fi
  /usr/bin/time -f "%e %U %S" -o "$work/time" "${cmd[@]}" >"$work/run.out"
  read -r wall user sys <"$work/time"
  local summary_wall hits misses
  summary_wall=$(awk '/^wall_s/ {print $3}' "$work/run.out")
  hits=$(awk '/^cache_hits/ {print $3}' "$work/run.out")
  misses=$(awk '/^cache_misses/ {print $3}' "$work/run.out")
  # The rank table's total line ("all"), or its only line with one rank.
  local row
  row=$(awk '/^per-rank report/ {t=1; next} t && /^(all|0) / {r=$0} t && /^$/ {t=0} END {print r}' \
    "$work/run.out")
  local bytes=0 exch=0 idle=0 search=0 peer=0
  if [[ -n $row ]]; then
    read -r _ _ _ _ _ _ _ _ peer _ bytes _ search exch idle <<<"$row"
  fi
  local cpu
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')
  echo "$wall $cpu $summary_wall $bytes $exch $idle $search $hits $peer $misses"
}

best_of() {
  local best="" line
  for _ in $(seq 1 "$repeat"); do
    line=$(measure "$@")
    if [[ -z $best ]] || awk -v a="${line%% *}" -v b="${best%% *}" 'BEGIN {exit !(a < b)}'; then best=$line; fi
  done
  echo "$best"
}

{
  echo "# Distributed search benchmark"
  echo
  echo "Machine: $cores cores ($(uname -m)), $(nproc --all) hardware threads; $("$mpiexec" --version | head -1)."
  echo "Fastest of $repeat runs each. Threads per rank = cores / ranks (4 ranks on $cores cores: oversubscribed)."
  echo "CPU s = user + system time of all processes; exchange and idle shares are of the ranks' total time"
  echo "(ranks x search wall time). 'process' = plain one-process run_search, no MPI."
  echo
  for c in "${cases[@]}"; do
    label=${c%%|*}
    read -r -a args <<<"${c#*|}"
    echo "## $label"
    echo
    echo -n "| run | cache exchange | wall s | CPU s | search wall s | bytes exchanged "
    echo "| exchange share | idle share | hit rate | peer hits |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for config in "0|" "1|" "2|--cache-exchange" "4|--cache-exchange" "2|" "4|"; do
      ranks=${config%%|*}
      flags=${config#*|}
      read -r wall cpu swall bytes exch idle search hits peer misses \
        <<<"$(best_of "$ranks" "$flags" "${args[@]}")"
      name=$([[ $ranks -eq 0 ]] && echo process || echo "$ranks rank$([[ $ranks -gt 1 ]] && echo s)")
      exchange=$([[ $ranks -le 1 ]] && echo - || ([[ -n $flags ]] && echo on || echo off))
      r=$((ranks > 0 ? ranks : 1))
      share() {
        awk -v a="$1" -v r="$r" -v w="$swall" 'BEGIN {printf "%.1f%%", (w > 0 ? 100 * a / (r * w) : 0)}'
      }
      rate=$(awk -v h="$hits" -v m="$misses" 'BEGIN {printf "%.1f%%", 100 * h / (h + m)}')
      echo -n "| $name | $exchange | $wall | $cpu | $swall | $bytes "
      echo "| $(share "$exch") | $(share "$idle") | $rate | $peer |"
    done
    echo
  done
} | tee "${out:-/dev/null}"
