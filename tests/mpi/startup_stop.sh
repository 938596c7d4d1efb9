#!/usr/bin/env bash
# usage: startup_stop.sh WORKDIR RANKS CLUSTER.yaml
# Under mpirun, a --time-limit reached during the initialization (eight
# node groups: it alone once took minutes, and ignored the limit) ends the
# job within seconds on every rank: exit 4, one summary block, and the best
# plan so far written when there is one.
source "$(dirname "$0")/common.sh"
work=$1 ranks=$2 cluster=$3
fresh_dir "$work"
code=0
start=$(date +%s)
LAUNCH_TIMEOUT=40 launch "$ranks" "$AUTOHAAP" search -m llama3-8b -c "$cluster" --time-limit 2 \
  -o "$work/plan.json" >"$work/out" 2>"$work/err" || code=$?
took=$(($(date +%s) - start))
cat "$work/out" "$work/err"
[[ $code -ne 124 ]] || fail "the job did not stop (killed after 40 s)"
[[ $code -eq 4 ]] || fail "exit $code, expected 4"
((took < 25)) || fail "took $took s to stop after a 2 s time limit"
[[ $(grep -c "== AutoHAAP summary ==" "$work/out") -eq 1 ]] || fail "not exactly one summary block"
if grep -Eq "^status +: time-limit-best-so-far" "$work/out"; then
  [[ -s $work/plan.json ]] || fail "a plan was found but not written"
else
  grep -Eq "^status +: interrupted-no-plan" "$work/out" || fail "unexpected status"
fi
echo "stopped after $took s with exit $code"
