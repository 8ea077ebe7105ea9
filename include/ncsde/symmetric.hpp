#pragma once
/// Symmetric-matrix helpers: the upper-triangle packing used by dense covariance operators and by
/// CSV output (V11, V12, …, V1m, V22, …, Vmm: row-major over a ≤ b), and boundary validation of states.
#include <Eigen/Core>

#include <string_view>

#include "ncsde/concepts.hpp"
#include "ncsde/error.hpp"

namespace ncsde {

/// K = m(m+1)/2, the number of upper-triangle entries.
constexpr int packed_size(int m) { return m * (m + 1) / 2; }

/// Position of (a, b), a ≤ b (0-indexed), in the packed row-major upper triangle.
constexpr int packed_index(int a, int b, int m) { return a * m - a * (a - 1) / 2 + (b - a); }

/// Fills the K×K dense covariance operator over packed pairs (K = m(m+1)/2):
///   sigma(packed_index(a,b), packed_index(c,d)) = entry(a, b, c, d) for a ≤ b, c ≤ d (0-indexed),
/// where entry returns Σ^{ab,cd} = Cov(dV^{ab}, dV^{cd}) / dt. For CovarianceSde::covariance.
template <class Entry>
void fill_packed_covariance(int m, matrix& sigma, Entry&& entry) {
  const int kk = packed_size(m);
  sigma.resize(kk, kk);
  for (int a = 0, i = 0; a < m; ++a)
    for (int b = a; b < m; ++b, ++i)
      for (int c = 0, j = 0; c < m; ++c)
        for (int d = c; d < m; ++d, ++j) sigma(i, j) = entry(a, b, c, d);
}

/// out[packed_index(a,b)] = v(a,b) for a ≤ b.
void pack_upper(const matrix& v, Eigen::Ref<vector> out);
/// Inverse of pack_upper: a symmetric matrix from its packed upper triangle.
void unpack_upper(const Eigen::Ref<const vector>& packed, matrix& out);

/// V ← (V + Vᵀ)/2 in place, without a temporary: entry by entry the same numbers as
/// (0.5 * (V + Vᵀ)).eval(). Steps are symmetric by construction; this removes the round-off
/// asymmetry of user coefficients after each step (integrate, the odeint adapter, projections).
/// For any square plain matrix (ncsde::matrix or a fixed-size square_matrix<M>).
template <class Derived>
void symmetrize(Eigen::PlainObjectBase<Derived>& v) {
  NCSDE_ASSERT(v.rows() == v.cols(), "symmetrize: the matrix is not square");
  const Eigen::Index m = v.rows();
  for (Eigen::Index b = 0; b < m; ++b) {
    v(b, b) = 0.5 * (v(b, b) + v(b, b));  // as the expression form: d + d may overflow to inf
    for (Eigen::Index a = b + 1; a < m; ++a) {
      const double x = 0.5 * (v(a, b) + v(b, a));
      v(a, b) = x;
      v(b, a) = x;
    }
  }
}

/// Largest |v(a,b) − v(b,a)|.
double asymmetry(const matrix& v);

/// Tolerance for "symmetric" at the boundary: max|V − Vᵀ| ≤ symmetry_tolerance · max(1, max|V|).
inline constexpr double symmetry_tolerance = 1e-12;

/// Validates a user-supplied state at the boundary and returns it exactly symmetrised
/// (upper triangle copied to the lower): square, m ≥ 1, every entry finite, symmetric within
/// symmetry_tolerance, and — when require_psd — positive semidefinite up to round-off
/// (λ_min ≥ −psd_round_off(V)). Throws ncsde::invalid_argument naming `where` and `param`.
matrix validate_state(std::string_view where, std::string_view param, const matrix& v,
                      bool require_psd = true);

}  // namespace ncsde
