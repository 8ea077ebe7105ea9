#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>
#include <numbers>

#include "ncsde/error.hpp"
#include "ncsde/levy_area.hpp"
#include "support/mc_stats.hpp"

namespace {

using ncsde::iterated_integrals;
using ncsde::levy_area_method;
using ncsde::matrix;
using ncsde::noise_increment;
using ncsde::random_domain;
using ncsde::random_stream;
using ncsde::vector;

constexpr double eps = std::numeric_limits<double>::epsilon();
constexpr double pi = std::numbers::pi;

/// ψ'(p + 1) = Σ_{r > p} 1/r², computed independently of the library: the terms up to R = p + 10⁵,
/// then the Euler–Maclaurin tail Σ_{r > R} 1/r² = 1/R − 1/(2R²) + 1/(6R³) + O(R⁻⁵).
double trigamma_tail(int p) {
  const double big_r = p + 100000.0;
  double s = 0.0;
  for (double r = big_r; r > p; r -= 1.0) s += 1.0 / (r * r);
  return s + 1.0 / big_r - 0.5 / (big_r * big_r) + 1.0 / (6.0 * big_r * big_r * big_r);
}

/// Lévy area A_ij = (I_ij − I_ji)/2 of an increment.
double area(const noise_increment& inc, int i, int j) {
  return 0.5 * (inc.iterated(i, j) - inc.iterated(j, i));
}

noise_increment increment_from_stream(const random_stream& s, int k, double h, std::uint64_t step) {
  noise_increment inc;
  inc.dt = h;
  inc.dw.resize(k);
  s.normals(random_domain::increments, step, 0, inc.dw);
  inc.dw *= std::sqrt(h);
  return inc;
}

}  // namespace

TEST_CASE("iterated integrals: I + Iᵀ = dw dwᵀ − dt·Id to round-off, for both methods") {
  // Each entry of I is a sum of O(1) terms of size |A| + |dw_i dw_j|/2 + dt/2, so the symmetric part
  // reproduces dw dwᵀ − dt·Id to 8 ε (|I_ij| + |I_ji| + |dw_i dw_j| + dt): headroom 8 for the few
  // roundings in (S − Sᵀ)/(2π) + w wᵀ/2 − Id/2 and the final scaling by h.
  const random_stream s(31, 4);
  for (const levy_area_method method : {levy_area_method::wiktorsson, levy_area_method::fourier}) {
    iterated_integrals gen(method);
    CHECK(gen.method() == method);
    for (int k = 1; k <= 5; ++k)
      for (const double h : {1.0, 0.37, 0.01})
        for (const int terms : {0, 3})
          for (std::uint64_t step = 0; step < 10; ++step) {
            noise_increment inc = increment_from_stream(s, k, h, step);
            gen.generate(inc, s, step, 1, terms);
            REQUIRE(inc.has_iterated);
            REQUIRE(inc.iterated.rows() == k);
            REQUIRE(inc.iterated.cols() == k);
            double worst = 0.0;
            for (int i = 0; i < k; ++i)
              for (int j = 0; j < k; ++j) {
                const double target = inc.dw(i) * inc.dw(j) - (i == j ? h : 0.0);
                const double scale = std::abs(inc.iterated(i, j)) + std::abs(inc.iterated(j, i)) +
                                     std::abs(inc.dw(i) * inc.dw(j)) + h;
                worst = std::max(
                    worst, std::abs(inc.iterated(i, j) + inc.iterated(j, i) - target) / scale);
              }
            CHECK(worst <= 8 * eps);
          }
  }
}

TEST_CASE("iterated integrals: k = 1 gives I_11 = (dw² − dt)/2 and no area") {
  const random_stream s(3, 3);
  iterated_integrals gen;
  for (std::uint64_t step = 0; step < 20; ++step) {
    noise_increment inc = increment_from_stream(s, 1, 0.2, step);
    gen.generate(inc, s, step, 1);
    const double exact = 0.5 * (inc.dw(0) * inc.dw(0) - 0.2);
    CHECK(std::abs(inc.iterated(0, 0) - exact) <= 4 * eps * (inc.dw(0) * inc.dw(0) + 0.2));
  }
}

TEST_CASE(
    "iterated integrals: generate reads its normals at (levy_area, step, node) and reproduces") {
  const random_stream s(8, 15);
  for (const levy_area_method method : {levy_area_method::wiktorsson, levy_area_method::fourier}) {
    const int k = 3, terms = 4;
    CHECK(iterated_integrals::normals_needed(k, terms, method) ==
          2 * k * terms + (method == levy_area_method::wiktorsson ? k * (k - 1) / 2 : 0));
    noise_increment a = increment_from_stream(s, k, 0.3, 5);
    noise_increment b = a, c = a, d = a;
    iterated_integrals gen(method);
    gen.generate(a, s, 5, 9, terms);
    gen.generate(b, s, 5, 9, terms);  // same address: bit-identical
    CHECK(a.iterated == b.iterated);
    vector z(iterated_integrals::normals_needed(k, terms, method));
    s.normals(random_domain::levy_area, 5, 9, z);
    iterated_integrals other(method);
    other.generate_from(c, z, terms);
    CHECK(a.iterated == c.iterated);
    gen.generate(d, s, 5, 10, terms);  // another node: another draw
    CHECK(area(d, 0, 1) != area(a, 0, 1));
  }
}

TEST_CASE(
    "Lévy area: E[A_12²] = dt²/4 and E[I_12²] = dt²/2 (Wiktorsson exact, Fourier short by "
    "ψ'(p+1))") {
  // Derivation of the constants: I_12 = ∫ W_1 dW_2 over a step of length h (W(t) = 0). Itô's isometry
  // gives E[I_12²] = ∫_0^h E[W_1(s)²] ds = h²/2, and E[I_12 I_21] = 0 since dW_1 dW_2 = 0. The Lévy
  // area A_12 = (I_12 − I_21)/2 therefore has E[A_12²] = (h²/2 + h²/2)/4 = h²/4 (the unit-step law
  // with characteristic function 1/cosh(u/2) indeed has variance 1/4).
  // The Fourier series of the Brownian bridge gives Var(A_12 | dw) = h²(1 + (dw_1² + dw_2²)/h)/12 term
  // by term (Σ_r 1/r² = π²/6); truncated after p terms it keeps the fraction 1 − 6ψ'(p+1)/π², so
  //   Fourier: E[A²] = h²/4 − h²·3ψ'(p+1)/(2π²),   Wiktorsson (tail covariance matched): h²/4.
  // 200'000 draws; tolerance 5 standard errors estimated from the same draws.
  const int n = 200'000;
  const double h = 0.5;
  const random_stream s(1001, 0);
  struct variant {
    levy_area_method method;
    int terms;
  };
  for (const variant v :
       {variant{levy_area_method::wiktorsson, 1}, variant{levy_area_method::wiktorsson, 4},
        variant{levy_area_method::fourier, 1}, variant{levy_area_method::fourier, 4},
        variant{levy_area_method::fourier, 16}}) {
    CAPTURE(v.terms);
    CAPTURE(static_cast<int>(v.method));
    iterated_integrals gen(v.method);
    support::sample_mean a2, i2;
    for (int i = 0; i < n; ++i) {
      noise_increment inc = increment_from_stream(s, 2, h, static_cast<std::uint64_t>(i));
      gen.generate(inc, s, static_cast<std::uint64_t>(i), 1, v.terms);
      const double a = area(inc, 0, 1);
      a2.add(a * a);
      i2.add(inc.iterated(0, 1) * inc.iterated(0, 1));
    }
    const double deficit =
        v.method == levy_area_method::fourier ? 3 * trigamma_tail(v.terms) / (2 * pi * pi) : 0;
    CHECK(std::abs(a2.mean() - h * h * (0.25 - deficit)) <= 5 * a2.stderr_of_mean());
    CHECK(std::abs(i2.mean() - h * h * (0.5 - deficit)) <= 5 * i2.stderr_of_mean());
    if (v.method == levy_area_method::fourier) {
      // The deficit is resolved: it exceeds 8 standard errors even at p = 16 (h²·3ψ'(17)/(2π²) ≈ 2.2e-3).
      CHECK(h * h * 0.25 - a2.mean() >= 3 * a2.stderr_of_mean());
    }
  }
}

TEST_CASE(
    "Lévy area: conditional covariance given dw matches the Brownian bridge exactly (Wiktorsson)") {
  // Given the step's increment dw (w = dw/√h), the areas of a k = 3 Brownian motion have
  //   Var(A_ij | w)      = h² (1 + w_i² + w_j²)/12,
  //   Cov(A_ij, A_il | w) = h² w_j w_l / 12   (shared first index; A_ji = −A_ij fixes the other signs),
  // from the Fourier series term by term (see the previous test); Fourier with p terms keeps the
  // fraction f_p = 1 − 6ψ'(p+1)/π² of each, Wiktorsson all of it for any p (p = 1: the tail carries
  // 39% of the covariance, so a wrong tail correction shows). 100'000 draws per variant; the
  // conditional mean is 0 exactly, so each second moment is a plain mean of products; 5 standard errors.
  const int n = 100'000;
  const double h = 0.8;
  noise_increment base;
  base.dt = h;
  base.dw = vector(3);
  base.dw << 1.3, -0.6, 0.9;
  base.dw *= std::sqrt(h);
  const vector w = base.dw / std::sqrt(h);
  // Exact second moments of (A_12, A_13, A_23) in the unit of h².
  const std::array<std::array<double, 3>, 3> exact = {{
      {(1 + w(0) * w(0) + w(1) * w(1)) / 12, w(1) * w(2) / 12, -w(0) * w(2) / 12},
      {w(1) * w(2) / 12, (1 + w(0) * w(0) + w(2) * w(2)) / 12, w(0) * w(1) / 12},
      {-w(0) * w(2) / 12, w(0) * w(1) / 12, (1 + w(1) * w(1) + w(2) * w(2)) / 12},
  }};
  struct variant {
    levy_area_method method;
    int terms;
  };
  for (const variant v :
       {variant{levy_area_method::wiktorsson, 1}, variant{levy_area_method::wiktorsson, 3},
        variant{levy_area_method::fourier, 1}}) {
    CAPTURE(v.terms);
    CAPTURE(static_cast<int>(v.method));
    const double keep =
        v.method == levy_area_method::fourier ? 1 - 6 * trigamma_tail(v.terms) / (pi * pi) : 1;
    iterated_integrals gen(v.method);
    const random_stream s(555, static_cast<std::uint64_t>(v.terms));
    std::array<std::array<support::sample_mean, 3>, 3> second;
    std::array<support::sample_mean, 3> first;
    noise_increment inc = base;
    for (int i = 0; i < n; ++i) {
      gen.generate(inc, s, static_cast<std::uint64_t>(i), 1, v.terms);
      const std::array<double, 3> a = {area(inc, 0, 1), area(inc, 0, 2), area(inc, 1, 2)};
      for (int x = 0; x < 3; ++x) {
        first[x].add(a[x]);
        for (int y = x; y < 3; ++y) second[x][y].add(a[x] * a[y]);
      }
    }
    for (int x = 0; x < 3; ++x) {
      CHECK(std::abs(first[x].mean()) <= 5 * first[x].stderr_of_mean());
      for (int y = x; y < 3; ++y) {
        CAPTURE(x);
        CAPTURE(y);
        CHECK(std::abs(second[x][y].mean() - h * h * keep * exact[x][y]) <=
              5 * second[x][y].stderr_of_mean());
      }
    }
  }
}

TEST_CASE(
    "Lévy area: the Fourier truncation's mean-square error is 3(ψ'(p+1) − ψ'(P+1))h²/(2π²) ~ 1/p") {
  // Truncating the series after p of P terms leaves the terms p < r ≤ P; with the same normals, the
  // difference has E[(A_P − A_p)²] = 3(ψ'(p+1) − ψ'(P+1)) h²/(2π²) (unconditional, k = 2), and
  // 1/(p+1) < ψ'(p+1) < 1/p: the MS error decays like 1/p. The p-term normals are the first p rows
  // of the P-term X (P×k, column-major) and the first p columns of Y (k×P). 20'000 draws, 5 SE.
  const int k = 2, big_p = 256, n = 20'000;
  const double h = 1.0;
  const random_stream s(4242, 0);
  iterated_integrals gen(levy_area_method::fourier);
  const std::array<int, 3> ps = {2, 8, 32};
  std::array<support::sample_mean, 3> mse;
  vector z(iterated_integrals::normals_needed(k, big_p, levy_area_method::fourier));
  for (int i = 0; i < n; ++i) {
    noise_increment full = increment_from_stream(s, k, h, static_cast<std::uint64_t>(i));
    s.normals(random_domain::levy_area, static_cast<std::uint64_t>(i), 1, z);
    noise_increment cut = full;
    gen.generate_from(full, z, big_p);
    for (std::size_t q = 0; q < ps.size(); ++q) {
      const int p = ps[q];
      vector zp(iterated_integrals::normals_needed(k, p, levy_area_method::fourier));
      for (int j = 0; j < k; ++j)
        for (int r = 0; r < p; ++r) zp(r + p * j) = z(r + big_p * j);  // X(r, j)
      for (int r = 0; r < p; ++r)
        for (int j = 0; j < k; ++j) zp(p * k + j + k * r) = z(big_p * k + j + k * r);  // Y(j, r)
      gen.generate_from(cut, zp, p);
      const double d = area(full, 0, 1) - area(cut, 0, 1);
      mse[q].add(d * d);
    }
  }
  for (std::size_t q = 0; q < ps.size(); ++q) {
    const int p = ps[q];
    CAPTURE(p);
    const double exact = 3 * (trigamma_tail(p) - trigamma_tail(big_p)) * h * h / (2 * pi * pi);
    CHECK(std::abs(mse[q].mean() - exact) <= 5 * mse[q].stderr_of_mean());
  }
  // ~1/p: quadrupling p divides the error by about 4 (exactly: the ratio of the ψ' differences).
  CHECK(mse[0].mean() / mse[1].mean() > 3.0);
  CHECK(mse[1].mean() / mse[2].mean() > 3.0);
}

TEST_CASE("levy_area_terms: values, monotone in k and 1/h, and the error bound it promises") {
  using ncsde::levy_area_terms;
  // p = ⌈√(5k)/(√12 π √h)⌉: k = 4, h = 0.01: √20/(√12·π·0.1) = 4.109… → 5.
  CHECK(levy_area_terms(4, 0.01, levy_area_method::wiktorsson) == 5);
  // p = ⌈3/(2π² h)⌉: h = 0.01: 15.198… → 16.
  CHECK(levy_area_terms(4, 0.01, levy_area_method::fourier) == 16);
  CHECK(levy_area_terms(1, 1.0, levy_area_method::wiktorsson) == 1);  // at least one term
  for (const levy_area_method method : {levy_area_method::wiktorsson, levy_area_method::fourier}) {
    int previous_h = 0;
    for (const double h : {1.0, 0.5, 0.1, 0.03, 1e-2, 1e-3, 1e-4}) {
      int previous_k = 0;
      for (int k = 1; k <= 40; ++k) {
        const int p = levy_area_terms(k, h, method);
        CHECK(p >= previous_k);  // non-decreasing in k
        previous_k = p;
        // The promised RMS error bound is met: √(5k) h/(√12 π p) ≤ h^{3/2}, resp. √3 h/(√2 π √p) ≤ h^{3/2}.
        const double rms = method == levy_area_method::wiktorsson
                               ? std::sqrt(5.0 * k) * h / (std::sqrt(12.0) * pi * p)
                               : std::sqrt(3.0) * h / (std::sqrt(2.0) * pi * std::sqrt(double(p)));
        CHECK(rms <= std::pow(h, 1.5) * (1 + 1e-12));
      }
      const int p = levy_area_terms(5, h, method);
      CHECK(p >= previous_h);  // non-decreasing in 1/h
      previous_h = p;
    }
  }
  // At small steps Wiktorsson needs far fewer terms (O(h^{-1/2}) vs O(h^{-1})).
  CHECK(levy_area_terms(4, 1e-4, levy_area_method::wiktorsson) * 10 <
        levy_area_terms(4, 1e-4, levy_area_method::fourier));
  CHECK_THROWS_WITH_AS(levy_area_terms(2, 0.0, levy_area_method::wiktorsson),
                       doctest::Contains("levy_area_terms: h must be > 0 (got 0)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(levy_area_terms(2, std::nan(""), levy_area_method::fourier),
                       doctest::Contains("h must be > 0 (got nan)"), ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(levy_area_terms(0, 0.1, levy_area_method::wiktorsson),
                       doctest::Contains("levy_area_terms: k must be >= 1 (got 0)"),
                       ncsde::invalid_argument);
}

TEST_CASE("iterated integrals: a wrong number of supplied normals is an assertion failure") {
  noise_increment inc;
  inc.dt = 0.1;
  inc.dw = vector::Ones(2);
  iterated_integrals gen;
  const vector z = vector::Zero(3);  // needs 2·2·1 + 1 = 5 for p = 1
  CHECK_THROWS_WITH_AS(gen.generate_from(inc, z, 1), doctest::Contains("wrong number of normals"),
                       ncsde::assertion_error);
}
