# ctest driver for `ncsde sample-network` and `ncsde rank-collapse` (cmake -DNCSDE=<path to ncsde>
# -P networks_cli.cmake):
#  1. sample-network writes the CSV layout of ncsde simulate (header, one row per network, m = 2 and
#     m = 3, reduced and literal samplers), t_stop = d/n for completed networks;
#  2. the same seed gives a byte-identical CSV for 1 and 2 threads, another seed a different one;
#  3. with a stop level, a network is `stopped` exactly when its recorded V has max_a V^aa > K, the
#     JSON summary counts them, and some (not all) networks stop;
#  4. bad input fails with exit code 2 and a message naming the flag and the value;
#  5. rank-collapse on a small configuration: exit 0, one row per depth, both forms start at the
#     mean correlation of V3 (0.5), and at the last depth unshaped attention has collapsed (mean
#     ρ > 0.99) and lies above shaped attention; the CSV has the same rows; with python3 +
#     matplotlib, --plots draws the PNG;
#  6. outputs are checked before the run and replaced only by a successful one: a bad flag leaves
#     an earlier --out unchanged, an unwritable --out or --plots fails at once (exit code 2);
#  7. runs beyond the limits of validation/limits.hpp (network layers, work, memory) are refused
#     before they start, naming the flag, the value and the estimate.
cmake_minimum_required(VERSION 3.19)  # string(JSON); CMP0054: quoted if() arguments are strings
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")  # to_units, run_ok, expect_usage_error

# check_csv(<file> <header> <rows> <fields> <t_completed>): the header, `rows` data rows numbered
# 0..rows−1 in order, each with `fields` fields, a known status, and t_stop = t_completed on
# completed rows.
function(check_csv file header rows fields t_completed)
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "sample-network --out did not write ${file}")
  endif()
  file(STRINGS "${file}" lines)
  list(LENGTH lines n_lines)
  math(EXPR expected "${rows} + 1")
  if(NOT n_lines EQUAL expected)
    message(FATAL_ERROR "${file}: expected a header and ${rows} rows, got ${n_lines} lines")
  endif()
  list(GET lines 0 first)
  if(NOT first STREQUAL "${header}")
    message(FATAL_ERROR "${file}: header '${first}', expected '${header}'")
  endif()
  foreach(i RANGE 1 ${rows})
    list(GET lines ${i} line)
    string(REPLACE "," ";" row "${line}")
    list(LENGTH row n_fields)
    list(GET row 0 index)
    list(GET row 1 status)
    list(GET row 2 t_stop)
    math(EXPR expected_index "${i} - 1")
    if(NOT n_fields EQUAL fields OR NOT index EQUAL expected_index
       OR NOT status MATCHES "^(completed|stopped|blown_up)$")
      message(FATAL_ERROR "${file}: row ${i} is not network ${expected_index} with ${fields} fields "
                          "and a status: '${line}'")
    endif()
    if(status STREQUAL "completed" AND NOT t_stop STREQUAL "${t_completed}")
      message(FATAL_ERROR "${file}: completed row ${i} has t_stop ${t_stop}, expected d/n = ${t_completed}")
    endif()
  endforeach()
endfunction()

set(dir "${CMAKE_CURRENT_BINARY_DIR}/networks_cli")
file(REMOVE_RECURSE "${dir}")
file(MAKE_DIRECTORY "${dir}")
# docs/maths.md §9.1 reference state V3 (m = 3).
set(v3 "1,0.6324555320336759,0.25099800796022265\;0.6324555320336759,1.6,0.7408103670980852\;0.25099800796022265,0.7408103670980852,0.7")

# ---- 1. CSV layout: m = 2 reduced, m = 3 literal (transformer: both sublayers) and reduced ----
run_ok(summary sample-network --model attention --V0 "1,0.5\;0.5,1" --n 16 --d 8 --networks 30
       --threads 2 --out "${dir}/m2.csv")
check_csv("${dir}/m2.csv" "path,status,t_stop,V11,V12,V22" 30 6 "0.5")
foreach(name rho12 V11 V22 "completed 30")
  string(FIND "${summary}" "${name}" position)
  if(position EQUAL -1)
    message(FATAL_ERROR "sample-network: the summary does not report '${name}':\n${summary}")
  endif()
endforeach()
run_ok(summary sample-network --model transformer --V0 "${v3}" --n 16 --d 4 --networks 12
       --sampler literal --out "${dir}/m3_literal.csv")
check_csv("${dir}/m3_literal.csv" "path,status,t_stop,V11,V12,V13,V22,V23,V33" 12 9 "0.25")
run_ok(summary sample-network --model transformer --V0 "${v3}" --n 16 --d 4 --networks 12
       --sampler reduced --out "${dir}/m3_reduced.csv")
check_csv("${dir}/m3_reduced.csv" "path,status,t_stop,V11,V12,V13,V22,V23,V33" 12 9 "0.25")
foreach(name rho12 rho13 rho23 V33)
  string(FIND "${summary}" "${name} quantiles" position)
  if(position EQUAL -1)
    message(FATAL_ERROR "sample-network (m = 3): no quantiles of ${name}:\n${summary}")
  endif()
endforeach()

# ---- 2. reproducibility: same seed → same bytes whatever the threads; another seed differs ----
run_ok(ignored sample-network --model attention --V0 "1,0.5\;0.5,1" --n 16 --d 8 --networks 30
       --threads 1 --out "${dir}/m2_one_thread.csv")
file(SHA256 "${dir}/m2.csv" two_threads)
file(SHA256 "${dir}/m2_one_thread.csv" one_thread)
if(NOT two_threads STREQUAL one_thread)
  message(FATAL_ERROR "sample-network: seed 1 gives different CSVs with 1 and 2 threads")
endif()
run_ok(ignored sample-network --model attention --V0 "1,0.5\;0.5,1" --n 16 --d 8 --networks 30
       --seed 2 --out "${dir}/m2_seed2.csv")
file(SHA256 "${dir}/m2_seed2.csv" seed2)
if(seed2 STREQUAL two_threads)
  message(FATAL_ERROR "sample-network: seeds 1 and 2 give the same CSV")
endif()

# ---- 3. stop level K = 1.2: stopped ⟺ max(V11, V22) > K at the recorded V ----
run_ok(json sample-network --model attention --V0 "1,0.5\;0.5,1" --n 16 --d 16 --networks 40
       --stop-level 1.2 --format json --out "${dir}/stopped.csv")
check_csv("${dir}/stopped.csv" "path,status,t_stop,V11,V12,V22" 40 6 "1")
string(JSON json_stopped GET "${json}" stopped)
string(JSON json_completed GET "${json}" completed)
string(JSON stop_level GET "${json}" stop_level)
if(NOT stop_level STREQUAL "1.2")
  message(FATAL_ERROR "sample-network --format json: stop_level '${stop_level}', expected 1.2")
endif()
to_units(level "1.2" 6)
file(STRINGS "${dir}/stopped.csv" lines)
list(REMOVE_AT lines 0)
set(stopped 0)
foreach(line IN LISTS lines)
  string(REPLACE "," ";" row "${line}")
  list(GET row 1 status)
  list(GET row 3 v11)
  list(GET row 5 v22)
  to_units(a "${v11}" 6)
  to_units(b "${v22}" 6)
  set(above FALSE)
  if(a GREATER level OR b GREATER level)
    set(above TRUE)
  endif()
  if(status STREQUAL "stopped")
    math(EXPR stopped "${stopped} + 1")
    if(NOT above)
      message(FATAL_ERROR "stop level 1.2: a stopped row has max V^aa <= 1.2: '${line}'")
    endif()
  elseif(above)
    message(FATAL_ERROR "stop level 1.2: a ${status} row has max V^aa > 1.2: '${line}'")
  endif()
endforeach()
if(NOT stopped EQUAL json_stopped OR stopped EQUAL 0 OR json_completed EQUAL 0)
  message(FATAL_ERROR "stop level 1.2: ${stopped} stopped rows, JSON stopped ${json_stopped} and "
                      "completed ${json_completed} (expected equal counts, some of each)")
endif()

# ---- 4. bad input: exit code 2, the flag and the value named ----
set(sn sample-network --model attention --networks 2)
set(v2 "1,0.5\;0.5,1")
expect_usage_error("--n: Value 1 not in range" ${sn} --V0 "${v2}" --n 1 --d 4)
expect_usage_error("--d: Value 0 not in range" ${sn} --V0 "${v2}" --n 16 --d 0)
expect_usage_error("--nk: Value 0 not in range" ${sn} --V0 "${v2}" --n 16 --d 4 --nk 0)
expect_usage_error("--networks: Value 0 not in range" ${sn} --V0 "${v2}" --n 16 --d 4 --networks 0)
expect_usage_error("n must be >= m = 3;(got 2) (flag --n)" ${sn} --V0 "${v3}" --n 2 --d 4)
expect_usage_error("heads must be a divisor of n = 16 (got 3) (flag --heads)"
                   ${sn} --V0 "${v2}" --n 16 --d 4 --heads 3)
expect_usage_error("hidden_ratio;(got 0.3) (flag --hidden-ratio)"
                   sample-network --model resnet --V0 "${v2}" --n 16 --d 4 --hidden-ratio 0.3)
expect_usage_error("--V0;'1,2\;3';row 2" ${sn} --V0 "1,2\;3" --n 16 --d 4)
expect_usage_error("--V0;'1,0.5\;0.2,1';not symmetric" ${sn} --V0 "1,0.5\;0.2,1" --n 16 --d 4)
expect_usage_error("--V0;'1,2\;2,1';not positive semidefinite" ${sn} --V0 "1,2\;2,1" --n 16 --d 4)
expect_usage_error("--sampler: foo not in" ${sn} --V0 "${v2}" --n 16 --d 4 --sampler foo)
expect_usage_error("--attention: foo not in" ${sn} --V0 "${v2}" --n 16 --d 4 --attention foo)
expect_usage_error("form must be shaped;(got unshaped) (flag --attention)"
                   sample-network --model mlp --V0 "${v2}" --n 16 --d 4 --attention unshaped)
expect_usage_error("stop_level;(got -1) (flag --stop-level)"
                   ${sn} --V0 "${v2}" --n 16 --d 4 --stop-level -1)
expect_usage_error("--model must be attention or transformer;(got mlp)"
                   rank-collapse --model mlp --n 16 --d 4 --networks 2)
expect_usage_error("--V0;'2';m >= 2" rank-collapse --V0 "2" --n 16 --d 4 --networks 2)

# ---- 5. rank-collapse: unshaped collapses, shaped does not ----
run_ok(table rank-collapse --n 16 --d 32 --networks 40 --out "${dir}/rank_collapse.csv")
string(REGEX MATCHALL "\n +[0-9]+ +[0-9.]+ [^\n]*" rows "${table}")
list(LENGTH rows n_rows)
if(NOT n_rows EQUAL 33)
  message(FATAL_ERROR "rank-collapse --d 32: expected 33 table rows (every depth), got ${n_rows}:\n${table}")
endif()
# fields: depth, t, unshaped ρ̄, ±, its stderr, λ̃, shaped ρ̄, ±, its stderr, λ̃
foreach(which first last)
  if(which STREQUAL "first")
    list(GET rows 0 row)
  else()
    list(GET rows 32 row)
  endif()
  string(STRIP "${row}" row)
  string(REGEX MATCHALL "[^ ]+" fields "${row}")
  list(LENGTH fields n_fields)
  if(NOT n_fields EQUAL 10)
    message(FATAL_ERROR "rank-collapse: cannot parse the ${which} row '${row}'")
  endif()
  list(GET fields 0 depth_${which})
  list(GET fields 2 unshaped_${which})
  list(GET fields 6 shaped_${which})
endforeach()
if(NOT depth_first EQUAL 0 OR NOT depth_last EQUAL 32)
  message(FATAL_ERROR "rank-collapse: depths run ${depth_first}..${depth_last}, expected 0..32")
endif()
# At depth 0 both forms report V3's own mean correlation (0.5 + 0.3 + 0.7)/3 = 0.5.
if(NOT unshaped_first STREQUAL "0.500000" OR NOT shaped_first STREQUAL "0.500000")
  message(FATAL_ERROR "rank-collapse: mean rho at depth 0 is ${unshaped_first} / ${shaped_first}, "
                      "expected 0.500000 (V3)")
endif()
to_units(u "${unshaped_last}" 6)
to_units(s "${shaped_last}" 6)
if(NOT u GREATER 990000 OR NOT u GREATER s)
  message(FATAL_ERROR "rank-collapse: at depth 32 unshaped mean rho ${unshaped_last} should exceed "
                      "0.99 and shaped ${shaped_last}:\n${table}")
endif()
file(STRINGS "${dir}/rank_collapse.csv" lines)
list(LENGTH lines n_lines)
list(GET lines 0 header)
if(NOT n_lines EQUAL 34 OR NOT header MATCHES "^depth,t,unshaped_mean_rho,.*,shaped_lambda_median,")
  message(FATAL_ERROR "rank-collapse --out: ${n_lines} lines (expected 34), header '${header}'")
endif()

execute_process(COMMAND /usr/bin/python3 -c "import matplotlib" RESULT_VARIABLE no_matplotlib
                OUTPUT_QUIET ERROR_QUIET)
if(no_matplotlib EQUAL 0)
  run_ok(ignored rank-collapse --n 16 --d 8 --networks 10 --plots "${dir}/plots")
  if(NOT EXISTS "${dir}/plots/rank_collapse.png" OR NOT EXISTS "${dir}/plots/rank_collapse.csv")
    message(FATAL_ERROR "rank-collapse --plots did not write rank_collapse.png and rank_collapse.csv")
  endif()
else()
  message(STATUS "python3 with matplotlib not found: rank-collapse --plots not tested")
endif()
# ---- 6. outputs: checked first, replaced only by a successful run ----
set(earlier "earlier results\n")
file(WRITE "${dir}/r.csv" "${earlier}")
expect_usage_error("stop_level;(got -1) (flag --stop-level)"
                   ${sn} --V0 "${v2}" --n 16 --d 4 --stop-level -1 --out "${dir}/r.csv")
expect_usage_error("heads must be a divisor of n = 16 (got 3) (flag --heads)"
                   ${sn} --V0 "${v2}" --n 16 --d 4 --heads 3 --out "${dir}/r.csv")
expect_unchanged("${dir}/r.csv" "${earlier}")
expect_usage_error(
  "ncsde sample-network: cannot write --out ${dir}/no/such/dir/x.csv: No such file or directory"
  ${sn} --V0 "${v2}" --n 16 --d 4 --out "${dir}/no/such/dir/x.csv")
expect_usage_error("ncsde rank-collapse: cannot write --out ${dir}/no/x.csv: No such file or directory"
                   rank-collapse --n 16 --d 4 --networks 2 --out "${dir}/no/x.csv")
run_ok(ignored ${sn} --V0 "${v2}" --n 16 --d 4 --out "${dir}/r.csv")
check_csv("${dir}/r.csv" "path,status,t_stop,V11,V12,V22" 2 6 "0.25")
expect_no_temporaries("${dir}")
if(no_matplotlib EQUAL 0)
  # A --plots directory that cannot be created fails before the run (this one takes ~30 s): within
  # 10 s, with the reason. ${dir}/r.csv is a file, so nothing can be created under it.
  set(CLI_TIMEOUT 10)
  expect_usage_error("ncsde rank-collapse: --plots: cannot create ${dir}/r.csv/plots: Not a directory"
                     rank-collapse --n 64 --d 2048 --networks 2000 --plots "${dir}/r.csv/plots")
  unset(CLI_TIMEOUT)
endif()
# ---- 7. limits ----
expect_usage_error("--networks 1000 with --d 100000000: 1e+11 network layers;more than the limit of 1e+10"
                   sample-network --V0 "${v2}" --n 64 --d 1e8 --networks 1000)
expect_usage_error("--networks 1000000000 with --d 512: 1.02e+12 network layers (1000000000 × 512 × 2 ensembles)"
                   rank-collapse --networks 1e9)
expect_usage_error("--networks 100000 with --d 1024 and --n 1024: about 5.37e+14 units of work;weights drawn per layer, literal sampler"
                   sample-network --model transformer --V0 "${v2}" --n 1024 --d 1024 --networks 1e5
                   --sampler literal)
# n = 10⁶: one n×n weight matrix is 8 TB.
expect_usage_error("--n 1000000: the run needs about 8 TB of memory (the literal sampler's weight matrices, 8 TB per thread × 1 thread)"
                   sample-network --model mlp --V0 "${v2}" --n 1e6 --d 1 --networks 1 --sampler literal)
# Off a terminal, a short run is silent on stderr (progress lines start after 30 s).
expect_silent(sample-network --model attention --V0 "${v2}" --n 16 --d 8 --networks 40)
file(REMOVE_RECURSE "${dir}")
