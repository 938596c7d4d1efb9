# File content check for CLI tests whose command writes a file: the file
# must exist and its text match a regular expression.
#   cmake -DFILE=<path> -DEXPECT_REGEX=<regex> -P file_matches.cmake
if(NOT EXISTS "${FILE}")
  message(FATAL_ERROR "${FILE} does not exist")
endif()
file(READ "${FILE}" text)
if(NOT "${text}" MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "${FILE} does not match '${EXPECT_REGEX}'")
endif()
message(STATUS "ok: ${FILE} matches")
