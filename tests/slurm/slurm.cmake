# Tests on a real one-node Slurm cluster (label `slurm`): the sbatch scripts
# under slurm/ are submitted as users would submit them, and their outputs
# checked. The cluster is started once for all of them (fixture
# slurm_cluster: slurm/local-cluster.sh start, and stop at the end) in a
# folder of its own under /tmp (munge's socket path must stay short), on
# ports that do not clash with a default Slurm. They run one at a time
# (RUN_SERIAL) because they share that cluster and the machine's cores.
#
# Registered only where Slurm and munge are installed and ctest runs as
# root (slurmd must be able to start jobs); `scripts/setup.sh --slurm`
# installs what they need. Run them with `ctest -L slurm`.
find_program(AUTOHAAP_SLURMCTLD slurmctld)
find_program(AUTOHAAP_MUNGED munged PATHS /usr/sbin /sbin)
execute_process(COMMAND id -u OUTPUT_VARIABLE AUTOHAAP_UID OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT AUTOHAAP_SLURMCTLD OR NOT AUTOHAAP_MUNGED OR NOT AUTOHAAP_UID STREQUAL "0")
  message(STATUS "Slurm tests skipped: they need slurmctld, munged (scripts/setup.sh --slurm) and root")
  return()
endif()

string(MD5 AUTOHAAP_SLURM_TAG "${CMAKE_BINARY_DIR}")
string(SUBSTRING "${AUTOHAAP_SLURM_TAG}" 0 8 AUTOHAAP_SLURM_TAG)
set(AUTOHAAP_SLURM_DIR "/tmp/autohaap-slurm-${AUTOHAAP_SLURM_TAG}")
set(AUTOHAAP_SLURM_ENV
  SLURM_CONF=${AUTOHAAP_SLURM_DIR}/slurm.conf
  AUTOHAAP_SLURM_DIR=${AUTOHAAP_SLURM_DIR}
  AUTOHAAP_SLURM_PORT=6837
  AUTOHAAP_SLURM_WORK=${CMAKE_CURRENT_BINARY_DIR}/slurm-work
  AUTOHAAP_BIN=$<TARGET_FILE:autohaap>
  AUTOHAAP_SOURCE_DIR=${PROJECT_SOURCE_DIR})

add_test(NAME slurm.cluster.start
  COMMAND ${PROJECT_SOURCE_DIR}/slurm/local-cluster.sh start ${AUTOHAAP_SLURM_DIR})
add_test(NAME slurm.cluster.stop
  COMMAND ${PROJECT_SOURCE_DIR}/slurm/local-cluster.sh stop ${AUTOHAAP_SLURM_DIR})
set_tests_properties(slurm.cluster.start PROPERTIES FIXTURES_SETUP slurm_cluster)
set_tests_properties(slurm.cluster.stop PROPERTIES FIXTURES_CLEANUP slurm_cluster)
set_tests_properties(slurm.cluster.start slurm.cluster.stop PROPERTIES
  LABELS slurm RUN_SERIAL TRUE TIMEOUT 120 ENVIRONMENT "${AUTOHAAP_SLURM_ENV}")

# One test per script in this folder: <name>_test.sh -> slurm.<name>.
file(GLOB AUTOHAAP_SLURM_CASES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.sh)
foreach(script ${AUTOHAAP_SLURM_CASES})
  get_filename_component(name ${script} NAME_WE)
  string(REGEX REPLACE "_test$" "" name ${name})
  add_test(NAME slurm.${name} COMMAND bash ${script})
  set_tests_properties(slurm.${name} PROPERTIES
    LABELS slurm RUN_SERIAL TRUE TIMEOUT 480 FIXTURES_REQUIRED slurm_cluster
    ENVIRONMENT "${AUTOHAAP_SLURM_ENV}")
endforeach()
