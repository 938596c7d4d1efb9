#!/usr/bin/env bash
# usage: same_plan.sh WORKDIR RANKS [search flags...]
# `autohaap search FLAGS` in one process and under mpirun with RANKS ranks
# must write the same plan (all but the `search` statistics) and print the
# same top-K table and the same proven bound (gap 0); the distributed run's
# summary must show its rank count, and only rank 0 may print.
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
# The proven bound is the job's: the same as one process's, and a search run
# to the end has closed its gap.
diff <(grep -E "^(bound_s|gap) " "$work/one.out") <(grep -E "^(bound_s|gap) " "$work/many.out") ||
  fail "bound or gap differ between 1 process and $ranks ranks"
grep -q "^gap *: 0.0000\$" "$work/many.out" || fail "a search run to the end must show gap 0"

[[ $(grep -c "== AutoHAAP summary ==" "$work/many.out") -eq 1 ]] || fail "summary printed more than once"
echo "same plan with 1 process and $ranks ranks"
