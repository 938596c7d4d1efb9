#!/usr/bin/env bash
# usage: checkpoint_refused.sh WORKDIR RANKS
# A checkpoint written by one search is refused by a search of other inputs,
# and a damaged or truncated checkpoint is refused: exit code 2 and one
# message naming the file, never a silent restart or a mixed answer.
source "$(dirname "$0")/common.sh"
work=$1 ranks=$2
fresh_dir "$work"
checkpoint=$work/search.ckpt

launch "$ranks" "$AUTOHAAP" search -m gpt3-1.3b -c configs/clusters/mixed-a100-v100.yaml \
  --checkpoint "$checkpoint" >"$work/first.out" || fail "the first search failed"
[[ -s $checkpoint ]] || fail "no checkpoint written at the end"

expect_refusal() {
  local what=$1 pattern=$2
  shift 2
  local code=0
  launch "$ranks" "$AUTOHAAP" search "$@" --checkpoint "$checkpoint" >"$work/$what.out" 2>"$work/$what.err" || code=$?
  [[ $code -eq 2 ]] || fail "$what: exit code $code, expected 2 ($(cat "$work/$what.err"))"
  grep -q "$checkpoint" "$work/$what.err" || fail "$what: the message does not name the file"
  grep -q "$pattern" "$work/$what.err" || fail "$what: no '$pattern' in: $(cat "$work/$what.err")"
  [[ $(grep -c "^error:" "$work/$what.err") -eq 1 ]] || fail "$what: not exactly one error line"
  echo "$what: $(grep '^error:' "$work/$what.err")"
}

expect_refusal other-model "other inputs" -m llama3-8b -c configs/clusters/mixed-a100-v100.yaml
expect_refusal other-top "other inputs" -m gpt3-1.3b -c configs/clusters/mixed-a100-v100.yaml --top 2
size=$(stat -c %s "$checkpoint")
head -c $((size - 7)) "$checkpoint" >"$work/cut" && mv "$work/cut" "$checkpoint"
expect_refusal truncated "truncated" -m gpt3-1.3b -c configs/clusters/mixed-a100-v100.yaml
printf 'not a checkpoint' >"$checkpoint"
expect_refusal foreign "not an autohaap search checkpoint" -m gpt3-1.3b -c configs/clusters/mixed-a100-v100.yaml
