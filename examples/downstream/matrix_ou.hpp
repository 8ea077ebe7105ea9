#pragma once
/// The downstream example's own SDE, a matrix Ornstein–Uhlenbeck process with structured noise
///   dV = θ (M − V) dt + σ L (dW + dWᵀ)/√2 Lᵀ,   L Lᵀ = M,
/// used by its program (main.cpp) and by its models library (models_library.cpp).
#include <Eigen/Cholesky>

#include <cmath>

#include "ncsde/concepts.hpp"
#include "ncsde/error.hpp"
#include "ncsde/state_space.hpp"

namespace downstream {

/// dV = θ (M − V) dt + σ L (dW + dWᵀ)/√2 Lᵀ on Sym(m), L the Cholesky factor of M.
/// Invariant: θ > 0, σ ≥ 0, M symmetric positive definite; checked in the constructor.
class matrix_ou {
 public:
  /// Symmetric matrices, not the cone: the OU process leaves it with positive probability.
  static constexpr ncsde::state_space space = ncsde::state_space::symmetric;
  matrix_ou(double theta, double sigma, const ncsde::matrix& mean_level)
      : m_theta(theta), m_sigma(sigma), m_mean(mean_level) {
    if (!(theta > 0)) ncsde::throw_invalid_argument("matrix_ou", "theta", theta, "> 0");
    if (!(sigma >= 0)) ncsde::throw_invalid_argument("matrix_ou", "sigma", sigma, ">= 0");
    const Eigen::LLT<ncsde::matrix> llt(mean_level);
    if (llt.info() != Eigen::Success)
      ncsde::throw_invalid("matrix_ou", "M must be positive definite");
    m_factor = llt.matrixL();
  }

  int noise_dimension(int m) const { return m * m; }

  void drift(const ncsde::matrix& v, ncsde::matrix& out, double) const {
    out = m_theta * (m_mean - v);
  }

  void diffusion(const ncsde::matrix& v, const ncsde::vector& xi, ncsde::matrix& out,
                 double) const {
    const Eigen::Index m = v.rows();
    const Eigen::Map<const ncsde::matrix> w(xi.data(), m, m);
    const ncsde::matrix w_sym = (w + w.transpose()) / std::sqrt(2.0);
    out = m_sigma * m_factor * w_sym * m_factor.transpose();
  }

  double theta() const { return m_theta; }
  const ncsde::matrix& mean_level() const { return m_mean; }

 private:
  double m_theta;
  double m_sigma;
  ncsde::matrix m_mean;
  ncsde::matrix m_factor;
};
static_assert(ncsde::Sde<matrix_ou>);

/// The mean level of the example: M = [[1, .3, .2], [.3, 1, .3], [.2, .3, 1]].
inline ncsde::matrix example_mean_level() {
  ncsde::matrix mean_level(3, 3);
  mean_level << 1.0, 0.3, 0.2,  //
      0.3, 1.0, 0.3,            //
      0.2, 0.3, 1.0;
  return mean_level;
}

}  // namespace downstream
