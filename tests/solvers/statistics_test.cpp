#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ncsde/error.hpp"
#include "ncsde/random.hpp"
#include "ncsde/statistics.hpp"
#include "support/random_matrices.hpp"

namespace {

using ncsde::matrix;
using ncsde::moments;
using ncsde::vector;

constexpr double eps = std::numeric_limits<double>::epsilon();
constexpr double inf_value = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE(
    "moments: running mean and covariance equal the two-pass formulas; merging equals one pass") {
  const int d = 3, n = 500;
  const matrix x =
      support::random_gaussian(d, n, 3) + matrix::Constant(d, n, 10.0);  // offset: Welford's point
  const vector mean = x.rowwise().mean();
  const matrix centred = x.colwise() - mean;
  const matrix cov = centred * centred.transpose() / (n - 1);
  moments all(d), left(d), right(d);
  for (int i = 0; i < n; ++i) {
    all.add(x.col(i));
    (i < 180 ? left : right).add(x.col(i));
  }
  // Both are sums of n terms of size ≤ max|x| ≈ 14: ≤ n ε |x| error; 4 is headroom.
  const double tol = 4 * n * eps * 14.0;
  CHECK(all.count() == n);
  CHECK(all.dimension() == d);
  CHECK((all.mean() - mean).cwiseAbs().maxCoeff() <= tol);
  CHECK((all.covariance() - cov).cwiseAbs().maxCoeff() <= tol);
  CHECK(all.covariance() == all.covariance().transpose());
  CHECK((all.standard_error() - (cov.diagonal() / n).cwiseSqrt()).cwiseAbs().maxCoeff() <= tol);
  moments merged = left;
  merged.merge(right);
  CHECK(merged.count() == n);
  CHECK((merged.mean() - mean).cwiseAbs().maxCoeff() <= tol);
  CHECK((merged.covariance() - cov).cwiseAbs().maxCoeff() <= tol);
  // Merging with an empty accumulator, either way round, is the identity.
  moments empty(d);
  moments copy = all;
  copy.merge(empty);
  CHECK(copy.mean() == all.mean());
  empty.merge(all);
  CHECK(empty.mean() == all.mean());
  CHECK(empty.covariance() == all.covariance());
}

TEST_CASE(
    "moments: the diagonal form's means, variances and standard errors are the full form's bits") {
  // The diagonal form performs the full form's operations on the diagonal entries, so every number
  // both report is the same, added one by one or merged in any grouping; only the covariance is
  // missing (a named error), and a merge of the two forms is refused.
  const int d = 5, n = 300;
  const matrix x = support::random_gaussian(d, n, 11) + matrix::Constant(d, n, 3.0);
  moments full(d), diag(d, false), full_a(d), full_b(d), diag_a(d, false), diag_b(d, false);
  for (int i = 0; i < n; ++i) {
    full.add(x.col(i));
    diag.add(x.col(i));
    (i < 123 ? full_a : full_b).add(x.col(i));
    (i < 123 ? diag_a : diag_b).add(x.col(i));
  }
  CHECK(full.has_covariance());
  CHECK_FALSE(diag.has_covariance());
  CHECK(diag.m2().cols() == 1);
  CHECK(diag.mean() == full.mean());
  CHECK(diag.variance() == full.covariance().diagonal());
  CHECK(diag.standard_error() == full.standard_error());
  full_a.merge(full_b);
  diag_a.merge(diag_b);
  CHECK(diag_a.count() == n);
  CHECK(diag_a.mean() == full_a.mean());
  CHECK(diag_a.variance() == full_a.variance());
  CHECK(diag_a.standard_error() == full_a.standard_error());
  // Restored from its raw accumulator, the diagonal form is the same accumulator.
  const moments back = moments::from_raw(diag.count(), diag.mean(), diag.m2(), false);
  CHECK(back.standard_error() == diag.standard_error());
  CHECK_THROWS_WITH_AS(diag.covariance(),
                       doctest::Contains("covariance of the coordinates was not kept"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(full.merge(diag), doctest::Contains("only its diagonal"),
                       ncsde::invalid_argument);
}

TEST_CASE("moments: fewer than two samples; wrong dimensions are assertion failures") {
  moments m(2);
  CHECK(m.count() == 0);
  CHECK(m.covariance().isZero(0.0));
  CHECK(m.standard_error().array().isNaN().all());
  m.add(vector::Ones(2));
  CHECK(m.mean() == vector::Ones(2));
  CHECK(m.covariance().isZero(0.0));
  CHECK(m.standard_error().array().isNaN().all());
  CHECK_THROWS_WITH_AS(m.add(vector::Ones(3)), doctest::Contains("moments::add: wrong dimension"),
                       ncsde::assertion_error);
  moments other(3);
  other.add(vector::Ones(3));
  CHECK_THROWS_WITH_AS(m.merge(other), doctest::Contains("moments::merge: wrong dimension"),
                       ncsde::assertion_error);
  m.reset(4);
  CHECK(m.count() == 0);
  CHECK(m.dimension() == 4);
}

TEST_CASE("quantile_sorted: type-7 interpolation, +inf allowed") {
  const std::vector<double> x = {1.0, 2.0, 3.0, 4.0};
  CHECK(ncsde::quantile_sorted(x, 0.0) == 1.0);
  CHECK(ncsde::quantile_sorted(x, 1.0) == 4.0);
  CHECK(ncsde::quantile_sorted(x, 0.5) == 2.5);    // position 1.5
  CHECK(ncsde::quantile_sorted(x, 0.25) == 1.75);  // position 0.75
  CHECK(ncsde::quantile_sorted({7.0}, 0.3) == 7.0);
  const std::vector<double> with_inf = {1.0, 2.0, inf_value, inf_value};
  CHECK(ncsde::quantile_sorted(with_inf, 1.0 / 3.0) == 2.0);
  CHECK(ncsde::quantile_sorted(with_inf, 0.5) == inf_value);  // between 2 and +inf
  CHECK(ncsde::quantile_sorted(with_inf, 0.9) == inf_value);  // between +inf and +inf: not NaN
  CHECK(std::isnan(ncsde::quantile_sorted({}, 0.5)));
  CHECK_THROWS_WITH_AS(ncsde::quantile_sorted(x, 1.5),
                       doctest::Contains("quantile: p must be in [0, 1] (got 1.5)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(ncsde::quantile_sorted(x, std::nan("")),
                       doctest::Contains("p must be in [0, 1] (got nan)"), ncsde::invalid_argument);
}

TEST_CASE("fit_line: exact lines, known scatter, and the t-based interval") {
  const std::vector<double> x = {0.0, 1.0, 2.0, 3.0, 4.0};
  std::vector<double> y;
  for (const double xi : x) y.push_back(2.0 - 0.75 * xi);
  const ncsde::linear_fit exact = ncsde::fit_line(x, y);
  CHECK(exact.points == 5);
  CHECK(std::abs(exact.slope + 0.75) <= 16 * eps);
  CHECK(std::abs(exact.intercept - 2.0) <= 16 * eps);
  CHECK(exact.slope_stderr <= 16 * eps);
  // Residual pattern (+e, −e, 0, +e, −e) on y = 1 + x; the expected fit is computed directly:
  // slope = Σ(x − x̄)(y − ȳ)/Sxx with x̄ = 2, Sxx = 10, and se = √(RSS/(n − 2)/Sxx).
  const double e = 0.1;
  const std::vector<double> yn = {1.0 + e, 2.0 - e, 3.0, 4.0 + e, 5.0 - e};
  double ybar = 0, sxy = 0;
  for (const double v : yn) ybar += v / 5;
  for (std::size_t i = 0; i < 5; ++i) sxy += (x[i] - 2.0) * (yn[i] - ybar);
  const double slope = sxy / 10.0, intercept = ybar - slope * 2.0;
  double rss = 0;
  for (std::size_t i = 0; i < 5; ++i) rss += std::pow(yn[i] - intercept - slope * x[i], 2);
  const double se = std::sqrt(rss / 3 / 10.0);
  const ncsde::linear_fit f = ncsde::fit_line(x, yn);
  CHECK(std::abs(f.slope - slope) <= 16 * eps);
  CHECK(std::abs(f.intercept - intercept) <= 16 * eps * 5);
  CHECK(std::abs(f.slope_stderr - se) <= 1e-14);
  // 95% interval with Student's t, 3 degrees of freedom: 3.1824.
  CHECK(std::abs(f.ci_high - (f.slope + 3.1824 * se)) <= 1e-14);
  CHECK(std::abs(f.ci_low - (f.slope - 3.1824 * se)) <= 1e-14);
  CHECK_THROWS_WITH_AS(ncsde::fit_line({1.0}, {2.0}),
                       doctest::Contains("fit_line: needs at least 2 points and equal sizes"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(ncsde::fit_line({1.0, 2.0}, {2.0}),
                       doctest::Contains("needs at least 2 points"), ncsde::invalid_argument);
}

TEST_CASE(
    "fit_line_weighted: weights 1/σ², stderr from σ or from the scatter, whichever is larger") {
  const std::vector<double> x = {0.0, 1.0, 2.0, 3.0};
  const std::vector<double> y = {1.0, 3.0, 5.0, 7.0};  // exact: slope 2
  const std::vector<double> sigma = {0.1, 0.1, 0.1, 0.1};
  const ncsde::linear_fit f = ncsde::fit_line_weighted(x, y, sigma);
  CHECK(std::abs(f.slope - 2.0) <= 16 * eps);
  // No scatter: Var(slope) = 1/Σ w (x − x̄)² = σ²/Sxx = 0.01/5.
  CHECK(std::abs(f.slope_stderr - std::sqrt(0.01 / 5.0)) <= 1e-15);
  // Large scatter relative to σ: the residual term wins.
  const std::vector<double> yn = {1.0, 3.5, 4.5, 7.0};
  const ncsde::linear_fit g = ncsde::fit_line_weighted(x, yn, sigma);
  const ncsde::linear_fit u = ncsde::fit_line(x, yn);
  CHECK(std::abs(g.slope - u.slope) <= 16 * eps);  // equal weights: the unweighted slope
  CHECK(std::abs(g.slope_stderr - u.slope_stderr) <= 1e-14);
  CHECK(g.slope_stderr > std::sqrt(0.01 / 5.0));
  CHECK_THROWS_WITH_AS(ncsde::fit_line_weighted(x, y, {0.1, 0.0, 0.1, 0.1}),
                       doctest::Contains("fit_line_weighted: sigma must be > 0 (got 0)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(ncsde::fit_line_weighted(x, y, {0.1}),
                       doctest::Contains("fit_line_weighted: sigma has the wrong size"),
                       ncsde::invalid_argument);
}

TEST_CASE("student_t_975: table and Cornish–Fisher expansion within 1e-4") {
  // Reference quantiles t_{0.975}(ν) by numerical integration of the t density (Simpson, 2·10⁴ panels)
  // and bisection: 12.706205, 2.042272 (ν = 30), 2.039513 (31), 2.021075 (40), 2.000298 (60),
  // 1.979930 (120), 1.962339 (1000).
  CHECK(std::abs(ncsde::student_t_975(1) - 12.706205) <= 1e-4);
  CHECK(std::abs(ncsde::student_t_975(30) - 2.042272) <= 1e-4);
  CHECK(std::abs(ncsde::student_t_975(31) - 2.039513) <= 1e-4);
  CHECK(std::abs(ncsde::student_t_975(40) - 2.021075) <= 1e-4);
  CHECK(std::abs(ncsde::student_t_975(60) - 2.000298) <= 1e-4);
  CHECK(std::abs(ncsde::student_t_975(120) - 1.979930) <= 1e-4);
  CHECK(std::abs(ncsde::student_t_975(1000) - 1.962339) <= 1e-4);
  double previous = inf_value;
  for (int dof = 1; dof <= 200; ++dof) {
    CHECK(ncsde::student_t_975(dof) < previous);  // decreasing towards 1.959964
    previous = ncsde::student_t_975(dof);
  }
  CHECK_THROWS_WITH_AS(ncsde::student_t_975(0),
                       doctest::Contains("student_t_975: dof must be >= 1 (got 0)"),
                       ncsde::invalid_argument);
}

TEST_CASE("kolmogorov_survival: both series agree with the Kolmogorov law to 1e-12") {
  // Reference values Q(λ) = P(K > λ) from scipy.stats.kstwobign.sf.
  const double lambda[] = {0.2, 0.5, 0.8, 1.0, 1.2, 1.358, 1.628, 2.5};
  const double q[] = {0.999999999999495,    0.9639452436648751,   0.5441424115741981,
                      0.26999967167735456,  0.11224966667072497,  0.05002679733444698,
                      0.009975522431181053, 7.453306344157342e-06};
  for (int i = 0; i < 8; ++i) {
    CAPTURE(lambda[i]);
    CHECK(std::abs(ncsde::kolmogorov_survival(lambda[i]) - q[i]) <= 1e-12);
  }
  CHECK(ncsde::kolmogorov_survival(0.0) == 1.0);
  CHECK(ncsde::kolmogorov_survival(-1.0) == 1.0);
}

TEST_CASE("ks_two_sample: distance with ties and infinities, p-value calibration, bad input") {
  // D by hand (scipy.stats.ks_2samp agrees): the largest gap is at x = 0.4, where F₁ = 3/6 (the tie
  // counts twice) and F₂ = 1/8: |0.5 − 0.125| = 0.375.
  const ncsde::ks_result r = ncsde::ks_two_sample({0.1, 0.4, 0.4, 0.9, 1.3, 2.0},
                                                  {0.4, 0.5, 0.7, 1.1, 1.3, 1.3, 2.5, 3.0});
  CHECK(r.distance == doctest::Approx(0.375).epsilon(1e-15));
  CHECK(r.n1 == 6);
  CHECK(r.n2 == 8);
  // Identical samples: D = 0, p = 1. Disjoint: D = 1. +inf is a value like any other.
  CHECK(ncsde::ks_two_sample({1, 2, 3}, {3, 2, 1}).distance == 0.0);
  CHECK(ncsde::ks_two_sample({1, 2}, {3, inf_value}).distance == 1.0);
  CHECK(ncsde::ks_two_sample({1, inf_value}, {1, 2}).distance == 0.5);

  // Calibration: 400 pairs of equal-law samples (500 vs 700 normals); the fraction with p < 0.05
  // is Binomial(400, 0.05 + O(error of the asymptotic law)): mean 20, sd 4.4; accept 5..40
  // (> 3 sd either side, so a p-value off by a factor of 2 in either direction fails).
  int rejected = 0;
  for (int rep = 0; rep < 400; ++rep) {
    std::vector<double> a(500), b(700);
    const ncsde::random_stream s(77, static_cast<std::uint64_t>(rep));
    s.normals(ncsde::random_domain::user, 0, 0, a.data(), 500);
    s.normals(ncsde::random_domain::user, 1, 0, b.data(), 700);
    if (ncsde::ks_two_sample(a, b).p_value < 0.05) ++rejected;
  }
  CHECK(rejected >= 5);
  CHECK(rejected <= 40);
  // Power: a 0.3 sd shift with these sizes is D ≈ 0.12 ≫ D_0.01 = 0.096: rejected.
  {
    std::vector<double> a(500), b(700);
    const ncsde::random_stream s(78, 0);
    s.normals(ncsde::random_domain::user, 0, 0, a.data(), 500);
    s.normals(ncsde::random_domain::user, 1, 0, b.data(), 700);
    for (double& x : b) x += 0.3;
    const ncsde::ks_result shifted = ncsde::ks_two_sample(a, b);
    CHECK(shifted.distance > ncsde::ks_critical_distance(0.01, 500, 700));
    CHECK(shifted.p_value < 0.01);
  }
  CHECK(ncsde::ks_critical_distance(0.01, 100, 100) ==
        doctest::Approx(1.6276 * std::sqrt(0.02)).epsilon(1e-4));
  CHECK(ncsde::ks_critical_distance(0.05, 100, 100) ==
        doctest::Approx(1.3581 * std::sqrt(0.02)).epsilon(1e-4));

  CHECK_THROWS_WITH_AS(ncsde::ks_two_sample({}, {1.0}), doctest::Contains("first sample is empty"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(ncsde::ks_two_sample({1.0, std::nan("")}, {1.0}),
                       doctest::Contains("first sample holds a NaN"), ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(ncsde::ks_critical_distance(1.0, 10, 10),
                       doctest::Contains("alpha must be in (0, 1) (got 1)"),
                       ncsde::invalid_argument);
}
