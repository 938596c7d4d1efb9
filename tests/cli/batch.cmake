# CLI instance tests of `autohaap batch`: a table of
#   name | expected exit code | regex the output must match | arguments...
# The fleet cases run the shipped jobs/fleet.yaml into the build tree: the
# first plans (or, on a re-run of ctest, skips) every entry, the second must
# skip them all.
set(_jobs ${PROJECT_SOURCE_DIR}/jobs)
set(_batch_out ${CMAKE_CURRENT_BINARY_DIR}/batch_out)
set(_batch_cases
  "batch_count|0|^8\n$|batch|${_jobs}/sweep-gpt3.yaml|--count"
  "batch_count_of_a_shard|0|^4\n$|batch|${_jobs}/sweep-gpt3.yaml|--count|--shard|1/2"
  "batch_list_of_a_shard|0|^1 [^\n]*\n3 [^\n]*\n5 [^\n]*\n7 [^\n]*\n$|batch|${_jobs}/sweep-gpt3.yaml|--list|--shard|1/2"
  "batch_list_malformed_shard|2|--shard: got '0/0'. allowed: I/N with integers 0 <= I < N|batch|${_jobs}/sweep-gpt3.yaml|--list|--shard|0/0"
  "batch_list|0|^0 gpt3-1.3b__a100x8__default\n1 gpt3-2.7b__a100x8__default\n2 gpt3-6.7b__mixed-a100-v100__default\n|batch|${_jobs}/fleet.yaml|--list"
  "batch_index_out_of_range|2|--index: got '8'. allowed: an entry index from 0 to 7|batch|${_jobs}/sweep-gpt3.yaml|--out|${_batch_out}/never|--index|8"
  "batch_malformed_shard|2|--shard: got '2/2'. allowed: I/N with integers 0 <= I < N|batch|${_jobs}/sweep-gpt3.yaml|--out|${_batch_out}/never|--shard|2/2"
  "batch_index_and_shard|2|at most one of --index and --shard|batch|${_jobs}/sweep-gpt3.yaml|--out|${_batch_out}/never|--index|0|--shard|0/2"
  "batch_missing_out|2|--out: got '.missing.'|batch|${_jobs}/sweep-gpt3.yaml"
  "batch_unknown_model|2|unknown_model.yaml: entries.1..model: got 'gpt3-9b'|batch|${CMAKE_CURRENT_SOURCE_DIR}/data/batch/unknown_model.yaml|--out|${_batch_out}/never"
  "batch_missing_manifest|2|no_such_manifest.yaml|batch|no_such_manifest.yaml|--count"
  "batch_fleet|0|failed +: 0\nskipped +: [06]\ninterrupted +: no\nbatch_entries +: 6\nbatch_pending +: 0|batch|${_jobs}/fleet.yaml|--out|${_batch_out}/fleet|--threads|2"
  "batch_out_of_another_manifest|2|command line: --out: got '[^']*fleet'. allowed: a new folder, or one written for manifest 'sweep-gpt3' .this one holds the results of manifest 'fleet'|batch|${_jobs}/sweep-gpt3.yaml|--out|${_batch_out}/fleet|--index|0"
  "batch_fleet_again_skips|0|found +: 0\ninfeasible +: 0\nfailed +: 0\nskipped +: 6|batch|${_jobs}/fleet.yaml|--out|${_batch_out}/fleet"
)
autohaap_cli_cases("cli;batch" ${_batch_cases})
# The second fleet run needs the first one's plans.
set_tests_properties(cli_batch_fleet PROPERTIES FIXTURES_SETUP batch_fleet)
set_tests_properties(cli_batch_fleet_again_skips cli_batch_out_of_another_manifest PROPERTIES FIXTURES_REQUIRED batch_fleet)
# A result kept from an earlier run is printed with its note (an infeasible
# entry's reason, a time-limited plan's gap), which a skipped entry's line
# had left out: a plan a time limit stopped read as a plain "found".
set(_kept_notes_cases
  "batch_kept_notes_first|0|infeasible.*\n +llama3-405b does not fit|batch|${CMAKE_CURRENT_SOURCE_DIR}/data/batch/kept_notes.yaml|--out|${_batch_out}/kept_notes"
  "batch_kept_notes_again|0|skipped .unchanged. infeasible.\n +llama3-405b does not fit|batch|${CMAKE_CURRENT_SOURCE_DIR}/data/batch/kept_notes.yaml|--out|${_batch_out}/kept_notes")
autohaap_cli_cases("cli;batch" ${_kept_notes_cases})
set_tests_properties(cli_batch_kept_notes_first PROPERTIES FIXTURES_SETUP batch_kept_notes)
set_tests_properties(cli_batch_kept_notes_again PROPERTIES FIXTURES_REQUIRED batch_kept_notes)
