// The analytic test problems (ncsde/analytic.hpp): their coefficients against finite differences
// and against their own moment formulas, the exact solutions against the known moments, the
// commutators of the noise fields, and the structured noise maps against the dense covariances.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "ncsde/analytic.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/noise.hpp"
#include "ncsde/random.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/symmetric.hpp"

using ncsde::matrix;
using ncsde::vector;
namespace analytic = ncsde::analytic;

static_assert(ncsde::SdeWithDiffusionDerivative<analytic::gbm>);
static_assert(ncsde::SdeWithDiffusionDerivative<analytic::hadamard_linear>);
static_assert(ncsde::SdeWithDiffusionDerivative<analytic::lifted_linear>);
static_assert(ncsde::SdeWithDiffusionDerivative<analytic::linear_covariance>);
static_assert(ncsde::SdeWithDiffusionDerivative<analytic::wishart>);
static_assert(ncsde::CovarianceSde<analytic::linear_covariance>);
static_assert(ncsde::CovarianceSde<analytic::wishart>);

namespace {

constexpr double eps = std::numeric_limits<double>::epsilon();

matrix sym2(double a, double b, double c) {
  matrix v(2, 2);
  v << a, b, b, c;
  return v;
}

/// A random symmetric positive-definite m×m matrix X Xᵀ/m + I/2 from a fixed stream.
matrix random_spd(int m, std::uint64_t seed) {
  vector z(m * m);
  ncsde::random_stream(seed, 0).normals(ncsde::random_domain::user, 1, 0, z);
  const Eigen::Map<const matrix> x(z.data(), m, m);
  return x * x.transpose() / m + 0.5 * matrix::Identity(m, m);
}

/// A random symmetric m×m matrix (direction of finite differences).
matrix random_symmetric(int m, std::uint64_t seed) {
  vector z(m * m);
  ncsde::random_stream(seed, 0).normals(ncsde::random_domain::user, 2, 0, z);
  const Eigen::Map<const matrix> x(z.data(), m, m);
  return 0.5 * (x + x.transpose());
}

vector random_vector(int k, std::uint64_t seed) {
  vector z(k);
  ncsde::random_stream(seed, 0).normals(ncsde::random_domain::user, 3, 0, z);
  return z;
}

/// The problems of the convergence studies (same coefficients as solvers/convergence.cpp).
analytic::hadamard_linear hadamard_example() {
  vector alpha(3), beta1(3), beta2(3);
  alpha << 0.25, 0.1, 0.2;
  beta1 << 0.3, 0.2, -0.25;
  beta2 << -0.2, 0.3, 0.15;
  return analytic::hadamard_linear::diagonal_lift(alpha, {beta1, beta2});
}

analytic::lifted_linear matrix_gbm_example() {
  matrix p(2, 2);
  p << 1.0, 0.5, 0.2, 1.0;
  vector a(2), b(2);
  a << 0.25, -0.1;
  b << 0.35, 0.2;
  return analytic::lifted_linear(p * a.asDiagonal() * p.inverse(),
                                 {p * b.asDiagonal() * p.inverse()});
}

analytic::lifted_linear noncommutative_example() {
  matrix a(2, 2), b1(2, 2), b2(2, 2);
  a << -0.1, 0.05, 0.0, -0.05;
  b1 << 0.35, 0.0, 0.0, -0.35;
  b2 << 0.0, 0.35, 0.35, 0.0;
  return analytic::lifted_linear(a, {b1, b2});
}

/// max |(G(V + εH) − G(V − εH))ξ/(2ε) − DG(V)[H]ξ| relative to max(1, |DG[H]ξ|), ε = 1e-5.
template <class S>
double derivative_mismatch(const S& sde, const matrix& v, const matrix& h, const vector& xi) {
  const double e = 1e-5;
  matrix plus(v.rows(), v.cols()), minus(v.rows(), v.cols()), d(v.rows(), v.cols());
  sde.diffusion(v + e * h, xi, plus, 0.0);
  sde.diffusion(v - e * h, xi, minus, 0.0);
  sde.diffusion_derivative(v, h, xi, d, 0.0);
  const matrix fd = (plus - minus) / (2 * e);
  return (fd - d).cwiseAbs().maxCoeff() / std::max(1.0, d.cwiseAbs().maxCoeff());
}

/// d/dt at t = 0 of E[V_t] and E[vec V_t vec V_tᵀ] from the Sde's own coefficients at V0:
/// b(V0) and vec b vec V0ᵀ + vec V0 vec bᵀ + Σ_j vec G_j vec G_jᵀ (G_j = G(V0) e_j).
template <class S>
matrix second_moment_rate(const S& sde, const matrix& v0) {
  const int m = static_cast<int>(v0.rows());
  const int k = sde.noise_dimension(m);
  matrix b(m, m), g(m, m);
  sde.drift(v0, b, 0.0);
  const Eigen::Map<const vector> x(v0.data(), m * m), bx(b.data(), m * m);
  matrix rate = bx * x.transpose() + x * bx.transpose();
  vector e = vector::Zero(k);
  for (int j = 0; j < k; ++j) {
    e.setZero();
    e(j) = 1.0;
    sde.diffusion(v0, e, g, 0.0);
    const Eigen::Map<const vector> gx(g.data(), m * m);
    rate += gx * gx.transpose();
  }
  return rate;
}

/// Second-order one-sided difference (−3M(0) + 4M(δ) − M(2δ))/(2δ) of a moment function at t = 0.
template <class F>
matrix rate_at_zero(F moments, double delta) {
  return (-3.0 * moments(0.0) + 4.0 * moments(delta) - moments(2 * delta)) / (2 * delta);
}

/// Monte Carlo of vec V vec Vᵀ: mean and standard error of each entry.
/// Entrywise sample mean and standard error of the mean of a stream of matrices.
struct entry_moments {
  matrix sum, sum_sq;
  long long n = 0;
  void add(const matrix& x) {
    if (n == 0) {
      sum = matrix::Zero(x.rows(), x.cols());
      sum_sq = sum;
    }
    sum += x;
    sum_sq += x.cwiseAbs2();
    ++n;
  }
  matrix mean() const { return sum / static_cast<double>(n); }
  matrix stderr_() const {
    const double nn = static_cast<double>(n);
    const matrix var = (sum_sq / nn - mean().cwiseAbs2()) * (nn / (nn - 1));
    return (var / nn).cwiseSqrt();
  }
};

/// The same for the products vec V vec Vᵀ: estimates E[V^{ab}V^{cd}] laid out as second_moments().
struct product_moments : entry_moments {
  void add(const matrix& v) {
    const Eigen::Map<const vector> x(v.data(), v.size());
    entry_moments::add(x * x.transpose());
  }
};

/// |a − b| ≤ 5 se + slack entrywise. 5 standard errors: a false alarm per entry about once in
/// 1.7 million; slack covers entries with zero variance (exact zeros) at round-off level.
bool within(const matrix& estimate, const matrix& exact, const matrix& se, double slack = 1e-12) {
  return ((estimate - exact).cwiseAbs().array() <= 5.0 * se.array() + slack).all();
}

}  // namespace

TEST_CASE("analytic problems reject bad parameters, naming them") {
  CHECK_THROWS_WITH_AS(analytic::gbm(analytic::gbm::params{std::nan(""), 0.5}),
                       doctest::Contains("gbm: mu must be finite (got nan)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(analytic::wishart(-1.0),
                       doctest::Contains("wishart: p must be > 0 and finite (got -1)"),
                       ncsde::invalid_argument);
  matrix asym = sym2(1.0, 0.2, 1.0);
  asym(0, 1) = 0.3;
  CHECK_THROWS_WITH_AS(
      analytic::hadamard_linear(asym, {sym2(1, 0, 1)}),
      doctest::Contains("hadamard_linear: A must be symmetric (got max |X - X^T| = 0.1)"),
      ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(analytic::hadamard_linear(sym2(1, 0, 1), {}),
                       doctest::Contains("number of noise coefficients B_j must be >= 1 (got 0)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(analytic::lifted_linear(matrix::Identity(2, 2), {matrix::Identity(3, 3)}),
                       doctest::Contains("lifted_linear: B[0] must be 2x2 like A (got 3x3)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(hadamard_example().noise_dimension(2),
                       doctest::Contains("m must be equal to the coefficient size 3 (got 2)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(noncommutative_example().exact(sym2(1, 0, 1), vector::Zero(2), 1.0),
                       doctest::Contains("no pathwise closed-form solution"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(analytic::gbm().mean(matrix::Identity(1, 1), -1.0),
                       doctest::Contains("gbm::mean: t must be >= 0 and finite (got -1)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(analytic::wishart(3.0).euler_second_moments(sym2(1, 0, 1), 0.1, -2),
                       doctest::Contains("n must be >= 0 (got -2)"), ncsde::invalid_argument);
}

TEST_CASE("diffusion_derivative matches central finite differences") {
  // Central differences with ε = 1e-5: truncation ε²|D³G|/6 ≲ 1e-10 for these O(1) coefficients,
  // cancellation ε_mach|G|/ε ≈ 2e-11; 1e-8 relative leaves a factor 100 of headroom.
  const double tol = 1e-8;
  SUBCASE("linear problems (G linear in V)") {
    CHECK(derivative_mismatch(analytic::gbm(), sym2(1.0, 0.3, 0.8), random_symmetric(2, 1),
                              random_vector(1, 1)) <= tol);
    CHECK(derivative_mismatch(hadamard_example(), random_spd(3, 2), random_symmetric(3, 2),
                              random_vector(2, 2)) <= tol);
    CHECK(derivative_mismatch(noncommutative_example(), random_spd(2, 3), random_symmetric(2, 3),
                              random_vector(2, 3)) <= tol);
  }
  SUBCASE("Cholesky-factor noise maps (V positive definite)") {
    for (int m : {2, 3, 4}) {
      CAPTURE(m);
      const matrix v = random_spd(m, 10 + static_cast<std::uint64_t>(m));
      CHECK(derivative_mismatch(analytic::linear_covariance(), v, random_symmetric(m, 4),
                                random_vector(m * m, 4)) <= tol);
      CHECK(derivative_mismatch(analytic::wishart(m + 1.0), v, random_symmetric(m, 5),
                                random_vector(m * m, 5)) <= tol);
    }
  }
  SUBCASE("square-root fallback (V indefinite, no zero eigenvalue)") {
    // Eigenvalues 1.2 and −0.3: V ± εH stays indefinite, so both differences use the fallback.
    const matrix v = sym2(0.9, 0.6, 0.0);
    CHECK(ncsde::min_eigenvalue(v) < -0.2);
    CHECK(derivative_mismatch(analytic::linear_covariance(), v, random_symmetric(2, 6),
                              random_vector(4, 6)) <= tol);
    CHECK(derivative_mismatch(analytic::wishart(3.0), v, random_symmetric(2, 7),
                              random_vector(4, 7)) <= tol);
  }
}

TEST_CASE("the square-root fallback factors the projection onto the PSD cone") {
  // G(V)ξ = L W Lᵀ with L Lᵀ = V⁺: the noise covariance is Σ_lin(V⁺) (V⁺ the nearest PSD matrix).
  const matrix v = sym2(0.9, 0.6, 0.0);
  const matrix vplus = ncsde::project_psd(v);
  const analytic::linear_covariance sde;
  matrix sigma;
  sde.covariance(vplus, sigma, 0.0);
  // A symmetric eigensolver and two 2×2 products: round-off ~ 10 m ε |Σ|.
  CHECK((ncsde::noise_covariance(sde, v) - sigma).cwiseAbs().maxCoeff() <=
        20 * 2 * eps * sigma.norm());
}

TEST_CASE("moment formulas agree with the SDE's own coefficients at t = 0") {
  // d/dt E[vec V vec Vᵀ] at 0 = vec b vec V0ᵀ + vec V0 vec bᵀ + Σ_j vec G_j vec G_jᵀ (Itô). A
  // second-order one-sided difference with δ = 1e-4 has truncation error δ²|M'''|/3 ≲ 1e-8·|M'''|
  // and cancellation ε|M|/δ ≈ 2e-12|M|; 1e-6 relative is safe and still catches any wrong constant
  // or index.
  const double delta = 1e-4, tol = 1e-6;
  auto check = [&](const auto& sde, const matrix& v0) {
    const matrix exact_rate = second_moment_rate(sde, v0);
    const matrix fd = rate_at_zero([&](double t) { return sde.second_moments(v0, t); }, delta);
    CHECK((fd - exact_rate).cwiseAbs().maxCoeff() <=
          tol * std::max(1.0, exact_rate.cwiseAbs().maxCoeff()));
  };
  SUBCASE("gbm") { check(analytic::gbm(), sym2(1.0, 0.3, 0.8)); }
  SUBCASE("hadamard") { check(hadamard_example(), random_spd(3, 21)); }
  SUBCASE("matrix-gbm") { check(matrix_gbm_example(), sym2(1.0, 0.3, 0.8)); }
  SUBCASE("noncommutative") { check(noncommutative_example(), sym2(1.0, 0.3, 0.6)); }
  SUBCASE("linear covariance") {
    check(analytic::linear_covariance(), sym2(1.0, 0.5, 1.0));
    check(analytic::linear_covariance(), random_spd(3, 22));
  }
  SUBCASE("wishart") {
    check(analytic::wishart(4.0), sym2(4.0, 1.0, 3.0));
    check(analytic::wishart(5.0), random_spd(3, 23));
  }
  SUBCASE("first moments: d/dt E[V] = b(V0)") {
    const matrix v0 = sym2(1.0, 0.3, 0.6);
    const analytic::lifted_linear sde = noncommutative_example();
    matrix b(2, 2);
    sde.drift(v0, b, 0.0);
    const matrix fd = rate_at_zero([&](double t) { return sde.mean(v0, t); }, delta);
    CHECK((fd - b).cwiseAbs().maxCoeff() <= tol);
    const analytic::wishart w(4.0);
    w.drift(v0, b, 0.0);
    CHECK(
        (rate_at_zero([&](double t) { return w.mean(v0, t); }, delta) - b).cwiseAbs().maxCoeff() <=
        tol);
  }
}

TEST_CASE("the diagonal lift is the lifted linear SDE with diagonal coefficients") {
  vector alpha(3), beta1(3), beta2(3);
  alpha << 0.25, 0.1, 0.2;
  beta1 << 0.3, 0.2, -0.25;
  beta2 << -0.2, 0.3, 0.15;
  const analytic::hadamard_linear h =
      analytic::hadamard_linear::diagonal_lift(alpha, {beta1, beta2});
  const analytic::lifted_linear l(matrix(alpha.asDiagonal()),
                                  {matrix(beta1.asDiagonal()), matrix(beta2.asDiagonal())});
  REQUIRE(l.commuting());
  const matrix v0 = random_spd(3, 31);
  const vector xi = random_vector(2, 31);
  const vector w = random_vector(2, 32);
  matrix a(3, 3), b(3, 3);
  h.drift(v0, a, 0.0);
  l.drift(v0, b, 0.0);
  // Entrywise sums of a few O(1) products: round-off ~ 8 ε.
  CHECK((a - b).cwiseAbs().maxCoeff() <= 8 * eps * 10);
  h.diffusion(v0, xi, a, 0.0);
  l.diffusion(v0, xi, b, 0.0);
  CHECK((a - b).cwiseAbs().maxCoeff() <= 8 * eps * 10);
  // Exact solutions: elementwise exp vs a Padé matrix exponential of a diagonal matrix (~1e-15).
  const matrix eh = h.exact(v0, w, 1.0), el = l.exact(v0, w, 1.0);
  CHECK((eh - el).cwiseAbs().maxCoeff() <= 1e-13 * eh.cwiseAbs().maxCoeff());
  // Closed-form moments vs matrix exponentials of the m⁴ generator (scaling and squaring, ~1e-14).
  const matrix mh = h.second_moments(v0, 1.0), ml = l.second_moments(v0, 1.0);
  CHECK((mh - ml).cwiseAbs().maxCoeff() <= 1e-12 * mh.cwiseAbs().maxCoeff());
  const matrix qh = h.euler_second_moments(v0, 0.125, 8), ql = l.euler_second_moments(v0, 0.125, 8);
  CHECK((qh - ql).cwiseAbs().maxCoeff() <= 1e-12 * qh.cwiseAbs().maxCoeff());
  // And the exact path stays PSD: V_T = D V0 D.
  CHECK(ncsde::min_eigenvalue(eh) > 0);
}

TEST_CASE("exact pathwise solutions have the exact moments") {
  // W_T ~ N(0, T I): 100'000 exact samples per problem; each moment within 5 standard errors.
  const long long n = 100'000;
  const double t = 1.0;
  auto run = [&](const auto& sde, const matrix& v0, int k) {
    product_moments second;
    entry_moments first;
    vector w(k);
    for (long long i = 0; i < n; ++i) {
      ncsde::random_stream(77, static_cast<std::uint64_t>(i))
          .normals(ncsde::random_domain::user, 0, 0, w);
      const matrix v = sde.exact(v0, std::sqrt(t) * w, t);
      first.add(v);
      second.add(v);
    }
    CHECK(within(first.mean(), sde.mean(v0, t), first.stderr_()));
    CHECK(within(second.mean(), sde.second_moments(v0, t), second.stderr_()));
  };
  SUBCASE("gbm") { run(analytic::gbm(), matrix::Constant(1, 1, 1.0), 1); }
  SUBCASE("hadamard") { run(hadamard_example(), random_spd(3, 41), 2); }
  SUBCASE("matrix-gbm") { run(matrix_gbm_example(), sym2(1.0, 0.3, 0.8), 1); }
}

TEST_CASE("the Wishart law (X0 + W)(X0 + W)ᵀ has the exact moments of the SDE") {
  // X0 is 2×4 (p = 4), V0 = X0 X0ᵀ; W_T has iid N(0, T) entries. 100'000 samples, 5 standard
  // errors.
  matrix x0(2, 4);
  x0 << 1.5, 0.3, -0.4, 0.8, 0.2, 1.2, 0.5, -0.6;
  const matrix v0 = x0 * x0.transpose();
  const analytic::wishart sde(4.0);
  const double t = 0.5;
  const long long n = 100'000;
  product_moments second;
  entry_moments first;
  vector z(8);
  for (long long i = 0; i < n; ++i) {
    ncsde::random_stream(78, static_cast<std::uint64_t>(i))
        .normals(ncsde::random_domain::user, 0, 0, z);
    const matrix v = analytic::wishart::exact_in_law(
        x0, std::sqrt(t) * Eigen::Map<const matrix>(z.data(), 2, 4));
    first.add(v);
    second.add(v);
  }
  CHECK(within(first.mean(), sde.mean(v0, t), first.stderr_()));
  CHECK(within(second.mean(), sde.second_moments(v0, t), second.stderr_()));
}

TEST_CASE("Euler–Maruyama moment recursions match simulated Euler–Maruyama chains") {
  // n = 8 EM steps through integrate() (pd_policy::count: the pure scheme), 40'000 paths; every
  // entry of E[vec V vec Vᵀ] (and E[V]) within 5 standard errors of the exact recursion.
  const int steps = 8;
  const long long paths = 40'000;
  // Returns the sample mean of V_T and its standard errors as well.
  auto run = [&](const auto& sde, const matrix& v0, double t) {
    using S = std::decay_t<decltype(sde)>;
    ncsde::problem<S> prob{sde, v0, t, 0.0};
    ncsde::integrate_options opt;
    opt.dt = t / steps;
    opt.policy = ncsde::pd_policy::count;
    ncsde::euler_maruyama<> em;
    product_moments second;
    entry_moments first;
    for (long long p = 0; p < paths; ++p) {
      const matrix v = ncsde::integrate(em, prob, opt, 91, static_cast<std::uint64_t>(p)).v;
      second.add(v);
      first.add(v);
    }
    CHECK(within(second.mean(), sde.euler_second_moments(v0, t / steps, steps), second.stderr_()));
    return std::pair<matrix, matrix>(first.mean(), first.stderr_());
  };
  // EM reproduces E[V_T] exactly on both structured-noise problems (drift affine, noise mean zero):
  // V0 for the linear covariance SDE, V0 + pT I for Wishart; the sample means agree within 5 se.
  SUBCASE("linear covariance") {
    const matrix v0 = sym2(1.0, 0.5, 1.0);
    const auto [mean, se] = run(analytic::linear_covariance(), v0, 0.125);
    CHECK(within(mean, v0, se));
  }
  SUBCASE("wishart") {
    const matrix v0 = sym2(4.0, 1.0, 3.0);
    const analytic::wishart w(4.0);
    const auto [mean, se] = run(w, v0, 0.5);
    CHECK(within(mean, w.mean(v0, 0.5), se));
  }
  SUBCASE("noncommutative") { run(noncommutative_example(), sym2(1.0, 0.3, 0.6), 0.5); }
  SUBCASE("hadamard") { run(hadamard_example(), random_spd(3, 51), 0.5); }
}

TEST_CASE("Euler–Maruyama moments: exact formulas and the weak error of order 1") {
  const matrix v0 = sym2(4.0, 1.0, 3.0);
  const analytic::wishart w(4.0);
  // Wishart: exact minus EM second moments is (pTh/2) S(I), whose trace is p T h (m² + m).
  for (const int n : {4, 16, 64}) {
    const double t = 0.5, h = t / n;
    const double diff = w.second_moments(v0, t).trace() - w.euler_second_moments(v0, h, n).trace();
    CHECK(std::abs(diff - 4.0 * t * h * 6.0) <= 1e-12 * w.second_moments(v0, t).trace());
  }
  // For the lifted problem EM's mean (I + h𝓛₀)^n vec V0 converges to e^{T𝓛₀} vec V0 at rate h.
  const analytic::lifted_linear l = noncommutative_example();
  const matrix m0 = sym2(1.0, 0.3, 0.6);
  const matrix exact = l.mean(m0, 1.0);
  const double e1 = (l.euler_mean(m0, 1.0 / 64, 64) - exact).norm();
  const double e2 = (l.euler_mean(m0, 1.0 / 128, 128) - exact).norm();
  CHECK(e1 > 0);
  // Weak order 1: halving h halves the error up to O(h) corrections (2 ± 0.1 for h ≤ 1/64).
  CHECK(std::abs(e1 / e2 - 2.0) <= 0.1);
}

TEST_CASE("conditional second moments are consistent with the second moments") {
  // u(V0) at τ = T with weights F is ⟨F, E[vec V_T vec V_Tᵀ]⟩; at τ = 0 it is f(V) itself. Both
  // sides come from different formulas (adjoint generator vs forward); round-off ~1e-13 relative.
  const matrix f4 = random_symmetric(4, 61);
  auto check = [&](const auto& sde, const matrix& v0, double t, const matrix& f) {
    const analytic::quadratic_form u = sde.conditional_second_moment(f, t);
    const double expected = f.cwiseProduct(sde.second_moments(v0, t)).sum();
    CHECK(std::abs(u(v0) - expected) <= 1e-12 * std::max(1.0, std::abs(expected)));
    const analytic::quadratic_form u0 = sde.conditional_second_moment(f, 0.0);
    const Eigen::Map<const vector> x(v0.data(), v0.size());
    CHECK(std::abs(u0(v0) - x.dot(f * x)) <= 1e-12 * std::max(1.0, std::abs(x.dot(f * x))));
  };
  check(analytic::gbm(), sym2(1.0, 0.3, 0.8), 1.0, f4);
  check(matrix_gbm_example(), sym2(1.0, 0.3, 0.8), 1.0, f4);
  check(noncommutative_example(), sym2(1.0, 0.3, 0.6), 0.5, f4);
  check(analytic::linear_covariance(), sym2(1.0, 0.5, 1.0), 0.25, f4);
  check(analytic::wishart(4.0), sym2(4.0, 1.0, 3.0), 0.5, f4);
  check(hadamard_example(), random_spd(3, 62), 1.0, matrix(random_symmetric(9, 63)));
}

TEST_CASE("noise commutators: zero for commutative problems, non-zero for the others") {
  SUBCASE("hadamard (commutative): L^jG_l = L^lG_j") {
    const matrix v = random_spd(3, 71);
    const matrix c = analytic::noise_commutator(hadamard_example(), v, 0, 1);
    // Elementwise products: exactly symmetric in j, l up to one rounding per entry.
    CHECK(c.cwiseAbs().maxCoeff() <= 4 * eps * v.cwiseAbs().maxCoeff());
  }
  SUBCASE("noncommutative: [G_1, G_2](V) = C V + V Cᵀ, C = [B_2, B_1] = −2β² J") {
    const analytic::lifted_linear sde = noncommutative_example();
    CHECK_FALSE(sde.commuting());
    const matrix v0 = sym2(1.0, 0.3, 0.6);
    const matrix c = analytic::noise_commutator(sde, v0, 0, 1);
    const matrix comm = sde.b()[1] * sde.b()[0] - sde.b()[0] * sde.b()[1];
    const matrix expected = comm * v0 + v0 * comm.transpose();
    CHECK((c - expected).cwiseAbs().maxCoeff() <= 16 * eps);
    // Non-zero: |C V0 + V0 Cᵀ| = 2β²|[J, V0]| with [J, V0] = [[0.6, −0.4], [−0.4, −0.6]].
    CHECK(c.cwiseAbs().maxCoeff() >= 0.5 * 2 * 0.35 * 0.35 * 0.6);
    // At V = I the commutator field vanishes (C is antisymmetric): why V0 is not a multiple of I.
    CHECK(analytic::noise_commutator(sde, matrix::Identity(2, 2), 0, 1).cwiseAbs().maxCoeff() <=
          16 * eps);
  }
  SUBCASE("linear covariance and Wishart (Cholesky factor): non-commutative") {
    const matrix v0 = sym2(1.0, 0.5, 1.0);
    double largest_lc = 0, largest_w = 0;
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 4; ++l) {
        largest_lc =
            std::max(largest_lc, analytic::noise_commutator(analytic::linear_covariance(), v0, j, l)
                                     .cwiseAbs()
                                     .maxCoeff());
        largest_w = std::max(
            largest_w,
            analytic::noise_commutator(analytic::wishart(4.0), v0, j, l).cwiseAbs().maxCoeff());
      }
    // O(1) entries (V0 is O(1)); round-off would be ~1e-15.
    CHECK(largest_lc > 0.1);
    CHECK(largest_w > 0.1);
  }
}

TEST_CASE("linear covariance: structured noise map vs dense Σ_lin and the dense adapter") {
  const analytic::linear_covariance sde;
  for (int m : {2, 3, 4, 6}) {
    CAPTURE(m);
    const matrix v = random_spd(m, 80 + static_cast<std::uint64_t>(m));
    matrix sigma;
    sde.covariance(v, sigma, 0.0);
    // Σ_j vec(L W_j Lᵀ) vec(...)ᵀ: each entry a sum of O(m²) products of O(|V|) terms; relative
    // round-off ~ m² ε; 1e-14·|Σ| is ≥ 10 m² ε |Σ| only for m ≤ 6 (so m stops at 6).
    const double tol = 10.0 * m * m * eps * sigma.cwiseAbs().maxCoeff();
    CHECK((ncsde::noise_covariance(sde, v) - sigma).cwiseAbs().maxCoeff() <= tol);
    // The dense adapter factors Σ by a K×K symmetric eigensolver (backward error ~ K ε |Σ|).
    const ncsde::dense_covariance_noise<analytic::linear_covariance> dense(sde);
    const int kk = ncsde::packed_size(m);
    CHECK((ncsde::noise_covariance(dense, v) - sigma).cwiseAbs().maxCoeff() <=
          16.0 * kk * eps * sigma.cwiseAbs().maxCoeff());
    // Each diagonal entry is a GBM with σ = √2: Var(dV^{aa}) = 2 (V^{aa})² dt.
    for (int a = 0; a < m; ++a)
      CHECK(std::abs(sigma(ncsde::packed_index(a, a, m), ncsde::packed_index(a, a, m)) -
                     2 * v(a, a) * v(a, a)) <= 4 * eps * v(a, a) * v(a, a));
  }
  // The Wishart noise map likewise reproduces its dense covariance.
  const analytic::wishart w(3.0);
  const matrix v = random_spd(3, 90);
  matrix sigma;
  w.covariance(v, sigma, 0.0);
  CHECK((ncsde::noise_covariance(w, v) - sigma).cwiseAbs().maxCoeff() <=
        10.0 * 9 * eps * sigma.cwiseAbs().maxCoeff());
}
