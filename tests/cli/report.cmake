# CLI instance tests of report, export and Metis profiles: a table of
#   name | expected exit code | regex the output must match | arguments...
# plus one test that renders an HTML report in headless Chromium and checks
# the screenshot is not blank (skipped where Chromium is not installed).
set(_data ${CMAKE_CURRENT_SOURCE_DIR}/data)
set(_mixed ${_data}/report/mixed_3stage.yaml)
set(_uniform ${_data}/report/uniform_4stage.yaml)
set(_out ${CMAKE_CURRENT_BINARY_DIR}/report_out)
file(MAKE_DIRECTORY ${_out})
set(_report_cases
  "report_svg|0|report written to .*mixed.svg \\(svg: 3 stages, 64 micro-batches, iteration [0-9.]+ s\\)|report|${_mixed}|--out|${_out}/mixed.svg"
  "report_html|0|report written to .*mixed.html \\(html: 3 stages|report|${_mixed}|-o|${_out}/mixed.html|--model|gpt3-1.3b|--cluster|mixed-a100-v100"
  "report_too_many_stages_names_the_plan|2|plan_129_stages.yaml: stages: got '129 pipeline stages'. allowed: at most 128 for a schedule|report|${CMAKE_CURRENT_SOURCE_DIR}/data/report/too_many_stages/plan_129_stages.yaml|-o|${_out}/too_many.svg|-m|${CMAKE_CURRENT_SOURCE_DIR}/data/report/too_many_stages/deep.yaml|-c|${CMAKE_CURRENT_SOURCE_DIR}/data/report/too_many_stages/c320.yaml"
  "report_bad_extension|2|command line: --out: got '[^']*mixed.png'. allowed: a file name ending .svg, .html or .htm|report|${_mixed}|--out|${_out}/mixed.png"
  "report_unwritable_path|2|no_such_dir/mixed.svg: .*No such file or directory|report|${_mixed}|--out|${_out}/no_such_dir/mixed.svg"
  "report_plan_of_other_model|2|mixed_3stage.yaml: model: got 'gpt3-1.3b'. allowed: 'gpt3-2.7b'|report|${_mixed}|--out|${_out}/x.svg|-m|gpt3-2.7b"
  "report_plan_of_other_cluster|2|mixed_3stage.yaml: cluster: got 'mixed-a100-v100'|report|${_mixed}|--out|${_out}/x.svg|-c|a100x8"
  "report_missing_plan|2|no_such_plan.yaml|report|no_such_plan.yaml|--out|${_out}/x.svg"
  "export_megatron|0|--tensor-model-parallel-size 2 .\n--pipeline-model-parallel-size 4 .\n--micro-batch-size 2 .*--decoder-first-pipeline-num-layers 5 .\n--decoder-last-pipeline-num-layers 5|export|${_uniform}|--to|megatron"
  "export_megatron_not_expressible|3|# not expressible.*tensor-parallel degree differs across stages: tp 4 \\(stages 0, 2\\), tp 2 \\(stage 1\\).*# nearest expressible plan: a100-40gb: tp [0-9]+ x pp [0-9]+ x dp [0-9]+.*# predicted iteration [0-9.]+ s vs [0-9.]+ s for this plan.*# its node list .node rank = line.:\n#   .*in the order of its node list above.*--tensor-model-parallel-size|export|${_mixed}|--to|megatron"
  "export_megatron_to_file|3|# not expressible.*--tensor-model-parallel-size.*note: not written to .*args.txt: the plan is not expressible|export|${_mixed}|--to|megatron|-o|${_out}/args.txt"
  "export_hostfile|0|# node +gpu +rank +stage +tp_rank +cp_rank +dp_rank +device\na100-40gb-node0 +0 +0 +0 +0 +0 +0 +a100-40gb.*v100-32gb-node1 +5 +29 +2 +1 +0 +3 +v100-32gb|export|${_mixed}|--to|hostfile"
  "export_json|0|\"format\": \"autohaap-plan/1\".*\"predicted\": {.*\"iteration_time_s\": [0-9.]+|export|${_mixed}|--to|json"
  "export_unknown_target|2|--to: deepspeed not in|export|${_mixed}|--to|deepspeed"
  "export_launch_json|0|launch-json export written to .*mixed_launch.json|export|${_mixed}|--to|launch-json|-o|${_out}/mixed_launch.json"
  "validate_launch_manifest|0|mixed_launch.json: valid launch manifest|validate|${_out}/mixed_launch.json"
  "export_launch_json_peers|0|\"format\": \"autohaap-launch/1\".*\"world_size\": 2,.*\"rank\": 0,.*\"send_to\": .\n +{\n +\"rank\": 1,|export|${_data}/launch/two_stage.yaml|--to|launch-json"
  "validate_launch_missing_key|2|missing_key.json: ranks\\[1\\].tokens: got '.missing.'|validate|${_data}/launch/missing_key.json"
  "validate_launch_asymmetric_peer|2|asymmetric_peer.json: ranks\\[0\\].send_to\\[0\\]: .*lists this rank back: ranks\\[1\\].recv_from|validate|${_data}/launch/asymmetric_peer.json"
  "metis_profiles_estimate|0|0 +a100-40gb +2 +1 x 2 .0,6. +none +5.02 +9.92 |estimate|-m|gpt3-125m|-c|mixed-a100-v100|--profiles|${_data}/metis/gpt3-125m|--tp|1|--pp|2|--dp|2|--micro-batch|1"
  "metis_profiles_search_scores_measured_or_corrected|0|stage times:( [0-9]+ [a-z]+ed)+ \\(measured:.*profile correction a100-40gb layer: x1\\.[0-9]+, median of 36 measured points.*profile correction v100-32gb layer: x1\\.[0-9]+, median of 24|search|-m|gpt3-125m|-c|mixed-a100-v100|--profiles|${_data}/metis/gpt3-125m"
  "metis_profiles_only_search|0|not_profiled +[1-9][0-9]*.*stage times:( [0-9]+ measured)+ \\(measured|search|-m|gpt3-125m|-c|mixed-a100-v100|--profiles|${_data}/metis/gpt3-125m|--profiles-only|--explain"
  "profiles_only_without_profiles|2|--profiles-only: got 'set'. allowed: only with --profiles|search|-m|gpt3-125m|-c|mixed-a100-v100|--profiles-only"
  "metis_profiles_wrong_model|2|DeviceType.A100_tp1_bs1.json: model.num_layers: got '14'. allowed: 26: the embedding, the 24 layers of gpt3-350m|estimate|-m|gpt3-350m|-c|mixed-a100-v100|--profiles|${_data}/metis/gpt3-125m|--tp|1|--pp|2|--dp|2|--micro-batch|1"
  "metis_profiles_empty_dir|2|no .json files|estimate|-m|gpt3-125m|-c|mixed-a100-v100|--profiles|${_data}/report|--tp|1|--pp|2|--dp|2|--micro-batch|1"
  "export_megatron_interleaved_cp_fp8|0|x cp 2 x dp 1.*--context-parallel-size 2.*--num-layers-per-virtual-pipeline-stage 4.*--overlap-param-gather.*--bf16.*--fp8-format hybrid|export|${_data}/report/llama3_70b_interleaved_cp.yaml|--to|megatron|-t|llama3-h100-fp8-megatron"
  "estimate_interleaved_plan_file|0|tp x cp x dp.*interleaved 1F1B: 5 chunks.*vpp +: 5.*fits +: yes|estimate|--plan|${_data}/report/llama3_70b_interleaved_cp.yaml|-m|llama3-70b|-c|h100-sxm-4nodes|-t|llama3-h100-fp8-megatron"
  "report_replica_sets_html|0|report written to .*replica_sets.html \\(html: 2 stages, 64 micro-batches|report|${_data}/replicas/mixed_stage.yaml|-o|${_out}/replica_sets.html"
  "report_replica_sets_svg|0|report written to .*replica_sets.svg \\(svg: 2 stages, 64 micro-batches|report|${_data}/replicas/mixed_stage.yaml|-o|${_out}/replica_sets.svg"
  "report_interleaved_says_so|0|report written to .*interleaved.svg|report|${_data}/report/llama3_70b_interleaved_cp.yaml|-t|llama3-h100-fp8-megatron|-o|${_out}/interleaved.svg"
)
autohaap_cli_cases("cli;report" ${_report_cases})
# validate reads the manifest export writes.
set_tests_properties(cli_export_launch_json PROPERTIES FIXTURES_SETUP launch_manifest)
set_tests_properties(cli_validate_launch_manifest PROPERTIES FIXTURES_REQUIRED launch_manifest)

# The HTML report, drawn by a browser: the screenshot must show a picture.
set_tests_properties(cli_report_html PROPERTIES FIXTURES_SETUP report_html)
add_test(NAME cli_report_renders_in_chromium
         COMMAND ${PROJECT_SOURCE_DIR}/scripts/render_check.sh ${_out}/mixed.html ${_out}/mixed_screenshot.png)
set_tests_properties(cli_report_renders_in_chromium PROPERTIES
  LABELS "cli;report" FIXTURES_REQUIRED report_html SKIP_RETURN_CODE 77 TIMEOUT 180)

# file_test(NAME WRITER FILE REGEX): test cli_NAME checks that FILE, which
# test cli_WRITER writes, matches REGEX (cmake/file_matches.cmake).
function(file_test name writer file regex)
  set_tests_properties(cli_${writer} PROPERTIES FIXTURES_SETUP ${writer}_output)
  add_test(NAME cli_${name}
           COMMAND ${CMAKE_COMMAND} -DFILE=${file} "-DEXPECT_REGEX=${regex}"
                   -P ${PROJECT_SOURCE_DIR}/cmake/file_matches.cmake)
  set_tests_properties(cli_${name} PROPERTIES LABELS "cli;report" FIXTURES_REQUIRED ${writer}_output)
endfunction()

# A stage of replica sets: the HTML table has a row per set with its own
# device, group, GPUs, replicas and share (the A100 set paces the stage);
# the SVG a memory bar per set against its own device's capacity.
file_test(report_replica_sets_html_rows report_replica_sets_html ${_out}/replica_sets.html
  "<tr class=\"set slowest\"><td class=\"num\">1a</td>[^\n]*a100-40gb</td><td class=\"num\">2 \\(group 0, GPUs 4–5\\)</td><td class=\"num\">1 × 2</td>[^\n]*<td>6 of 8, slowest</td>[^\n]*\n<tr class=\"set\"><td class=\"num\">1b</td>[^\n]*v100-32gb</td><td class=\"num\">2 \\(group 1, GPUs 0–1\\)</td><td class=\"num\">1 × 2</td>[^\n]*<td>2 of 8</td>")
file_test(report_replica_sets_svg_bars report_replica_sets_svg ${_out}/replica_sets.svg
  "Stage 1 — a100-40gb\\+v100-32gb.*class=\"mem-bar\" data-stage=\"1\" data-set=\"1a\".*GiB a100-40gb<.*class=\"mem-bar\" data-stage=\"1\" data-set=\"1b\".*GiB v100-32gb<")
