#!/bin/bash
# slurm/megatron-plan.sbatch with DRY_RUN=1 (plain bash, no Slurm) on a plan
# whose stages sit on two device types: each node's torchrun line must carry
# its node rank, and applying Megatron-LM's rank order to the launches (node
# k holds the nproc ranks after those of nodes 0..k-1; pipeline rank =
# rank / (world / pipeline size), tensor, context and data parallel
# running faster) must put every stage's ranks on hosts of the node-map
# group whose device the plan file gives that stage. Then the refusals: a
# node map without a group the plan uses, one with too few hosts, and a plan
# Megatron-LM cannot run.
#
# Usage: megatron_plan_dry_run.sh AUTOHAAP_BIN SCRIPT PLAN WORKDIR
set -euo pipefail
bin=$1 script=$2 plan=$3 work=$4
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

# Hosts named after nothing in the plan, so the mapping is what is tested.
cat >"$work/nodemap.txt" <<'EOF'
# group    hosts in node order
h100-sxm   hx-0 hx-1
a100-80gb  ay-0 ay-1   # the group continues below
a100-80gb  ay-2 ay-3
EOF
declare -A group_of=([hx-0]=h100-sxm [hx-1]=h100-sxm [ay-0]=a100-80gb [ay-1]=a100-80gb [ay-2]=a100-80gb
                     [ay-3]=a100-80gb)

out=$(AUTOHAAP_BIN=$bin DRY_RUN=1 MEGATRON_DIR=/opt/megatron bash "$script" "$plan" "$work/nodemap.txt" \
      -- --data-path /data/corpus --lr 3e-4)
echo "$out"

# The device of each stage, from the plan file (one "{device: ...}" per stage).
mapfile -t stage_device < <(grep -o '{device: [a-z0-9-]*' "$plan" | sed 's/{device: //')
pipeline=${#stage_device[@]}
[[ $pipeline -ge 2 ]] || fail "expected a multi-stage plan, got $pipeline stages"

mapfile -t launches < <(grep '^launch ' <<<"$out")
nnodes=${#launches[@]}
[[ $nnodes -ge 2 ]] || fail "expected a launch per node, got $nnodes"
world=0
for line in "${launches[@]}"; do
  n=$(grep -o -- '--nproc-per-node=[0-9]*' <<<"$line" | cut -d= -f2)
  world=$((world + n))
done
(( world % pipeline == 0 )) || fail "world $world not a multiple of $pipeline stages"
per_stage=$((world / pipeline))

seen_stages=()
base=0
for k in "${!launches[@]}"; do
  line=${launches[$k]}
  read -r _ rank host _ <<<"$line"
  [[ $rank == "$k" ]] || fail "launch $k printed as launch $rank"
  grep -q -- " --node-rank=$k " <<<"$line" || fail "launch $k: no --node-rank=$k: $line"
  grep -q -- " --nnodes=$nnodes " <<<"$line" || fail "launch $k: no --nnodes=$nnodes"
  grep -q -- " --master-addr=hx-0 " <<<"$line" || fail "launch $k: master is not node rank 0's host hx-0"
  grep -q -- " /opt/megatron/pretrain_gpt.py " <<<"$line" || fail "launch $k: no pretrain_gpt.py"
  grep -q -- "--pipeline-model-parallel-size $pipeline " <<<"$line" || fail "launch $k: pipeline size"
  grep -q -- "--data-path /data/corpus --lr 3e-4$" <<<"$line" || fail "launch $k: extra arguments not last"
  n=$(grep -o -- '--nproc-per-node=[0-9]*' <<<"$line" | cut -d= -f2)
  gpus=$(grep -o 'CUDA_VISIBLE_DEVICES=[0-9,]*' <<<"$line" | cut -d= -f2)
  [[ $(tr ',' '\n' <<<"$gpus" | wc -l) -eq $n ]] || fail "launch $k: $n processes but GPUs $gpus"
  [[ -n ${group_of[$host]+set} ]] || fail "launch $k on unknown host $host"
  for ((r = base; r < base + n; r++)); do
    stage=$((r / per_stage))
    [[ ${group_of[$host]} == "${stage_device[$stage]}" ]] ||
      fail "rank $r (stage $stage, ${stage_device[$stage]}) lands on $host of ${group_of[$host]}"
    seen_stages[$stage]=1
  done
  base=$((base + n))
done
[[ ${#seen_stages[@]} -eq $pipeline ]] || fail "not every stage launched"

# The plan file's A100 stages sit on the group's nodes 1 and 2: hosts ay-1, ay-2.
grep -q '^launch 2 ay-1 group=a100-80gb stages=2 ' <<<"$out" || fail "node rank 2 is not ay-1"
grep -q '^launch 3 ay-2 group=a100-80gb stages=3 ' <<<"$out" || fail "node rank 3 is not ay-2"
grep -q -- "--pipeline-model-parallel-layout 'Et\*9|t\*10|t\*7|t\*6L'" <<<"$out" || fail "layout not passed"

# Refusals: exit 2 naming the problem, 3 for a plan Megatron-LM cannot run.
expect_exit() {
  local want=$1 pattern=$2
  shift 2
  local got=0 text
  text=$(AUTOHAAP_BIN=$bin DRY_RUN=1 bash "$script" "$@" 2>&1) || got=$?
  [[ $got -eq $want ]] || fail "exit $got, expected $want: $text"
  grep -q -- "$pattern" <<<"$text" || fail "no '$pattern' in: $text"
}
grep -v '^h100' "$work/nodemap.txt" >"$work/no_h100.txt"
expect_exit 2 "no line for device group 'h100-sxm'" "$plan" "$work/no_h100.txt"
printf 'h100-sxm hx-0 hx-1\na100-80gb ay-0 ay-1\n' >"$work/short.txt"
expect_exit 2 "group 'a100-80gb' lists 2 hosts; plan node a100-80gb-node2 needs at least 3" "$plan" "$work/short.txt"
expect_exit 2 "node map not readable" "$plan" "$work/missing.txt"
expect_exit 2 "pretrain_gpt.py arguments go after '--'" "$plan" "$work/nodemap.txt" --lr 1
# tp differs across stages: the export's reasons, exit 3.
mixed_tp=$(dirname "$plan")/mixed_3stage.yaml
printf 'a100-40gb h0 h1\nv100-32gb v0 v1\n' >"$work/a100_v100.txt"
expect_exit 3 "tensor-parallel degree differs across stages" "$mixed_tp" "$work/a100_v100.txt"
# A host named twice would run two plan nodes on one node's GPUs.
printf 'h100-sxm hx-0 hx-1\na100-80gb ay-0 hx-1 ay-2 ay-3\n' >"$work/twice.txt"
expect_exit 2 "host 'hx-1' listed twice (groups 'h100-sxm' and 'a100-80gb')" "$plan" "$work/twice.txt"
# A map written on Windows: its carriage returns are not part of host names.
sed 's/$/\r/' "$work/nodemap.txt" >"$work/crlf.txt"
crlf=$(AUTOHAAP_BIN=$bin DRY_RUN=1 bash "$script" "$plan" "$work/crlf.txt")
[[ $crlf != *$'\r'* ]] || fail "a carriage return reached the launch lines"
grep -q '^launch 3 ay-2 group=a100-80gb' <<<"$crlf" || fail "CRLF map: node rank 3 is not ay-2"

# A real launch with stubs (srun runs the command here, torchrun fails at
# once on node rank 0 and sleeps elsewhere): the first failure ends the
# others, and the job exits with its code, not after the slowest launch.
mkdir -p "$work/stub" "$work/megatron"
touch "$work/megatron/pretrain_gpt.py"
printf '#!/bin/bash\nwhile [[ $1 == --* ]]; do shift; done\nexec "$@"\n' >"$work/stub/srun"
printf '#!/bin/bash\nfor a in "$@"; do [[ $a == --node-rank=0 ]] && exit 7; done\nexec sleep 30\n' \
  >"$work/stub/torchrun"
chmod +x "$work/stub/srun" "$work/stub/torchrun"
start=$SECONDS
got=0
PATH="$work/stub:$PATH" AUTOHAAP_BIN=$bin MEGATRON_DIR=$work/megatron bash "$script" "$plan" "$work/nodemap.txt" \
  >"$work/launch.txt" 2>&1 || got=$?
[[ $got -eq 7 ]] || fail "a failing launch: exit $got, expected 7: $(cat "$work/launch.txt")"
((SECONDS - start < 15)) || fail "the job waited $((SECONDS - start)) s for the other launches"
grep -q "a launch exited 7; stopping the others" "$work/launch.txt" || fail "no word of the failure"
echo "PASS: $nnodes launches, $world ranks over $pipeline stages on their groups"
