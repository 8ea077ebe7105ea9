#pragma once
/// Small SDEs with known behaviour, for the solver-layer tests.
#include <Eigen/Core>

#include <cmath>
#include <vector>

#include "ncsde/concepts.hpp"

namespace support {

/// 2×2 SDE that leaves the cone deterministically under Euler–Maruyama, with additive noise whose
/// sum can be read off the final state. V = diag(x, y) stays diagonal:
///   dx = −λ x dt (no noise),   dy = σ dW (k = 1),   off-diagonal: 0.
/// One EM step maps x to (1 − λh)·x, negative when λh > 1 (λ_min(V) = x < 0: outside the cone), and
/// y_T = y_0 + σ Σ_i ΔW_i whatever the step sizes, since the y-equation has no drift.
struct decoupled_exit {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  double lambda = 15.0;
  double sigma = 0.5;

  int noise_dimension(int) const { return 1; }
  void drift(const ncsde::matrix& v, ncsde::matrix& out, double) const {
    out.setZero(v.rows(), v.cols());
    out(0, 0) = -lambda * v(0, 0);
  }
  void diffusion(const ncsde::matrix& v, const ncsde::vector& xi, ncsde::matrix& out,
                 double) const {
    out.setZero(v.rows(), v.cols());
    out(1, 1) = sigma * xi(0);
  }
};
static_assert(ncsde::Sde<decoupled_exit>);

/// Scalar (1×1) dv = a v³ dt + σ v dW. With σ = 0 the solution v(t) = (v0⁻² − 2 a t)^{-1/2} blows up
/// at t* = 1/(2 a v0²).
struct cubic_scalar {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  double a = 1.0;
  double sigma = 0.0;

  int noise_dimension(int) const { return 1; }
  void drift(const ncsde::matrix& v, ncsde::matrix& out, double) const {
    out.resize(1, 1);
    out(0, 0) = a * v(0, 0) * v(0, 0) * v(0, 0);
  }
  void diffusion(const ncsde::matrix& v, const ncsde::vector& xi, ncsde::matrix& out,
                 double) const {
    out.resize(1, 1);
    out(0, 0) = sigma * v(0, 0) * xi(0);
  }
};
static_assert(ncsde::Sde<cubic_scalar>);

/// Smooth matrix SDE with non-commutative quadratic noise, on m×m symmetric V:
///   b(V) = A V + V Aᵀ + C,   G(V) ξ = Σ_l ξ_l V B_l V   (l = 1..k, B_l and C symmetric),
/// so G is linear in ξ, maps to symmetric matrices, and DG_l(V)[H] = H B_l V + V B_l H,
/// D²G_l(V)[H, H] = 2 H B_l H. Without diffusion_derivative: Milstein uses its derivative-free form.
struct quadratic_noise {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  ncsde::matrix a, c;
  std::vector<ncsde::matrix> b;  ///< B_1..B_k

  int noise_dimension(int) const { return static_cast<int>(b.size()); }
  void drift(const ncsde::matrix& v, ncsde::matrix& out, double) const {
    out = a * v + v * a.transpose() + c;
  }
  void diffusion(const ncsde::matrix& v, const ncsde::vector& xi, ncsde::matrix& out,
                 double) const {
    out.setZero(v.rows(), v.cols());
    for (std::size_t l = 0; l < b.size(); ++l)
      out += xi(static_cast<Eigen::Index>(l)) * (v * b[l] * v);
  }
};
static_assert(ncsde::Sde<quadratic_noise>);
static_assert(!ncsde::SdeWithDiffusionDerivative<quadratic_noise>);

/// quadratic_noise with its exact directional derivative d/dε [G(V + εH) ξ] = Σ_l ξ_l (H B_l V + V B_l H).
struct quadratic_noise_with_derivative : quadratic_noise {
  void diffusion_derivative(const ncsde::matrix& v, const ncsde::matrix& h, const ncsde::vector& xi,
                            ncsde::matrix& out, double) const {
    out.setZero(v.rows(), v.cols());
    for (std::size_t l = 0; l < b.size(); ++l)
      out += xi(static_cast<Eigen::Index>(l)) * (h * b[l] * v + v * b[l] * h);
  }
};
static_assert(ncsde::SdeWithDiffusionDerivative<quadratic_noise_with_derivative>);

/// Scalar (1×1) dX = μ X dt + σ X² dW with G' = 2σX, for the classical Milstein formula
///   X + μX h + σX² ΔW + ½ (σX²)(2σX) (ΔW² − h).
struct scalar_quadratic {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  double mu = 0.3;
  double sigma = 0.7;

  int noise_dimension(int) const { return 1; }
  void drift(const ncsde::matrix& v, ncsde::matrix& out, double) const {
    out.resize(1, 1);
    out(0, 0) = mu * v(0, 0);
  }
  void diffusion(const ncsde::matrix& v, const ncsde::vector& xi, ncsde::matrix& out,
                 double) const {
    out.resize(1, 1);
    out(0, 0) = sigma * v(0, 0) * v(0, 0) * xi(0);
  }
  void diffusion_derivative(const ncsde::matrix& v, const ncsde::matrix& h, const ncsde::vector& xi,
                            ncsde::matrix& out, double) const {
    out.resize(1, 1);
    out(0, 0) = 2.0 * sigma * v(0, 0) * h(0, 0) * xi(0);
  }
};
static_assert(ncsde::SdeWithDiffusionDerivative<scalar_quadratic>);

}  // namespace support
