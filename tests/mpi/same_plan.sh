#!/usr/bin/env bash
# usage: same_plan.sh WORKDIR RANKS [search flags...]
# `autohaap search FLAGS` in one process and under mpirun with RANKS ranks
# must write the same plan (all but the `search` statistics) and print the
# same top-K table; the distributed run's summary must show its rank count,
# and only rank 0 may print.
source "$(dirname "$0")/common.sh"
work=$1 ranks=$2
shift 2
fresh_dir "$work"

"$AUTOHAAP" search "$@" -o "$work/one.json" >"$work/one.out"
launch "$ranks" "$AUTOHAAP" search "$@" -o "$work/many.json" >"$work/many.out"

diff <(plan_without_stats "$work/one.json") <(plan_without_stats "$work/many.json") ||
  fail "plans differ between 1 process and $ranks ranks"
[[ -n $(top_table "$work/one.out") ]] || fail "no top table printed"
diff <(top_table "$work/one.out") <(top_table "$work/many.out") || fail "top tables differ"
grep -q "^ranks *: $ranks\$" "$work/many.out" || fail "summary does not show $ranks ranks"
[[ $(grep -c "== AutoHAAP summary ==" "$work/many.out") -eq 1 ]] || fail "summary printed more than once"
echo "same plan with 1 process and $ranks ranks"
