#!/usr/bin/env bash
# usage: rank_failure.sh WORKDIR RANKS
# A rank that fails ends the whole job promptly with one clear message and
# a non-zero exit code — never a hang: an exception while searching (exit
# 1), inside an exchange (the job is aborted), bad input on one rank (exit
# 2), and bad input on every rank (exit 2, one message). Each run is
# bounded by `timeout`, so a hang fails the test instead of stalling it.
# The failures are asked for with the hidden flag --inject-failure RANK:WHERE.
source "$(dirname "$0")/common.sh"
work=$1 ranks=$2
fresh_dir "$work"
last=$((ranks - 1))
search=(search -m gpt3-1.3b -c configs/clusters/mixed-a100-v100.yaml --exchange-interval 0.01)

expect_failure() {
  local what=$1 expected_code=$2 pattern=$3
  shift 3
  local code=0
  LAUNCH_TIMEOUT=50 launch "$@" >"$work/$what.out" 2>"$work/$what.err" || code=$?
  [[ $code -ne 124 ]] || fail "$what: the job hung"
  if [[ $expected_code == nonzero ]]; then
    [[ $code -ne 0 ]] || fail "$what: exit code 0"
  else
    [[ $code -eq $expected_code ]] || fail "$what: exit code $code, expected $expected_code ($(cat "$work/$what.err"))"
  fi
  grep -q "$pattern" "$work/$what.err" || fail "$what: no '$pattern' in: $(cat "$work/$what.err")"
  echo "$what: exit $code: $(grep -m1 "$pattern" "$work/$what.err")"
}

expect_failure search 1 "^error: rank $last: test failure injected" \
  "$ranks" "$AUTOHAAP" "${search[@]}" --inject-failure "$last:search"
[[ $(grep -c "^error:" "$work/search.err") -eq 1 ]] || fail "search: not exactly one error line"

expect_failure exchange nonzero "rank $last: test failure injected on this rank inside an exchange" \
  "$ranks" "$AUTOHAAP" "${search[@]}" --inject-failure "$last:exchange"

expect_failure input 2 "^error: command line: --inject-failure" \
  "$ranks" "$AUTOHAAP" "${search[@]}" --inject-failure "$last:input"
[[ $(grep -c "^error:" "$work/input.err") -eq 1 ]] || fail "input: not exactly one error line"

expect_failure bad-model 2 "^error: .*no-such-model" "$ranks" "$AUTOHAAP" search -m no-such-model
[[ $(grep -c "^error:" "$work/bad-model.err") -eq 1 ]] || fail "bad-model: not exactly one error line"
