#pragma once
/// The dense-covariance adapter and the exact covariance of a noise map (noise increments:
/// noise_increment.hpp).
#include <Eigen/Eigenvalues>

#include <cmath>

#include "ncsde/concepts.hpp"
#include "ncsde/error.hpp"
#include "ncsde/noise_increment.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde {

/// Exact covariance of a noise map at (t, V): Σ = Σ_j vec(G e_j) vec(G e_j)ᵀ over the packed upper
/// triangle (K×K, entries Cov(dV^{ab}, dV^{cd}) / dt). G is linear, so the sum over the k basis inputs
/// is exact (no sampling). The reference against which structured noise maps are tested.
template <Sde S>
matrix noise_covariance(const S& sde, const matrix& v, double t = 0.0) {
  const int m = static_cast<int>(v.rows());
  const int k = sde.noise_dimension(m);
  const int K = packed_size(m);
  matrix columns(K, k);
  vector xi = vector::Zero(k);
  matrix out(m, m);
  for (int j = 0; j < k; ++j) {
    xi.setZero();
    xi(j) = 1.0;
    sde.diffusion(v, xi, out, t);
    pack_upper(out, columns.col(j));
  }
  return columns * columns.transpose();
}

/// Turns a CovarianceSde (drift + dense Σ(t, V) over the packed upper triangle) into an Sde:
///   G(t, V) ξ = unpack(F ξ),  F = U diag(√max(λ, 0)),  Σ = U diag(λ) Uᵀ (symmetric eigendecomposition),
/// with k = K = m(m+1)/2. Round-off negatives of Σ are clipped to 0; a clearly negative eigenvalue
/// (below −1e-10·max|Σ|) means Σ is not a covariance and raises ncsde::evaluation_error.
/// Cost O(K³) = O(m⁶) per factorisation: the slow general path, and the reference that structured
/// O(m³) noise maps are held against. The factor is cached for the last (t, V) seen, so a Milstein step
/// that applies G many times at one state factors once (each ensemble worker has its own copy).
/// The eigen-factor is not a smooth function of V where eigenvalues of Σ cross, so for Milstein this
/// adapter is a reference only; no diffusion_derivative is provided (derivative-free form is used).
template <CovarianceSde S>
class dense_covariance_noise {
 public:
  explicit dense_covariance_noise(S sde) : m_sde(std::move(sde)) {}

  const S& base() const { return m_sde; }
  int noise_dimension(int m) const { return packed_size(m); }
  void drift(const matrix& v, matrix& out, double t) const { m_sde.drift(v, out, t); }

  void diffusion(const matrix& v, const vector& xi, matrix& out, double t) const {
    factor(v, t);
    NCSDE_ASSERT(xi.size() == m_factor.cols(), "dense_covariance_noise: xi has the wrong size");
    m_packed.noalias() = m_factor * xi;
    unpack_upper(m_packed, out);
  }

  /// The factor F with F Fᵀ = Σ(t, V) (clipped).
  const matrix& factor(const matrix& v, double t) const {
    if (m_cached && t == m_cached_t && v.rows() == m_cached_v.rows() && v == m_cached_v)
      return m_factor;
    const int K = packed_size(static_cast<int>(v.rows()));
    m_sigma.resize(K, K);
    m_sde.covariance(v, m_sigma, t);
    if (m_sigma.rows() != K || m_sigma.cols() != K)
      throw evaluation_error(detail::format_message(
          "dense_covariance_noise: covariance must be {}×{} for m = {} (got {}×{})", K, K, v.rows(),
          m_sigma.rows(), m_sigma.cols()));
    if (!m_sigma.allFinite())
      throw evaluation_error(
          detail::format_message("dense_covariance_noise: covariance is not finite at t = {}", t));
    m_eigen.compute(0.5 * (m_sigma + m_sigma.transpose()), Eigen::ComputeEigenvectors);
    const double scale = m_sigma.cwiseAbs().maxCoeff();
    const double lmin = m_eigen.eigenvalues()(0);
    if (lmin < -1e-10 * scale)
      throw evaluation_error(detail::format_message(
          "dense_covariance_noise: covariance is not positive semidefinite at t = {} (smallest "
          "eigenvalue {:.6g})",
          t, lmin));
    m_factor =
        m_eigen.eigenvectors() * m_eigen.eigenvalues().cwiseMax(0.0).cwiseSqrt().asDiagonal();
    m_cached_v = v;
    m_cached_t = t;
    m_cached = true;
    return m_factor;
  }

 private:
  S m_sde;
  mutable Eigen::SelfAdjointEigenSolver<matrix> m_eigen;
  mutable matrix m_sigma, m_factor, m_cached_v;
  mutable vector m_packed;
  mutable double m_cached_t = 0.0;
  mutable bool m_cached = false;
};

}  // namespace ncsde
