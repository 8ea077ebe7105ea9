# cmake -P script run by the package_downstream test (see CMakeLists.txt for the variables).
#  1. cmake --install <build> --prefix <WORK_DIR>/prefix, and check the installed tree: headers,
#     libncsde_solvers.a, ncsdeConfig.cmake;
#  2. configure examples/downstream with CMAKE_PREFIX_PATH = that prefix only, and check that
#     find_package(ncsde) resolved to it and that no compile line points at the source tree's headers;
#  3. build and run it; it must exit 0 and print its mean and "ncsde downstream: OK".
cmake_minimum_required(VERSION 3.25)

foreach(var NCSDE_BINARY_DIR NCSDE_SOURCE_DIR NCSDE_LIBRARY DOWNSTREAM_SOURCE_DIR WORK_DIR
            NCSDE_GENERATOR NCSDE_CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "package test: ${var} is not set")
  endif()
endforeach()
if(NOT EXISTS "${NCSDE_LIBRARY}")
  message(FATAL_ERROR "package test: ${NCSDE_LIBRARY} does not exist; build the project first")
endif()

# Runs a command, echoing it; fails the test with its output when it fails.
function(run_step name)
  message(STATUS "package test: ${name}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package test: ${name} failed (${rc})\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")

# 1. Install.
set(config_args)
if(NOT "${NCSDE_CONFIG}" STREQUAL "")
  set(config_args --config "${NCSDE_CONFIG}")
endif()
run_step(install "${CMAKE_COMMAND}" --install "${NCSDE_BINARY_DIR}" --prefix "${prefix}" ${config_args})
foreach(rel include/ncsde/concepts.hpp include/ncsde/integrate.hpp include/ncsde/odeint.hpp
            include/ncsde/steppers/euler_maruyama.hpp)
  if(NOT EXISTS "${prefix}/${rel}")
    message(FATAL_ERROR "package test: ${rel} was not installed")
  endif()
endforeach()
file(GLOB_RECURSE libraries RELATIVE "${prefix}" "${prefix}/*/libncsde_solvers.a")
file(GLOB_RECURSE configs RELATIVE "${prefix}" "${prefix}/*/cmake/ncsde/ncsdeConfig.cmake")
if(NOT libraries OR NOT configs)
  message(FATAL_ERROR "package test: missing libncsde_solvers.a (${libraries}) or ncsdeConfig.cmake (${configs})")
endif()
message(STATUS "package test: installed ${libraries} and ${configs}")

# 2. Configure the consumer against the prefix only.
set(generator_args -G "${NCSDE_GENERATOR}")
if(NOT "${NCSDE_MAKE_PROGRAM}" STREQUAL "")
  list(APPEND generator_args "-DCMAKE_MAKE_PROGRAM=${NCSDE_MAKE_PROGRAM}")
endif()
set(build_type Release)
if(NOT "${NCSDE_CONFIG}" STREQUAL "")
  set(build_type "${NCSDE_CONFIG}")
endif()
run_step(configure "${CMAKE_COMMAND}" -S "${DOWNSTREAM_SOURCE_DIR}" -B "${build}" ${generator_args}
         "-DCMAKE_CXX_COMPILER=${NCSDE_CXX_COMPILER}" "-DCMAKE_BUILD_TYPE=${build_type}"
         "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
         -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
file(STRINGS "${build}/CMakeCache.txt" found_dir REGEX "^ncsde_DIR:")
string(REGEX REPLACE "^ncsde_DIR:[A-Z]+=" "" found_dir "${found_dir}")
file(REAL_PATH "${found_dir}" found_dir)
file(REAL_PATH "${prefix}" real_prefix)
string(FIND "${found_dir}" "${real_prefix}/" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "package test: find_package(ncsde) found ${found_dir}, not the install in ${real_prefix}")
endif()
file(READ "${build}/compile_commands.json" commands)
string(FIND "${commands}" "${NCSDE_SOURCE_DIR}/include" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "package test: the consumer compiles against the source tree's headers:\n${commands}")
endif()
string(FIND "${commands}" "${prefix}/include" at)
if(at EQUAL -1)
  message(FATAL_ERROR "package test: the consumer does not compile against ${prefix}/include:\n${commands}")
endif()

# 3. Build and run.
run_step(build "${CMAKE_COMMAND}" --build "${build}" --parallel 2)
set(exe "${build}/ncsde_downstream")
if(NOT EXISTS "${exe}")
  file(GLOB_RECURSE exe "${build}/*/ncsde_downstream" "${build}/*/ncsde_downstream.exe")
endif()
file(GLOB_RECURSE models_library "${build}/*ncsde_downstream_models.so"
     "${build}/*ncsde_downstream_models.dylib")
if(NOT models_library)
  message(FATAL_ERROR "package test: the models library ncsde_downstream_models was not built")
endif()
list(GET models_library 0 models_library)
run_step(run "${exe}" "${models_library}")
message(STATUS "package test: downstream output:\n${step_output}")
if(NOT step_output MATCHES "ncsde downstream: mean V_T =" OR NOT step_output MATCHES "ncsde downstream: OK\n"
   OR NOT step_output MATCHES "matrix-ou bit-identical")
  message(FATAL_ERROR "package test: unexpected downstream output:\n${step_output}")
endif()
message(STATUS "package test: passed")
