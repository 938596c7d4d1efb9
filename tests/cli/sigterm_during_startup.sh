#!/usr/bin/env bash
# A search interrupted by SIGTERM during its initialization (eight node
# groups: once 20-50 s before the first stop check) must end within a few
# seconds with exit 4, the summary block printed, and the best plan so far
# written to -o when it has one.
#   sigterm_during_startup.sh AUTOHAAP CLUSTER.yaml OUT_DIR
set -euo pipefail
autohaap=$1 cluster=$2 out=$3
mkdir -p "$out"
rm -f "$out/plan.json" "$out/log"
"$autohaap" search -m llama3-8b -c "$cluster" -o "$out/plan.json" > "$out/log" 2>&1 &
pid=$!
sleep 2
kill -TERM "$pid"
start=$(date +%s%N)
rc=0
wait "$pid" || rc=$?
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$out/log"
echo "exit $rc, ${took_ms} ms after SIGTERM"
[[ $rc -eq 4 ]] || { echo "FAIL: exit $rc, expected 4"; exit 1; }
(( took_ms < 5000 )) || { echo "FAIL: took ${took_ms} ms to stop"; exit 1; }
grep -q "== end summary ==" "$out/log" || { echo "FAIL: no summary block"; exit 1; }
if grep -Eq "^status +: time-limit-best-so-far" "$out/log"; then
  [[ -s "$out/plan.json" ]] || { echo "FAIL: a plan was found but not written"; exit 1; }
else
  grep -Eq "^status +: interrupted-no-plan" "$out/log" || { echo "FAIL: unexpected status"; exit 1; }
fi
grep -Eq "^stopped_by +: signal" "$out/log" || { echo "FAIL: the summary does not say a signal stopped it"; exit 1; }
echo "ok"
