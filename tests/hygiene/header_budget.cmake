# Header budget (cmake -P): what a consumer's compiler reads for the public headers.
#  - include/ncsde/ncsde.hpp, preprocessed, stays within NCSDE_LINE_BUDGET lines (Eigen/Core alone is
#    about 132k lines of `-E` output with Eigen 3.4 and libstdc++ 12; the budget leaves the umbrella a
#    few percent of headroom, so that a new heavy include shows up here as a failure, not as a slower
#    build months later);
#  - no public header includes fmt (messages are formatted in the library: error.hpp's
#    detail::format_message), and a scheme's header (steppers/euler_maruyama.hpp) reads neither fmt
#    nor Eigen's eigensolvers.
# Usage: cmake -DCXX=<compiler> -DSOURCE_DIR=<repo> -DEIGEN_DIR=<Eigen include dir>
#              -DNCSDE_LINE_BUDGET=<lines> -DOUT=<scratch dir> -P header_budget.cmake
cmake_minimum_required(VERSION 3.25)
foreach(var CXX SOURCE_DIR EIGEN_DIR NCSDE_LINE_BUDGET OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "header budget: pass -D${var}=...")
  endif()
endforeach()
file(MAKE_DIRECTORY "${OUT}")

function(preprocess header out_lines out_text)
  execute_process(
    COMMAND "${CXX}" -std=c++20 -E -I "${SOURCE_DIR}/include" -I "${EIGEN_DIR}" -x c++
            "${SOURCE_DIR}/include/ncsde/${header}"
    OUTPUT_FILE "${OUT}/preprocessed.ii" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "header budget: preprocessing ${header} failed:\n${err}")
  endif()
  file(READ "${OUT}/preprocessed.ii" text)
  string(REGEX REPLACE "[^\n]" "" newlines "${text}")
  string(LENGTH "${newlines}" n)
  set(${out_lines} ${n} PARENT_SCOPE)
  set(${out_text} "${text}" PARENT_SCOPE)
endfunction()

set(failures 0)
preprocess(ncsde.hpp umbrella_lines umbrella_text)
message(STATUS "header budget: ncsde/ncsde.hpp preprocesses to ${umbrella_lines} lines "
               "(budget ${NCSDE_LINE_BUDGET})")
if(umbrella_lines GREATER NCSDE_LINE_BUDGET)
  message(SEND_ERROR "header budget: ncsde/ncsde.hpp grew to ${umbrella_lines} lines, past the budget "
                     "of ${NCSDE_LINE_BUDGET}: find the new heavy include (or raise the budget in "
                     "tests/hygiene/CMakeLists.txt and say why)")
  math(EXPR failures "${failures} + 1")
endif()

preprocess(steppers/euler_maruyama.hpp em_lines em_text)
message(STATUS "header budget: ncsde/steppers/euler_maruyama.hpp: ${em_lines} lines")
foreach(pattern "namespace fmt" "SelfAdjointEigenSolver")
  string(FIND "${em_text}" "${pattern}" at)
  if(NOT at EQUAL -1)
    message(SEND_ERROR "header budget: steppers/euler_maruyama.hpp pulls in '${pattern}'")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()

file(GLOB_RECURSE headers "${SOURCE_DIR}/include/ncsde/*.hpp")
foreach(h IN LISTS headers)
  file(STRINGS "${h}" fmt_includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]fmt/")
  if(fmt_includes)
    message(SEND_ERROR "header budget: ${h} includes fmt: ${fmt_includes}")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()
if(failures GREATER 0)
  message(FATAL_ERROR "header budget: ${failures} problems")
endif()
