# ctest driver for `ncsde coefficients` and `ncsde simulate` (cmake -DNCSDE=<path to ncsde> -P
# models_cli.cmake):
#  1. mlp coefficients at V = [[1, .5], [.5, 1]] against the closed forms of docs/maths.md §3.2;
#  2. attention coefficients at V = [[2, 1], [1, 1]] against k_lin Σ_lin + k_att Σ_att by hand;
#  3. a small simulate run writes a CSV with the documented header and one row per path;
#  4. bad model flags and matrices fail with exit code 2 and a message naming the flag and the value;
#  5. integer flags are read as decimal integers: "010" and "1e1" are ten, "1.5" and 2^64 are
#     refused;
#  6. --out is replaced only by a successful run: a bad flag or a run that fails midway leaves an
#     earlier file unchanged (and no temporary), an unwritable --out fails before the run with the
#     reason, exit code 2;
#  7. runs beyond the limits of validation/limits.hpp (steps, memory) are refused before they
#     start, naming the flag, the value and the estimate;
#  8. a short run prints nothing on stderr off a terminal (progress lines start after 30 s).
cmake_minimum_required(VERSION 3.19)  # string(JSON); CMP0054: quoted if() arguments are strings
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")  # to_units, run_ok, expect_usage_error

# expect_near(<what> <actual text> <expected text>): |actual − expected| ≤ 1e-12 (1000 femto-units;
# the truncation of each side to 1e-15 adds at most 2e-15). |expected| < 1000, the range of
# femto-units; an actual outside it saturates and fails.
function(expect_near what actual expected)
  to_units(a "${actual}" 15)
  to_units(e "${expected}" 15)
  math(EXPR diff "${a} - ${e}")
  if(diff LESS -1000 OR diff GREATER 1000)
    message(FATAL_ERROR "${what}: got ${actual}, expected ${expected} (tolerance 1e-12)")
  endif()
endfunction()

# ---- 1. mlp at V = [[1, .5], [.5, 1]], c₊ = 0, c₋ = −2 ----
run_ok(mlp coefficients --model mlp --c-plus 0 --c-minus -2 --V "1,0.5\;0.5,1" --format json)
string(JSON model GET "${mlp}" model)
string(JSON m GET "${mlp}" m)
if(NOT model STREQUAL "mlp" OR NOT m EQUAL 2)
  message(FATAL_ERROR "mlp: expected model mlp and m 2, got '${model}' and '${m}'\n${mlp}")
endif()
string(JSON b00 GET "${mlp}" drift 0 0)
string(JSON b01 GET "${mlp}" drift 0 1)
string(JSON b10 GET "${mlp}" drift 1 0)
# b^{aa} = ν(1) √(V^{aa}V^{aa}) = 0 exactly.
expect_near("mlp drift[0][0]" "${b00}" "0")
# b^{12} = ν(ρ) √(V11 V22), ρ = 0.5, ν(ρ) = ((c₊ − c₋)²/(2π)) (√(1 − ρ²) − ρ arccos ρ)
#        = (4/(2π)) (√3/2 − (1/2)(π/3)) = √3/π − 1/3 = 0.55132889542179204 − 0.33333333333333333
#        = 0.21799556208845871.
expect_near("mlp drift[0][1]" "${b01}" "0.21799556208845871")
expect_near("mlp drift[1][0]" "${b10}" "0.21799556208845871")
string(JSON n_diffusion LENGTH "${mlp}" diffusion)
if(NOT n_diffusion EQUAL 16)
  message(FATAL_ERROR "mlp: the diffusion must have m⁴ = 16 entries, got ${n_diffusion}")
endif()
# Σ^{11,11} = Σ_lin^{11,11} = V11 V11 + V11 V11 = 2 V11² = 2 (k_lin = 1 for mlp).
string(JSON s0 GET "${mlp}" diffusion 0)
expect_near("mlp Sigma^{11,11}" "${s0}" "2")
# Σ^{12,21} (flat index (0,1,1,0) = 0·8 + 1·4 + 1·2 + 0 = 6) = V12 V21 + V11 V22 = 0.25 + 1.
string(JSON s6 GET "${mlp}" diffusion 6)
expect_near("mlp Sigma^{12,21}" "${s6}" "1.25")

# ---- 2. attention, γ² = 1, τ₀ = 1, one head, no W^O: k_lin = γ²(2 − γ²) = 1, k_att = γ⁴/n_h = 1 ----
run_ok(att coefficients --model attention --gamma2 1 --tau0 1 --V "2,1\;1,1" --format json)
# By hand, m = 2, V = [[2, 1], [1, 1]]: P = x xᵀ with x = (1, −1)/√2, so Φ = V P V P V =
# (xᵀVx) (Vx)(Vx)ᵀ with xᵀVx = (2 − 1 − 1 + 1)/2 = 1/2 and Vx = (1, 0)/√2, hence
# Φ = (1/2)(1/2) [[1, 0], [0, 0]]: Φ11 = 1/4, Φ12 = Φ22 = 0.
# Σ^{11,12} (a = b = c = 1, d = 2; flat index (0,0,0,1) = 1):
#   Σ_lin = V11 V12 + V12 V11 = 2 + 2 = 4,
#   Σ_att = (1/(m²τ₀²)) [V11 Φ12 + V12 Φ11 + V11 Φ12 + V12 Φ11] = (1/4)(0 + 1/4 + 0 + 1/4) = 1/8,
#   Σ = 1·4 + 1·(1/8) = 4.125.
# Σ^{12,12} (flat index (0,1,0,1) = 5) and Σ^{21,12} (flat index (1,0,0,1) = 9):
#   Σ_lin = V11 V22 + V12 V21 = 2 + 1 = 3,
#   Σ_att = (1/4) [V11 Φ22 + V12 Φ21 + V21 Φ12 + V22 Φ11] = (1/4)(1/4) = 1/16,  Σ = 3.0625.
# Σ^{11,11} (flat index 0): Σ_lin = 2 V11² = 8, Σ_att = (1/4)(4 V11 Φ11) = 1/2,  Σ = 8.5.
string(JSON n_diffusion LENGTH "${att}" diffusion)
if(NOT n_diffusion EQUAL 16)
  message(FATAL_ERROR "attention: the diffusion must have 16 entries, got ${n_diffusion}")
endif()
string(JSON s0 GET "${att}" diffusion 0)
string(JSON s1 GET "${att}" diffusion 1)
string(JSON s5 GET "${att}" diffusion 5)
string(JSON s9 GET "${att}" diffusion 9)
expect_near("attention Sigma^{11,11}" "${s0}" "8.5")
expect_near("attention Sigma^{11,12}" "${s1}" "4.125")
expect_near("attention Sigma^{12,12}" "${s5}" "3.0625")
expect_near("attention Sigma^{21,12}" "${s9}" "3.0625")

# The table format runs and shows the packed pair labels.
run_ok(table coefficients --model transformer --V "1,0.5\;0.5,1" --format table)
string(FIND "${table}" "(1,2)" position)
if(position EQUAL -1)
  message(FATAL_ERROR "coefficients --format table has no (1,2) label:\n${table}")
endif()

# ---- 3. simulate: header and one row per path ----
set(csv "${CMAKE_CURRENT_BINARY_DIR}/models_cli_simulate.csv")
file(REMOVE "${csv}")
run_ok(summary simulate --model mlp --V0 "1,0.5\;0.5,1" --paths 50 --dt 0.01 --threads 2 --out "${csv}")
if(NOT EXISTS "${csv}")
  message(FATAL_ERROR "simulate --out did not write ${csv}")
endif()
file(STRINGS "${csv}" lines)
list(LENGTH lines n_lines)
if(NOT n_lines EQUAL 51)
  message(FATAL_ERROR "simulate --paths 50: expected a header and 50 rows, got ${n_lines} lines")
endif()
list(GET lines 0 header)
if(NOT header STREQUAL "path,status,t_stop,V11,V12,V22")
  message(FATAL_ERROR "simulate: unexpected CSV header '${header}'")
endif()
list(GET lines 50 last)
if(NOT last MATCHES "^49,[a-z_]+,[^,]+,[^,]+,[^,]+,[^,]+$")
  message(FATAL_ERROR "simulate: the last row is not path 49 with 6 fields: '${last}'")
endif()
string(FIND "${summary}" "rho12" position)
if(position EQUAL -1)
  message(FATAL_ERROR "simulate: the summary does not report the functional rho12:\n${summary}")
endif()
# Stopped process: with K = 1.3, a path is 'stopped' exactly when the state it stopped in has
# max(V11, V22) > 1.3 (the check runs after every step), and some paths stop while others complete.
run_ok(summary simulate --model attention --tau0 0.5 --gamma2 1 --V0 "1,0.5\;0.5,1" --paths 200
       --dt 0.01 --stop-level 1.3 --threads 2 --out "${csv}")
file(STRINGS "${csv}" rows)
list(REMOVE_AT rows 0)
set(n_stopped 0)
set(n_completed 0)
foreach(row IN LISTS rows)
  string(REPLACE "," ";" fields "${row}")
  list(GET fields 1 status)
  list(GET fields 3 v11)
  list(GET fields 5 v22)
  # CMake has no floats: compare in femto-units.
  to_units(a "${v11}" 15)
  to_units(b "${v22}" 15)
  if(a GREATER 1300000000000000 OR b GREATER 1300000000000000)
    set(over TRUE)
  else()
    set(over FALSE)
  endif()
  if(status STREQUAL "stopped")
    math(EXPR n_stopped "${n_stopped} + 1")
    if(NOT over)
      message(FATAL_ERROR "simulate --stop-level 1.3: stopped row without max(V11, V22) > 1.3: ${row}")
    endif()
  elseif(status STREQUAL "completed")
    math(EXPR n_completed "${n_completed} + 1")
  endif()
endforeach()
if(n_stopped EQUAL 0 OR n_completed EQUAL 0)
  message(FATAL_ERROR "simulate --stop-level 1.3: expected both stopped (${n_stopped}) and completed (${n_completed}) paths")
endif()
file(REMOVE "${csv}")

# ---- 4. bad input: exit code 2, the flag and the value named ----
expect_usage_error("ncsde: error:;gamma2;1.5;--gamma2" coefficients --model resnet --gamma2 1.5 --V "1,0\;0,1")
expect_usage_error("ncsde: error:;tau0;--tau0" coefficients --model attention --tau0 0 --V "1,0\;0,1")
expect_usage_error("ncsde: error:;heads;--heads" coefficients --model attention --heads 0 --V "1,0\;0,1")
expect_usage_error("--heads" coefficients --model mlp --heads 2 --V "1,0\;0,1")
expect_usage_error("--V;'1,2\;3';row 2" coefficients --model mlp --V "1,2\;3")
expect_usage_error("--V;'1,x\;0,1';'x' is not a finite number" coefficients --model mlp --V "1,x\;0,1")
expect_usage_error("--V;not symmetric" coefficients --model mlp --V "1,2\;0,1")
# A finite V at which the coefficients overflow is refused, not printed as null.
expect_usage_error("--V: the coefficients overflow (are not finite) at V = '1e300,0\;0,1e300': Sigma^{11,11} = inf"
                   coefficients --model mlp --V "1e300,0\;0,1e300")
expect_usage_error("--V: the coefficients overflow" coefficients --model transformer --V "1e200,0\;0,1" --format table)
expect_usage_error("--model: foo not in" coefficients --model foo --V "1,0\;0,1")
# Every registry scheme runs (the summary names it); an unknown one is refused.
foreach(scheme milstein-commutative predictor-corrector)
  run_ok(run simulate --model mlp --V0 "1,0.5\;0.5,1" --paths 20 --dt 0.05 --threads 1 --scheme ${scheme}
         --format json)
  string(JSON name GET "${run}" scheme)
  if(NOT name STREQUAL scheme)
    message(FATAL_ERROR "simulate --scheme ${scheme}: the summary says scheme '${name}'")
  endif()
endforeach()
expect_usage_error("--scheme: rk4 not in" simulate --V0 "1,0\;0,1" --scheme rk4)
expect_usage_error("--pd-policy: bogus not in" simulate --V0 "1,0\;0,1" --pd-policy bogus)
expect_usage_error("--V0;'1,x';entries" simulate --V0 "1,x" --paths 2)
expect_usage_error("--stop-level must be > 0 (inf: never stop) (got -2)" simulate --V0 "1,0\;0,1" --stop-level -2)
expect_usage_error("--gamma2;1.5" simulate --model resnet --gamma2 1.5 --V0 "1,0\;0,1" --paths 2)

# ---- 5. integer flags: decimal digits only, read as written ----
run_ok(ten simulate --V0 "1,0.5\;0.5,1" --paths 1e1 --seed 010 --dt 0.1 --threads 1 --format json)
run_ok(ten_plain simulate --V0 "1,0.5\;0.5,1" --paths 10 --seed 10 --dt 0.1 --threads 1 --format json)
string(JSON paths GET "${ten}" paths)
string(JSON seed GET "${ten}" seed)
string(JSON ten_rho GET "${ten}" functionals 0)
string(JSON plain_rho GET "${ten_plain}" functionals 0)
if(NOT paths EQUAL 10 OR NOT seed EQUAL 10 OR NOT ten_rho STREQUAL plain_rho)
  message(FATAL_ERROR "simulate --paths 1e1 --seed 010 is not --paths 10 --seed 10:\n${ten}")
endif()
expect_usage_error("--paths: must be a decimal integer such as 1000 or 1e6 (got '1.5')"
                   simulate --V0 "1,0\;0,1" --paths 1.5)
expect_usage_error("--seed: must be at most 2^64 - 1" simulate --V0 "1,0\;0,1" --seed 99999999999999999999)
expect_usage_error("--heads: must be a decimal integer such as 1000 or 1e6 (got '2.5')"
                   coefficients --model attention --heads 2.5 --V "1,0\;0,1")

# ---- 6. --out: whole or not at all ----
set(dir "${CMAKE_CURRENT_BINARY_DIR}/models_cli_out")
file(REMOVE_RECURSE "${dir}")
file(MAKE_DIRECTORY "${dir}")
set(earlier "earlier results\n")
file(WRITE "${dir}/r.csv" "${earlier}")
set(identity "1,0\;0,1")
set(sim --paths 5 --out "${dir}/r.csv")
expect_usage_error("dt must be > 0 and finite (got -1) (flag --dt)"
                   simulate --V0 "${identity}" ${sim} --dt -1)
expect_usage_error("T must be finite (got inf) (flag --T)" simulate --V0 "${identity}" ${sim} --T inf)
expect_usage_error("dt must be <= T - t0 = 1 (got 2) (flag --dt)"
                   simulate --V0 "${identity}" ${sim} --dt 2)
expect_usage_error("blowup_threshold must be in (0, 1e100] (got 0) (flag --blowup-threshold)"
                   simulate --V0 "${identity}" ${sim} --blowup-threshold 0)
expect_usage_error("--stop-level must be > 0" simulate --V0 "${identity}" ${sim} --stop-level -1)
expect_unchanged("${dir}/r.csv" "${earlier}")
# A run that fails midway (the throw policy at a step that leaves the cone): exit 1, file unchanged.
expect_exit(1 "left the positive-semidefinite cone"
            simulate --V0 "1,0\;0,1" --paths 200 --dt 0.5 --pd-policy throw --out "${dir}/r.csv")
expect_unchanged("${dir}/r.csv" "${earlier}")
expect_no_temporaries("${dir}")
# An unwritable --out fails before the run, with the reason.
expect_usage_error(
  "ncsde simulate: cannot write --out ${dir}/no/such/dir/x.csv: No such file or directory"
  simulate --V0 "1,0\;0,1" --paths 5 --out "${dir}/no/such/dir/x.csv")
expect_usage_error("ncsde simulate: cannot write --out ${dir}: Is a directory"
                   simulate --V0 "1,0\;0,1" --paths 5 --out "${dir}")
# A successful run replaces the file.
run_ok(ignored simulate --V0 "1,0\;0,1" --paths 5 --dt 0.1 --out "${dir}/r.csv")
file(STRINGS "${dir}/r.csv" lines)
list(LENGTH lines n_lines)
if(NOT n_lines EQUAL 6)
  message(FATAL_ERROR "simulate --paths 5 --out: expected 6 lines in the replaced file, got ${n_lines}")
endif()
expect_no_temporaries("${dir}")
file(REMOVE_RECURSE "${dir}")

# ---- 7. limits: refused at once, with the flag, the value and the estimate ----
expect_usage_error("--dt 1e-06 with --T 1e+06: 1e+12 steps per path, more than the limit of 1e+09"
                   simulate --V0 "1,0\;0,1" --T 1e6 --dt 1e-6)
expect_usage_error("--paths 1000000000: 1e+15 steps in all;more than the limit of 1e+12 steps"
                   simulate --V0 "1,0\;0,1" --paths 1e9 --T 1000 --dt 1e-3)
# Memory: under a 2 GB address-space limit (RLIMIT_AS) 1e8 paths of m = 1 (about 3.6 GB) are
# refused before any allocation.
execute_process(COMMAND /bin/sh -c "ulimit -v 2000000 && exec \"$0\" \"$@\"" "${NCSDE}"
                        simulate --V0 2 --paths 1e8 --dt 0.5
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 2 OR NOT err MATCHES "--paths 100000000: the run needs about [0-9.]+ GB of memory \\(36 bytes per path: 1 functional value\\), more than the 2.05 GB available \\(RLIMIT_AS\\)")
  message(FATAL_ERROR "simulate --paths 1e8 under ulimit -v 2000000: exit ${rc}, expected 2 and "
                      "the memory estimate:\n${err}")
endif()

# ---- 8. off a terminal, a short run is silent on stderr ----
expect_silent(simulate --V0 "1,0.5\;0.5,1" --paths 20 --dt 0.01)
