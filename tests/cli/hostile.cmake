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
file(WRITE ${_hostile}/metis/DeviceType.A100_tp1_bs1.json "${_open}${_close}")
string(REPEAT "[" 100000 _open)
string(REPEAT "]" 100000 _close)
file(WRITE ${_hostile}/bomb.yaml "stages: ${_open}${_close}\n")
unset(_open)
unset(_close)

set(_json_depth "arrays and objects nested deeper than 64 levels'. allowed: JSON nested at most 64 levels deep")
set(_hostile_cases
  "hostile_plan_json_nesting|2|bomb.json: got 'line 1, column 65: ${_json_depth}|estimate|-m|gpt3-125m|-c|a100x8|--plan|${_hostile}/bomb.json"
  "hostile_report_json_nesting|2|bomb.json: got 'line 1, column 65: ${_json_depth}|report|${_hostile}/bomb.json|-o|${_hostile}/never.svg"
  "hostile_export_json_nesting|2|bomb.json: got 'line 1, column 65: ${_json_depth}|export|${_hostile}/bomb.json|--to|json"
  "hostile_metis_json_nesting|2|DeviceType.A100_tp1_bs1.json: got 'line 1, column 65: ${_json_depth}|estimate|-m|gpt3-125m|-c|a100x8|--profiles|${_hostile}/metis|--tp|1|--pp|1|--dp|8|--micro-batch|1"
  "hostile_plan_yaml_nesting|2|bomb.yaml: line 1, column [0-9]+: got 'lists and maps nested [0-9]+ levels deep'. allowed: YAML nested less than [0-9]+ levels deep|estimate|-m|gpt3-125m|-c|a100x8|--plan|${_hostile}/bomb.yaml"
  "hostile_validate_yaml_nesting|2|bomb.yaml: line 1, column [0-9]+: got 'lists and maps nested|validate|${_hostile}/bomb.yaml"
  "hostile_batch_result_nesting|0|found +: 1.*warning: previous result .*gpt3-1.3b__a100x8__default.json refused \\(line 1, column 65: arrays and objects nested deeper than 64 levels\\). searching again|batch|${PROJECT_SOURCE_DIR}/jobs/fleet.yaml|--out|${_hostile}/batch|--index|0"
)
autohaap_cli_cases("cli" ${_hostile_cases})
# The batch case needs its damaged result file in place on every run (the
# run itself replaces it).
add_test(NAME cli_hostile_batch_result_setup
         COMMAND ${CMAKE_COMMAND} -E copy ${_hostile}/bomb.json
                 ${_hostile}/batch/results/gpt3-1.3b__a100x8__default.json)
set_tests_properties(cli_hostile_batch_result_setup PROPERTIES FIXTURES_SETUP hostile_batch LABELS "cli")
set_tests_properties(cli_hostile_batch_result_nesting PROPERTIES FIXTURES_REQUIRED hostile_batch)
