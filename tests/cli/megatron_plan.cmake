# CLI instance tests of a plan whose stages sit on different device types
# (H100 then A100, one tp x dp): its Megatron-LM export (the layer split as
# --pipeline-model-parallel-layout), its node launch order, fp8 training
# refused beside the A100 stages; and slurm/megatron-plan.sbatch run with
# DRY_RUN=1 in plain bash (no Slurm): every node's torchrun gets its node
# rank and every stage lands on hosts of its device group.
set(_mp_plan ${CMAKE_CURRENT_SOURCE_DIR}/data/report/mixed_h100_a100_4stage.yaml)
set(_mp_cases
  "export_megatron_mixed_devices|0|= 32 GPUs on h100-sxm \\(stages 0–1\\), a100-80gb \\(stages 2–3\\)\n# launch 32 ranks node by node in the order of .autohaap export PLAN --to nodelist.*--pipeline-model-parallel-layout \"Et.9.t.10.t.7.t.6L\" .*--bf16|export|${_mp_plan}|--to|megatron"
  "export_nodelist_mixed_devices|0|# node +group +device +gpus +local_gpus +stages +first_rank +last_rank\nh100-sxm-node0 +h100-sxm +h100-sxm +8 +0,1,2,3,4,5,6,7 +0 +0 +7\nh100-sxm-node1 .* 1 +8 +15\na100-80gb-node1 +a100-80gb +a100-80gb +8 +0,1,2,3,4,5,6,7 +2 +16 +23\na100-80gb-node2 .* 3 +24 +31\n$|export|${_mp_plan}|--to|nodelist"
  "export_megatron_fp8_beside_a100|3|fp8 training on devices with and without FP8: FP8 on h100-sxm \\(stages 0–1\\), no FP8 on a100-80gb \\(stages 2–3\\).*train in bf16.*# nearest expressible plan|export|${_mp_plan}|--to|megatron|-t|llama3-h100-fp8-megatron"
)
autohaap_cli_cases("cli;report" ${_mp_cases})
unset(_mp_cases)

add_test(NAME cli_megatron_plan_sbatch_dry_run
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/megatron_plan_dry_run.sh $<TARGET_FILE:autohaap>
                 ${PROJECT_SOURCE_DIR}/slurm/megatron-plan.sbatch ${_mp_plan}
                 ${CMAKE_CURRENT_BINARY_DIR}/megatron_plan_dry_run)
set_tests_properties(cli_megatron_plan_sbatch_dry_run PROPERTIES LABELS "cli" TIMEOUT 60)
unset(_mp_plan)

add_test(NAME cli_search_runnable_megatron
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/runnable_megatron.sh $<TARGET_FILE:autohaap>
                 ${CMAKE_CURRENT_BINARY_DIR}/runnable_megatron)
set_tests_properties(cli_search_runnable_megatron PROPERTIES LABELS "cli" TIMEOUT 120)
set(_rm_cases
  "search_runnable_megatron_zero3|2|training_zero3.yaml: zero: got '3'.*0 or 1 with --runnable megatron|search|-m|gpt3-1.3b|-c|mixed-h100-a100|-t|${CMAKE_CURRENT_SOURCE_DIR}/data/training_zero3.yaml|--runnable|megatron"
  "search_runnable_megatron_metis|2|--runnable: got 'megatron'.*any with --strategy metis|search|-m|gpt3-1.3b|-c|mixed-h100-a100|--strategy|metis|--runnable|megatron"
  "search_runnable_unknown|2|--runnable: deepspeed not in|search|--runnable|deepspeed"
)
autohaap_cli_cases("cli" ${_rm_cases})
unset(_rm_cases)
