# ctest driver for the model registry on the command line (cmake -DNCSDE=<path to ncsde> -P
# registry_cli.cmake):
#  1. `ncsde models` lists every registered model with its parameters;
#  2. shaped-tanh runs under coefficients (its drift by hand), simulate and sample-network;
#  3. a tiny `ncsde validate --model shaped-tanh` runs on its literal network (no wrong SDEs);
#  4. flags of another model, bad values and an unknown model fail with exit code 2 and a message
#     naming the flag, the value and the registered models.
cmake_minimum_required(VERSION 3.19)  # string(JSON); CMP0054: quoted if() arguments are strings
include("${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake")

# ---- 1. the listing ----
run_ok(listing models)
foreach(text "mlp" "resnet" "attention" "transformer" "shaped-tanh" "--activation" "--gamma2"
             "networks: literal")
  string(FIND "${listing}" "${text}" position)
  if(position EQUAL -1)
    message(FATAL_ERROR "ncsde models does not list '${text}':\n${listing}")
  endif()
endforeach()
run_ok(listing_json models --format json)
string(JSON name GET "${listing_json}" 4 name)
string(JSON flag GET "${listing_json}" 4 parameters 0 flag)
if(NOT name STREQUAL "shaped-tanh" OR NOT flag STREQUAL "--a")
  message(FATAL_ERROR "ncsde models --format json: entry 4 is '${name}' with first flag '${flag}'")
endif()

# ---- 2. shaped-tanh: coefficients, simulate, sample-network ----
# tanh, a = 2, V = [[1, .5], [.5, 1]]: b^{ab} = −(1/a²) V^{ab}(V^{aa} + V^{bb}), so b¹² = −1/4 and
# b¹¹ = −1/2; Σ^{11,11} = 2 (V¹¹)² = 2 (Σ_lin).
run_ok(coef coefficients --model shaped-tanh --a 2 --V "1,0.5\;0.5,1" --format json)
string(JSON b01 GET "${coef}" drift 0 1)
string(JSON b00 GET "${coef}" drift 0 0)
string(JSON s0 GET "${coef}" diffusion 0)
if(NOT b01 STREQUAL "-0.25" OR NOT b00 STREQUAL "-0.5" OR NOT s0 STREQUAL "2")
  message(FATAL_ERROR "shaped-tanh coefficients: b12 ${b01}, b11 ${b00}, Sigma11,11 ${s0}")
endif()
# tanh's drift pulls V back (b^{aa} = −2(V^{aa})²/a²): every path completes. swish's is quadratic and
# positive (σ''(0) = 1), so its paths may blow up in finite time; the run must still work.
run_ok(sim simulate --model shaped-tanh --V0 "1,0.5\;0.5,1" --paths 50 --dt 0.01 --threads 2
       --format json)
string(JSON paths GET "${sim}" paths)
string(JSON completed GET "${sim}" completed)
if(NOT paths EQUAL 50 OR NOT completed EQUAL 50)
  message(FATAL_ERROR "shaped-tanh simulate: ${completed} of ${paths} paths completed:\n${sim}")
endif()
run_ok(swish simulate --model shaped-tanh --activation swish --V0 "1,0.5\;0.5,1" --paths 50
       --dt 0.01 --threads 2 --format json)
string(JSON paths GET "${swish}" paths)
if(NOT paths EQUAL 50)
  message(FATAL_ERROR "shaped-tanh --activation swish simulate: ${paths} paths:\n${swish}")
endif()
run_ok(net sample-network --model shaped-tanh --V0 "1,0.5\;0.5,1" --n 16 --d 16 --networks 20
       --threads 2 --format json)
string(JSON sampler GET "${net}" sampler)
if(NOT sampler STREQUAL "literal")
  message(FATAL_ERROR "shaped-tanh sample-network: sampler '${sampler}', expected its literal one")
endif()

# ---- 3. a tiny validate ----
run_ok(val validate --model shaped-tanh --n 8,16 --networks 300 --paths 300 --dt 0.0078125
       --threads 2 --format json)
string(JSON n_rows LENGTH "${val}" rows)
string(JSON model GET "${val}" model)
string(JSON a GET "${val}" params a)
if(NOT n_rows EQUAL 3 OR NOT model STREQUAL "shaped-tanh" OR NOT a STREQUAL "1.0")
  message(FATAL_ERROR "validate --model shaped-tanh: ${n_rows} rows (expected 2 widths and the "
                      "noise floor), model '${model}', a '${a}':\n${val}")
endif()

# ---- 4. refusals ----
expect_usage_error("--gamma2 is not a parameter of shaped-tanh (its parameters: --a, --activation)"
                   simulate --model shaped-tanh --gamma2 0.3 --V0 "1,0\;0,1" --paths 2)
expect_usage_error("--a is not a parameter of mlp"
                   coefficients --model mlp --a 2 --V "1,0\;0,1")
expect_usage_error("shaped_activation_sde: a must be > 0 and finite (got -1) (flag --a)"
                   coefficients --model shaped-tanh --a -1 --V "1,0\;0,1")
expect_usage_error("--activation: relu not in"
                   coefficients --model shaped-tanh --activation relu --V "1,0\;0,1")
expect_usage_error("--model: foo not in;shaped-tanh" simulate --model foo --V0 "1,0\;0,1")
expect_usage_error("shaped-tanh: sampler must be one of literal (got reduced) (flag --sampler)"
                   sample-network --model shaped-tanh --sampler reduced --V0 "1,0\;0,1" --n 8 --d 8)
expect_usage_error("variant must be none for model shaped-tanh"
                   validate --model shaped-tanh --variants vpv --n 8 --networks 10 --paths 10)
