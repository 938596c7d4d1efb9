#!/usr/bin/env bash
# usage: kill_resume.sh WORKDIR RANKS [search flags...]
# Starts `autohaap search FLAGS --checkpoint` (under mpirun when RANKS > 0),
# kills the whole job with SIGKILL once the first checkpoint is on disk,
# then runs the same command again: it must say how many chunks it
# restored (some, not all) and write the plan an uninterrupted run writes.
source "$(dirname "$0")/common.sh"
work=$1 ranks=$2
shift 2
fresh_dir "$work"
checkpoint=$work/search.ckpt
run() { launch "$ranks" "$AUTOHAAP" search "$@" --checkpoint "$checkpoint" --checkpoint-interval 0.2 \
  --exchange-interval 0.05 -o "$work/resumed.json"; }

"$AUTOHAAP" search "$@" -o "$work/reference.json" >"$work/reference.out"

# The job in its own session, so SIGKILL reaches mpirun and every rank.
export -f launch run
export AUTOHAAP MPIEXEC ranks checkpoint work
setsid bash -c 'run "$@"' run "$@" >"$work/killed.out" 2>&1 &
job=$!
wait_for_file "$checkpoint" "$job" 600 || fail "no checkpoint was written (output: $(cat "$work/killed.out"))"
kill -KILL -- "-$job" 2>/dev/null || fail "the search had already finished; use a longer case"
# Ranks that put themselves in a process group of their own are still in
# the session: kill those too, then make sure none is left.
for pid in $(session_pids "$job"); do kill -KILL "$pid" 2>/dev/null || true; done
wait "$job" 2>/dev/null || true
for _ in $(seq 1 100); do
  [[ -z $(session_pids "$job") ]] && break
  sleep 0.05
done
[[ -z $(session_pids "$job") ]] || fail "processes of the killed job are still running"
[[ ! -e $work/resumed.json ]] || fail "the killed run finished before it was killed"

run "$@" >"$work/resumed.out" 2>&1 || fail "resumed run failed: $(cat "$work/resumed.out")"
line=$(grep "resuming from checkpoint" "$work/resumed.out") || fail "the rerun did not resume"
echo "$line"
restored=$(sed -E 's/.*: ([0-9]+) of ([0-9]+) chunks restored, ([0-9]+) to search/\1/' <<<"$line")
to_search=$(sed -E 's/.*: ([0-9]+) of ([0-9]+) chunks restored, ([0-9]+) to search/\3/' <<<"$line")
[[ $restored -gt 0 ]] || fail "nothing was restored"
[[ $to_search -gt 0 ]] || fail "nothing was left to search"
diff <(plan_without_stats "$work/reference.json") <(plan_without_stats "$work/resumed.json") ||
  fail "the resumed plan differs from an uninterrupted run's"
diff <(top_table "$work/reference.out") <(top_table "$work/resumed.out") || fail "top tables differ"
echo "resumed: $restored chunks restored, $to_search searched again; same plan"
