#pragma once
/// The shaped smooth-activation MLP of this example, now part of the library's model layer
/// (ncsde/models/shaped_tanh.hpp: the SDE, its derivation in the file doc, and the literal network;
/// registered as "shaped-tanh", so `ncsde simulate|validate --model shaped-tanh` run it). This
/// header keeps the example's names and adds what only the example uses: the O(1/n) correction c
/// of the one-step mean and its exact finite-n moments by Gauss–Hermite quadrature.
#include <fmt/format.h>

#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "ncsde/concepts.hpp"
#include "ncsde/error.hpp"
#include "ncsde/models/coefficients.hpp"
#include "ncsde/models/shaped_tanh.hpp"
#include "ncsde/random.hpp"
#include "ncsde/symmetric.hpp"

namespace shaped_tanh {

using ncsde::matrix;
using ncsde::vector;
using ncsde::models::shaped_activation_network;
using ncsde::models::shaped_activation_sde;
using ncsde::models::smooth_activation;
using ncsde::models::swish_activation;
using ncsde::models::tanh_activation;
using ncsde::models::validate_activation;

/// The O(1/n) one-step correction c(V) of the file doc:
///   n E[ΔV | V] = b(V) + c(V)/(a⁴ n) + O(n⁻²).
inline matrix one_step_correction(const smooth_activation& act, const matrix& v) {
  const double A = act.d2 / 2, B = act.d3 / 6, C = act.d4 / 24, D = act.d5 / 120;
  const Eigen::Index m = v.rows();
  matrix out(m, m);
  for (Eigen::Index a = 0; a < m; ++a)
    for (Eigen::Index b = a; b < m; ++b) {
      const double p = v(a, a), q = v(b, b), r = v(a, b);
      out(a, b) = 15 * D * (p * p + q * q) * r +
                  3 * A * C * (p * q * (p + q) + 4 * (p + q) * r * r) +
                  B * B * (9 * p * q * r + 6 * r * r * r);
      out(b, a) = out(a, b);
    }
  return out;
}

/// Gauss–Hermite rule for E[g(Z)], Z ~ N(0, 1): E[g(Z)] ≈ Σ_i w_i g(z_i), exact for polynomials of
/// degree ≤ 2k − 1, weights summing to 1. Golub–Welsch: the nodes are the eigenvalues of the Jacobi
/// matrix of the monic probabilists' Hermite polynomials (zero diagonal, off-diagonal √j, j
/// = 1..k−1), and w_i the squared first components of its unit eigenvectors. Throws unless 1 ≤ k ≤
/// 400.
class gauss_hermite {
 public:
  explicit gauss_hermite(int k) {
    if (!(k >= 1 && k <= 400))
      ncsde::throw_invalid_argument("gauss_hermite", "k", k, "in [1, 400]");
    vector diag = vector::Zero(k), sub(std::max(k - 1, 0));
    for (int j = 1; j < k; ++j) sub(j - 1) = std::sqrt(static_cast<double>(j));
    Eigen::SelfAdjointEigenSolver<matrix> es;
    es.computeFromTridiagonal(diag, sub, Eigen::ComputeEigenvectors);
    m_nodes = es.eigenvalues();
    m_weights = es.eigenvectors().row(0).transpose().cwiseAbs2();
  }
  const vector& nodes() const { return m_nodes; }
  const vector& weights() const { return m_weights; }

 private:
  vector m_nodes, m_weights;
};

/// Exact one-step moments of the finite network of width n at V (given X with X Xᵀ/n = V), by a
/// tensor Gauss–Hermite rule over (u, v) = (√V^{aa} z₁, β√V^{aa} z₁ + √(V^{bb} − β²V^{aa}) z₂),
/// β = V^{ab}/V^{aa}:
///   mean(a, b)     = n E[ΔV^{ab}]   = n E[σ_s(u)σ_s(v) − uv],
///   variance(a, b) = n Var(ΔV^{ab}) = Var(σ_s(u)σ_s(v)),   s = a√n.
/// Requires V^{aa} > 0 (not checked: a program-internal helper).
struct one_step_moments {
  matrix mean, variance;
};

inline one_step_moments exact_one_step(const smooth_activation& act, double a, int n,
                                       const matrix& v, const gauss_hermite& rule) {
  const double s = a * std::sqrt(static_cast<double>(n));
  const auto sigma_s = [&](double x) { return s * act.f(x / s); };
  const vector& z = rule.nodes();
  const vector& w = rule.weights();
  const Eigen::Index m = v.rows(), k = z.size();
  one_step_moments out{matrix(m, m), matrix(m, m)};
  for (Eigen::Index p = 0; p < m; ++p)
    for (Eigen::Index q = p; q < m; ++q) {
      const double su = std::sqrt(v(p, p));
      const double beta = v(p, q) / v(p, p);
      const double rest = std::sqrt(std::max(v(q, q) - beta * v(p, q), 0.0));
      double diff = 0.0, first = 0.0, second = 0.0;
      for (Eigen::Index i = 0; i < k; ++i) {
        const double u = su * z(i);
        const double fu = sigma_s(u);
        for (Eigen::Index j = 0; j < k; ++j) {
          const double x = beta * u + rest * z(j);
          const double prod = fu * sigma_s(x);
          const double wij = w(i) * w(j);
          diff += wij * (prod - u * x);
          first += wij * prod;
          second += wij * prod * prod;
        }
      }
      out.mean(p, q) = out.mean(q, p) = n * diff;
      out.variance(p, q) = out.variance(q, p) = second - first * first;
    }
  return out;
}

}  // namespace shaped_tanh
