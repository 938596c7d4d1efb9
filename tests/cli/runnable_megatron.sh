#!/usr/bin/env bash
# search --runnable megatron end to end: the search keeps to one tp x dp and
# one recompute mode, prints the price of the runtime against the
# unrestricted best and the uniform plans, and the plan it writes exports to
# Megatron-LM arguments (exit 0) and a node launch order.
# Usage: runnable_megatron.sh AUTOHAAP WORKDIR
set -euo pipefail
autohaap=$1
work=$2
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

out=$("$autohaap" search -m gpt3-1.3b -c mixed-h100-a100-v100 --runnable megatron --explain -o "$work/plan.json" \
  --report "$work/plan.html")
echo "$out" | grep -Eq '^not_runnable +[1-9][0-9]*$' || fail "no skeleton counted under not_runnable"
echo "$out" | grep -q '^price of the runtime' || fail "no runtime price table"
for row in 'unrestricted best \(any runtime\)' 'megatron-runnable best \(this plan\)' 'best uniform plan, all GPUs' \
           'best uniform plan, h100-sxm alone \(8 GPUs\)'; do
  echo "$out" | grep -Eq "^$row +[0-9.]+ +[-+][0-9.]+%" || fail "price row missing: $row"
done
echo "$out" | grep -Eq '^runnable +: megatron$' || fail "summary lacks runnable"
best=$(echo "$out" | sed -n 's/^iteration_time_s *: //p')
free=$(echo "$out" | sed -n 's/^unrestricted_time_s *: //p')
awk -v b="$best" -v f="$free" 'BEGIN { exit !(f <= b * (1 + 1e-9)) }' || fail "unrestricted $free slower than runnable $best"
# One tp x dp and one recompute mode on every stage.
stages=$(echo "$out" | sed -n 's/^stages *: //p')
shapes=$(echo "$stages" | tr '|' '\n' | awk '{print $2, $4}' | sort -u | wc -l)
[ "$shapes" -eq 1 ] || fail "stages differ in tp x dp or recompute: $stages"

grep -q '<h2>Compared with</h2>' "$work/plan.html" || fail "the report lacks the comparison"
grep -q '<td>unrestricted best (any runtime)</td>' "$work/plan.html" || fail "the report lacks the unrestricted best"
"$autohaap" export "$work/plan.json" --to megatron > "$work/megatron.txt" || fail "megatron export refused the plan"
grep -q -- '--tensor-model-parallel-size' "$work/megatron.txt" || fail "no Megatron arguments"
"$autohaap" export "$work/plan.json" --to nodelist > "$work/nodes.txt" || fail "nodelist export failed"
grep -q '^h100-sxm-node0 ' "$work/nodes.txt" || fail "node list lacks the H100 node"
echo "ok: runnable megatron plan $best s, unrestricted $free s"
