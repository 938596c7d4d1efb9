#!/usr/bin/env bash
# usage: kill_resume.sh WORKDIR RANKS PHASE [search flags...]
# Starts `autohaap search FLAGS --checkpoint` (under mpirun when RANKS > 0),
# kills the whole job with SIGKILL once the first checkpoint is on disk,
# then runs the same command again: it must resume, and write the plan an
# uninterrupted run writes. PHASE is where the first checkpoint falls:
# `search` (it must say how many chunks it restored: some, not all, and
# that it restored the initialization without walking it again) or
# `initialization` (how many of the initialization's tasks were walked:
# some, not all).
source "$(dirname "$0")/common.sh"
work=$1 ranks=$2 phase=$3
shift 3
[[ $phase == search || $phase == initialization ]] || fail "PHASE must be search or initialization, not '$phase'"
fresh_dir "$work"
checkpoint=$work/search.ckpt
# An initialization's first rounds take a fraction of a second: a short
# interval puts the first checkpoint inside it. A search-phase case has
# one round of initialization tasks, which is never saved (its end is).
interval=0.2
[[ $phase == initialization ]] && interval=0.05
run() { launch "$ranks" "$AUTOHAAP" search "$@" --checkpoint "$checkpoint" --checkpoint-interval "$interval" \
  --exchange-interval 0.05 -o "$work/resumed.json"; }

"$AUTOHAAP" search "$@" -o "$work/reference.json" >"$work/reference.out"

# The job in its own session, so SIGKILL reaches mpirun and every rank.
export -f launch run
export AUTOHAAP MPIEXEC ranks checkpoint work interval
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
if [[ $phase == search ]]; then
  # Killed after its initialization: the checkpoint holds it whole, and
  # the rerun does not walk it again.
  grep -q "its initialization (.*) restored, not walked again" "$work/resumed.out" ||
    fail "the rerun walked the initialization again: $(cat "$work/resumed.out")"
  line=$(grep "resuming from checkpoint.*chunks restored" "$work/resumed.out") || fail "the rerun did not resume its search"
  pattern='.*: ([0-9]+) of ([0-9]+) chunks restored, ([0-9]+) to search'
  done_part=$(sed -E "s/$pattern/\1/" <<<"$line")
  left=$(sed -E "s/$pattern/\3/" <<<"$line")
else
  line=$(grep "resuming the initialization from checkpoint" "$work/resumed.out") ||
    fail "the rerun did not resume its initialization: $(cat "$work/resumed.out")"
  pattern='.*: ([0-9]+) of ([0-9]+) tasks walked, .*'
  done_part=$(sed -E "s/$pattern/\1/" <<<"$line")
  left=$(($(sed -E "s/$pattern/\2/" <<<"$line") - done_part))
fi
echo "$line"
[[ $done_part -gt 0 ]] || fail "nothing was restored"
[[ $left -gt 0 ]] || fail "nothing was left to do"
diff <(plan_without_stats "$work/reference.json") <(plan_without_stats "$work/resumed.json") ||
  fail "the resumed plan differs from an uninterrupted run's"
diff <(top_table "$work/reference.out") <(top_table "$work/resumed.out") || fail "top tables differ"
echo "resumed in its $phase: $done_part done before the kill, $left after; same plan"
