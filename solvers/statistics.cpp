#include "ncsde/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ncsde/error.hpp"

namespace ncsde {

void moments::reset(int dimension, bool covariance) {
  m_count = 0;
  m_full = covariance;
  m_mean = vector::Zero(dimension);
  m_m2 = matrix::Zero(dimension, covariance ? dimension : 1);
}

moments moments::from_raw(long long count, vector mean, matrix m2, bool covariance) {
  NCSDE_ASSERT(
      count >= 0 && m2.rows() == mean.size() && m2.cols() == (covariance ? mean.size() : 1),
      "moments::from_raw: inconsistent accumulator");
  moments m;
  m.m_count = count;
  m.m_full = covariance;
  m.m_mean = std::move(mean);
  m.m_m2 = std::move(m2);
  return m;
}

void moments::add(const Eigen::Ref<const vector>& x) {
  NCSDE_ASSERT(x.size() == m_mean.size(), "moments::add: wrong dimension");
  ++m_count;
  const vector delta = x - m_mean;
  m_mean += delta / static_cast<double>(m_count);
  // Entry (i, j) of the outer product is delta_i·(x − mean)_j: the diagonal form takes i = j.
  if (m_full)
    m_m2.noalias() += delta * (x - m_mean).transpose();
  else
    m_m2.col(0).array() += delta.array() * (x - m_mean).array();
}

void moments::merge(const moments& o) {
  if (o.m_full != m_full)
    throw invalid_argument(
        "moments::merge: one accumulator keeps the covariance and the other only its diagonal");
  if (o.m_count == 0) return;
  if (m_count == 0) {
    *this = o;
    return;
  }
  NCSDE_ASSERT(o.m_mean.size() == m_mean.size(), "moments::merge: wrong dimension");
  const double na = static_cast<double>(m_count), nb = static_cast<double>(o.m_count);
  const double n = na + nb;
  const vector delta = o.m_mean - m_mean;
  m_mean += delta * (nb / n);
  m_m2 += o.m_m2;
  // Entry (i, j) of the correction is ((na·nb/n)·delta_i)·delta_j.
  if (m_full)
    m_m2.noalias() += (na * nb / n) * delta * delta.transpose();
  else
    m_m2.col(0).array() += ((na * nb / n) * delta).array() * delta.array();
  m_count += o.m_count;
}

matrix moments::covariance() const {
  if (!m_full)
    throw invalid_argument(
        "moments: the covariance of the coordinates was not kept, only their variances "
        "(ensemble_options::covariance, --covariance full)");
  if (m_count < 2) return matrix::Zero(m_mean.size(), m_mean.size());
  // M2 accumulates delta·(x − mean_new)ᵀ, symmetric only up to round-off.
  return (0.5 * (m_m2 + m_m2.transpose())) / static_cast<double>(m_count - 1);
}

vector moments::variance() const {
  if (m_count < 2) return vector::Zero(m_mean.size());
  // The diagonal of covariance(), by the same operations.
  const vector d = m_full ? vector(m_m2.diagonal()) : vector(m_m2.col(0));
  return (0.5 * (d + d)) / static_cast<double>(m_count - 1);
}

vector moments::standard_error() const {
  if (m_count < 2) return vector::Constant(m_mean.size(), std::numeric_limits<double>::quiet_NaN());
  return (variance() / static_cast<double>(m_count)).cwiseSqrt();
}

double quantile_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return std::numeric_limits<double>::quiet_NaN();
  if (!(p >= 0 && p <= 1)) throw_invalid_argument("quantile", "p", p, "in [0, 1]");
  const double pos = p * static_cast<double>(sorted.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  if (frac == 0.0 || sorted[lo] == sorted[hi]) return sorted[lo];
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

double student_t_975(int dof) {
  // Table for small dof, then the Cornish–Fisher expansion (error < 1e-4 for dof > 30).
  static const double table[] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060,
                                 2.2622,  2.2281, 2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199,
                                 2.1098,  2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639,
                                 2.0595,  2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (dof < 1) throw_invalid_argument("student_t_975", "dof", dof, ">= 1");
  if (dof <= 30) return table[dof - 1];
  const double z = 1.959963984540054, n = dof;
  const double z3 = z * z * z, z5 = z3 * z * z;
  return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n);
}

double kolmogorov_survival(double lambda) {
  if (!(lambda > 0.0)) return 1.0;
  // For small λ the alternating series converges slowly; there the Jacobi-theta dual form
  // Q = 1 − (√(2π)/λ) Σ_{k≥1} exp(−(2k−1)²π²/(8λ²)) converges in a few terms. Both are exact.
  constexpr double pi = 3.14159265358979323846;
  if (lambda < 1.0) {
    double sum = 0.0;
    for (int k = 1; k <= 8; ++k) {
      const double odd = 2.0 * k - 1.0;
      sum += std::exp(-odd * odd * pi * pi / (8.0 * lambda * lambda));
    }
    return std::clamp(1.0 - std::sqrt(2.0 * pi) / lambda * sum, 0.0, 1.0);
  }
  double sum = 0.0;
  for (int k = 1; k <= 100; ++k) {
    const double term = std::exp(-2.0 * k * k * lambda * lambda);
    sum += (k % 2 == 1 ? term : -term);
    if (term < 1e-18) break;
  }
  return std::clamp(2.0 * sum, 0.0, 1.0);
}

ks_result ks_two_sample(std::vector<double> a, std::vector<double> b) {
  if (a.empty()) throw_invalid("ks_two_sample", "first sample is empty");
  if (b.empty()) throw_invalid("ks_two_sample", "second sample is empty");
  for (const auto* s : {&a, &b})
    for (const double x : *s)
      if (std::isnan(x))
        throw_invalid("ks_two_sample",
                      fmt::format("{} sample holds a NaN", s == &a ? "first" : "second"));
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  std::size_t i = 0, j = 0;
  double d = 0.0;
  // Walk the pooled order statistics; at each distinct value step past every copy in both samples
  // before comparing, so ties contribute to both empirical CDFs at once.
  while (i < a.size() && j < b.size()) {
    const double x = std::min(a[i], b[j]);
    while (i < a.size() && a[i] == x) ++i;
    while (j < b.size() && b[j] == x) ++j;
    d = std::max(d, std::abs(static_cast<double>(i) / na - static_cast<double>(j) / nb));
  }
  ks_result r;
  r.distance = d;
  r.n1 = static_cast<long long>(a.size());
  r.n2 = static_cast<long long>(b.size());
  const double ne = na * nb / (na + nb), root = std::sqrt(ne);
  r.p_value = kolmogorov_survival((root + 0.12 + 0.11 / root) * d);
  return r;
}

double ks_critical_distance(double alpha, long long n1, long long n2) {
  if (!(alpha > 0.0 && alpha < 1.0))
    throw_invalid_argument("ks_critical_distance", "alpha", alpha, "in (0, 1)");
  if (n1 < 1) throw_invalid_argument("ks_critical_distance", "n1", n1, ">= 1");
  if (n2 < 1) throw_invalid_argument("ks_critical_distance", "n2", n2, ">= 1");
  const double c = std::sqrt(-std::log(alpha / 2.0) / 2.0);
  return c * std::sqrt(static_cast<double>(n1 + n2) /
                       (static_cast<double>(n1) * static_cast<double>(n2)));
}

namespace {
linear_fit fit_impl(const std::vector<double>& x, const std::vector<double>& y,
                    const std::vector<double>& w, const std::vector<double>* sigma) {
  const std::size_t n = x.size();
  if (n < 2 || y.size() != n) throw_invalid("fit_line", "needs at least 2 points and equal sizes");
  double sw = 0, sx = 0, sy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sw += w[i];
    sx += w[i] * x[i];
    sy += w[i] * y[i];
  }
  const double mx = sx / sw, my = sy / sw;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sxx += w[i] * (x[i] - mx) * (x[i] - mx);
    sxy += w[i] * (x[i] - mx) * (y[i] - my);
  }
  linear_fit f;
  f.points = static_cast<int>(n);
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  double rss = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = y[i] - f.intercept - f.slope * x[i];
    rss += w[i] * r * r;
  }
  const int dof = static_cast<int>(n) - 2;
  double se_residual = dof > 0 ? std::sqrt(rss / dof / sxx) : 0.0;
  if (sigma == nullptr) {
    f.slope_stderr = se_residual;
  } else {
    // With w = 1/σ²: Var(slope) = 1/sxx from the σ_i; rss/dof/sxx from the scatter.
    f.slope_stderr = std::max(std::sqrt(1.0 / sxx), se_residual);
  }
  const double tq = student_t_975(std::max(1, dof));
  f.ci_low = f.slope - tq * f.slope_stderr;
  f.ci_high = f.slope + tq * f.slope_stderr;
  return f;
}
}  // namespace

linear_fit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  return fit_impl(x, y, std::vector<double>(x.size(), 1.0), nullptr);
}

linear_fit fit_line_weighted(const std::vector<double>& x, const std::vector<double>& y,
                             const std::vector<double>& sigma) {
  if (sigma.size() != x.size()) throw_invalid("fit_line_weighted", "sigma has the wrong size");
  std::vector<double> w(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!(sigma[i] > 0)) throw_invalid_argument("fit_line_weighted", "sigma", sigma[i], "> 0");
    w[i] = 1.0 / (sigma[i] * sigma[i]);
  }
  return fit_impl(x, y, w, &sigma);
}

}  // namespace ncsde
