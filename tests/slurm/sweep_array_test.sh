#!/usr/bin/env bash
# A sweep as a job array through the real slurm/sweep.sbatch: one task per
# manifest entry, all running at once into one folder. Every entry must end
# with a plan file that `autohaap validate` accepts, and the summary the
# tasks rebuilt concurrently must list every entry as found.
source "$(dirname "$0")/slurm_lib.sh"
WORK=$(work_dir sweep_array)
manifest=$AUTOHAAP_SOURCE_DIR/jobs/sweep-gpt3.yaml
count=$("$AUTOHAAP_BIN" batch "$manifest" --count)
(( count >= 2 )) || fail "the sweep should have several entries, has $count"

job=$(sbatch --parsable -D "$WORK" --array=0-$((count - 1)) "$AUTOHAAP_SOURCE_DIR/slurm/sweep.sbatch" \
  "$manifest" "$WORK/out")
echo "submitted array job $job with $count tasks"
expect_completed "$job" 120
[[ $(job_states "$job" | wc -l) -eq $count ]] || fail "expected $count array tasks"

mapfile -t names < <("$AUTOHAAP_BIN" batch "$manifest" --list | awk '{print $2}')
for name in "${names[@]}"; do
  [[ -s $WORK/out/$name.json ]] || fail "no plan for $name"
  [[ $(summary_status "$WORK/out" "$name") == found ]] || fail "$name is not 'found' in the summary"
done
"$AUTOHAAP_BIN" validate "$WORK/out"/*__*.json >/dev/null || fail "a plan file does not validate"
rows=$(($(wc -l < "$WORK/out/summary.csv") - 1))
(( rows == count )) || fail "summary.csv has $rows rows, expected $count"
grep -q "\"found\": $count" "$WORK/out/summary.json" || fail "summary.json does not count $count found"
ls "$WORK"/autohaap-sweep-"${job}"_*.out >/dev/null || fail "no task logs"
echo "PASS: $count array tasks, $count plans, summary complete"
