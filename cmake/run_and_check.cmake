# CLI instance test driver: runs one command and checks its exit code and
# that its combined output matches a regular expression.
#   cmake -DCOMMAND="<exe>|<arg>|<arg>..." -DEXPECT_EXIT=<code> -DEXPECT_REGEX=<regex>
#         [-DWORKDIR=<dir>] -P run_and_check.cmake
# Arguments are separated by '|' so they may contain spaces.
string(REPLACE "|" ";" command "${COMMAND}")
if(NOT WORKDIR)
  set(WORKDIR ${CMAKE_CURRENT_BINARY_DIR})
endif()
execute_process(COMMAND ${command}
                WORKING_DIRECTORY ${WORKDIR}
                RESULT_VARIABLE exit_code
                OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT "${exit_code}" STREQUAL "${EXPECT_EXIT}")
  message(FATAL_ERROR "exit code ${exit_code}, expected ${EXPECT_EXIT}\n--- output ---\n${all}")
endif()
if(DEFINED EXPECT_REGEX AND NOT "${all}" MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}'\n--- output ---\n${all}")
endif()
message(STATUS "ok: exit ${exit_code}")
