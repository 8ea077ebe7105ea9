// A models library as a user writes one (ncsde/models/models_library.hpp): the Wishart process
// dV = p·I dt + L dB + dBᵀLᵀ (analytic::wishart, E[V_t] = V0 + p t I) registered as the model
// "wishart-test" with one parameter, its degrees of freedom. The Python tests load it with
// ncsde.models.load_library and the CLI tests with --models-library.
#include "ncsde/analytic.hpp"
#include "ncsde/models/models_library.hpp"

NCSDE_MODELS_LIBRARY(reg) {
  using namespace ncsde::models;
  reg.add(make_entry<ncsde::analytic::wishart>(
      {"wishart-test",
       "Wishart process dV = p I dt + L dB + dB^T L^T (a models library of the tests)",
       {real_parameter("degrees-of-freedom", 5.0, "Degrees of freedom p of the Wishart process",
                       "> 0 and finite", "p")}},
      [](const parameter_values& values) {
        return ncsde::analytic::wishart(values.real("degrees-of-freedom"));
      }));
}
