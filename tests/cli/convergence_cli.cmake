# ctest driver for `ncsde convergence` (cmake -DNCSDE=<path to ncsde> -P convergence_cli.cmake):
#  1. a small gbm run with --format json parses (CMake's own JSON parser) and every object has the
#     documented fields, with as many errors as step sizes;
#  2. bad command lines fail with exit code 2 and a message naming the flag and the value;
#  3. a --plots directory that cannot be created fails before the (minutes-long) run.
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")  # run_ok, expect_usage_error

run_ok(out convergence --problem gbm --paths 200 --format json)
string(JSON count ERROR_VARIABLE json_error LENGTH "${out}")
if(json_error)
  message(FATAL_ERROR "the output is not a JSON array: ${json_error}\n${out}")
endif()
# gbm: em, milstein, milstein-commutative, predictor-corrector, each strong and weak.
if(NOT count EQUAL 8)
  message(FATAL_ERROR "expected 8 series for gbm, got ${count}")
endif()
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  foreach(field problem scheme kind order stderr ci_low ci_high expected pass paths seed dts errors
                errors_stderr cone_exits reference)
    string(JSON type ERROR_VARIABLE json_error TYPE "${out}" ${i} ${field})
    if(json_error)
      message(FATAL_ERROR "series ${i} has no field '${field}': ${json_error}")
    endif()
  endforeach()
  string(JSON problem GET "${out}" ${i} problem)
  string(JSON kind GET "${out}" ${i} kind)
  string(JSON paths GET "${out}" ${i} paths)
  string(JSON order_type TYPE "${out}" ${i} order)
  string(JSON n_errors LENGTH "${out}" ${i} errors)
  string(JSON n_dts LENGTH "${out}" ${i} dts)
  if(NOT problem STREQUAL "gbm" OR NOT (kind STREQUAL "strong" OR kind STREQUAL "weak") OR NOT paths EQUAL 200
     OR NOT order_type STREQUAL "NUMBER" OR NOT n_errors EQUAL n_dts OR n_errors LESS 5)
    message(FATAL_ERROR "series ${i} is malformed: problem=${problem} kind=${kind} paths=${paths} "
                        "order is ${order_type}, ${n_errors} errors for ${n_dts} step sizes")
  endif()
endforeach()

# Every registry scheme is a --scheme choice and is listed by --list-schemes; the new
# predictor-corrector has a weak series on a problem without a pathwise solution too (it couples to
# EM's martingale control).
run_ok(pc convergence --problem noncommutative --scheme predictor-corrector --paths 50 --levels 3
       --format json)
string(JSON pc_count LENGTH "${pc}")
string(JSON pc_scheme GET "${pc}" 0 scheme)
string(JSON pc_kind GET "${pc}" 1 kind)
if(NOT pc_count EQUAL 2 OR NOT pc_scheme STREQUAL "predictor-corrector" OR NOT pc_kind STREQUAL "weak")
  message(FATAL_ERROR "--scheme predictor-corrector: expected its strong and weak series, got\n${pc}")
endif()
run_ok(schemes convergence --list-schemes)
foreach(name em milstein milstein-commutative predictor-corrector)
  if(NOT schemes MATCHES "\n${name} ")
    message(FATAL_ERROR "--list-schemes does not list ${name}:\n${schemes}")
  endif()
endforeach()

expect_usage_error("not expected: --bogus" convergence --bogus)
expect_usage_error("--paths: Value 0 not in range" convergence --paths 0)
expect_usage_error("--threads: Value -1 not in range" convergence --threads -1)
expect_usage_error("--levels: Value 2 not in range" convergence --levels 2)
expect_usage_error("--scheme: rk4 not in" convergence --scheme rk4)
expect_usage_error("--problem: nope not in" convergence --problem nope)
expect_usage_error("--format: xml not in" convergence --format xml)
expect_usage_error("--seed: must be a non-negative integer (got '-5')" convergence --seed -5)
expect_usage_error("unknown command 'frobnicate'" frobnicate)
expect_usage_error("A subcommand is required")
expect_usage_error("nothing to measure" convergence --problem noncommutative --scheme milstein --kind weak)
# Integer flags are decimal integers (1e9 included): no clamping past 2^64 − 1, no octal or hex.
expect_usage_error("--seed: must be at most 2^64 - 1 = 18446744073709551615 (got '18446744073709551616')"
                   convergence --seed 18446744073709551616)
expect_usage_error("--seed: must be a non-negative integer (got '-1')" convergence --seed -1)
expect_usage_error("--threads: Value 1000000000 not in range 0 to 4096" convergence --threads 1e9)
expect_usage_error("--paths: must be a decimal integer such as 1000 or 1e6 (got '0x10')"
                   convergence --paths 0x10)
expect_usage_error("--levels: must be a decimal integer such as 1000 or 1e6 (got '4.5')"
                   convergence --levels 4.5)

# A --plots directory that cannot be created fails at once, not after the default study (minutes):
# within 10 s. Under a regular file nothing can be created.
execute_process(COMMAND /usr/bin/python3 -c "import matplotlib" RESULT_VARIABLE no_matplotlib
                OUTPUT_QUIET ERROR_QUIET)
if(no_matplotlib EQUAL 0)
  set(file "${CMAKE_CURRENT_BINARY_DIR}/convergence_cli_file")
  file(WRITE "${file}" "")
  set(CLI_TIMEOUT 10)
  expect_usage_error("ncsde convergence: --plots: cannot create ${file}/plots: Not a directory"
                     convergence --plots "${file}/plots")
  unset(CLI_TIMEOUT)
  file(REMOVE "${file}")
else()
  message(STATUS "python3 with matplotlib not found: convergence --plots not tested")
endif()
