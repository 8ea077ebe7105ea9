// A models library as a user writes one (ncsde/models/models_library.hpp): the Wishart process
// dV = p·I dt + L dB + dBᵀLᵀ (analytic::wishart, E[V_t] = V0 + p t I) registered as the model
// "wishart-test" with one parameter, its degrees of freedom, and a network sampler of its own,
// "walk": V = X Xᵀ for X an m×p matrix Brownian motion seen at the times l/n, whose law at those
// times is the Wishart process's at every n (an integer p ≥ m). The Python tests load it with
// ncsde.models.load_library and the CLI tests with --models-library; `ncsde validate` runs it as
// any model with a sampler. "wishart-noise-map-test" is the same SDE without its dense Σ.
#include <cmath>
#include <cstdint>

#include "ncsde/analytic.hpp"
#include "ncsde/error.hpp"
#include "ncsde/models/models_library.hpp"
#include "ncsde/random.hpp"
#include "support/model_wrappers.hpp"

namespace {

/// X_0 = [L_0 0] (m×p, L_0 L_0ᵀ = V_0), X_{l+1} = X_l + Z_l/√n with Z_l the m·p normals of the
/// counter (user, l, 0): dV = dX Xᵀ + X dXᵀ + p I dt, the Wishart process, exactly at t = l/n.
class wishart_walk {
 public:
  struct state {
    ncsde::matrix x;
  };

  wishart_walk(double p, int m, int n) : m_m(m), m_n(n), m_p(static_cast<int>(std::lround(p))) {
    if (p != m_p || m_p < m)
      ncsde::throw_invalid_argument("wishart-test walk", "degrees-of-freedom", p,
                                    "an integer >= m (the columns of X)");
    if (n < 1) ncsde::throw_invalid_argument("wishart-test walk", "n", n, ">= 1");
  }
  int m() const { return m_m; }
  int n() const { return m_n; }

  state initial_state(const ncsde::matrix& v0, const ncsde::random_stream&) const {
    if (v0.rows() != m_m || v0.cols() != m_m)
      ncsde::throw_invalid_argument("wishart-test walk", "V0", v0.rows(), "m x m");
    const Eigen::LLT<ncsde::matrix> llt(v0);
    if (llt.info() != Eigen::Success)
      ncsde::throw_invalid_argument("wishart-test walk", "V0", "not positive definite",
                                    "positive definite");
    state s{ncsde::matrix::Zero(m_m, m_p)};
    s.x.leftCols(m_m) = llt.matrixL();
    return s;
  }

  void step(state& s, std::uint64_t l, const ncsde::random_stream& stream) const {
    ncsde::matrix z(m_m, m_p);
    stream.normals(ncsde::random_domain::user, l, 0, z.data(), z.size());
    s.x += z / std::sqrt(static_cast<double>(m_n));
  }

  ncsde::matrix covariance(const state& s) const { return s.x * s.x.transpose(); }

 private:
  int m_m, m_n, m_p;
};

/// The same SDE giving only its noise map, without the dense Σ (ncsde::CovarianceSde): what
/// `ncsde coefficients` does with such a model.
using wishart_noise_map_only = support::coefficients_only<ncsde::analytic::wishart>;

}  // namespace

NCSDE_MODELS_LIBRARY(reg) {
  using namespace ncsde::models;
  reg.add(
      make_entry<ncsde::analytic::wishart>(
          {"wishart-test",
           "Wishart process dV = p I dt + L dB + dB^T L^T (a models library of the tests)",
           {real_parameter("degrees-of-freedom", 5.0, "Degrees of freedom p of the Wishart process",
                           "> 0 and finite", "p")}},
          [](const parameter_values& values) {
            return ncsde::analytic::wishart(values.real("degrees-of-freedom"));
          })
          .with_sampler<wishart_walk>(
              "walk", "V = X X^T, X an m x p matrix Brownian motion at the times l/n",
              [](const parameter_values& values, const network_request& r) {
                return wishart_walk(values.real("degrees-of-freedom"), r.m, r.n);
              }));
  reg.add(make_entry<wishart_noise_map_only>(
      {"wishart-noise-map-test",
       "The Wishart process without its dense Sigma (a models library of the tests)",
       {real_parameter("degrees-of-freedom", 5.0, "Degrees of freedom p of the Wishart process",
                       "> 0 and finite", "p")}},
      [](const parameter_values& values) {
        return wishart_noise_map_only{ncsde::analytic::wishart(values.real("degrees-of-freedom"))};
      }));
}
