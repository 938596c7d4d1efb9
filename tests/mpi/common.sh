# Sourced by the mpi test scripts. Expects AUTOHAAP (the binary) and
# MPIEXEC (Open MPI's mpirun) in the environment; ctest sets both.
set -euo pipefail

# launch N cmd...: cmd under mpirun with N ranks (N = 0: plain, no launcher).
# --bind-to none lets each rank's threads use every core; --oversubscribe
# allows more ranks than cores (test machines have two). With
# LAUNCH_TIMEOUT=S set, the launcher is stopped after S seconds (exit 124).
launch() {
  local n=$1
  shift
  local bounded=()
  [[ -n ${LAUNCH_TIMEOUT:-} ]] && bounded=(timeout --kill-after=5 "$LAUNCH_TIMEOUT")
  if [[ $n -eq 0 ]]; then
    "${bounded[@]}" "$@"
    return
  fi
  "${bounded[@]}" "$MPIEXEC" --oversubscribe --bind-to none -n "$n" "$@"
}

# The plan file without its `search` statistics (wall time, ranks, counts
# differ from run to run; everything else must not).
plan_without_stats() { sed '/"search": {/,/}/d' "$1"; }

# The "top K plans" table of a run's output.
top_table() { sed -n '/^top [0-9]* plan/,/^$/p' "$1"; }

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# A fresh work directory for one test.
fresh_dir() {
  rm -rf "$1"
  mkdir -p "$1"
}

# PIDs of the processes in session $1, read from /proc (no procps needed).
session_pids() {
  local f line pid
  for f in /proc/[0-9]*/stat; do
    line=$(cat "$f" 2>/dev/null) || continue
    pid=${f#/proc/}
    line=${line##*) } # after "pid (command) ": state ppid pgrp session ...
    read -r _ _ _ sid _ <<<"$line"
    [[ $sid == "$1" ]] && echo "${pid%/stat}"
  done
  return 0
}

# wait_for_file FILE PID TRIES: until FILE is non-empty, process PID has
# ended, or TRIES polls of 20 ms have passed; true when FILE is there.
wait_for_file() {
  local file=$1 pid=$2 tries=$3
  for _ in $(seq 1 "$tries"); do
    [[ -s $file ]] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.02
  done
  [[ -s $file ]]
}
