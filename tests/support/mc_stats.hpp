#pragma once
/// Monte Carlo summaries for tests: the sample mean of iid draws and its standard error, so that a
/// check can read |mean − exact| ≤ 5·stderr (two-sided false-alarm rate ≈ 5.7e-7 per check under the
/// normal approximation).
#include <cmath>
#include <vector>

namespace support {

/// Mean and standard error of the draws added so far (Welford).
class sample_mean {
 public:
  void add(double x) {
    ++m_n;
    const double delta = x - m_mean;
    m_mean += delta / static_cast<double>(m_n);
    m_m2 += delta * (x - m_mean);
  }
  long long count() const { return m_n; }
  double mean() const { return m_mean; }
  /// Unbiased sample variance.
  double variance() const { return m_n > 1 ? m_m2 / static_cast<double>(m_n - 1) : 0.0; }
  /// √(variance / n): the standard error of mean().
  double stderr_of_mean() const { return std::sqrt(variance() / static_cast<double>(m_n)); }

 private:
  long long m_n = 0;
  double m_mean = 0.0;
  double m_m2 = 0.0;
};

}  // namespace support
