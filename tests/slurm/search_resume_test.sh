#!/usr/bin/env bash
# A distributed search through the real slurm/search.sbatch (2 ranks under
# srun --mpi=pmix) is cancelled with scancel once it has written its first
# checkpoint, then submitted again with the same arguments: the second job
# must say that it resumed from the checkpoint, finish cleanly, and write
# the same plan as a plain uninterrupted run.
source "$(dirname "$0")/slurm_lib.sh"
WORK=$(work_dir search_resume)
cd "$WORK"
# Six GPU generations and the ten best plans of Llama 3 70B: a search that
# lasts tens of seconds (23 s on one thread), so there is time to cancel it
# between two checkpoints (one thread per rank keeps it that long on
# machines with many cores). GPT-3 13B's best plan on them no longer does
# since the walk's bounds count the tail (2 s on one thread), nor did five
# generations before (3 s): they ended within a second of the first
# checkpoint, before the cancel landed.
cat > generations.yaml <<'YAML'
name: six-generations
groups:
  - {device: h100-sxm, nodes: 1, gpus_per_node: 8}
  - {device: a100-80gb, nodes: 1, gpus_per_node: 8}
  - {device: a100-40gb, nodes: 1, gpus_per_node: 8}
  - {device: v100-32gb, nodes: 1, gpus_per_node: 8}
  - {device: l40s, nodes: 1, gpus_per_node: 8}
  - {device: h200, nodes: 1, gpus_per_node: 8}
YAML
search_args=(--model llama3-70b --cluster generations.yaml --top 10 --out run.json --checkpoint-interval 1 --threads 1)

# The reference: one process, no checkpoint (the best plan is the same
# whatever --top).
"$AUTOHAAP_BIN" search --model llama3-70b --cluster generations.yaml --out plain.json > plain.log ||
  fail "plain search failed: $(tail -5 plain.log)"

# 1. Submit, wait for its first checkpoint, cancel while it still runs.
job=$(sbatch --parsable -D "$WORK" -n 2 "$AUTOHAAP_SOURCE_DIR/slurm/search.sbatch" "${search_args[@]}")
log=$WORK/autohaap-search-$job.out
deadline=$((SECONDS + 240))
until [[ -s run.json.checkpoint ]]; do
  if job_states "$job" | grep -vE ' (PENDING|RUNNING|CONFIGURING) ' >/dev/null; then
    cat "$log" >&2
    fail "job $job ended before writing a checkpoint"
  fi
  (( SECONDS < deadline )) || fail "no checkpoint from job $job after 240 s"
  sleep 0.2
done
job_states "$job" | grep ' RUNNING ' >/dev/null || fail "job $job finished before it could be cancelled; the search is too short"
echo "cancelling job $job after its first checkpoint"
scancel "$job"
states=$(wait_job "$job" 60)
grep -q ' CANCELLED ' <<<"$states" || fail "job $job was not cancelled: $states"
[[ -s run.json.checkpoint ]] || fail "no checkpoint file after the cancel"

# 2. Resubmit with the same arguments: resumes and completes.
job2=$(sbatch --parsable -D "$WORK" -n 2 "$AUTOHAAP_SOURCE_DIR/slurm/search.sbatch" "${search_args[@]}")
expect_completed "$job2" 300
log2=$WORK/autohaap-search-$job2.out
grep -E 'resum' "$log2" || { cat "$log2" >&2; fail "job $job2 did not say it resumed from the checkpoint"; }
# The first checkpoint falls inside the initialization (its tasks walked so
# far) or in the search's rounds (its chunks done): either way some of the
# work was saved and some was left.
if walked=$(grep -oE '[0-9]+ of [0-9]+ tasks walked' "$log2" | head -1) && [[ -n $walked ]]; then
  read -r done_part total < <(awk '{print $1, $3}' <<<"$walked")
  unit="initialization tasks walked"
else
  read -r done_part total < <(grep -oE '[0-9]+ of [0-9]+ chunks restored' "$log2" | awk '{print $1, $3}' | head -1)
  unit="chunks done"
fi
[[ -n ${done_part:-} && $done_part -gt 0 ]] || fail "job $job2 restored nothing"
(( done_part < total )) || fail "the checkpoint was already complete ($done_part of $total $unit); nothing was resumed"
grep -qE '^status +: found$' "$log2" || fail "job $job2 found no plan"

# 3. Same plan as the plain run (the search statistics may differ).
without_search() { sed '/"search": {/,/}/d' "$1"; }
diff <(without_search plain.json) <(without_search run.json) || fail "the resumed plan differs from the plain run's"
echo "PASS: cancelled after a checkpoint, resumed with $done_part of $total $unit, same plan as a plain run"
