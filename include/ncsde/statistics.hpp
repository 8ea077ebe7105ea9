#pragma once
/// Streaming and order statistics used by ensembles and convergence studies.
#include <Eigen/Core>

#include <string>
#include <vector>

#include "ncsde/concepts.hpp"

namespace ncsde {

/// Running mean and covariance of a vector (Welford; Chan et al. to merge). Merging accumulators in
/// a fixed order gives bit-identical results whatever the number of threads that filled them.
///
/// An accumulator keeps either the whole covariance (a d×d M2: d² doubles, d² operations per
/// vector added) or its diagonal only (d doubles and operations), chosen at reset(). Means,
/// variances and standard errors are the same bits in both forms: the diagonal form performs the
/// full form's operations on the diagonal entries.
class moments {
 public:
  moments() = default;
  explicit moments(int dimension, bool covariance = true) { reset(dimension, covariance); }

  void reset(int dimension, bool covariance = true);
  void add(const Eigen::Ref<const vector>& x);
  /// Folds `other` in; ncsde::invalid_argument when one accumulator keeps the covariance and the
  /// other its diagonal only.
  void merge(const moments& other);

  int dimension() const { return static_cast<int>(m_mean.size()); }
  long long count() const { return m_count; }
  const vector& mean() const { return m_mean; }
  /// Whether the whole covariance is kept (else its diagonal only).
  bool has_covariance() const { return m_full; }
  /// Unbiased sample covariance (zero matrix when count < 2); ncsde::invalid_argument when only
  /// the diagonal is kept.
  matrix covariance() const;
  /// Unbiased sample variance of each entry (zeros when count < 2).
  vector variance() const;
  /// Standard error of each mean entry, √(var/count).
  vector standard_error() const;
  /// The accumulated M2 = Σ_i (x_i − mean_{i−1})(x_i − mean_i)ᵀ (covariance·(count − 1) up to
  /// round-off), d×d, or its diagonal as a d×1 matrix; and an accumulator restored exactly from
  /// (count, mean, M2, whether M2 is the whole matrix): what a stored partial result keeps.
  const matrix& m2() const { return m_m2; }
  static moments from_raw(long long count, vector mean, matrix m2, bool covariance = true);

 private:
  long long m_count = 0;
  vector m_mean;
  matrix m_m2;  ///< d×d, or d×1 (the diagonal) without the covariance
  bool m_full = true;
};

/// Sample quantile at level p ∈ [0, 1] (linear interpolation between order statistics, type 7).
/// `sorted` must be ascending; +inf entries are allowed (then high quantiles may be +inf).
double quantile_sorted(const std::vector<double>& sorted, double p);

/// Least-squares fit of y = a + b·x with the standard error of the slope b and a 95% confidence
/// interval from Student's t with n − 2 degrees of freedom.
struct linear_fit {
  double intercept = 0.0, slope = 0.0, slope_stderr = 0.0, ci_low = 0.0, ci_high = 0.0;
  int points = 0;
};
linear_fit fit_line(const std::vector<double>& x, const std::vector<double>& y);
/// Same, with weights 1/σ_i² (σ_i the standard error of y_i); the slope's standard error combines the
/// propagated σ_i and the residual scatter (whichever is larger), so a misfit widens the interval.
linear_fit fit_line_weighted(const std::vector<double>& x, const std::vector<double>& y,
                             const std::vector<double>& sigma);

/// Two-sample Kolmogorov–Smirnov test: D = sup_x |F₁(x) − F₂(x)| of the two empirical
/// distribution functions (exact over the pooled sample, ties handled by stepping past equal
/// values), and the asymptotic p-value P(K > λ) = 2 Σ_{k≥1} (−1)^{k−1} exp(−2k²λ²) of the
/// Kolmogorov distribution at λ = (√nₑ + 0.12 + 0.11/√nₑ) D, nₑ = n₁n₂/(n₁ + n₂) (Stephens'
/// small-sample correction; accurate to a few 1e-3 in p for nₑ ≥ 10). ±inf values are allowed (a
/// blown-up path is +inf). Throws ncsde::invalid_argument if a sample is empty or holds a NaN.
struct ks_result {
  double distance = 0.0;  ///< D
  double p_value = 1.0;   ///< asymptotic two-sided p-value of D under equal distributions
  long long n1 = 0, n2 = 0;
};
ks_result ks_two_sample(std::vector<double> a, std::vector<double> b);

/// The Kolmogorov survival function Q(λ) = 2 Σ_{k≥1} (−1)^{k−1} exp(−2k²λ²) (1 for λ ≤ 0).
double kolmogorov_survival(double lambda);

/// Asymptotic critical value of the two-sample KS distance at level α: D_α = c(α) √((n₁ + n₂)/(n₁n₂))
/// with c(α) = √(−ln(α/2)/2) (c(0.01) = 1.628, c(0.05) = 1.358). Throws unless 0 < α < 1 and n₁, n₂ ≥ 1.
double ks_critical_distance(double alpha, long long n1, long long n2);

/// Two-sided 97.5% quantile of Student's t with `dof` degrees of freedom (dof ≥ 1).
double student_t_975(int dof);

}  // namespace ncsde
