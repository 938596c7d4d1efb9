#!/usr/bin/env bash
# usage: default_command.sh WORKDIR RANKS
# `autohaap` alone under mpirun: a distributed search of the built-in
# default, printed once by rank 0, the plan of a one-process run.
source "$(dirname "$0")/common.sh"
work=$1 ranks=$2
fresh_dir "$work"
"$AUTOHAAP" >"$work/one.out"
launch "$ranks" "$AUTOHAAP" >"$work/many.out"
[[ $(grep -c "== AutoHAAP summary ==" "$work/many.out") -eq 1 ]] || fail "summary printed more than once"
grep -q "^ranks *: $ranks\$" "$work/many.out" || fail "summary does not show $ranks ranks"
diff <(top_table "$work/one.out") <(top_table "$work/many.out") || fail "top tables differ"
grep "^ranks\|^iteration_time_s" "$work/many.out"
