#include "ncsde/symmetric.hpp"

#include <fmt/format.h>

#include <cmath>

#include "ncsde/error.hpp"
#include "ncsde/psd.hpp"

namespace ncsde {

void pack_upper(const matrix& v, Eigen::Ref<vector> out) {
  const int m = static_cast<int>(v.rows());
  NCSDE_ASSERT(out.size() == packed_size(m), "pack_upper: output has the wrong size");
  int k = 0;
  for (int a = 0; a < m; ++a)
    for (int b = a; b < m; ++b) out(k++) = v(a, b);
}

void unpack_upper(const Eigen::Ref<const vector>& packed, matrix& out) {
  const int k = static_cast<int>(packed.size());
  const int m = static_cast<int>(std::lround((std::sqrt(8.0 * k + 1.0) - 1.0) / 2.0));
  NCSDE_ASSERT(packed_size(m) == k, "unpack_upper: packed size is not m(m+1)/2");
  out.resize(m, m);
  int i = 0;
  for (int a = 0; a < m; ++a)
    for (int b = a; b < m; ++b) {
      out(a, b) = packed(i);
      out(b, a) = packed(i);
      ++i;
    }
}

double asymmetry(const matrix& v) {
  if (v.rows() != v.cols() || v.size() == 0) return 0.0;
  return (v - v.transpose()).cwiseAbs().maxCoeff();
}

matrix validate_state(std::string_view where, std::string_view param, const matrix& v,
                      bool require_psd) {
  if (v.rows() == 0 || v.cols() == 0)
    throw_invalid(where, fmt::format("{} must be a non-empty m×m matrix with m ≥ 1 (got {}×{})",
                                     param, v.rows(), v.cols()));
  if (v.rows() != v.cols())
    throw_invalid(where, fmt::format("{} must be square (got {}×{})", param, v.rows(), v.cols()));
  for (Eigen::Index j = 0; j < v.cols(); ++j)
    for (Eigen::Index i = 0; i < v.rows(); ++i)
      if (!std::isfinite(v(i, j)))
        throw_invalid(where, fmt::format("{} must be finite (got {} at entry ({}, {}))", param,
                                         v(i, j), i + 1, j + 1));
  const double scale = std::max(1.0, v.cwiseAbs().maxCoeff());
  const double asym = asymmetry(v);
  if (asym > symmetry_tolerance * scale)
    throw_invalid(where, fmt::format("{} is not symmetric (max |V - V^T| = {:.3g})", param, asym));
  matrix out = v.triangularView<Eigen::Upper>();
  out.triangularView<Eigen::StrictlyLower>() =
      out.transpose().triangularView<Eigen::StrictlyLower>();
  if (require_psd) {
    psd_checker checker;
    const psd_result r = checker.check(out);
    if (r.status == psd_status::outside)
      throw_invalid(
          where, fmt::format("{} is not positive semidefinite (smallest eigenvalue {:.6g})", param,
                             r.min_eigenvalue));
  }
  return out;
}

}  // namespace ncsde
