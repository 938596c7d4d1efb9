#!/usr/bin/env bash
# `validate` says of a plan what estimate, report and export would: a plan
# whose embedded specs were edited so that it no longer fits had been
# "valid" (exit 0) while all three refused it; a predicted block that
# claims other memory than the plan needs had been read without a word; a
# plan whose format tag was deleted was refused as a training file.
# usage: validate_plan_checks.sh AUTOHAAP PLAN_FILE
set -uo pipefail
autohaap=$1
plan=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
expect() {  # expect WHAT RC REGEX FILE
  local what=$1 rc_wanted=$2 regex=$3 file=$4
  "$autohaap" validate "$file" >"$work/out" 2>&1
  local rc=$?
  if [[ $rc -ne $rc_wanted ]] || ! grep -Eq "$regex" "$work/out"; then
    echo "FAIL: $what: exit $rc (wanted $rc_wanted), output: $(cat "$work/out")"
    fail=1
  else
    echo "ok: $what: exit $rc"
  fi
}
"$autohaap" estimate --plan "$plan" -o "$work/plan.json" >/dev/null || { echo "FAIL: writing the plan"; exit 1; }
expect "the plan as written" 0 "valid plan$" "$work/plan.json"
# Every GPU edited to 1 GiB: the plan no longer fits.
sed 's/"memory_GiB": [0-9.]*/"memory_GiB": 1/' "$work/plan.json" >"$work/small.json"
expect "specs edited to 1 GiB" 3 "does not fit in memory: stage [0-9]+ needs .* of its 1.0 GiB" "$work/small.json"
# The predicted block edited to 100 GiB a GPU.
# (a list of the two stages' figures, one a line).
sed '/"stage_memory_GiB"/{n;s/[0-9][0-9.]*/100/;n;s/[0-9][0-9.]*/100/}' "$work/plan.json" >"$work/claims.json"
cmp -s "$work/plan.json" "$work/claims.json" && { echo "FAIL: no stage_memory_GiB to edit"; fail=1; }
expect "predicted memory edited" 0 "says 100.00 GiB on its fullest GPU \(fits\); priced here" "$work/claims.json"
# The format tag deleted.
grep -v '"format"' "$work/plan.json" >"$work/untagged.json"
expect "format deleted" 2 "format: got '<missing>'.*a plan: it has stages" "$work/untagged.json"
exit $fail
