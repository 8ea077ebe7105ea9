# Helpers shared by the ctest drivers of the `ncsde` program (tests/cli/*_cli.cmake), which run as
# `cmake -DNCSDE=<path to ncsde> -P <driver>.cmake` and include this file first:
#   to_units(<out> <decimal> <places>)     a decimal number as an integer count of 10^-places units
#   run_ok(<out> <arguments...>)           ncsde must exit with 0; its stdout
#   expect_usage_error(<texts> <arguments...>)  ncsde must exit with 2 and name every text
#   expect_exit(<code> <texts> <arguments...>)  ncsde must exit with <code> and name every text
#   expect_silent(<arguments...>)         ncsde must exit with 0 and print nothing on stderr
#   expect_unchanged(<file> <contents>)    the file still holds exactly <contents>
#   expect_no_temporaries(<dir>)           no hidden temporary (.<name>.XXXXXX) is left in <dir>
# Every run is stopped after CLI_TIMEOUT seconds (default 600): set it lower to check that a
# command fails before a long run instead of after it.
# A failed expectation stops the driver with FATAL_ERROR, which fails the ctest test.
cmake_policy(VERSION 3.19)  # string(JSON); CMP0054: quoted if() arguments are strings
if(NOT NCSDE)
  message(FATAL_ERROR "pass -DNCSDE=<path to the ncsde program>")
endif()

# to_units(<out> <decimal> <places>): the number as an integer count of 10^-places units, truncated
# toward zero (CMake has no floating point: 1e-12 comparisons are done on femto-units, places = 15,
# coarse ones on micro-units, places = 6). Accepts the %.17g forms ncsde writes (1.25, -0.5,
# 2.5e-05, 1e+20). CMake integers have 64 bits, so a number with more than 18 − places digits
# before the point saturates at ±(10^18 − 1) units, above every number that fits (for places = 6,
# |x| ≥ 1e12; for places = 15, |x| ≥ 1000), which keeps "greater than" comparisons meaningful.
function(to_units out text places)
  if(NOT text MATCHES "^(-?)([0-9]*)(\\.([0-9]*))?([eE]([-+]?[0-9]+))?$")
    message(FATAL_ERROR "'${text}' is not a decimal number")
  endif()
  set(sign "${CMAKE_MATCH_1}")
  set(digits "${CMAKE_MATCH_2}${CMAKE_MATCH_4}")
  string(LENGTH "${CMAKE_MATCH_2}" point)
  if(CMAKE_MATCH_6)
    math(EXPR point "${point} + ${CMAKE_MATCH_6}")
  endif()
  string(REGEX REPLACE "^0+" "" significant "${digits}")
  string(LENGTH "${digits}" n)
  string(LENGTH "${significant}" n_significant)
  # Digits before the point once the leading zeros are dropped.
  math(EXPR integer_digits "${point} - (${n} - ${n_significant})")
  math(EXPR room "18 - ${places}")
  if(NOT significant STREQUAL "" AND integer_digits GREATER room)
    set(${out} ${sign}999999999999999999 PARENT_SCOPE)
    return()
  endif()
  math(EXPR keep "${point} + ${places}")  # the digits down to the 10^-places place
  if(keep LESS_EQUAL 0)
    set(${out} 0 PARENT_SCOPE)
    return()
  endif()
  while(n LESS keep)
    string(APPEND digits "0")
    math(EXPR n "${n} + 1")
  endwhile()
  string(SUBSTRING "${digits}" 0 ${keep} digits)
  string(REGEX REPLACE "^0+" "" digits "${digits}")
  if(digits STREQUAL "")
    set(digits 0)
  endif()
  math(EXPR value "${sign}${digits}")
  set(${out} ${value} PARENT_SCOPE)
endfunction()

# run_ok(<out> <arguments...>): runs ncsde, requires exit code 0 and returns stdout.
function(run_ok out)
  execute_process(COMMAND "${NCSDE}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE stdout ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ncsde ${ARGN} failed (${rc}):\n${err}")
  endif()
  set(${out} "${stdout}" PARENT_SCOPE)
endfunction()

# expect_exit(<exit code> <texts the message must contain, ';'-separated> <arguments...>): runs
# ncsde, requires the exit code and every text in its stderr.
function(expect_exit code texts)
  if(NOT CLI_TIMEOUT)
    set(CLI_TIMEOUT 600)
  endif()
  execute_process(COMMAND "${NCSDE}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT ${CLI_TIMEOUT})
  if(NOT rc STREQUAL "${code}")
    message(FATAL_ERROR "ncsde ${ARGN}: expected exit code ${code}, got ${rc}\n${err}")
  endif()
  foreach(text IN LISTS texts)
    string(FIND "${err}" "${text}" position)
    if(position EQUAL -1)
      message(FATAL_ERROR "ncsde ${ARGN}: the message does not contain '${text}':\n${err}")
    endif()
  endforeach()
endfunction()

# expect_usage_error(<texts the message must contain, ';'-separated> <arguments...>): runs ncsde,
# requires exit code 2 and every text in its stderr.
# (Its own body: forwarding ${ARGN} to expect_exit would split the arguments at their escaped
# semicolons, "1,0\;0,1".)
function(expect_usage_error texts)
  if(NOT CLI_TIMEOUT)
    set(CLI_TIMEOUT 600)
  endif()
  execute_process(COMMAND "${NCSDE}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT ${CLI_TIMEOUT})
  if(NOT rc STREQUAL "2")
    message(FATAL_ERROR "ncsde ${ARGN}: expected exit code 2, got ${rc}\n${err}")
  endif()
  foreach(text IN LISTS texts)
    string(FIND "${err}" "${text}" position)
    if(position EQUAL -1)
      message(FATAL_ERROR "ncsde ${ARGN}: the message does not contain '${text}':\n${err}")
    endif()
  endforeach()
endfunction()

# expect_silent(<arguments...>): runs ncsde (stderr is a pipe, not a terminal), requires exit code
# 0 and an empty stderr.
function(expect_silent)
  execute_process(COMMAND "${NCSDE}" ${ARGN} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT err STREQUAL "")
    message(FATAL_ERROR "ncsde ${ARGN}: exit code ${rc} (expected 0), stderr '${err}' (expected none)")
  endif()
endfunction()

# expect_unchanged(<file> <contents>): the file exists and holds exactly <contents>.
function(expect_unchanged file contents)
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "${file} was removed")
  endif()
  file(READ "${file}" now)
  if(NOT now STREQUAL "${contents}")
    message(FATAL_ERROR "${file} was changed: it holds '${now}', expected '${contents}'")
  endif()
endfunction()

# expect_no_temporaries(<dir>): an output is written to a hidden temporary next to its target;
# none may be left behind.
function(expect_no_temporaries dir)
  file(GLOB left LIST_DIRECTORIES false "${dir}/.*")
  if(left)
    message(FATAL_ERROR "temporary files left in ${dir}: ${left}")
  endif()
endfunction()
