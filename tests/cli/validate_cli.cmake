# ctest driver for `ncsde validate` on a small configuration (cmake -DNCSDE=<ncsde> -DOUT=<dir> -P
# validate_cli.cmake): the JSON report has its rows (4 widths… here 2, the noise floor and the two
# wrong variants of attention), every KS p-value is a probability, the markdown table is printed, the
# plot files are written, and bad flags fail with exit code 2 naming the flag and the value.
cmake_minimum_required(VERSION 3.19)
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")  # run_ok, expect_usage_error
if(NOT OUT)
  message(FATAL_ERROR "pass -DNCSDE=<path to the ncsde program> -DOUT=<scratch directory>")
endif()
file(REMOVE_RECURSE "${OUT}")

set(small --model attention --n 8,16 --networks 400 --paths 400 --dt 0.0078125)
run_ok(json validate ${small} --format json --threads 2)
string(JSON rows LENGTH "${json}" rows)
if(NOT rows EQUAL 5)
  message(FATAL_ERROR "expected 5 rows (n=8, n=16, noise floor, vpv, no-attention), got ${rows}")
endif()
foreach(i RANGE 4)
  string(JSON source GET "${json}" rows ${i} source)
  string(JSON count LENGTH "${json}" rows ${i} comparisons)
  # 3 correlations + 3 diagonals + stopped fraction + stopped tail + unstopped tail = 9 for m = 3.
  if(NOT count EQUAL 9)
    message(FATAL_ERROR "row '${source}': expected 9 comparisons, got ${count}")
  endif()
  math(EXPR last "${count} - 1")
  foreach(j RANGE ${last})
    string(JSON p GET "${json}" rows ${i} comparisons ${j} p_value)
    if(NOT p MATCHES "^(0(\\.[0-9]*)?([eE]-?[0-9]+)?|1(\\.0*)?|[0-9]\\.[0-9]*[eE]-[0-9]+)$")
      message(FATAL_ERROR "row '${source}' comparison ${j}: p-value '${p}' is not in [0, 1]")
    endif()
  endforeach()
endforeach()
string(JSON v1 GET "${json}" rows 3 source)
if(NOT v1 STREQUAL "wrong SDE: vpv")
  message(FATAL_ERROR "row 3 should be the vpv variant, got '${v1}'")
endif()

# Same seed, same numbers, whatever the thread count.
run_ok(json1 validate ${small} --format json --threads 1)
string(JSON rows_a GET "${json}" rows)
string(JSON rows_b GET "${json1}" rows)
if(NOT rows_a STREQUAL rows_b)
  message(FATAL_ERROR "validate rows differ between --threads 2 and --threads 1")
endif()

run_ok(table validate ${small} --plots "${OUT}")
foreach(needle "| network n=16 | SDE, grid 1/16 |" "Bonferroni p" "Quantiles of ρ¹²" "Plots and data in")
  string(FIND "${table}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the table lacks '${needle}':\n${table}")
  endif()
endforeach()
foreach(f rho_density.png ks_vs_n.png sample_paths.png stopped_fraction.png validation.md
          validation.json values.csv paths.csv)
  if(NOT EXISTS "${OUT}/${f}")
    message(FATAL_ERROR "validate --plots did not write ${f}")
  endif()
endforeach()

# Bad input: exit 2, and the rule, the value and the flag named as the other commands name them.
expect_usage_error("dt must be such that 1/(n·dt) is an integer for n = 48;every network grid k/n;(got 0.0078125) (flag --dt)"
                   validate --n 48 --dt 0.0078125 --paths 10 --networks 10)
# The default widths 32 … 256 with dt = 1/16: the rule and the first width that breaks it.
expect_usage_error("1/(n·dt) must be an integer for every width n (1/(32·dt) = 0.5) (got 0.0625) (flag --dt)"
                   validate --dt 0.0625)
expect_usage_error("T must be such that T·n is an integer depth for n = 32 (got 0.7) (flag --T)"
                   validate --T 0.7)
expect_usage_error("n must be > 64 (widths strictly increasing) (got 32) (flag --n)" validate --n 64,32)
expect_usage_error("n must be >= 2 (each width) (got 1) (flag --n)" validate --n 1,2)
expect_usage_error("--n: must be a decimal integer such as 1000 or 1e6 (got '1.5')" validate --n 8,1.5)
expect_usage_error("--variants must be one of correct, vpv" validate --variants vpvpv)
expect_usage_error("variant must be 'correct' for a model without attention;(flag --variants)"
                   validate --model mlp --variants vpv)
expect_usage_error("heads must be a divisor of n = 8 (got 3) (flag --heads)"
                   validate --model attention --heads 3 --n 8,16)
expect_usage_error("stop_level must be > 0 and finite (got -1) (flag --stop-level)" validate --stop-level -1)
expect_usage_error("tail_level must be > 0 and finite (got 0) (flag --tail-level)" validate --tail-level 0)
expect_usage_error("alpha must be in (0, 1) (got 2) (flag --alpha)" validate --alpha 2)
expect_usage_error("V0 must be at least 2x2 (ρ needs two tokens) (got a 1x1 matrix) (flag --V0)"
                   validate --V0 "1")
expect_usage_error("--V0: malformed matrix '1,x'" validate --V0 "1,x")
expect_usage_error("--paths 1000000000: 4.1e+12 steps in all;× 4 SDE runs), more than the limit of 1e+12"
                   validate --paths 1e9)

# dt = 1/16 on the widths 8 and 16 (T/dt = 16 steps, not a multiple of the 64 sample-path times):
# the sample paths are saved at the nearest steps, not refused as off-grid save times.
file(REMOVE_RECURSE "${OUT}")
run_ok(ignored validate --model attention --n 8,16 --networks 50 --paths 50 --dt 0.0625
       --format json --plots "${OUT}")
file(STRINGS "${OUT}/paths.csv" lines REGEX "^sde,0,")
list(LENGTH lines n_times)
if(NOT n_times EQUAL 17)
  message(FATAL_ERROR "validate --dt 0.0625: expected path 0 at the 17 grid times 0, 1/16, …, 1, got ${n_times}")
endif()

# An earlier --plots directory keeps its files when a run is refused.
file(WRITE "${OUT}/validation.md" "earlier report\n")
expect_usage_error("stop_level" validate --stop-level -1 --plots "${OUT}")
expect_unchanged("${OUT}/validation.md" "earlier report\n")
expect_no_temporaries("${OUT}")
