#!/usr/bin/env bash
# Output that cannot be written is an error, not exit 0: an export, an
# estimate or a count sent to a full disk (/dev/full) once ended with exit 0
# and an empty or truncated file where the caller redirected it.
# usage: stdout_write_failure.sh AUTOHAAP PLAN_FILE
set -uo pipefail
autohaap=$1
plan=$2
[[ -w /dev/full ]] || { echo "no /dev/full here: nothing to check"; exit 0; }
fail=0
check() {
  local what=$1
  shift
  "$@" >/dev/full 2>"$work/err"
  local rc=$?
  if [[ $rc -eq 0 ]] || ! grep -q "error: standard output" "$work/err"; then
    echo "FAIL: $what: exit $rc, stderr: $(cat "$work/err")"
    fail=1
  else
    echo "ok: $what: exit $rc ($(head -c 120 "$work/err"))"
  fi
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
check "export --to json" "$autohaap" export "$plan" --to json
check "export --to launch-json" "$autohaap" export "$plan" --to launch-json
check "estimate --plan" "$autohaap" estimate --plan "$plan"
check "validate" "$autohaap" validate "$plan"
# Written whole to a file, the same command succeeds.
"$autohaap" export "$plan" --to json >"$work/ok.json" || { echo "FAIL: export to a file"; fail=1; }
exit $fail
