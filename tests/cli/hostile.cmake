# CLI instance tests of hostile inputs: files no user writes on purpose but a
# damaged disk, a bad script or a fuzzer does. Each must end in exit 2 (or a
# plan) with an error that names the file and the limit it broke — never a
# signal, never a hang. A table of
#   name | expected exit code | regex the output must match | arguments...
# The files are written here, at configure time, into the build tree.
set(_hostile ${CMAKE_CURRENT_BINARY_DIR}/hostile)
# 300,000 levels: once a stack overflow (exit 139) in every JSON reader.
string(REPEAT "[" 300000 _open)
string(REPEAT "]" 300000 _close)
file(WRITE ${_hostile}/bomb.json "${_open}${_close}")
# A link to a plan not yet written: the checkpoint named by it is the -o file.
file(REMOVE ${_hostile}/linked_plan.json ${_hostile}/link_to_plan.json)
file(CREATE_LINK linked_plan.json ${_hostile}/link_to_plan.json SYMBOLIC)
file(WRITE ${_hostile}/metis/DeviceType.A100_tp1_bs1.json "${_open}${_close}")
string(REPEAT "[" 100000 _open)
string(REPEAT "]" 100000 _close)
file(WRITE ${_hostile}/bomb.yaml "stages: ${_open}${_close}\n")
unset(_open)
unset(_close)
# Valid YAML, numbers at the edges: each once passed validation.
file(WRITE ${_hostile}/tiny_bandwidth.yaml
     "groups:\n  - {device: a100-40gb, nodes: 1, gpus_per_node: 8, intra_node_GBps: 1e-308}\n")
file(WRITE ${_hostile}/huge_nodes.yaml "groups:\n  - {device: a100-40gb, nodes: 2147483647, gpus_per_node: 8}\n")
file(WRITE ${_hostile}/wide_hidden.yaml "family: gpt\nlayers: 2\nhidden: 1000000000\nheads: 8\nvocab: 1000\nseq_len: 128\n")
file(WRITE ${_hostile}/deep_model.yaml "family: gpt\nlayers: 2147483647\nhidden: 64\nheads: 8\nvocab: 1000\nseq_len: 128\n")
file(WRITE ${_hostile}/huge_batch.yaml "global_batch: 1000000000\n")
# Four million GPUs and 16 million sequences a batch: idle GPUs offered as
# replica sets of a million replicas each, at micro-batches of millions.
file(WRITE ${_hostile}/million_nodes.yaml "groups:\n  - {device: a100-80gb, nodes: 524288, gpus_per_node: 8}\n")
file(WRITE ${_hostile}/sixteen_million_batch.yaml "global_batch: 16777216\n")
# A plan on all of them: its launch manifest would list four million ranks
# (over 5 GB and a minute before it was refused).
file(WRITE ${_hostile}/million_gpu_plan.yaml "format: autohaap-plan/1\nmodel: gpt3-1.3b\ncluster: million_nodes\n"
     "global_batch: 16777216\nmicro_batch_size: 4194304\nnum_micro_batches: 4\nvpp: 1\nzero: 1\nstages:\n"
     "  - {device: a100-80gb, group: 0, first_gpu: 0, gpus: 4194304, tp: 1, cp: 1, dp: 4194304, layers: [0, 24], "
     "recompute: none}\n")
file(WRITE ${_hostile}/inf_latency.csv "device,op,tp,micro_batch,seq_len,latency_ms\na100-40gb,layer,1,1,2048,inf\n")
# A layer of gpt3-1.3b at one sequence of 2048 tokens does 24 s h^2 = 206.2
# GFLOP of GEMMs and 4 s^2 h / 2 = 17.2 of causal attention: 223.3 GFLOP,
# 0.7158 ms at the A100's 312 TFLOP/s. 0.5 ms is a units slip (it once
# gave MFU 1.30).
file(WRITE ${_hostile}/faster_than_peak.csv "device,op,tp,micro_batch,seq_len,latency_ms\na100-80gb,layer,1,1,2048,0.5\n")
# tp 3 on gpt3-1.3b's 16 heads: measured on another model. Its ratio to
# the analytic time once corrected the tp-1 stages (49 ms became 285).
file(WRITE ${_hostile}/impossible_tp.csv "device,op,tp,micro_batch,seq_len,latency_ms\na100-80gb,layer,3,1,2048,5\n")
# A device file a cluster names is an input too: -o onto it once replaced
# it with the plan. A GEMM efficiency of 5e-324 once gave NaN figures.
file(WRITE ${_hostile}/own_device.yaml "name: own-device\nbase: a100-80gb\n")
# Files of another kind at a text output's name: a CSV of someone's, a page
# of notes (each had been replaced by an export or a report).
file(WRITE ${_hostile}/measured.csv "id,time\nrun-1,1.5\n")
file(WRITE ${_hostile}/notes.html "<html><body>my notes</body></html>\n")
# Nodes of 3 GPUs: a stage of 4 would lie across part of a node.
file(WRITE ${_hostile}/nodes_of_three.yaml "groups:\n  - {device: a100-80gb, nodes: 4, gpus_per_node: 3}\n")
file(WRITE ${_hostile}/adam8bit.yaml "global_batch: 512\noptimizer: adam8bit\n")
# A plan whose predicted block says another time than its stages price at
# (written by hand, other profiles, another version): said with both.
file(WRITE ${_hostile}/stale_prediction.yaml "format: autohaap-plan/1\nmodel: gpt3-125m\ncluster: a100x8\n"
     "global_batch: 512\nmicro_batch_size: 8\nnum_micro_batches: 64\nvpp: 1\nzero: 1\nstages:\n"
     "  - {device: a100-80gb, group: 0, first_gpu: 0, gpus: 8, tp: 1, cp: 1, dp: 8, layers: [0, 12], "
     "recompute: none}\npredicted:\n  iteration_time_s: 0.5\n  tokens_per_s: 2097152\n  mfu: 0.8\n  hfu: 0.8\n"
     "  model_tflops_per_gpu: 250\n  bubble_s: 0\n  stage_time_s: [0.0078]\n  stage_memory_GiB: [7.84]\n"
     "  fits: true\n  time_source: analytic\n")
# The longest legal file name, 255 bytes (its temporary had been longer).
string(REPEAT "p" 250 _longest_legal_name)
file(WRITE ${_hostile}/own_device_cluster.yaml "groups:\n  - {device: own_device.yaml, nodes: 1, gpus_per_node: 8}\n")
file(WRITE ${_hostile}/tiny_efficiency.yaml "name: tiny\nbase: a100-80gb\ngemm_efficiency: [[1, 5e-324]]\n")
file(WRITE ${_hostile}/tiny_efficiency_cluster.yaml "groups:\n  - {device: tiny_efficiency.yaml, nodes: 1, gpus_per_node: 8}\n")
# Plans every command but validate once refused: two stages on one GPU
# range, and a model name that is no catalog entry or file.
set(_plan_head "format: autohaap-plan/1\nmodel: gpt3-1.3b\ncluster: mixed-a100-v100\nglobal_batch: 512\n")
string(APPEND _plan_head "micro_batch_size: 8\nnum_micro_batches: 64\nvpp: 1\nzero: 1\nstages:\n")
set(_plan_stage "device: a100-40gb, group: 0, first_gpu: 0, gpus: 4, tp: 1, cp: 1, dp: 4, recompute: none")
set(_plan_text "${_plan_head}  - {${_plan_stage}, layers: [0, 12]}\n  - {${_plan_stage}, layers: [12, 24]}\n")
file(WRITE ${_hostile}/shared_gpus_plan.yaml "${_plan_text}")
string(REPLACE "model: gpt3-1.3b" "model: nope" _plan_text "${_plan_text}")
file(WRITE ${_hostile}/unknown_model_plan.yaml "${_plan_text}")
file(WRITE ${_hostile}/damaged.checkpoint "AHCKPT03 and then nothing a checkpoint holds\n")
# Many node groups of 2 nodes x 8 GPUs: an initialization of minutes.
function(autohaap_write_groups file)
  set(text "groups:\n")
  foreach(d ${ARGN})
    string(APPEND text "  - {device: ${d}, nodes: 2, gpus_per_node: 8}\n")
  endforeach()
  file(WRITE ${_hostile}/${file} "${text}")
endfunction()
set(_devices h100-sxm a100-80gb a100-40gb v100-32gb l40s h200 a800 mi300x h800 v100-16gb t4)
list(SUBLIST _devices 0 8 _eight)
autohaap_write_groups(eight_groups.yaml ${_eight})
autohaap_write_groups(eleven_groups.yaml ${_devices})
# Many groups of few kinds: the uniform plans added after the search once
# listed every subset of 20 groups (bad_alloc at 7 GB); 200 identical
# groups: the mixed stages' rounds once ran 27 s past a 3 s time limit.
set(_twenty "groups:\n")
set(_two_hundred "groups:\n")
foreach(i RANGE 0 199)
  math(EXPR _kind "${i} % 4")
  list(GET _devices ${_kind} _d)
  if(i LESS 20)
    string(APPEND _twenty "  - {device: ${_d}, name: g${i}, nodes: 1, gpus_per_node: 8}\n")
  endif()
  string(APPEND _two_hundred "  - {device: a100-80gb, name: g${i}, nodes: 1, gpus_per_node: 8}\n")
endforeach()
file(WRITE ${_hostile}/twenty_groups.yaml "${_twenty}")
file(WRITE ${_hostile}/two_hundred_groups.yaml "${_two_hundred}")
# Names that would break a hostfile or a line of Megatron arguments.
file(WRITE ${_hostile}/newline_group.yaml
     "groups:\n  - {device: a100-80gb, name: \"rack 1\\nrack 2\", nodes: 1, gpus_per_node: 8}\n")
# '#' starts a comment in a hostfile, ':' and ',' separate its fields.
file(WRITE ${_hostile}/comment_group.yaml
     "groups:\n  - {device: a100-80gb, name: \"#a:b,c=d\", nodes: 1, gpus_per_node: 8}\n")
file(WRITE ${_hostile}/newline_model.yaml
     "name: \"evil\\n--inject 1\"\nfamily: gpt\nlayers: 2\nhidden: 64\nheads: 8\nvocab: 1000\nseq_len: 128\n")
# A zero-width space (U+200B, escaped in YAML) reads as "evil"; a right-to-left
# override reorders the line it is printed on.
file(WRITE ${_hostile}/invisible_model.yaml
     "name: \"ev\\u200bil\"\nfamily: gpt\nlayers: 2\nhidden: 64\nheads: 8\nvocab: 1000\nseq_len: 128\n")
string(REPEAT "x" 300 _long_name)
file(WRITE ${_hostile}/long_name_model.yaml
     "name: ${_long_name}\nfamily: gpt\nlayers: 2\nhidden: 64\nheads: 8\nvocab: 1000\nseq_len: 128\n")
file(WRITE ${_hostile}/repeated_row.csv
     "device,op,tp,micro_batch,seq_len,latency_ms\na100-40gb,layer,1,1,2048,1\na100-40gb,layer,1,1,2048,5\n")
file(WRITE ${_hostile}/far_layer.csv "device,op,tp,micro_batch,seq_len,latency_ms,layer\na100-40gb,layer,1,1,2048,1,99999\n")
file(WRITE ${_hostile}/blank_device.yaml "name: \"   \"\nbase: h100-sxm\n")
# A device name is a column of the node list and hostfile (and the launch
# script reads it as one): a space shifted torchrun's arguments.
file(WRITE ${_hostile}/spaced_device.yaml "name: my a100\nbase: a100-80gb\n")
# 4,194,304 micro-batches: once a 500 MB picture, or bad_alloc.
file(READ ${CMAKE_CURRENT_SOURCE_DIR}/data/report/uniform_4stage.yaml _plan)
string(REPLACE "global_batch: 512" "global_batch: 16777216" _plan "${_plan}")
string(REPLACE "num_micro_batches: 128" "num_micro_batches: 4194304" _plan "${_plan}")
file(WRITE ${_hostile}/long_iteration.yaml "${_plan}")
unset(_plan)
# A second YAML document was silently ignored (a trailing '---' with
# nothing after it is still one document); outputs that are one file (or
# an input) lost one of them.
file(WRITE ${_hostile}/two_documents.yaml "family: gpt\nlayers: 2\nhidden: 64\nheads: 2\nvocab: 100\nseq_len: 64\n---\nlayers: 96\n")
file(WRITE ${_hostile}/trailing_marker.yaml "family: gpt\nlayers: 2\nhidden: 64\nheads: 2\nvocab: 100\nseq_len: 64\n---\n")
file(WRITE ${_hostile}/own_model.yaml "family: gpt\nlayers: 2\nhidden: 64\nheads: 2\nvocab: 100\nseq_len: 64\n")
# Scalars YAML 1.1 reads as their writer did not mean: 010 was octal 8,
# a quoted "2" a number, `yes` a boolean; a name that is not UTF-8 was
# written raw into JSON plans.
file(WRITE ${_hostile}/octal_gpus.yaml "groups:\n  - {device: a100-80gb, nodes: 2, gpus_per_node: 010}\n")
file(WRITE ${_hostile}/quoted_nodes.yaml "groups:\n  - {device: a100-80gb, nodes: \"2\", gpus_per_node: 8}\n")
# A tag makes a string of a number as quotes do (`!!str 2` was read as 2).
file(WRITE ${_hostile}/tagged_nodes.yaml "groups:\n  - {device: a100-80gb, nodes: !!str 2, gpus_per_node: 8}\n")
file(WRITE ${_hostile}/yes_flag.yaml "global_batch: 64\noverlap_grad_reduce: yes\n")
string(ASCII 255 _not_utf8)
file(WRITE ${_hostile}/not_utf8_name.yaml "name: rack${_not_utf8}\ngroups:\n  - {device: a100-80gb, nodes: 1, gpus_per_node: 8}\n")
unset(_not_utf8)
# A plan that cannot fit (Llama 3 70B's weights and Adam states on one
# node of A100s: 16 bytes x 70e9 / 8 GPUs = 140 GB a GPU), and an earlier
# plan file that an infeasible search must leave as it is, and say so.
string(CONCAT _oom_plan "format: autohaap-plan/1\nmodel: llama3-70b\ncluster: a100x8\nglobal_batch: 512\n"
       "micro_batch_size: 1\nnum_micro_batches: 512\nvpp: 1\nzero: 1\nstages:\n"
       "  - {device: a100-80gb, group: 0, first_gpu: 0, gpus: 8, tp: 8, cp: 1, dp: 1, recompute: full, "
       "layers: [0, 80]}\n")
file(WRITE ${_hostile}/oom_plan.yaml "${_oom_plan}")
file(WRITE ${_hostile}/earlier_plan.yaml "${_oom_plan}")
unset(_oom_plan)
# --profiles-only with the A100s measured (slowly) and the V100s not: the
# answer had joined V100 replica sets to the A100 stages (the analytic
# V100s were the faster), leaving the measured points it was asked to keep.
file(WRITE ${_hostile}/a100_v100_pair.yaml
     "groups:\n  - {device: a100-80gb, nodes: 1, gpus_per_node: 4}\n  - {device: v100-32gb, nodes: 1, gpus_per_node: 2}\n")
file(WRITE ${_hostile}/batch_32.yaml "global_batch: 32\nmicro_batch_sizes: [1, 2, 4]\nrecompute: [none, full]\n")
# One file under two names, each with its output's extension.
file(WRITE ${_hostile}/same.html "")
file(CREATE_LINK same.html ${_hostile}/same.json SYMBOLIC)
# Five node groups: what is wrong with an input or an output must be said
# before their initialization, so these cases have a timeout.
list(SUBLIST _devices 0 5 _five)
autohaap_write_groups(five_groups.yaml ${_five})
unset(_devices)
unset(_eight)
unset(_five)

set(_json_depth "arrays and objects nested deeper than 64 levels'. allowed: JSON nested at most 64 levels deep")
set(_hostile_cases
  # 100,000 threads: once a crash (exit 139) inside oneTBB's allocator.
  "hostile_search_threads|2|--threads: got '100000'. allowed: 0 .all. to 4096|search|-m|gpt3-125m|-c|a100x8|--threads|100000"
  "hostile_batch_threads|2|--threads: got '100000'. allowed: 0 .all cores. to 4096|batch|${PROJECT_SOURCE_DIR}/jobs/fleet.yaml|--out|${_hostile}/never|--threads|100000"
  "hostile_plan_json_nesting|2|bomb.json: got 'line 1, column 65: ${_json_depth}|estimate|-m|gpt3-125m|-c|a100x8|--plan|${_hostile}/bomb.json"
  "hostile_report_json_nesting|2|bomb.json: got 'line 1, column 65: ${_json_depth}|report|${_hostile}/bomb.json|-o|${_hostile}/never.svg"
  "hostile_export_json_nesting|2|bomb.json: got 'line 1, column 65: ${_json_depth}|export|${_hostile}/bomb.json|--to|json"
  "hostile_validate_json_nesting|2|bomb.json: got 'line 1, column 65: ${_json_depth}|validate|${_hostile}/bomb.json"
  "hostile_metis_json_nesting|2|DeviceType.A100_tp1_bs1.json: got 'line 1, column 65: ${_json_depth}|estimate|-m|gpt3-125m|-c|a100x8|--profiles|${_hostile}/metis|--tp|1|--pp|1|--dp|8|--micro-batch|1"
  "hostile_plan_yaml_nesting|2|bomb.yaml: line 1, column [0-9]+: got 'lists and maps nested [0-9]+ levels deep'. allowed: YAML nested less than [0-9]+ levels deep|estimate|-m|gpt3-125m|-c|a100x8|--plan|${_hostile}/bomb.yaml"
  "hostile_validate_yaml_nesting|2|bomb.yaml: line 1, column [0-9]+: got 'lists and maps nested|validate|${_hostile}/bomb.yaml"
  "hostile_tiny_bandwidth|2|tiny_bandwidth.yaml: groups.0..intra_node_GBps: got '1e-308'. allowed: a number from 0.001 to 1000000|search|-m|llama3-8b|-c|${_hostile}/tiny_bandwidth.yaml"
  "hostile_huge_nodes|2|huge_nodes.yaml: groups.0..nodes: got '2147483647'. allowed: an integer from 1 to 524288 .at most 4194304 GPUs|search|-m|gpt3-125m|-c|${_hostile}/huge_nodes.yaml"
  "hostile_wide_hidden|2|wide_hidden.yaml: hidden: got '1000000000'. allowed: an integer from 1 to 1048576|validate|${_hostile}/wide_hidden.yaml"
  "hostile_deep_model|2|deep_model.yaml: layers: got '2147483647'. allowed: an integer from 1 to 1024|estimate|-m|${_hostile}/deep_model.yaml|-c|a100x8|--tp|1|--pp|1|--dp|8|--micro-batch|1"
  "hostile_huge_batch|2|huge_batch.yaml: global_batch: got '1000000000'. allowed: an integer from 1 to 16777216|search|-m|gpt3-125m|-c|a100x8|-t|${_hostile}/huge_batch.yaml"
  "hostile_huge_dp|2|--dp: got '2147483647'. allowed: at most the cluster's 8 GPUs|estimate|-m|gpt3-125m|-c|a100x8|--tp|1|--pp|1|--dp|2147483647|--micro-batch|1"
  "hostile_profile_inf_latency|2|inf_latency.csv: row 2.latency_ms: got 'inf'. allowed: a decimal number of milliseconds above 0|estimate|-m|gpt3-125m|-c|a100x8|--profiles|${_hostile}/inf_latency.csv|--tp|1|--pp|1|--dp|8|--micro-batch|1"
  "hostile_time_limit_nan|2|--time-limit: got 'nan'. allowed: a number written in decimal|search|-m|gpt3-125m|-c|a100x8|--time-limit|nan"
  "hostile_time_limit_hex|2|--time-limit: got '0x10'. allowed: a number written in decimal|search|-m|gpt3-125m|-c|a100x8|--time-limit|0x10"
  "hostile_top_octal|2|--top: got '010'. allowed: an integer written in decimal|search|-m|gpt3-125m|-c|a100x8|--top|010"
  "hostile_micro_batch_past_int|2|command line: --micro-batch: got '99999999999'. allowed: an integer of at most 2147483647 in magnitude, written in decimal|estimate|-m|gpt3-125m|-c|a100x8|--tp|1|--pp|1|--dp|8|--micro-batch|99999999999"
  "hostile_top_not_a_number|2|command line: --top: got 'many'. allowed: an integer of at most 2147483647 in magnitude, written in decimal|search|-m|gpt3-125m|-c|a100x8|--top|many"
  "hostile_dp_octal|2|--dp: got '010'. allowed: an integer written in decimal|estimate|-m|gpt3-125m|-c|a100x8|--tp|1|--pp|1|--dp|010|--micro-batch|1"
  "hostile_device_out_is_a_table|2|--out: got '.*gemm.csv'. allowed: a device file name ending .yaml or .yml|device|--measured|${PROJECT_SOURCE_DIR}/tests/data/device/h200|--base|h200|-o|${_hostile}/gemm.csv"
  "hostile_gap_negative|2|--gap: got '-0.1'. allowed: a fraction from 0 to 1|search|-m|gpt3-125m|-c|a100x8|--gap|-0.1"
  "hostile_gap_above_one|2|--gap: got '2'. allowed: a fraction from 0 to 1|search|-m|gpt3-125m|-c|a100x8|--gap|2"
  "hostile_gap_without_bound|2|--gap: got '0.1'. allowed: 0 unless strategy is autohaap|search|-m|gpt3-125m|-c|a100x8|--strategy|uniform|--gap|0.1"
  "hostile_time_limit_negative|2|--time-limit: got '-5'. allowed: a number of seconds >= 0|search|-m|gpt3-125m|-c|a100x8|--time-limit|-5"
  "hostile_max_skeletons_negative|2|--max-skeletons: got '-1'. allowed: 0 .no limit. to 1000000000000|search|-m|gpt3-125m|-c|a100x8|--max-skeletons|-1"
  "hostile_max_skeletons_past_the_guard|2|--max-skeletons: got '4611686018427387904'. allowed: 0 .no limit. to 1000000000000|search|-m|gpt3-125m|-c|a100x8|--max-skeletons|4611686018427387904"
  "hostile_max_skeletons_past_64_bits|2|--max-skeletons: got '99999999999999999999999'. allowed: an integer of at most 9223372036854775807 in magnitude|search|-m|gpt3-125m|-c|a100x8|--max-skeletons|99999999999999999999999"
  "hostile_top_past_the_limit|2|--top: got '100000'. allowed: an integer from 1 to 10000|search|-m|gpt3-125m|-c|a100x8|--top|100000"
  "hostile_checkpoint_interval_tiny|2|--checkpoint-interval: got '1e-300'. allowed: a number of seconds >= 0.01|search|-m|gpt3-125m|-c|a100x8|--checkpoint|${CMAKE_CURRENT_BINARY_DIR}/tiny.ck|--checkpoint-interval|1e-300"
  "hostile_exchange_interval_zero|2|--exchange-interval: got '0'. allowed: a number of seconds >= 0.001|search|-m|gpt3-125m|-c|a100x8|--exchange-interval|0"
  "hostile_unwritable_out_before_search|2|no_such_dir/plan.json: got 'cannot create a temporary file in .*No such file or directory'. allowed: a writable path|search|-m|llama3-8b|-c|${_hostile}/five_groups.yaml|-o|${_hostile}/no_such_dir/plan.json"
  "hostile_damaged_checkpoint_before_search|2|damaged.checkpoint: checkpoint: got 'a damaged or truncated checkpoint|search|-m|llama3-8b|-c|${_hostile}/five_groups.yaml|--checkpoint|${_hostile}/damaged.checkpoint"
  "hostile_report_long_iteration|0|report written to .*long.svg .svg: 4 stages, 4194304 micro-batches|report|${_hostile}/long_iteration.yaml|-o|${_hostile}/long.svg"
  "hostile_startup_time_limit|4|== AutoHAAP summary ==\nstatus +: (interrupted-no-plan)?(time-limit-best-so-far)?\n|search|-m|llama3-8b|-c|${_hostile}/eight_groups.yaml|--time-limit|2"
  "hostile_twenty_groups|0|status +: found|search|-m|gpt3-1.3b|-c|${_hostile}/twenty_groups.yaml|--threads|2"
  "hostile_two_hundred_groups_time_limit|0|status +: found|search|-m|gpt3-1.3b|-c|${_hostile}/two_hundred_groups.yaml|--time-limit|3|--threads|2"
  "hostile_group_name_newline|2|newline_group.yaml: groups.0..name: got 'rack 1.x0arack 2'. allowed: a name of letters, digits, '-', '_' and '.'|validate|${_hostile}/newline_group.yaml"
  "hostile_group_name_comment|2|comment_group.yaml: groups.0..name: got '#a:b,c=d'. allowed: a name of letters, digits|validate|${_hostile}/comment_group.yaml"
  "hostile_model_name_newline|2|newline_model.yaml: name: got 'evil.x0a--inject 1'. allowed: a name of printable characters .UTF-8, none invisible., not blank|validate|${_hostile}/newline_model.yaml"
  "hostile_model_name_invisible|2|invisible_model.yaml: name: got 'ev.u200bil'. allowed: a name of printable characters .UTF-8, none invisible., not blank|validate|${_hostile}/invisible_model.yaml"
  "hostile_model_name_too_long|2|long_name_model.yaml: name: got 'xxxx.*allowed: a name of at most 256 bytes .this one has 300.|validate|${_hostile}/long_name_model.yaml"
  "hostile_validate_every_file|2|newline_model.yaml: name: got 'evil.x0a--inject 1'|validate|${_hostile}/newline_group.yaml|${_hostile}/newline_model.yaml"
  "hostile_device_name_blank|2|blank_device.yaml: name: got '   '. allowed: a name of letters, digits, '-', '_' and '.'|validate|${_hostile}/blank_device.yaml"
  "hostile_device_name_with_a_space|2|spaced_device.yaml: name: got 'my a100'. allowed: a name of letters, digits, '-', '_' and '.' .a column of the hostfile|validate|${_hostile}/spaced_device.yaml"
  "hostile_batch_index_negative|2|command line: --index: got '-1'. allowed: an entry index from 0 .the manifest has 6 entries|batch|${PROJECT_SOURCE_DIR}/jobs/fleet.yaml|--out|${_hostile}/batch_negative|--index|-1"
  "hostile_batch_threads_negative|2|command line: --threads: got '-1'. allowed: 0 .all cores. to 4096|batch|${PROJECT_SOURCE_DIR}/jobs/fleet.yaml|--out|${_hostile}/batch_negative|-j|-1"
  "hostile_profile_repeated_row|2|repeated_row.csv: row 3: got 'a100-40gb,layer,1,1,2048,5'. allowed: one row per device, op, tp, micro_batch, seq_len and layer .row 2 already gave this one.|estimate|-m|gpt3-125m|-c|a100x8|--profiles|${_hostile}/repeated_row.csv|--tp|1|--pp|1|--dp|8|--micro-batch|1"
  "hostile_profile_far_layer|2|far_layer.csv: layer: got '99999'. allowed: a layer index of gpt3-125m: 0 to 11, or -1|estimate|-m|gpt3-125m|-c|a100x8|--profiles|${_hostile}/far_layer.csv|--tp|1|--pp|1|--dp|8|--micro-batch|1"
  "hostile_eleven_groups|2|eleven_groups.yaml: groups: got '11 node groups'. allowed: at most 10 node groups in one search|search|-m|llama3-8b|-c|${_hostile}/eleven_groups.yaml"
  "hostile_million_gpu_launch_manifest|2|million_gpu_plan.yaml: stages: got '4194304 GPUs'. allowed: at most 262144 GPUs for --to launch-json|export|${_hostile}/million_gpu_plan.yaml|--to|launch-json|-m|gpt3-1.3b|-c|${_hostile}/million_nodes.yaml"
  "hostile_million_nodes_time_limit|4|status +: time-limit-best-so-far.*stopped_by +: time-limit|search|-m|gpt3-125m|-c|${_hostile}/million_nodes.yaml|-t|${_hostile}/sixteen_million_batch.yaml|--time-limit|2"
  "hostile_profile_impossible_tp|2|impossible_tp.csv: tp: got '3 .a100-80gb, layer.'. allowed: a tensor-parallel degree gpt3-1.3b can run|estimate|-m|gpt3-1.3b|-c|a100x8|--profiles|${_hostile}/impossible_tp.csv|--tp|1|--pp|1|--dp|8|--micro-batch|1"
  "hostile_profile_faster_than_peak|2|faster_than_peak.csv: latency_ms: got '0.5 .a100-80gb, layer, tp 1, micro_batch 1, seq_len 2048.'. allowed: at least 0.7158 ms|search|-m|gpt3-1.3b|-c|a100x8|--profiles|${_hostile}/faster_than_peak.csv"
  "hostile_validate_shared_gpus_plan|2|shared_gpus_plan.yaml: stages.1..first_gpu: got 'GPUs 0..3 of group 0'|validate|${_hostile}/shared_gpus_plan.yaml"
  "hostile_validate_unknown_model_plan|2|unknown_model_plan.yaml: model: got 'nope'|validate|${_hostile}/unknown_model_plan.yaml"
  "hostile_yaml_two_documents|2|two_documents.yaml: line 8, column 1: got 'a second YAML document'. allowed: one document .nothing after a second '---'.|validate|${_hostile}/two_documents.yaml"
  "hostile_yaml_trailing_marker|0|valid model|validate|${_hostile}/trailing_marker.yaml"
  "hostile_plan_dev_zero|2|/dev/zero: got 'not a regular file .a device, pipe or socket.'|estimate|--plan|/dev/zero"
  "hostile_checkpoint_links_to_out|2|command line: --checkpoint: got '.*link_to_plan.json'. allowed: a file other than -o's|search|-m|gpt3-125m|-c|a100x8|-o|${_hostile}/linked_plan.json|--checkpoint|${_hostile}/link_to_plan.json"
  "hostile_out_is_report|2|command line: --report: got '.*same.html'. allowed: a file other than -o's|search|-m|gpt3-125m|-c|a100x8|-o|${_hostile}/same.json|--report|${_hostile}/same.html"
  "hostile_checkpoint_is_out_spelled_otherwise|2|command line: -[-a-z]+: got '(./)?spelled.json'. allowed: a file other than -[-a-z]+'s|search|-m|gpt3-125m|-c|a100x8|-o|spelled.json|--checkpoint|./spelled.json"
  "hostile_out_is_clusters_device|2|command line: -o: got '.*own_device.yaml'. allowed: a new file or an earlier plan, not a device file|search|-m|gpt3-125m|-c|${_hostile}/own_device_cluster.yaml|-o|${_hostile}/own_device.yaml"
  "hostile_tiny_gemm_efficiency|2|tiny_efficiency.yaml: gemm_efficiency.0..1.: got '4.94065645841e-324'. allowed: a number from 0.01 to 1|estimate|-m|gpt3-125m|-c|${_hostile}/tiny_efficiency_cluster.yaml|--tp|1|--pp|1|--dp|8|--micro-batch|1"
  "hostile_out_is_model|2|command line: -o: got '.*own_model.yaml'. allowed: a file other than the input --model reads|search|-m|${_hostile}/own_model.yaml|-c|a100x8|-o|${_hostile}/own_model.yaml"
  "hostile_yaml_tagged_integer|2|tagged_nodes.yaml: groups.0..nodes: got '2'. allowed: a positive integer, written in decimal and not quoted|validate|${_hostile}/tagged_nodes.yaml"
  "hostile_yaml_octal_integer|2|octal_gpus.yaml: groups.0..gpus_per_node: got '010'. allowed: a positive integer, written in decimal and not quoted|validate|${_hostile}/octal_gpus.yaml"
  "hostile_yaml_quoted_integer|2|quoted_nodes.yaml: groups.0..nodes: got '2'. allowed: a positive integer, written in decimal and not quoted|validate|${_hostile}/quoted_nodes.yaml"
  "hostile_yaml_yes_flag|2|yes_flag.yaml: overlap_grad_reduce: got 'yes'. allowed: true or false, not quoted|validate|${_hostile}/yes_flag.yaml"
  "hostile_name_not_utf8|2|not_utf8_name.yaml: name: got 'rack.*'. allowed: text in UTF-8|validate|${_hostile}/not_utf8_name.yaml"
  "hostile_out_unknown_extension|2|command line: -o: got 'plan.txt'. allowed: a plan file name ending .json, .yaml or .yml|search|-m|gpt3-125m|-c|a100x8|-o|plan.txt"
  "hostile_estimate_out_unknown_extension|2|command line: -o: got 'plan.jsn'. allowed: a plan file name ending .json, .yaml or .yml|estimate|-m|gpt3-125m|-c|a100x8|--tp|1|--pp|1|--dp|8|--micro-batch|1|-o|plan.jsn"
  "hostile_export_does_not_fit|3|warning: .*oom_plan.yaml does not fit in memory: stage 0 needs [0-9.]+ GiB per GPU of its 80.0 GiB .1 of 1 stages overflow, this one the most.|export|${_hostile}/oom_plan.yaml|--to|hostfile"
  "hostile_report_does_not_fit|3|report written to .*oom.svg .*does not fit in memory.*warning: .*oom_plan.yaml does not fit in memory: stage 0 needs [0-9.]+ GiB per GPU|report|${_hostile}/oom_plan.yaml|-o|${_hostile}/oom.svg"
  "hostile_export_over_a_device_file|2|command line: -o: got '.*own_device.yaml'. allowed: a new file or an earlier export, not a device file .the export would overwrite it.|export|${_hostile}/oom_plan.yaml|--to|hostfile|-o|${_hostile}/own_device.yaml"
  "hostile_profiles_only_no_unmeasured_replica_sets|0|pipeline.1 +[0-9.]+ +[0-9]+ +[0-9.]+ +[0-9]+ +[0-9]+  [a-z]+ +a100-80gb:1x[0-9]+.[0-9]+.|search|-m|gpt3-125m|-c|${_hostile}/a100_v100_pair.yaml|-t|${_hostile}/batch_32.yaml|--profiles|${PROJECT_SOURCE_DIR}/tests/data/profile_microseconds.csv|--profiles-only"
  "hostile_device_over_a_cluster_file|2|command line: --out: got '.*own_device_cluster.yaml'. allowed: a new file or an earlier device, not a cluster file|device|--measured|${PROJECT_SOURCE_DIR}/tests/data/device/h200|--base|h200|-o|${_hostile}/own_device_cluster.yaml"
  "hostile_export_over_a_csv|2|command line: -o: got '.*measured.csv'. allowed: a new file or an earlier export, not a file of another kind|export|${_hostile}/oom_plan.yaml|--to|nodelist|-o|${_hostile}/measured.csv"
  "hostile_report_over_notes|2|command line: --out: got '.*notes.html'. allowed: a new file or an earlier report, not a file of another kind|report|${_hostile}/oom_plan.yaml|-o|${_hostile}/notes.html"
  "hostile_export_to_a_dash|2|command line: -o: got '-'. allowed: a file name .without -o the export goes to standard output.|export|${_hostile}/oom_plan.yaml|--to|hostfile|-o|-"
  "hostile_estimate_stage_across_part_of_a_node|2|--tp x --cp x --dp: got '4'. allowed: stages that lie inside one node of 3 GPUs or on whole nodes .* stage 0 would take GPUs 0..3|estimate|-m|gpt3-125m|-c|${_hostile}/nodes_of_three.yaml|--tp|1|--pp|3|--dp|4|--micro-batch|1|-o|${_hostile}/part_of_a_node.json"
  "hostile_estimate_cp_without_fused_attention|2|--cp: got '2'. allowed: 1 for a model with flash_attention: false|estimate|-m|gpt3-125m|-c|a100x8|--tp|1|--pp|1|--cp|2|--dp|4|--micro-batch|1"
  "hostile_export_megatron_eight_bit_adam|3|optimizer: adam8bit .8-bit Adam. is Megatron-DeepSpeed's --use-bnb-optimizer.*nearest expressible plan: none|export|${PROJECT_SOURCE_DIR}/tests/data/replicas/mixed_stage.yaml|--to|megatron|-m|gpt3-1.3b|-c|mixed-a100-v100|-t|${_hostile}/adam8bit.yaml"
  "hostile_threads_past_the_hardware|0|note: -j 4096: this process has [0-9]+ hardware threads? and runs that many workers|search|-m|gpt3-125m|-c|a100x8|-j|4096"
  "hostile_estimate_stale_prediction|0|note: .*stale_prediction.yaml says 0.5 s an iteration. priced here [0-9.]+ s .[+][0-9.]+%.: the specs, profiles or cost model it was written with differ|estimate|--plan|${_hostile}/stale_prediction.yaml"
  "hostile_longest_legal_output_name|0|fits +: yes|estimate|-m|gpt3-125m|-c|a100x8|--tp|1|--pp|1|--dp|8|--micro-batch|1|-o|${_hostile}/${_longest_legal_name}.json"
  "hostile_export_json_over_a_device_file|2|command line: -o: got '.*own_device.yaml'. allowed: a new file or an earlier plan, not a device file|export|${_hostile}/oom_plan.yaml|--to|json|-o|${_hostile}/own_device.yaml"
  "hostile_infeasible_keeps_earlier_out|3|note: no plan written. .*earlier_plan.yaml is left as it was and holds an earlier plan|search|-m|llama3-70b|-c|a100x8|-o|${_hostile}/earlier_plan.yaml"
  "hostile_batch_result_nesting|0|found +: 1.*warning: previous result .*gpt3-1.3b__a100x8__default.json refused \\(line 1, column 65: arrays and objects nested deeper than 64 levels\\). searching again|batch|${PROJECT_SOURCE_DIR}/jobs/fleet.yaml|--out|${_hostile}/batch|--index|0"
)
autohaap_cli_cases("cli" ${_hostile_cases})
set_tests_properties(cli_hostile_unwritable_out_before_search cli_hostile_damaged_checkpoint_before_search
                     cli_hostile_report_long_iteration PROPERTIES TIMEOUT 30)
# Initialization honours --time-limit and SIGTERM within about a second.
set_tests_properties(cli_hostile_startup_time_limit PROPERTIES TIMEOUT 15)
# And so does the refinement after the search (3 s limit, 1 s at least for
# refining); the twenty groups merge into four kinds and finish at once.
set_tests_properties(cli_hostile_two_hundred_groups_time_limit cli_hostile_twenty_groups PROPERTIES TIMEOUT 20)
# The mixed stages' shares once ran on past a 2 s limit (and SIGTERM) there.
set_tests_properties(cli_hostile_million_nodes_time_limit PROPERTIES TIMEOUT 20)
add_test(NAME cli_hostile_sigterm_during_startup
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/sigterm_during_startup.sh $<TARGET_FILE:autohaap>
                 ${_hostile}/eight_groups.yaml ${_hostile}/sigterm)
set_tests_properties(cli_hostile_sigterm_during_startup PROPERTIES LABELS "cli" TIMEOUT 30)
add_test(NAME cli_hostile_stdout_write_failure
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/stdout_write_failure.sh $<TARGET_FILE:autohaap>
                 ${CMAKE_CURRENT_SOURCE_DIR}/data/replicas/mixed_stage.yaml)
set_tests_properties(cli_hostile_stdout_write_failure PROPERTIES LABELS "cli" TIMEOUT 60)
# The batch case needs its damaged result file in place on every run (the
# run itself replaces it).
add_test(NAME cli_hostile_batch_result_setup
         COMMAND ${CMAKE_COMMAND} -E copy ${_hostile}/bomb.json
                 ${_hostile}/batch/results/gpt3-1.3b__a100x8__default.json)
set_tests_properties(cli_hostile_batch_result_setup PROPERTIES FIXTURES_SETUP hostile_batch LABELS "cli")
set_tests_properties(cli_hostile_batch_result_nesting PROPERTIES FIXTURES_REQUIRED hostile_batch)
# An empty value given to an option (`-o ''`) once meant "no plan file"
# without a word; CMake passes the empty argument as it is.
add_test(NAME cli_hostile_empty_out COMMAND $<TARGET_FILE:autohaap> search -m gpt3-125m -c a100x8 -o "")
set_tests_properties(cli_hostile_empty_out PROPERTIES LABELS "cli" TIMEOUT 30
                     PASS_REGULAR_EXPRESSION "error: command line: --out: got ''. allowed: a non-empty value")
add_test(NAME cli_hostile_device_base_unknown
         COMMAND $<TARGET_FILE:autohaap> device --measured ${PROJECT_SOURCE_DIR}/tests/data/device/h200 --base nope)
set_tests_properties(cli_hostile_device_base_unknown PROPERTIES LABELS "cli" TIMEOUT 30
                     PASS_REGULAR_EXPRESSION "error: command line: --base: got 'nope'. allowed: a YAML file path or a catalog device")
# Profiles of no device of the cluster once priced every stage analytically
# without a word (and with --profiles-only blamed the micro-batch rule).
file(WRITE ${_hostile}/h100_only.csv "device,op,tp,micro_batch,seq_len,latency_ms\nh100-sxm,layer,1,1,2048,5\n")
autohaap_cli_cases("cli"
  "hostile_profiles_of_no_device|2|h100_only.csv: device: got 'h100-sxm'. allowed: measurements of at least one of the cluster's devices: a100-40gb, v100-32gb|search|-m|gpt3-1.3b|-c|mixed-a100-v100|--profiles|${_hostile}/h100_only.csv"
  "hostile_checkpoint_interval_alone|2|--checkpoint-interval: got '5'. allowed: the default unless a checkpoint is written|search|-m|gpt3-125m|-c|a100x8|--checkpoint-interval|5"
  "hostile_max_skeletons_for_a_baseline|2|--max-skeletons: got '5'. allowed: the default unless strategy is autohaap|search|-m|gpt3-125m|-c|a100x8|-s|uniform|--max-skeletons|5")
# A layer list's costs are per sequence of its own length: a training file
# with another seq_len scaled tokens/s 8x and left the time as it was.
file(WRITE ${_hostile}/long_sequences.yaml "global_batch: 64\nseq_len: 4096\n")
autohaap_cli_cases("cli"
  "hostile_layer_list_other_seq_len|2|long_sequences.yaml: seq_len: got '4096'. allowed: the layer list's own 512 of model lstm-2layer-lm|search|-m|lstm-2layer-lm|-c|a100x8|-t|${_hostile}/long_sequences.yaml")
# An FP8 peak 100 times the 16-bit one: MFU (against the 16-bit peak) came
# out at 2.78 without a word.
file(WRITE ${_hostile}/fp8_absurd.yaml "base: h100-sxm\nname: weird\npeak_fp8_tflops: 100000\n")
autohaap_cli_cases("cli"
  "hostile_device_fp8_past_twice|2|fp8_absurd.yaml: peak_fp8_tflops: got '100000'. allowed: 0 .none. or at most 2.1 x peak_tflops|validate|${_hostile}/fp8_absurd.yaml")
# A --cache that is a file: the error named the path alone, not the option.
file(WRITE ${_hostile}/cache_is_a_file "not a folder\n")
autohaap_cli_cases("cli"
  "hostile_batch_cache_is_a_file|2|command line: --cache: got '.*cache_is_a_file'. allowed: a folder that can be created|batch|${PROJECT_SOURCE_DIR}/jobs/fleet.yaml|--out|${_hostile}/batch_cache_file|--cache|${_hostile}/cache_is_a_file|--index|0")
# A plan priced on measured profiles, read back without them: priced by the
# analytic model, which had been a different figure without a word.
autohaap_cli_cases("cli"
  "hostile_measured_plan_written|0|status +: found|search|-m|gpt3-125m|-c|mixed-a100-v100|--profiles|${PROJECT_SOURCE_DIR}/tests/data/metis/gpt3-125m|-o|${_hostile}/measured_plan.json"
  "hostile_measured_plan_without_profiles|0|note: .*measured_plan.json was priced on measured profiles .time_source: measured.. without --profiles it is priced by the analytic model here|estimate|--plan|${_hostile}/measured_plan.json")
set_tests_properties(cli_hostile_measured_plan_written PROPERTIES FIXTURES_SETUP hostile_measured_plan)
set_tests_properties(cli_hostile_measured_plan_without_profiles PROPERTIES FIXTURES_REQUIRED hostile_measured_plan)
# Profiles of whole layers alone: a stage holding the embedding or the
# output layer is analytic by its least measured part, and said so while
# its layers were measured ("0 analytic" alone had hidden a 4.4x change).
file(WRITE ${_hostile}/layers_only.csv
     "device,op,tp,micro_batch,seq_len,latency_ms\na100-80gb,layer,1,1,2048,3.1\na100-80gb,layer_backward,1,1,2048,6.3\n")
autohaap_cli_cases("cli"
  "hostile_layers_only_profile_source|0|stage times: 0 analytic .layers measured. 1 analytic .layers measured.|estimate|-m|gpt3-125m|-c|a100x8|--profiles|${_hostile}/layers_only.csv|--tp|1|--pp|2|--dp|4|--micro-batch|1")
# A plan file without specs, of another global batch than the built-in
# training's 512: its JSON export embedded 512 beside the plan's 64, and
# every reader then refused it.
string(CONCAT _gb64_plan "format: autohaap-plan/1\nmodel: gpt3-1.3b\ncluster: a100x8\nglobal_batch: 64\n"
       "micro_batch_size: 8\nnum_micro_batches: 8\nvpp: 1\nzero: 1\nstages:\n"
       "  - {device: a100-80gb, group: 0, first_gpu: 0, gpus: 8, tp: 1, cp: 1, dp: 8, layers: [0, 24], recompute: none}\n")
file(WRITE ${_hostile}/batch64_plan.yaml "${_gb64_plan}")
unset(_gb64_plan)
autohaap_cli_cases("cli"
  "hostile_export_json_of_its_own_batch|0|json export written|export|${_hostile}/batch64_plan.yaml|--to|json|-o|${_hostile}/batch64_plan.json"
  "hostile_export_json_reads_back|0|valid plan|validate|${_hostile}/batch64_plan.json")
set_tests_properties(cli_hostile_export_json_of_its_own_batch PROPERTIES FIXTURES_SETUP hostile_batch64)
set_tests_properties(cli_hostile_export_json_reads_back PROPERTIES FIXTURES_REQUIRED hostile_batch64)
# Profiles of one device type of two: plans timed on measured points rank
# before analytic ones, so a faster analytic plan was listed far below the
# answer, and the answer's gap of 0 read as a proof over every plan. The
# listing now names each plan's time source and the note says what the
# ranking passed over.
file(MAKE_DIRECTORY ${_hostile}/metis_a100_only)
file(COPY ${PROJECT_SOURCE_DIR}/tests/data/metis/gpt3-125m/DeviceType.A100_tp1_bs1.json
          ${PROJECT_SOURCE_DIR}/tests/data/metis/gpt3-125m/DeviceType.A100_tp1_bs2.json
          ${PROJECT_SOURCE_DIR}/tests/data/metis/gpt3-125m/DeviceType.A100_tp2_bs1.json
     DESTINATION ${_hostile}/metis_a100_only)
autohaap_cli_cases("cli"
  "hostile_partial_profiles_rank_by_source|0|times +pipeline.*1 +[0-9.]+ +[0-9]+ +[0-9.]+ +[0-9]+ +[0-9]+ +measured .*note: with --profiles, plans timed on measured or corrected points rank before less measured ones.*timed analytic.*ranked_by +: time source.*faster_below_s +: 0\\.8|search|-m|gpt3-125m|-c|mixed-a100-v100|--profiles|${_hostile}/metis_a100_only|-k|60|-j|1")
# One group of 65,536 nodes with the batch per replica (a plan may use all
# 524,288 GPUs): every share of it was checked before the search began,
# minutes deaf to --time-limit and to SIGTERM. Such a group now takes
# power-of-two shares at once, and the search ends in seconds (5 s).
file(WRITE ${_hostile}/huge_group.yaml "name: huge\ngroups:\n  - device: a100-80gb\n    nodes: 65536\n    gpus_per_node: 8\n")
autohaap_cli_cases("cli"
  "hostile_huge_group_per_replica_within_limit|0|status +: found|search|-m|llama3-405b|-c|${_hostile}/huge_group.yaml|-t|${PROJECT_SOURCE_DIR}/tests/data/merge/per_replica.yaml|-j|1|--time-limit|60")
set_tests_properties(cli_hostile_huge_group_per_replica_within_limit PROPERTIES TIMEOUT 120)
# What a figure or a setting means, said where it could mislead:
# - MFU counts a causal model's whole score matrix (Megatron-LM's and
#   torchtitan's convention), HFU what the fused kernel computes (half): at
#   131,072 tokens MFU passed HFU without a word, read as more work than
#   was done; the summary now says how each counts where MFU is the larger.
# - A plan scored with a training file of another ZeRO stage keeps its own
#   (a plan field): the note had said "scored with the one given" and kept
#   the plan's zero 1 under a file of zero 3.
file(WRITE ${_hostile}/seq_131072.yaml "global_batch: 64\nseq_len: 131072\n")
file(WRITE ${_hostile}/zero3_training.yaml "global_batch: 512\nzero: 3\n")
autohaap_cli_cases("cli"
  "hostile_mfu_above_hfu_says_why|0|mfu +: 0\\.6[0-9]+\nhfu +: 0\\.3[0-9]+\nmfu_counts +: the whole causal score matrix|estimate|-m|llama3-8b|-c|h100-sxm-4nodes|-t|${_hostile}/seq_131072.yaml|--tp|4|--pp|1|--dp|1|--cp|8|--micro-batch|1"
  "hostile_plan_keeps_its_zero_and_says_so|0|note: --train .*zero3_training.yaml has zero 3. the plan.s zero [012] is kept|estimate|--plan|${_hostile}/measured_plan.json|-t|${_hostile}/zero3_training.yaml")
set_tests_properties(cli_hostile_plan_keeps_its_zero_and_says_so PROPERTIES FIXTURES_REQUIRED hostile_measured_plan)
add_test(NAME cli_hostile_validate_plan_checks
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/validate_plan_checks.sh $<TARGET_FILE:autohaap>
                 ${CMAKE_CURRENT_SOURCE_DIR}/data/replicas/mixed_stage.yaml)
set_tests_properties(cli_hostile_validate_plan_checks PROPERTIES LABELS "cli" TIMEOUT 60)
# A global batch of one micro-batch (m = 1) on six node groups: the walk
# bounded no prefix where m = 1 (its bounds are (m - 1) x pace plus the
# stage sum, and only the sum is left), so it visited every skeleton, and
# gave no answer proven in minutes; the sum alone now cuts the prefixes,
# and it ends, proven, in well under a second.
file(WRITE ${_hostile}/six_groups_small.yaml
     "name: six-small\ngroups:\n"
     "  - {device: h100-sxm, nodes: 1, gpus_per_node: 8}\n  - {device: mi300x, nodes: 3, gpus_per_node: 4}\n"
     "  - {device: l40s, nodes: 1, gpus_per_node: 2}\n  - {name: mi300x-single, device: mi300x, nodes: 2, gpus_per_node: 1}\n"
     "  - {device: a100-80gb, nodes: 1, gpus_per_node: 4}\n  - {device: a10, nodes: 3, gpus_per_node: 8}\n")
file(WRITE ${_hostile}/batch_of_8.yaml "global_batch: 8\nruntime: fsdp\nheadroom_GiB: 0\n")
autohaap_cli_cases("cli"
  "hostile_one_micro_batch_many_groups|0|iteration_time_s +: 0.0418506\n.*gap +: 0.0000|search|-m|gpt3-350m|-c|${_hostile}/six_groups_small.yaml|-t|${_hostile}/batch_of_8.yaml|-j|1|--time-limit|100")
set_tests_properties(cli_hostile_one_micro_batch_many_groups PROPERTIES TIMEOUT 120)
