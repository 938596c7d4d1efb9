# Helpers for the Slurm tests: submit a script, wait for it by polling
# `scontrol show job` every half second (sbatch --wait polls only every
# ~10 s), and check what it left. Sourced by the *_test.sh scripts, which
# run under ctest with SLURM_CONF (the local cluster), AUTOHAAP_BIN and
# AUTOHAAP_SOURCE_DIR set.
set -euo pipefail

: "${SLURM_CONF:?slurm.conf of the local cluster}"
: "${AUTOHAAP_BIN:?the autohaap binary}"
: "${AUTOHAAP_SOURCE_DIR:?the source tree}"
export SLURM_CONF AUTOHAAP_BIN

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# A fresh work folder for one test: $1 = its name.
work_dir() {
  local d=$AUTOHAAP_SLURM_WORK/$1
  rm -rf "$d"
  mkdir -p "$d"
  echo "$d"
}

# Every task's state of job $1, one per line ("<id> <state> <exit code>").
job_states() {
  scontrol -o show job "$1" 2>/dev/null |
    sed -n 's/.*JobId=\([0-9]*\).* JobState=\([A-Z_]*\).* ExitCode=\([0-9:]*\).*/\1 \2 \3/p'
}

# Waits until every task of job $1 has ended, or $2 seconds have passed
# (then fails). Prints the final states.
wait_job() {
  local job=$1 limit=${2:-60} deadline states
  deadline=$((SECONDS + limit))
  while :; do
    states=$(job_states "$job")
    if [[ -n $states ]] && ! grep -qE ' (PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|REQUEUED|RESIZING|REQUEUE_HOLD|REQUEUE_FED|SIGNALING|STAGE_OUT) ' <<<"$states"; then
      echo "$states"
      return 0
    fi
    (( SECONDS < deadline )) || { scontrol -o show job "$job" >&2 || true; fail "job $job still running after $limit s"; }
    sleep 0.5
  done
}

# Waits until job $1 is RUNNING (fails after $2 seconds).
wait_running() {
  local job=$1 limit=${2:-30} deadline
  deadline=$((SECONDS + limit))
  until job_states "$job" | grep ' RUNNING ' >/dev/null; do
    (( SECONDS < deadline )) || fail "job $job not running after $limit s"
    sleep 0.2
  done
}

# Fails unless every task of job $1 ended COMPLETED with exit code 0.
expect_completed() {
  local states
  states=$(wait_job "$@")
  echo "$states"
  if grep -vqE ' COMPLETED 0:0$' <<<"$states"; then
    cat "$WORK"/*.out >&2 2>/dev/null || true
    fail "job $1 did not complete cleanly: $states"
  fi
}

# The status column of summary.csv row `name` in folder $1.
summary_status() {
  awk -F, -v n="$2" '$1 == n {print $5}' "$1/summary.csv"
}
