#pragma once
/// The covariance SDEs the model tests run (every architecture and its attention variants) and the
/// normwise ulp distance they compare coefficients with.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ncsde/concepts.hpp"
#include "ncsde/models/shaped.hpp"

namespace support {

struct model_case {
  const char* name;
  ncsde::models::architecture arch;
  bool causal;
  bool output_projection;
  int heads;
};

inline constexpr model_case model_cases[] = {
    {"mlp", ncsde::models::architecture::mlp, false, false, 1},
    {"resnet", ncsde::models::architecture::resnet, false, false, 1},
    {"attention", ncsde::models::architecture::attention, false, false, 1},
    {"attention, W^O, 2 heads", ncsde::models::architecture::attention, false, true, 2},
    {"causal attention", ncsde::models::architecture::attention, true, false, 1},
    {"transformer", ncsde::models::architecture::transformer, false, false, 1},
    {"causal transformer", ncsde::models::architecture::transformer, true, false, 1},
};

/// The SDE of case c with γ² = gamma2, τ₀ = tau0, r = 2, c₋ = −1.5.
inline ncsde::models::covariance_sde make_sde(const model_case& c, double gamma2 = 0.6,
                                              double tau0 = 0.8) {
  ncsde::models::shaped_params p;
  p.gamma2 = gamma2;
  p.tau0 = tau0;
  p.hidden_ratio = 2.0;
  p.c_minus = -1.5;
  p.causal = c.causal;
  p.output_projection = c.output_projection;
  p.heads = c.heads;
  return ncsde::models::covariance_sde(c.arch, p);
}

/// Distance of a from b in units of ε·max|b| (normwise ulps); NaN-safe (a NaN gives +inf).
inline double ulps(const ncsde::matrix& a, const ncsde::matrix& b) {
  constexpr double eps = std::numeric_limits<double>::epsilon();
  const double scale = std::max(b.cwiseAbs().maxCoeff(), std::numeric_limits<double>::min());
  const double d = (a - b).cwiseAbs().maxCoeff() / (eps * scale);
  return std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
}

}  // namespace support
