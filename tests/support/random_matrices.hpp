#pragma once
/// Reproducible random matrices for tests, drawn from ncsde::random_stream (domain `user`), so a
/// (seed) always gives the same matrix on every platform. Fixed-size Eigen types are supported where
/// the size is known at compile time (the `m` argument must then match).
#include <Eigen/Core>
#include <Eigen/QR>

#include <cstdint>

#include "ncsde/concepts.hpp"
#include "ncsde/random.hpp"

namespace support {

/// m×n matrix of iid N(0, 1) entries from stream (seed, 0) at counter (user, i0, 0).
inline ncsde::matrix random_gaussian(int m, int n, std::uint64_t seed, std::uint64_t i0 = 0) {
  ncsde::matrix g(m, n);
  ncsde::random_stream(seed, 0).normals(ncsde::random_domain::user, i0, 0, g.data(), g.size());
  return g;
}

/// Symmetric m×m with iid N(0, 1) entries on and above the diagonal.
template <class M = ncsde::matrix>
M random_symmetric(int m, std::uint64_t seed) {
  const ncsde::matrix g = random_gaussian(m, m, seed);
  M out;
  out.resize(m, m);
  for (int a = 0; a < m; ++a)
    for (int b = a; b < m; ++b) out(a, b) = out(b, a) = g(a, b);
  return out;
}

/// Symmetric positive definite m×m: A Aᵀ/m + shift·Id with A Gaussian, so λ_min ≥ shift > 0.
template <class M = ncsde::matrix>
M random_spd(int m, std::uint64_t seed, double shift = 0.5) {
  const ncsde::matrix a = random_gaussian(m, m, seed, 1);
  ncsde::matrix s = a * a.transpose() / m;
  s.diagonal().array() += shift;
  s = (0.5 * (s + s.transpose())).eval();
  M out;
  out.resize(m, m);
  out = s;
  return out;
}

/// Orthogonal m×m: the Q factor of a Gaussian matrix (Householder QR).
inline ncsde::matrix random_orthogonal(int m, std::uint64_t seed) {
  const ncsde::matrix g = random_gaussian(m, m, seed, 2);
  Eigen::HouseholderQR<ncsde::matrix> qr(g);
  return qr.householderQ() * ncsde::matrix::Identity(m, m);
}

/// Q diag(λ) Qᵀ with Q = random_orthogonal(m, seed), exactly symmetrised.
inline ncsde::matrix with_eigenvalues(const ncsde::vector& lambda, std::uint64_t seed) {
  const int m = static_cast<int>(lambda.size());
  const ncsde::matrix q = random_orthogonal(m, seed);
  const ncsde::matrix s = q * lambda.asDiagonal() * q.transpose();
  return 0.5 * (s + s.transpose());
}

}  // namespace support
