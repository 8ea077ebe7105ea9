// The downstream example's SDE as a models library (ncsde/models/models_library.hpp): a shared
// library that a program built without it loads at run time, after which its model is a registry
// model like the built-in ones. The Python module loads such a library with
// ncsde.models.load_library(path), the `ncsde` program with --models-library PATH, and a C++
// program with ncsde::models::load_models_library(path) (main.cpp does).
#include "ncsde/models/models_library.hpp"
#include "matrix_ou.hpp"

NCSDE_MODELS_LIBRARY(reg) {
  using namespace ncsde::models;
  reg.add(make_entry<downstream::matrix_ou>(
      {"matrix-ou",
       "Matrix Ornstein-Uhlenbeck process dV = theta (M - V) dt + sigma L dW_s L^T (M fixed, 3x3)",
       {real_parameter("theta", 1.0, "Mean-reversion rate theta", "> 0"),
        real_parameter("sigma", 0.2, "Noise scale sigma", ">= 0")}},
      [](const parameter_values& p) {
        return downstream::matrix_ou(p.real("theta"), p.real("sigma"),
                                     downstream::example_mean_level());
      }));
}
