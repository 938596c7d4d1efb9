#!/bin/bash
# The Slurm job scripts' own arguments, in plain bash (no Slurm).
# slurm/search.sbatch, with a stub `srun` that records what the script
# passes and runs the real binary in one process: a baseline strategy runs
# without the checkpoint it refuses (every strategy but autohaap exited 2
# under the script), and every spelling of -o, -j and -s the command line
# takes is seen (-j4 got a second --threads and was refused; -oplan.json
# got a checkpoint named after the job id, so a resubmitted job started
# over). Then sweep.sbatch and fleet.sbatch, beside it in slurm/.
#
# Usage: slurm_script_args.sh AUTOHAAP_BIN SEARCH_SBATCH WORKDIR
set -euo pipefail
bin=$1 script=$2 work=$3
rm -rf "$work" && mkdir -p "$work/stub"
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$work/stub/srun" <<'EOF'
#!/bin/bash
# Records its arguments one per line, then runs the command without --mpi.
printf '%s\n' "$@" >"$STUB_LOG"
[[ $1 == --mpi=* ]] && shift
exec "$@"
EOF
chmod +x "$work/stub/srun"

# Runs the script from $work with the stub; prints the srun arguments.
run() {
  (cd "$work" && PATH="$work/stub:$PATH" STUB_LOG="$work/srun.args" AUTOHAAP_BIN=$bin SLURM_JOB_ID=77 \
     SLURM_CPUS_PER_TASK=2 bash "$script" -m gpt3-125m -c a100x8 --top 1 "$@" >"$work/out.txt" 2>&1) || {
    local rc=$?
    cat "$work/out.txt" >&2
    fail "search.sbatch $* exited $rc"
  }
  cat "$work/srun.args"
}
has() { grep -qxF -- "$2" <<<"$1"; }
next_after() { grep -A1 -xF -- "$2" <<<"$1" | sed -n 2p; }

# The default: autohaap, a checkpoint named after the plan, the interval, -c threads.
args=$(run -o p.json)
[[ $(next_after "$args" --checkpoint) == p.json.checkpoint ]] || fail "default: checkpoint: $args"
[[ $(next_after "$args" --checkpoint-interval) == 60 ]] || fail "default: interval: $args"
[[ $(next_after "$args" --threads) == 2 ]] || fail "default: threads: $args"
[[ -s $work/p.json ]] || fail "default: no plan written"

# A baseline: no checkpoint, no interval, and it runs.
for spelling in "-s uniform" "--strategy uniform" "--strategy=uniform" "-suniform"; do
  # shellcheck disable=SC2086
  args=$(run $spelling -o u.json)
  ! has "$args" --checkpoint || fail "$spelling: a checkpoint was added: $args"
  ! has "$args" --checkpoint-interval || fail "$spelling: an interval was added: $args"
  grep -q '^status *: found' "$work/out.txt" || fail "$spelling: $(cat "$work/out.txt")"
done

# -oFILE names the checkpoint after the plan.
args=$(run -oq.json)
[[ $(next_after "$args" --checkpoint) == q.json.checkpoint ]] || fail "-oq.json: $args"

# -j4 and -j 1 are the caller's threads: none added.
for spelling in "-j1" "-j 1" "--threads=1"; do
  # shellcheck disable=SC2086
  args=$(run $spelling -o r.json)
  [[ $(grep -cxF -- --threads <<<"$args") == 0 ]] || fail "$spelling: --threads added: $args"
done
# sweep.sbatch and fleet.sbatch take MANIFEST and DIR only: a flag or a
# third word is refused, never dropped (`--out DIR` made a folder named
# --out; `fleet.sbatch M DIR --index 0` ran every entry).
slurm_dir=$(dirname "$script")
printf '#!/bin/bash\nprintf "%%s\\n" "$@"\n' >"$work/stub/echo-bin"
chmod +x "$work/stub/echo-bin"
refused() {
  local got=0 text
  text=$(cd "$work" && AUTOHAAP_BIN=$work/stub/echo-bin bash "$slurm_dir/$1" "${@:3}" 2>&1) || got=$?
  [[ $got -eq 2 ]] || fail "$1 ${*:3}: exit $got, expected 2: $text"
  grep -qF -- "$2" <<<"$text" || fail "$1 ${*:3}: no '$2' in: $text"
}
refused sweep.sbatch "argument '--out': MANIFEST and DIR are paths, not flags" m.yaml --out
refused sweep.sbatch "argument 'x': only MANIFEST and DIR are taken" m.yaml d x
refused fleet.sbatch "argument '--index': only MANIFEST and DIR are taken" m.yaml d --index 0
refused fleet.sbatch "argument '--index': MANIFEST and DIR are paths, not flags" --index 0
# The default folder is named after the manifest's file, whatever dots its
# folders hold (jobs.v2/gpt3-a was sweeps/jobs).
sweep_args=$(cd "$work" && AUTOHAAP_BIN=$work/stub/echo-bin bash "$slurm_dir/sweep.sbatch" jobs.v2/gpt3-a)
[[ $(next_after "$sweep_args" --out) == sweeps/gpt3-a ]] || fail "sweep default folder: $sweep_args"
echo "search.sbatch, sweep.sbatch and fleet.sbatch arguments: ok"
