# The Highway translation units (the random streams, the lane arithmetic, the models' lane kernels)
# compile for every instruction-set baseline a user may build for: -march=x86-64-v3 (AVX2),
# -march=x86-64-v4 (AVX-512) and -march=native (this machine's CPU). Highway derives its static
# target from the baseline, and a target the file leaves out must never become it (Highway 1.0
# stops with "best baseline should be included in dynamic targets" otherwise).
#   cmake -DCXX=… -DSOURCE_DIR=… -DEIGEN_DIR=… -P march_flags.cmake
set(units solvers/random.cpp solvers/lanes.cpp lib/models/lane_kernels.cpp)
set(failed "")
foreach(flag x86-64-v3 x86-64-v4 native)
  foreach(unit IN LISTS units)
    execute_process(
      COMMAND ${CXX} -std=c++20 -O0 -march=${flag} -ffp-contract=off -I${SOURCE_DIR}
              -I${SOURCE_DIR}/include -I${EIGEN_DIR} -c ${SOURCE_DIR}/${unit} -o /dev/null
      RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      string(SUBSTRING "${err}" 0 2000 err)
      list(APPEND failed "-march=${flag} ${unit}")
      message("march flags: -march=${flag} ${unit} does not compile:\n${err}")
    endif()
  endforeach()
endforeach()
if(failed)
  message(FATAL_ERROR "march flags: ${failed}")
endif()
message("march flags: 3 units compile with -march=x86-64-v3, x86-64-v4 and native")
