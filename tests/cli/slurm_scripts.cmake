# The Slurm job scripts' own argument handling, in plain bash with a stub
# srun (no Slurm): tests/cli/slurm_script_args.sh.
add_test(NAME cli_slurm_script_arguments
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/slurm_script_args.sh $<TARGET_FILE:autohaap>
                 ${PROJECT_SOURCE_DIR}/slurm/search.sbatch ${CMAKE_CURRENT_BINARY_DIR}/slurm_script_args)
set_tests_properties(cli_slurm_script_arguments PROPERTIES LABELS "cli" TIMEOUT 120)
