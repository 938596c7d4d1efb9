#!/usr/bin/env bash
# usage: mpirun_sigterm.sh WORKDIR RANKS [search flags...]
# SIGTERM to mpirun itself (what a user's kill or a batch system's stop of
# the launcher sends): Open MPI passes it on to the ranks and kills them
# about a second later. Once the search holds a plan (its first checkpoint
# is on disk), the plan file must be there afterwards and valid, whatever
# mpirun's own exit code.
source "$(dirname "$0")/common.sh"
work=$1 ranks=$2
shift 2
fresh_dir "$work"
checkpoint=$work/search.ckpt

export -f launch
export AUTOHAAP MPIEXEC ranks work checkpoint
setsid bash -c 'exec "$MPIEXEC" --oversubscribe --bind-to none -n "$ranks" "$AUTOHAAP" search "$@" \
  --checkpoint "$checkpoint" --checkpoint-interval 0.2 -o "$work/plan.json"' run "$@" \
  >"$work/out.txt" 2>"$work/err.txt" &
job=$!
wait_for_file "$checkpoint" "$job" 1500 ||
  fail "no checkpoint was written (output: $(cat "$work/out.txt" "$work/err.txt"))"
kill -0 "$job" 2>/dev/null || fail "the search had already finished; use a longer case"
kill -TERM "$job"
# mpirun passes the signal on and kills the ranks about a second later. On a
# loaded two-core machine it has been seen, rarely, to stay up after its
# ranks had written the plan and ended: 20 s after the signal the session is
# killed, as a batch system does after its grace period, and what was left
# running is printed.
for _ in $(seq 1 400); do
  kill -0 "$job" 2>/dev/null || break
  sleep 0.05
done
if kill -0 "$job" 2>/dev/null; then
  echo "mpirun still running 20 s after SIGTERM; killing the session. Its processes:" >&2
  for pid in $(session_pids "$job"); do echo "  $pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" >&2; done
  kill -KILL -- "-$job" 2>/dev/null || true
fi
code=0
wait "$job" || code=$?
for _ in $(seq 1 100); do
  [[ -z $(session_pids "$job") ]] && break
  sleep 0.05
done
[[ -z $(session_pids "$job") ]] || fail "processes of the stopped job are still running"
[[ -s $work/plan.json ]] || fail "mpirun exited $code and left no plan (output: $(cat "$work/out.txt" "$work/err.txt"))"
"$AUTOHAAP" validate "$work/plan.json" || fail "the plan left behind is not valid"
echo "mpirun stopped with exit $code; plan written and valid"
