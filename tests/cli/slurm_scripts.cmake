# The Slurm job scripts' own argument handling, in plain bash with a stub
# srun (no Slurm): tests/cli/search_sbatch_args.sh.
add_test(NAME cli_search_sbatch_arguments
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/search_sbatch_args.sh $<TARGET_FILE:autohaap>
                 ${PROJECT_SOURCE_DIR}/slurm/search.sbatch ${CMAKE_CURRENT_BINARY_DIR}/search_sbatch_args)
set_tests_properties(cli_search_sbatch_arguments PROPERTIES LABELS "cli" TIMEOUT 120)
