#!/usr/bin/env bash
# usage: startup_stop.sh WORKDIR RANKS CLUSTER.yaml
# Under mpirun, a --time-limit reached during the initialization (eight
# node groups: it alone once took minutes, and ignored the limit), or a
# SIGTERM to every rank then (what scancel sends), ends the job within
# seconds on every rank: exit 4, one summary block, and the best plan so
# far written when there is one.
source "$(dirname "$0")/common.sh"
work=$1 ranks=$2 cluster=$3
fresh_dir "$work"

# check WHAT CODE: exit 4, one summary block, a plan written if one was found.
check() {
  local what=$1 code=$2
  cat "$work/$what.out" "$work/$what.err"
  [[ $code -ne 124 ]] || fail "$what: the job did not stop (killed after 40 s)"
  [[ $code -eq 4 ]] || fail "$what: exit $code, expected 4"
  [[ $(grep -c "== AutoHAAP summary ==" "$work/$what.out") -eq 1 ]] || fail "$what: not exactly one summary block"
  if grep -Eq "^status +: time-limit-best-so-far" "$work/$what.out"; then
    [[ -s $work/$what.json ]] || fail "$what: a plan was found but not written"
  else
    grep -Eq "^status +: interrupted-no-plan" "$work/$what.out" || fail "$what: unexpected status"
  fi
}

code=0
start=$(date +%s)
LAUNCH_TIMEOUT=40 launch "$ranks" "$AUTOHAAP" search -m llama3-8b -c "$cluster" --time-limit 2 \
  -o "$work/limit.json" >"$work/limit.out" 2>"$work/limit.err" || code=$?
took=$(($(date +%s) - start))
check limit $code
((took < 25)) || fail "limit: took $took s to stop after a 2 s time limit"
echo "time limit: stopped after $took s with exit $code"

# SIGTERM to every rank (not to mpirun) 3 s after the start, in the
# middle of the initialization.
export -f launch
export AUTOHAAP MPIEXEC ranks cluster work
setsid bash -c 'LAUNCH_TIMEOUT=40 launch "$ranks" "$AUTOHAAP" search -m llama3-8b -c "$cluster" \
  -o "$work/term.json" >"$work/term.out" 2>"$work/term.err"' &
job=$!
sleep 3
signalled=0
for pid in $(session_pids "$job"); do
  if [[ $(cat "/proc/$pid/comm" 2>/dev/null) == autohaap ]]; then
    kill -TERM "$pid" 2>/dev/null && signalled=$((signalled + 1))
  fi
done
[[ $signalled -eq $ranks ]] || fail "term: signalled $signalled processes, expected $ranks ranks"
start=$(date +%s)
code=0
wait "$job" || code=$?
took=$(($(date +%s) - start))
check term $code
((took < 20)) || fail "term: took $took s to stop after SIGTERM"
echo "SIGTERM: stopped after $took s with exit $code"
