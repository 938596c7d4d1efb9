#!/usr/bin/env bash
# Fleet regeneration through the real slurm/fleet.sbatch, on a copy of
# jobs/fleet.yaml and configs/: the first run plans every entry; a re-run
# with nothing changed (and one with only a comment added to a cluster
# file) skips every entry and leaves every plan byte for byte; after one
# cluster's link bandwidth changes, exactly that cluster's entries are
# planned again.
source "$(dirname "$0")/slurm_lib.sh"
WORK=$(work_dir fleet_regen)
mkdir -p "$WORK/jobs"
cp "$AUTOHAAP_SOURCE_DIR/jobs/fleet.yaml" "$WORK/jobs/"
cp -r "$AUTOHAAP_SOURCE_DIR/configs" "$WORK/"
manifest=jobs/fleet.yaml
changed=mixed-a100-v100  # the cluster file edited in step 3

run_fleet() {  # submits from $WORK, waits, prints the log
  local job
  job=$(sbatch --parsable -D "$WORK" -o "$WORK/fleet-$1.out" "$AUTOHAAP_SOURCE_DIR/slurm/fleet.sbatch" "$manifest" plans)
  expect_completed "$job" 120 >/dev/null
  cat "$WORK/fleet-$1.out"
}
plan_sums() { (cd "$WORK/plans" && md5sum ./*__*.json); }

mapfile -t names < <(cd "$WORK" && "$AUTOHAAP_BIN" batch "$manifest" --list | awk '{print $2}')
count=${#names[@]}

# 1. First run: everything planned.
log=$(run_fleet first)
grep -qE "^found +: $count$" <<<"$log" || fail "first run did not find $count plans: $log"
before=$(plan_sums)

# 2. Nothing changed, then a comment-only edit: all skipped, plans untouched.
log=$(run_fleet unchanged)
grep -qE "^skipped +: $count$" <<<"$log" || fail "unchanged re-run did not skip all $count: $log"
echo "# a comment changes no input" >> "$WORK/configs/clusters/$changed.yaml"
log=$(run_fleet comment)
grep -qE "^skipped +: $count$" <<<"$log" || fail "comment-only change was not skipped: $log"
[[ $(plan_sums) == "$before" ]] || fail "skipped entries changed their plan files"
for n in "${names[@]}"; do [[ $(summary_status "$WORK/plans" "$n") == skipped ]] || fail "$n not skipped"; done

# 3. One cluster's inter-group bandwidth changes: only its entries redone.
sed -i 's/^inter_group_GBps: .*/inter_group_GBps: 50/' "$WORK/configs/clusters/$changed.yaml"
grep -q '^inter_group_GBps: 50' "$WORK/configs/clusters/$changed.yaml" || fail "could not edit the cluster file"
log=$(run_fleet changed)
redone=0
for n in "${names[@]}"; do
  status=$(summary_status "$WORK/plans" "$n")
  if [[ $n == *__${changed}__* ]]; then
    [[ $status == found ]] || fail "$n uses the changed cluster but is '$status'"
    redone=$((redone + 1))
  else
    [[ $status == skipped ]] || fail "$n does not use the changed cluster but is '$status'"
  fi
done
(( redone > 0 )) || fail "no entry uses cluster $changed"
grep -qE "^found +: $redone$" <<<"$log" || fail "expected $redone entries found: $log"
grep -qE "^skipped +: $((count - redone))$" <<<"$log" || fail "expected $((count - redone)) skipped: $log"
echo "PASS: $count planned, then all skipped twice, then only the $redone entries of $changed redone"
