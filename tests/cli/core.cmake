# CLI instance tests of estimate and validate: a table of
#   name | expected exit code | regex the output must match | arguments...
# (HiGHS-style: run the binary on real inputs, check one fixed report line.)
set(_cfg ${PROJECT_SOURCE_DIR}/configs)
set(_cli_cases
  "estimate_megatron_175b|0|iteration_time_s +: [0-9.]+.*fits +: yes|estimate|--model|gpt3-175b|--cluster|${_cfg}/clusters/a100-80gb-128nodes.yaml|--train|${_cfg}/training/gpt3-175b-megatron.yaml|--tp|8|--pp|16|--dp|8|--micro-batch|1|--recompute|full"
  "estimate_does_not_fit|3|stage 0 .*does not fit: needs [0-9.]+ GiB per GPU, has 80.00 GiB|estimate|-m|gpt3-175b|-c|a100x8|--tp|8|--pp|1|--dp|1|--micro-batch|1"
  "estimate_tp_not_dividing_heads|2|--tp: got '5'.*divisor of the model's 32 attention heads|estimate|-m|llama3-8b|-c|a100x8|--tp|5|--pp|1|--dp|1|--micro-batch|1"
  "estimate_tp_larger_than_node|2|--tp: got '16'.*GPUs per node|estimate|-m|gpt3-175b|-c|${_cfg}/clusters/a100-80gb-128nodes.yaml|--tp|16|--pp|1|--dp|1|--micro-batch|1"
  "estimate_more_gpus_than_cluster|2|at most the cluster's 8 GPUs|estimate|-m|llama3-8b|-c|a100x8|--tp|4|--pp|2|--dp|2|--micro-batch|1"
  "estimate_unknown_model|2|gpt3-176b.*allowed|estimate|-m|gpt3-176b|-c|a100x8|--tp|1|--pp|1|--dp|8|--micro-batch|1"
  "estimate_missing_plan_flags|2|either --plan FILE or all of --tp|estimate|-m|llama3-8b|-c|a100x8|--tp|2"
  "estimate_layer_split_as_listed|0|0 +a100-80gb +4 +1 x 4 .0,20. .*1 +a100-80gb +4 +1 x 4 .20,32. |estimate|-m|llama3-8b|-c|a100x8|--tp|1|--pp|2|--dp|4|--micro-batch|1|--recompute|full|--layer-split|20,12"
  "estimate_layer_split_not_adding_up|2|--layer-split: got '7,7'.*2 counts .one per stage. that add up to the model's 32 layers|estimate|-m|llama3-8b|-c|a100x8|--tp|1|--pp|2|--dp|4|--micro-batch|1|--layer-split|7,7"
  "estimate_plan_refuses_uniform_plan_flags|2|--plan excludes --recompute|estimate|-m|gpt3-1.3b|-c|mixed-a100-v100|--plan|${CMAKE_CURRENT_SOURCE_DIR}/data/replicas/mixed_stage.yaml|--recompute|full"
  "estimate_negative_micro_batch|2|--micro-batch: got '-1'. allowed: a positive integer|estimate|-m|llama3-8b|-c|a100x8|--tp|1|--pp|1|--dp|8|--micro-batch|-1"
  "estimate_zero_out_of_range|2|--zero: got '-5'. allowed: 0, 1, 2 or 3|estimate|-m|llama3-8b|-c|a100x8|--tp|1|--pp|1|--dp|8|--micro-batch|1|--zero|-5"
  "estimate_unknown_recompute|2|--recompute: got 'some'|estimate|-m|llama3-8b|-c|a100x8|--tp|1|--pp|1|--dp|8|--micro-batch|1|--recompute|some"
  "estimate_plan_with_edited_spec|0|note: the training embedded in [^ ]*edited-training.yaml was edited after the plan was written .fingerprint [0-9a-f]+, written as 63a247ac6929edba.. scored as it stands.*headroom: the training file's safety margin|estimate|--plan|${CMAKE_CURRENT_SOURCE_DIR}/data/edited/edited-training.yaml"
  "estimate_profile_in_microseconds|0|warning: the measured profile's a100-80gb 'layer' times are a median [0-9]+x the analytic model's .*check their unit.*iteration_time_s|estimate|-m|gpt3-1.3b|-c|a100x8|--tp|1|--pp|1|--dp|8|--micro-batch|1|--recompute|full|--profiles|${CMAKE_CURRENT_SOURCE_DIR}/data/profile_microseconds.csv"
  "estimate_selective_recompute_of_generic_layers|2|--recompute: got 'selective'. allowed: none or full .generic layers have no attention core|estimate|-m|lstm-2layer-lm|-c|a100x8|--tp|1|--pp|1|--dp|8|--micro-batch|1|--recompute|selective"
  "estimate_cp_on_volta_under_megatron|2|--cp: got '2'. allowed: 1 on v100-32gb .volta.: ring context parallelism runs inside the fused attention kernels|estimate|-m|llama3-8b|-c|mixed-a100-v100|--tp|1|--cp|2|--pp|2|--dp|8|--micro-batch|1"
  "validate_all_configs|0|valid cluster|validate|${_cfg}/clusters/mixed-h100-a100-v100.yaml|${_cfg}/models/llama3-405b.yaml|${_cfg}/devices/h100-sxm.yaml|${_cfg}/training/default.yaml|${_cfg}/models/lstm-2layer-lm.yaml"
  "validate_bad_yaml|2|bad_cluster.yaml.*groups\\[0\\].nodes: got '-1'|validate|${CMAKE_CURRENT_SOURCE_DIR}/data/bad_cluster.yaml"
  "validate_missing_file|2|no_such_file.yaml|validate|no_such_file.yaml"
  "default_command_searches|0|status +: found\nmodel +: llama3-8b\ncluster +: mixed-a100-v100.*strategy +: autohaap"
  "search_explain_and_report|0|rule +removed\n.*tp_not_dividing_heads +[0-9]+.*report written to .*best.svg.*status +: found|search|-m|gpt3-1.3b|-c|mixed-h100-a100|--explain|--report|${CMAKE_CURRENT_BINARY_DIR}/best.svg"
  "search_infeasible|3|no feasible plan: .*GiB.*status +: infeasible|search|-m|gpt3-175b|-c|a100x8"
  "search_skeleton_limit_best_so_far|4|search stopped early: more than 1 skeletons.*--max-skeletons.*status +: time-limit-best-so-far.*gap +: 0[.][0-9]*[1-9]|search|-m|llama3-8b|-c|mixed-h100-a100-v100|--max-skeletons|1"
  "search_bad_report_extension|2|command line: --report: got 'x.png'. allowed: a file name ending .svg, .html or .htm|search|--report|x.png"
  "device_from_measurements|0|GEMM of 2199.023 GFLOP +0.585 +0.585\n.*flash3 / cuDNN backward +0.402 +0.403\nmemory efficiency +0.800 +0.748\nfrom 162 GEMMs, attention, streaming kernels\ndevice written to .*h200-measured.yaml|device|--measured|${PROJECT_SOURCE_DIR}/tests/data/device/h200|--base|h200|-o|${CMAKE_CURRENT_BINARY_DIR}/h200-measured.yaml"
  "device_from_measurements_without_out|0|from 162 GEMMs, attention, streaming kernels\nno device file written .-o FILE.yaml writes one.|device|--measured|${PROJECT_SOURCE_DIR}/tests/data/device/h200|--base|h200"
  "device_measurements_missing|2|no_such_folder: got 'no_such_folder'. allowed: a folder written by scripts/device/measure.sh|device|--measured|no_such_folder|--base|h200"
  "device_measured_on_another_gpu|2|gemm.csv: largest bf16 product's efficiency: got .*is --base the GPU that was measured|device|--measured|${PROJECT_SOURCE_DIR}/tests/data/device/h200|--base|a100-80gb"
  "search_unknown_strategy|2|--strategy: alpa not in|search|--strategy|alpa"
  "search_finished_gap_zero|0|status +: found.*bound_s +: [0-9.]+\ngap +: 0.0000\n|search|-m|gpt3-1.3b|-c|mixed-a100-v100"
  "search_gap_reached|0|status +: gap-reached.*bound_s +: [0-9.]+\ngap +: 0.[0-4][0-9]*\n|search|-m|llama3-8b|-c|mixed-h100-a100-v100|--top|50|--gap|0.5"
  "search_uniform_baseline|0|strategy +: uniform|search|-m|gpt3-1.3b|-c|mixed-a100-v100|--strategy|uniform"
  "search_reference|0|status +: found.*strategy +: reference.*gap +: 0.0000|search|-m|gpt3-1.3b|-c|mixed-a100-v100|--strategy|reference"
  "search_reference_refuses_large|2|strategy: got 'reference'. allowed: a problem of at most 200000 structurally valid skeletons|search|-m|llama3-70b|-c|${PROJECT_SOURCE_DIR}/tests/bench/clusters/h100-a100-v100-1024.yaml|--strategy|reference"
  "estimate_interleaved_fp8|0|tp x cp x dp.*4 x 2 x 1.*interleaved 1F1B: 5 chunks per stage.*vpp +: 5.*fits +: yes|estimate|-m|llama3-70b|-c|h100-sxm-4nodes|-t|${_cfg}/training/llama3-h100-fp8-megatron.yaml|--tp|4|--cp|2|--pp|4|--dp|1|--vpp|5|--micro-batch|1"
  "estimate_vpp_one_stage|2|--vpp: got '2'.*at least 2 pipeline stages|estimate|-m|llama3-8b|-c|a100x8|--tp|1|--pp|1|--dp|8|--vpp|2|--micro-batch|1"
  "estimate_cp_not_dividing_sequence|2|--cp: got '3'.*2 x cp dividing the sequence length 8192|estimate|-m|llama3-8b|-c|a100x8|--tp|1|--pp|1|--dp|2|--cp|3|--micro-batch|1"
  "estimate_flash3_on_a100_says_flash2|0|note: a100-80gb has no FlashAttention-3/cuDNN fused attention .attention_kernel: flash3.. its stages. attention is costed as FlashAttention-2.*iteration_time_s|estimate|-m|llama3-8b|-c|a100x8|-t|${CMAKE_CURRENT_SOURCE_DIR}/data/training_flash3.yaml|--tp|1|--pp|2|--dp|4|--micro-batch|1"
  "estimate_fp8_on_a100_says_bf16|0|a100-80gb has no FP8. its stages run their GEMMs in BF16.*stage 0 .a100-80gb. has no FP8|estimate|-m|llama3-8b|-c|a100x8|-t|${_cfg}/training/llama3-h100-fp8-megatron.yaml|--tp|2|--pp|1|--dp|4|--micro-batch|1|--recompute|full"
  "estimate_unchecked_device_says_so|0|note: t4 .turing.: no published training run checks this generation's efficiency figures|estimate|--plan|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/pp2_dp8_mb1.yaml|-m|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/gpt2-1024.yaml|-c|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/v100-t4.yaml|-t|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/deepspeed-fp16.yaml"
  "estimate_replica_sets|0|1a +a100-40gb +2 +1 x 2 .*6 of 8 sequences, slowest\n1b +v100-32gb +2 +1 x 2 .*2 of 8 sequences\n.*a100-40gb[+]v100-32gb 1x4|estimate|-m|gpt3-1.3b|-c|mixed-a100-v100|--plan|${CMAKE_CURRENT_SOURCE_DIR}/data/replicas/mixed_stage.yaml"
  "estimate_amp_v100_t4_pp2|0|1a +v100-16gb +4 +1 x 4 +.12,24. .* 4 of 8 sequences\n1b +t4 +4 +1 x 4 +.12,24. .* 4 of 8 sequences, slowest\n.*stages +: v100-16gb 1x8 .0,12. none . v100-16gb[+]t4 1x8 .12,24. none.*fits +: yes|estimate|--plan|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/pp2_dp8_mb1.yaml|-m|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/gpt2-1024.yaml|-c|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/v100-t4.yaml|-t|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/deepspeed-fp16.yaml"
  # A stage of the embedding alone (AMP's trial 26: DeepSpeed's partition
  # gives stage 0 no transformer layer) is estimated, drawn and exported
  # with Megatron-Core's layout ("E" alone on the first stage).
  "estimate_amp_embedding_only_stage|0|0 +v100-16gb +2 +1 x 2 .0,0. +none .*1 +v100-16gb +2 +1 x 2 .0,1. .*pipeline_stages +: 8|estimate|--plan|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/rank26_embedding_stage.yaml|-m|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/gpt2-1024.yaml|-c|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/v100-t4.yaml|-t|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/deepspeed-fp16.yaml"
  # DeepSpeed's pipeline engine has no interleaved schedule and
  # Megatron-DeepSpeed no ring context parallelism (specs/parallel_rules.hpp).
  "estimate_deepspeed_refuses_vpp|2|--vpp: got '2'. allowed: 1 under runtime deepspeed .its pipeline engine has no interleaved schedule.|estimate|-m|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/gpt2-1024.yaml|-c|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/v100-t4.yaml|-t|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/deepspeed-fp16.yaml|--tp|1|--pp|2|--dp|8|--vpp|2|--micro-batch|1"
  "estimate_deepspeed_refuses_cp|2|--cp: got '2'. allowed: 1 under runtime deepspeed .Megatron-DeepSpeed has no ring context parallelism.|estimate|-m|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/gpt2-1024.yaml|-c|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/v100-t4.yaml|-t|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/deepspeed-fp16.yaml|--tp|1|--pp|2|--cp|2|--dp|4|--micro-batch|1"
  "estimate_deepspeed_zero2_refuses_pp|2|--pp: got '2'. allowed: 1 under runtime deepspeed with ZeRO-2|estimate|-m|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/gpt2-1024.yaml|-c|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/v100-t4.yaml|-t|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/deepspeed-fp16.yaml|--tp|1|--pp|2|--dp|8|--zero|2|--micro-batch|1"
  "report_amp_embedding_only_stage|0|html: 8 stages|report|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/rank26_embedding_stage.yaml|-o|${CMAKE_CURRENT_BINARY_DIR}/amp_embedding_stage.html|-m|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/gpt2-1024.yaml|-c|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/v100-t4.yaml|-t|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/deepspeed-fp16.yaml"
  "export_amp_embedding_only_stage|0|--pipeline-model-parallel-layout .E.t..t.4...5t.3L|export|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/rank26_embedding_stage.yaml|--to|megatron|-m|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/gpt2-1024.yaml|-c|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/v100-t4.yaml|-t|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/deepspeed-fp16.yaml"
  "estimate_amp_v100_t4_pp1_tp2|0|0a +v100-16gb +12 +2 x 6 +.0,24. .* 24 of 32 sequences\n0b +t4 +4 +2 x 2 +.0,24. .* 8 of 32 sequences, slowest\n.*fits +: yes|estimate|--plan|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/pp1_tp2_dp8_mb4.yaml|-m|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/gpt2-1024.yaml|-c|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/v100-t4.yaml|-t|${CMAKE_CURRENT_SOURCE_DIR}/data/amp/deepspeed-fp16.yaml"
  "search_mixed_stages_keep_the_listed_micro_batch|0|micro_batch_size +: 1\n|search|-m|gpt3-125m|-c|a100-80gb-128nodes|-t|${CMAKE_CURRENT_SOURCE_DIR}/data/replicas/one-sequence.yaml"
  # A plan whose interleaved chunks differ across stages (9, 9, 9, 5 layers
  # at vpp 5, the output layer in the last chunk) is estimated with each
  # stage's chunks together; the stage table says what the schedule's event
  # simulation takes (report/timeline.hpp).
  "estimate_uneven_chunks_note|0|note: Megatron-LM runs each chunk for a group of micro-batches in turn.*takes 3.2[0-9]+ s .[+][23][0-9]%. against the 2.5[0-9]+ s estimated|estimate|-m|llama3-8b|-c|h100-sxm-4nodes|-t|llama3-h100-fp8-megatron|--tp|1|--pp|4|--cp|4|--dp|2|--vpp|5|--micro-batch|2|--layer-split|9,9,9,5"
  # A --runnable search compares its plan with the unrestricted search of
  # the same strategy: a strategy that would refuse that space is refused
  # before the restricted plan is written (it had been written, then exit 2).
  # The reason counts the cluster's own GPUs: the halves the search also
  # tries (cluster_split.hpp) had doubled them (64 GPUs, 107 GiB).
  "search_infeasible_counts_the_clusters_gpus|3|llama3-405b does not fit: its weights, gradients and optimizer states alone need 213.6 GiB per GPU even spread evenly over all 32 GPUs|search|-m|llama3-405b|-c|h100-sxm-4nodes"
  "search_runnable_exhaustive_refused_first|2|--runnable: got 'megatron'. allowed: any with --strategy exhaustive on this problem .the comparison searches the unrestricted space|search|-m|gpt3-125m|-c|${CMAKE_CURRENT_SOURCE_DIR}/data/replicas/h100-a100-pair.yaml|-s|exhaustive|--runnable|megatron|-o|${CMAKE_CURRENT_BINARY_DIR}/never_written.yaml"
  "search_no_mixed_stages|0|stages +: h100-sxm 1x8 .0,12. none\n|search|-m|gpt3-125m|-c|${CMAKE_CURRENT_SOURCE_DIR}/data/replicas/h100-a100-pair.yaml|--no-mixed-stages"
  "validate_replica_sets|0|mixed_stage.yaml: valid plan|validate|${CMAKE_CURRENT_SOURCE_DIR}/data/replicas/mixed_stage.yaml"
  "export_megatron_replica_sets|3|stage 1 mixes device types in its replicas .2 x a100-40gb with 3 sequences each, 2 x v100-32gb with 1 sequences each.. Megatron-LM gives every data-parallel replica the same micro-batch|export|${CMAKE_CURRENT_SOURCE_DIR}/data/replicas/mixed_stage.yaml|--to|megatron|-m|gpt3-1.3b|-c|mixed-a100-v100"
  "export_launch_json_replica_sets|0|\"replica_sets\": .*\"device\": \"v100-32gb\",\n +\"group\": 1,\n +\"replicas\": 2,\n +\"sequences\": 2|export|${CMAKE_CURRENT_SOURCE_DIR}/data/replicas/mixed_stage.yaml|--to|launch-json|-m|gpt3-1.3b|-c|mixed-a100-v100"
)
autohaap_cli_cases("cli" ${_cli_cases})

# Four identical node groups are searched apart (search/cluster_merge.hpp,
# merge_for_search), so each pod takes its own layout: the first tp 4 x
# cp 2 x dp 8, the other three tp 2 x cp 4 x dp 8 (41.9183 s; merged, two
# pods of each, 41.9217 s; one layout on all four 42.924 s); the plan file
# re-reads and re-estimates on the four pods. Six identical pods are
# searched as one group of six parts and the plan written on the original
# pods, which it re-estimates on (29.5309 s; the same 384 GPUs as one group
# 29.4002 s, with stages of 128 GPUs across two pods).
# micro_batch_per_replica lets 1024 GPUs run 128 data-parallel GPUs a
# stage: B = 128, one sequence a replica (GPT-3's attention is unfused,
# so no context parallelism).
set(_merge ${CMAKE_CURRENT_SOURCE_DIR}/data/merge)
set(_merge_cases
  "search_identical_pods_apart|0|pipeline_stages +: 4\n.*a100-80gb 4x2x8 .0,20. none . a100-80gb 2x4x8 .20,40. none . a100-80gb 2x4x8 .40,60. none . a100-80gb 2x4x8 .60,80. none.*iteration_time_s +: 41.9183|search|-m|llama3-70b|-c|${_merge}/a100-80gb-4pods.yaml|-j|2|-o|${CMAKE_CURRENT_BINARY_DIR}/pods_plan.json"
  "estimate_identical_pods_plan|0|iteration_time_s +: 41.9183|estimate|--plan|${CMAKE_CURRENT_BINARY_DIR}/pods_plan.json"
  "search_six_identical_pods_merged|0|pipeline_stages +: 9\n.*iteration_time_s +: 29.5309|search|-m|llama3-70b|-c|${_merge}/a100-80gb-6pods.yaml|-j|2|-o|${CMAKE_CURRENT_BINARY_DIR}/six_pods_plan.json"
  "estimate_six_identical_pods_plan|0|iteration_time_s +: 29.5309|estimate|--plan|${CMAKE_CURRENT_BINARY_DIR}/six_pods_plan.json"
  "search_micro_batch_per_replica|0|stages +: a100-80gb 2x128 .*micro_batch_size +: 128\n.*iteration_time_s +: 0.1251|search|-m|gpt3-1.3b|-c|a100-80gb-128nodes|-t|${_merge}/per_replica.yaml|-j|2"
)
autohaap_cli_cases("cli" ${_merge_cases})
set_tests_properties(cli_search_identical_pods_apart PROPERTIES FIXTURES_SETUP pods_plan)
set_tests_properties(cli_estimate_identical_pods_plan PROPERTIES FIXTURES_REQUIRED pods_plan)
set_tests_properties(cli_search_six_identical_pods_merged PROPERTIES FIXTURES_SETUP six_pods_plan)
set_tests_properties(cli_estimate_six_identical_pods_plan PROPERTIES FIXTURES_REQUIRED six_pods_plan)
