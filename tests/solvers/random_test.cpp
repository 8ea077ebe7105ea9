#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <vector>

#include "ncsde/random.hpp"
#include "support/mc_stats.hpp"

namespace {

using ncsde::random_domain;
using ncsde::random_stream;

std::vector<double> normals(const random_stream& s, random_domain d, std::uint64_t i0, std::uint64_t i1,
                            std::ptrdiff_t n) {
  std::vector<double> out(static_cast<std::size_t>(n));
  s.normals(d, i0, i1, out.data(), n);
  return out;
}

std::vector<double> uniforms(const random_stream& s, random_domain d, std::uint64_t i0, std::uint64_t i1,
                             std::ptrdiff_t n) {
  std::vector<double> out(static_cast<std::size_t>(n));
  s.uniforms(d, i0, i1, out.data(), n);
  return out;
}

/// Number of positions where two equally long sequences agree bit for bit.
int agreements(const std::vector<double>& a, const std::vector<double>& b) {
  int same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  return same;
}

}  // namespace

TEST_CASE("random_stream: the same (seed, path, domain, i0, i1) gives bit-identical numbers") {
  const random_stream a(42, 7), b(42, 7);
  CHECK(a.seed() == 42);
  CHECK(a.path() == 7);
  for (const random_domain d : {random_domain::increments, random_domain::levy_area, random_domain::bridge,
                                random_domain::initial, random_domain::user}) {
    const auto x = normals(a, d, 3, 5, 37);
    const auto y = normals(b, d, 3, 5, 37);
    CHECK(agreements(x, y) == 37);
    const auto u = uniforms(a, d, 3, 5, 37);
    const auto v = uniforms(b, d, 3, 5, 37);
    CHECK(agreements(u, v) == 37);
  }
  // A copy of the stream is the same stream; the Eigen::Ref overload is the pointer overload.
  const random_stream c = a;
  Eigen::VectorXd e(37);
  c.normals(random_domain::user, 3, 5, e);
  const auto x = normals(a, random_domain::user, 3, 5, 37);
  int same = 0;
  for (int i = 0; i < 37; ++i) same += e(i) == x[static_cast<std::size_t>(i)];
  CHECK(same == 37);
}

TEST_CASE("random_stream: different seeds, paths, domains and counters give different numbers") {
  // Distinct Philox counters/keys give independent 64-bit words; two doubles built from 53 of those bits
  // coincide with probability 2^-53, so any agreement among 64 draws means the address was ignored.
  const auto base = normals(random_stream(1, 2), random_domain::increments, 3, 4, 64);
  CHECK(agreements(base, normals(random_stream(2, 2), random_domain::increments, 3, 4, 64)) == 0);
  CHECK(agreements(base, normals(random_stream(1, 3), random_domain::increments, 3, 4, 64)) == 0);
  CHECK(agreements(base, normals(random_stream(1, 2), random_domain::levy_area, 3, 4, 64)) == 0);
  CHECK(agreements(base, normals(random_stream(1, 2), random_domain::bridge, 3, 4, 64)) == 0);
  CHECK(agreements(base, normals(random_stream(1, 2), random_domain::user, 3, 4, 64)) == 0);
  CHECK(agreements(base, normals(random_stream(1, 2), random_domain::increments, 4, 4, 64)) == 0);
  CHECK(agreements(base, normals(random_stream(1, 2), random_domain::increments, 3, 5, 64)) == 0);
  // Swapping seed and path (key words) or i0 and i1 (counter words) is a different address too.
  CHECK(agreements(base, normals(random_stream(2, 1), random_domain::increments, 3, 4, 64)) == 0);
  CHECK(agreements(base, normals(random_stream(1, 2), random_domain::increments, 4, 3, 64)) == 0);
}

TEST_CASE("random_stream: blocks of different sizes agree on their common prefix") {
  const random_stream s(9, 11);
  for (const std::ptrdiff_t n : {1, 2, 3, 4, 5, 7, 8, 9, 13, 100}) {
    const auto full = normals(s, random_domain::levy_area, 8, 1, 101);
    const auto part = normals(s, random_domain::levy_area, 8, 1, n);
    const std::vector<double> head(full.begin(), full.begin() + n);
    CHECK(agreements(part, head) == n);
    const auto ufull = uniforms(s, random_domain::bridge, 8, 1, 101);
    const auto upart = uniforms(s, random_domain::bridge, 8, 1, n);
    const std::vector<double> uhead(ufull.begin(), ufull.begin() + n);
    CHECK(agreements(upart, uhead) == n);
  }
}

TEST_CASE("random_stream: normals are Box–Muller pairs of the uniforms at the same address") {
  // normal[2i] = √(−2 ln u[2i])·cos(2π u[2i+1]), normal[2i+1] = √(−2 ln u[2i])·sin(2π u[2i+1]).
  // Same operations, so agreement to a few ulps of the result (4 ε·max(1, |x|)) is expected.
  const random_stream s(5, 6);
  const auto u = uniforms(s, random_domain::user, 1, 2, 40);
  const auto z = normals(s, random_domain::user, 1, 2, 40);
  const double eps = std::numeric_limits<double>::epsilon();
  for (std::size_t i = 0; i < 40; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(u[i]));
    const double a = 2.0 * std::numbers::pi * u[i + 1];
    CHECK(std::abs(z[i] - r * std::cos(a)) <= 4 * eps * std::max(1.0, std::abs(z[i])));
    CHECK(std::abs(z[i + 1] - r * std::sin(a)) <= 4 * eps * std::max(1.0, std::abs(z[i + 1])));
  }
}

TEST_CASE("random_stream: uniforms lie in (0, 1] on the 2^-53 grid and have mean 1/2, variance 1/12") {
  const std::ptrdiff_t n = 1'000'000;
  const auto u = uniforms(random_stream(123, 0), random_domain::user, 0, 0, n);
  support::sample_mean mean, second;
  double lo = 2.0, hi = -1.0;
  long long off_grid = 0;
  for (const double x : u) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    const double scaled = x * 9007199254740992.0;  // 2^53: exact, so scaled is an integer on the grid
    off_grid += scaled != std::floor(scaled);
    mean.add(x);
    second.add((x - 0.5) * (x - 0.5));
  }
  CHECK(lo > 0.0);
  CHECK(hi <= 1.0);
  CHECK(off_grid == 0);
  // 5 standard errors (Var(U) = 1/12, Var((U − ½)²) = 1/80 − 1/144 = 1/180).
  CHECK(std::abs(mean.mean() - 0.5) <= 5 * std::sqrt(1.0 / 12.0 / n));
  CHECK(std::abs(second.mean() - 1.0 / 12.0) <= 5 * std::sqrt(1.0 / 180.0 / n));
}

TEST_CASE("random_stream: normals have mean 0, variance 1, kurtosis 3 and the normal mass in [-1, 1]") {
  // 10^6 draws; each check allows 5 standard errors of its estimator under N(0, 1):
  //   mean: SE = 1/√n;  E[x²] = 1: Var(x²) = 2;  E[x⁴] = 3: Var(x⁴) = E[x⁸] − 9 = 105 − 9 = 96;
  //   P(|x| ≤ 1) = erf(1/√2) = 0.682689…: Bernoulli SE √(p(1 − p)/n).
  const std::ptrdiff_t n = 1'000'000;
  const auto z = normals(random_stream(2024, 3), random_domain::increments, 17, 0, n);
  support::sample_mean m1, m2, m4, inside, odd;
  for (const double x : z) {
    m1.add(x);
    m2.add(x * x);
    m4.add(x * x * x * x);
    inside.add(std::abs(x) <= 1.0 ? 1.0 : 0.0);
    odd.add(x * x * x);
  }
  const double nd = static_cast<double>(n);
  CHECK(std::abs(m1.mean()) <= 5 / std::sqrt(nd));
  CHECK(std::abs(m2.mean() - 1.0) <= 5 * std::sqrt(2.0 / nd));
  CHECK(std::abs(m4.mean() - 3.0) <= 5 * std::sqrt(96.0 / nd));
  // E[x³] = 0 with Var(x³) = E[x⁶] = 15.
  CHECK(std::abs(odd.mean()) <= 5 * std::sqrt(15.0 / nd));
  const double p = std::erf(1.0 / std::numbers::sqrt2);
  CHECK(std::abs(inside.mean() - p) <= 5 * std::sqrt(p * (1 - p) / nd));
}

TEST_CASE("random_stream: neighbouring normals and different domains are uncorrelated") {
  // Correlation estimates of independent N(0,1) pairs have SE 1/√n; 5 SE.
  const std::ptrdiff_t n = 200'000;
  const random_stream s(77, 1);
  const auto a = normals(s, random_domain::increments, 0, 0, n);
  const auto b = normals(s, random_domain::levy_area, 0, 0, n);
  support::sample_mean across, lag1, lag2;
  for (std::size_t i = 0; i + 2 < a.size(); ++i) {
    across.add(a[i] * b[i]);
    lag1.add(a[i] * a[i + 1]);  // the two halves of one Box–Muller pair, and pairs' neighbours
    lag2.add(a[i] * a[i + 2]);
  }
  const double tol = 5 / std::sqrt(static_cast<double>(n));
  CHECK(std::abs(across.mean()) <= tol);
  CHECK(std::abs(lag1.mean()) <= tol);
  CHECK(std::abs(lag2.mean()) <= tol);
}
