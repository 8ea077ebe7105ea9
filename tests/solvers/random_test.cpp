#include "ncsde/random.hpp"

#include <Random123/philox.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../../solvers/device/random_kernels.hpp"
#include "../../solvers/random_detail.hpp"
#include "ncsde/error.hpp"
#include "ncsde/statistics.hpp"
#include "support/mc_stats.hpp"

namespace {

using ncsde::random_domain;
using ncsde::random_stream;
using ncsde::detail::simd_path;

constexpr double eps = std::numeric_limits<double>::epsilon();

std::vector<double> normals(const random_stream& s, random_domain d, std::uint64_t i0,
                            std::uint64_t i1, std::ptrdiff_t n) {
  std::vector<double> out(static_cast<std::size_t>(n));
  s.normals(d, i0, i1, out.data(), n);
  return out;
}

std::vector<double> uniforms(const random_stream& s, random_domain d, std::uint64_t i0,
                             std::uint64_t i1, std::ptrdiff_t n) {
  std::vector<double> out(static_cast<std::size_t>(n));
  s.uniforms(d, i0, i1, out.data(), n);
  return out;
}

/// Number of positions where two equally long sequences agree bit for bit.
int agreements(const std::vector<double>& a, const std::vector<double>& b) {
  int same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += std::memcmp(&a[i], &b[i], sizeof(double)) == 0;
  return same;
}

std::string path_name(simd_path p) { return ncsde::detail::simd_path_name(p); }

const std::vector<simd_path> all_paths = ncsde::detail::compiled_simd_paths();

/// Uniforms 2p and 2p + 1 of a block, built as random.hpp documents them, from Random123 directly.
void documented_uniform_pair(const random_stream& s, random_domain d, std::uint64_t i0,
                             std::uint64_t i1, std::uint64_t p, double& a, double& b) {
  using p64 = r123::Philox4x64;
  using p32 = r123::Philox4x32;
  const p64::ctr_type h =
      p64()({{0, i0, i1, static_cast<std::uint64_t>(d)}}, {{s.seed(), s.path()}});
  const auto lo = [](std::uint64_t x) { return static_cast<std::uint32_t>(x); };
  const auto hi = [](std::uint64_t x) { return static_cast<std::uint32_t>(x >> 32); };
  const std::uint64_t x = h[1] ^ p;
  const p32::ctr_type w = p32()({{lo(x), hi(x), lo(h[2]), hi(h[2])}}, {{lo(h[0]), hi(h[0])}});
  const std::uint64_t wa = (std::uint64_t{w[1]} << 32) | w[0];
  const std::uint64_t wb = (std::uint64_t{w[3]} << 32) | w[2];
  a = static_cast<double>((wa >> 11) + 1) * 0x1p-53;
  b = static_cast<double>((wb >> 11) + 1) * 0x1p-53;
}

/// |x − ref| in units in the last place of ref as a double: 2^(⌊log2 |ref|⌋ − 52).
long double ulps(double x, long double ref) {
  if (ref == 0) return x == 0 ? 0 : std::numeric_limits<long double>::infinity();
  return std::abs(static_cast<long double>(x) - ref) / std::ldexp(1.0L, std::ilogb(ref) - 52);
}

/// sin(2πt), cos(2πt) in long double: t − q/4 with q = round(4t) is exact, and the long-double sin
/// and cos of 2π(t − q/4) (64-bit significands) are ~2^-11 ulp of a double from the truth.
void reference_sincos_turns(double t, long double& s, long double& c) {
  const long double q = std::nearbyint(4.0L * t);
  const long double a = 2 * std::numbers::pi_v<long double> * (t - q / 4);
  const long double sa = std::sin(a), ca = std::cos(a);
  switch (static_cast<int>(q) & 3) {
    case 0:
      s = sa, c = ca;
      break;
    case 1:
      s = ca, c = -sa;
      break;
    case 2:
      s = -sa, c = -ca;
      break;
    default:
      s = -ca, c = sa;
      break;
  }
}

/// Standard normal CDF Φ(x).
double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

}  // namespace

TEST_CASE("random_stream: the same (seed, path, domain, i0, i1) gives bit-identical numbers") {
  const random_stream a(42, 7), b(42, 7);
  CHECK(a.seed() == 42);
  CHECK(a.path() == 7);
  for (const random_domain d :
       {random_domain::increments, random_domain::levy_area, random_domain::bridge,
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

TEST_CASE(
    "random kernels: the host form of the device's generator gives random_stream's numbers bit for "
    "bit") {
  // ncsde::device::block_numbers is what a CUDA thread runs (the shared kernels on the scalar
  // pack, compiled here as host code in a translation unit of its own); random_stream runs the
  // widest instruction set this CPU has. Every address, every count (odd ones end inside a pair).
  int cases = 0;
  for (const std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{42}, std::uint64_t{1} << 63})
    for (const std::uint64_t path : {std::uint64_t{0}, std::uint64_t{9}, std::uint64_t{1} << 40})
      for (const random_domain d :
           {random_domain::increments, random_domain::levy_area, random_domain::user})
        for (const std::uint64_t i0 : {std::uint64_t{0}, std::uint64_t{7}, std::uint64_t{1} << 33})
          for (const std::ptrdiff_t count : {1, 2, 3, 16, 17, 65, 1000}) {
            const random_stream s(seed, path);
            std::vector<double> device_normals(static_cast<std::size_t>(count)),
                device_uniforms(static_cast<std::size_t>(count));
            ncsde::device::block_numbers<true>(seed, path, static_cast<std::uint64_t>(d), i0, 3,
                                               device_normals.data(), count);
            ncsde::device::block_numbers<false>(seed, path, static_cast<std::uint64_t>(d), i0, 3,
                                                device_uniforms.data(), count);
            CHECK(agreements(device_normals, normals(s, d, i0, 3, count)) == count);
            CHECK(agreements(device_uniforms, uniforms(s, d, i0, 3, count)) == count);
            ++cases;
          }
  CHECK(cases == 3 * 3 * 3 * 3 * 7);
}

TEST_CASE("random_stream: different seeds, paths, domains and counters give different numbers") {
  // Different addresses give independent Philox words; two doubles built from 53 of those bits
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

TEST_CASE("random_stream: blocks of different sizes agree on their common prefix, on every path") {
  // Sizes 1..40 and around 64 cross every boundary of the 2-, 8- and 16-number packs and of the
  // two-pack groups; the full block (101) ends in a partial pack.
  const random_stream s(9, 11);
  std::vector<std::ptrdiff_t> sizes;
  for (std::ptrdiff_t n = 1; n <= 40; ++n) sizes.push_back(n);
  for (const std::ptrdiff_t n : {63, 64, 65, 100}) sizes.push_back(n);
  for (const simd_path path : all_paths) {
    if (!ncsde::detail::simd_path_supported(path)) continue;
    CAPTURE(path_name(path));
    std::vector<double> full(101), ufull(101);
    ncsde::detail::normals_on(path, s, random_domain::levy_area, 8, 1, full.data(), 101);
    ncsde::detail::uniforms_on(path, s, random_domain::bridge, 8, 1, ufull.data(), 101);
    int normal_prefixes = 0, uniform_prefixes = 0;
    for (const std::ptrdiff_t n : sizes) {
      std::vector<double> part(static_cast<std::size_t>(n)), upart(static_cast<std::size_t>(n));
      ncsde::detail::normals_on(path, s, random_domain::levy_area, 8, 1, part.data(), n);
      ncsde::detail::uniforms_on(path, s, random_domain::bridge, 8, 1, upart.data(), n);
      normal_prefixes += agreements(part, {full.begin(), full.begin() + n}) == n;
      uniform_prefixes += agreements(upart, {ufull.begin(), ufull.begin() + n}) == n;
    }
    CHECK(normal_prefixes == static_cast<int>(sizes.size()));
    CHECK(uniform_prefixes == static_cast<int>(sizes.size()));
  }
}

TEST_CASE(
    "random_stream: the scalar reference and every Highway target give bit-identical numbers") {
  // random.hpp promises the same bits on every instruction set: same operations, same order, no
  // fused multiply-add. Random addresses (full 64-bit i0, i1), every block size 1..80 (all pack
  // remainders) and larger odd and even sizes; the scalar path is the reference.
  std::mt19937_64 pick(2718);
  constexpr random_domain domains[] = {random_domain::increments, random_domain::levy_area,
                                       random_domain::bridge, random_domain::initial,
                                       random_domain::user};
  int exercised = 0;
  std::string ran;
  for (const simd_path path : all_paths) {
    if (!ncsde::detail::simd_path_supported(path)) {
      std::vector<double> z(3);
      CHECK_THROWS_WITH_AS(ncsde::detail::normals_on(path, random_stream(1, 2), random_domain::user,
                                                     0, 0, z.data(), 3),
                           doctest::Contains("supported by this CPU"), ncsde::invalid_argument);
      continue;
    }
    ++exercised;
    ran.append(" ").append(path_name(path));  // (GCC 12 warns on " " + std::string: -Wrestrict)
    CAPTURE(path_name(path));
    long long blocks = 0, identical = 0;
    for (int trial = 0; trial < 120; ++trial) {
      const random_stream s(pick(), pick());
      const random_domain d = domains[pick() % 5];
      const std::uint64_t i0 = pick(), i1 = pick();
      const std::ptrdiff_t n =
          trial < 80 ? trial + 1 : static_cast<std::ptrdiff_t>(81 + pick() % 1000);
      std::vector<double> ref(static_cast<std::size_t>(n)), got(static_cast<std::size_t>(n));
      ncsde::detail::normals_on(ncsde::detail::scalar_path, s, d, i0, i1, ref.data(), n);
      ncsde::detail::normals_on(path, s, d, i0, i1, got.data(), n);
      ++blocks;
      identical += agreements(ref, got) == n;
      ncsde::detail::uniforms_on(ncsde::detail::scalar_path, s, d, i0, i1, ref.data(), n);
      ncsde::detail::uniforms_on(path, s, d, i0, i1, got.data(), n);
      ++blocks;
      identical += agreements(ref, got) == n;
    }
    CHECK(identical == blocks);
  }
  MESSAGE("paths compared bit for bit:" << ran);
  CHECK(exercised >= 1);
#if defined(__x86_64__)
  // Highway compiles the x86-64 SIMD targets in; this CPU runs at least one of them (every x86-64
  // CPU has SSSE3 or later since 2006) and random_stream uses the best it runs.
  std::string compiled;
  for (const simd_path path : all_paths) compiled.append(" ").append(path_name(path));
  CAPTURE(compiled);
  CHECK(compiled.find("AVX2") != std::string::npos);
  CHECK(compiled.find("SSE4") != std::string::npos);
  CHECK(ncsde::detail::fastest_simd_path().target != 0);
#endif
  // A path not compiled in is refused, naming it.
  std::vector<double> z(3);
  CHECK_THROWS_WITH_AS(ncsde::detail::normals_on({std::int64_t{1} << 40}, random_stream(1, 2),
                                                 random_domain::user, 0, 0, z.data(), 3),
                       doctest::Contains("compiled into the library"), ncsde::invalid_argument);
  // random_stream uses the fastest path.
  const random_stream s(31, 41);
  std::vector<double> via(777);
  ncsde::detail::normals_on(ncsde::detail::fastest_simd_path(), s, random_domain::user, 5, 9,
                            via.data(), 777);
  CHECK(agreements(normals(s, random_domain::user, 5, 9, 777), via) == 777);
}

TEST_CASE(
    "random_stream: uniforms are the documented Philox4x32-10 words, normals their Box–Muller") {
  // Uniforms: exactly the construction written in random.hpp (Random123 called directly here).
  // Normals: z = √(−2 ln a)·(cos, sin)(2πb) against a long-double evaluation. The kernels are
  // within 1 ulp (ln) and 2 ulp (sin, cos), sqrt halves the relative error of ln and adds ½ ulp,
  // the product another ½: |z − z_ref| ≤ 3.5 ulp(z) < 4ε|z| (ε = 2^-52 ≥ ulp(z)/|z|).
  const random_stream s(5, 6);
  int uniform_match = 0, normal_close = 0, pairs = 0;
  for (const std::uint64_t i0 : {std::uint64_t{0}, std::uint64_t{1}, ~std::uint64_t{0}}) {
    const auto u = uniforms(s, random_domain::user, i0, 2, 64);
    const auto z = normals(s, random_domain::user, i0, 2, 64);
    for (std::uint64_t p = 0; p < 32; ++p) {
      double a = 0, b = 0;
      documented_uniform_pair(s, random_domain::user, i0, 2, p, a, b);
      uniform_match += (u[2 * p] == a) + (u[2 * p + 1] == b);
      const long double radius = std::sqrt(-2.0L * std::log(static_cast<long double>(a)));
      long double sin_ref = 0, cos_ref = 0;
      reference_sincos_turns(b, sin_ref, cos_ref);
      const long double z0 = radius * cos_ref, z1 = radius * sin_ref;
      normal_close += std::abs(z[2 * p] - z0) <= 4 * eps * std::abs(z0);
      normal_close += std::abs(z[2 * p + 1] - z1) <= 4 * eps * std::abs(z1);
      ++pairs;
    }
  }
  CHECK(uniform_match == 2 * pairs);
  CHECK(normal_close == 2 * pairs);
}

TEST_CASE("random kernels: ln within 1 ulp and sin/cos(2πt) within 2 ulp of long-double values") {
  if (std::numeric_limits<long double>::digits < 64) {
    MESSAGE("long double has no extended precision here: no reference for the kernels");
    return;
  }
  // 10^6 arguments on the generator's grid k·2^-53 (k ≥ 1; a third of them scaled by 2^-j, j < 53,
  // to reach the smallest u, where the radius is largest) plus edge cases: powers of two, the
  // ends u = 2^-53 and u = 1, the mantissa split at √2/2, and for the angle every octant boundary
  // (4t on a tie) and its neighbours. Measured maxima when written: ln 0.88 ulp, sin/cos 1.53 ulp.
  std::mt19937_64 pick(4242);
  std::vector<double> args;
  for (int i = 0; i < 1'000'000; ++i) {
    double u = static_cast<double>((pick() >> 11) + 1) * 0x1p-53;
    if (i % 3 == 0) u = std::max(std::ldexp(u, -static_cast<int>(pick() % 53)), 0x1p-53);
    args.push_back(u);
  }
  for (int j = 0; j <= 53; ++j) args.push_back(std::ldexp(1.0, -j));
  for (const double x : {0x1p-53, 0x1p-52, 3 * 0x1p-53, 1 - 0x1p-53, 1 - 0x1p-52,
                         std::numbers::sqrt2 / 2, 0.5 + 0x1p-53})
    args.insert(args.end(), {x, std::nextafter(x, 0.0), std::nextafter(x, 2.0)});
  std::vector<double> angles = args;
  for (int k = 0; k <= 8; ++k) {
    const double t = k / 8.0;
    angles.insert(angles.end(), {t, std::max(t - 0x1p-53, 0.0), std::min(t + 0x1p-53, 1.0)});
  }
  long double worst_log = 0, worst_sin = 0, worst_cos = 0;
  double at_log = 0, at_sin = 0, at_cos = 0;
  for (const double u : args) {
    const long double e = ulps(ncsde::detail::log_unit(u), std::log(static_cast<long double>(u)));
    if (!(e <= worst_log)) worst_log = e, at_log = u;
  }
  for (const double t : angles) {
    double s = 0, c = 0;
    ncsde::detail::sincos_turns(t, s, c);
    long double sin_ref = 0, cos_ref = 0;
    reference_sincos_turns(t, sin_ref, cos_ref);
    const long double es = ulps(s, sin_ref), ec = ulps(c, cos_ref);
    if (!(es <= worst_sin)) worst_sin = es, at_sin = t;
    if (!(ec <= worst_cos)) worst_cos = ec, at_cos = t;
  }
  CAPTURE(at_log);
  CAPTURE(at_sin);
  CAPTURE(at_cos);
  MESSAGE("max error: ln " << static_cast<double>(worst_log) << " ulp, sin "
                           << static_cast<double>(worst_sin) << " ulp, cos "
                           << static_cast<double>(worst_cos) << " ulp");
  CHECK(worst_log <= 1);
  CHECK(worst_sin <= 2);
  CHECK(worst_cos <= 2);
  // Exact values where the reduction is exact: ln 1 = 0, sin 0 = 0, cos 0 = 1, sin(π/2) = 1.
  double s = 0, c = 0;
  CHECK(ncsde::detail::log_unit(1.0) == 0.0);
  ncsde::detail::sincos_turns(0.0, s, c);
  CHECK((s == 0.0 && c == 1.0));
  ncsde::detail::sincos_turns(0.25, s, c);
  CHECK((s == 1.0 && c == 0.0));
}

TEST_CASE(
    "random_stream: uniforms lie in (0, 1] on the 2^-53 grid and have mean 1/2, variance 1/12") {
  const std::ptrdiff_t n = 1'000'000;
  const auto u = uniforms(random_stream(123, 0), random_domain::user, 0, 0, n);
  support::sample_mean mean, second;
  double lo = 2.0, hi = -1.0;
  long long off_grid = 0;
  for (const double x : u) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    const double scaled =
        x * 9007199254740992.0;  // 2^53: exact, so scaled is an integer on the grid
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

TEST_CASE(
    "random_stream: normals have mean 0, variance 1, skewness 0 and kurtosis 3 (10^7 draws)") {
  // 100 blocks of 10^5. Sample moments m_k = mean of (x − x̄)^k; under N(0, 1) the standard errors
  // are 1/√n (mean), √(2/n) (variance m2), √(6/n) (skewness m3/m2^{3/2}) and √(24/n) (kurtosis
  // m4/m2²); each check allows 5 of them. The power sums are kept in long double.
  constexpr int blocks = 100;
  constexpr std::ptrdiff_t per_block = 100'000;
  const random_stream s(2024, 3);
  std::vector<double> z(per_block);
  long double s1 = 0, s2 = 0, s3 = 0, s4 = 0;
  for (int b = 0; b < blocks; ++b) {
    s.normals(random_domain::user, static_cast<std::uint64_t>(b), 1, z.data(), per_block);
    for (const double x : z) {
      const long double x2 = static_cast<long double>(x) * x;
      s1 += x, s2 += x2, s3 += x2 * x, s4 += x2 * x2;
    }
  }
  const long double n = static_cast<long double>(blocks) * per_block;
  const long double mean = s1 / n;
  const long double m2 = s2 / n - mean * mean;
  const long double m3 = s3 / n - 3 * mean * s2 / n + 2 * mean * mean * mean;
  const long double m4 =
      s4 / n - 4 * mean * s3 / n + 6 * mean * mean * s2 / n - 3 * mean * mean * mean * mean;
  const double skewness = static_cast<double>(m3 / std::pow(m2, 1.5L));
  const double kurtosis = static_cast<double>(m4 / (m2 * m2));
  const double nd = static_cast<double>(n);
  CAPTURE(static_cast<double>(mean));
  CAPTURE(static_cast<double>(m2));
  CAPTURE(skewness);
  CAPTURE(kurtosis);
  CHECK(std::abs(static_cast<double>(mean)) <= 5 / std::sqrt(nd));
  CHECK(std::abs(static_cast<double>(m2) - 1.0) <= 5 * std::sqrt(2.0 / nd));
  CHECK(std::abs(skewness) <= 5 * std::sqrt(6.0 / nd));
  CHECK(std::abs(kurtosis - 3.0) <= 5 * std::sqrt(24.0 / nd));
}

TEST_CASE("random_stream: normals pass Kolmogorov–Smirnov against Φ at level 0.001 (10^6 draws)") {
  // D = sup |F_n − Φ| over the sorted sample; reject when √n·D exceeds the Kolmogorov quantile
  // c(0.001) = √(−ln(0.0005)/2) = 1.9495. A variance off by 1% moves D by ≈ 0.0024 > c/√n = 0.0019.
  constexpr std::ptrdiff_t n = 1'000'000;
  auto z = normals(random_stream(77, 5), random_domain::increments, 3, 0, n);
  std::sort(z.begin(), z.end());
  double d = 0;
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    const double f = normal_cdf(z[static_cast<std::size_t>(i)]);
    d = std::max({d, static_cast<double>(i + 1) / n - f, f - static_cast<double>(i) / n});
  }
  const double critical = std::sqrt(-std::log(0.0005) / 2) / std::sqrt(static_cast<double>(n));
  CAPTURE(d);
  CHECK(d <= critical);
  CHECK(ncsde::kolmogorov_survival(std::sqrt(static_cast<double>(n)) * d) > 0.001);
}

TEST_CASE("random_stream: tail frequencies P(|z| > 4) and P(|z| > 5) (5·10^7 draws)") {
  // Counts of |z| > 4 and > 5 are Binomial(n, p) with p = erfc(4/√2) = 6.334e-5 and
  // erfc(5/√2) = 5.733e-7 (≈ 3167 and 28.7 expected); 5 standard errors √(np(1 − p)). Box–Muller's
  // radius reaches √(2·53 ln 2) = 8.57 on the 2^-53 grid, so both tails are fully represented.
  constexpr int blocks = 50;
  constexpr std::ptrdiff_t per_block = 1'000'000;
  const random_stream s(99, 1);
  std::vector<double> z(per_block);
  long long beyond4 = 0, beyond5 = 0;
  for (int b = 0; b < blocks; ++b) {
    s.normals(random_domain::user, static_cast<std::uint64_t>(b), 2, z.data(), per_block);
    for (const double x : z) {
      beyond4 += std::abs(x) > 4.0;
      beyond5 += std::abs(x) > 5.0;
    }
  }
  const double n = static_cast<double>(blocks) * per_block;
  for (const std::pair<long long, double>& tail :
       {std::pair{beyond4, 4.0}, std::pair{beyond5, 5.0}}) {
    // Plain variables, not a structured binding: doctest's CAPTURE takes them in a lambda.
    const long long count = tail.first;
    const double level = tail.second;
    const double p = std::erfc(level / std::numbers::sqrt2);
    CAPTURE(level);
    CAPTURE(count);
    CHECK(std::abs(static_cast<double>(count) - n * p) <= 5 * std::sqrt(n * p * (1 - p)));
  }
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

TEST_CASE("random_stream: blocks do not depend on the thread count or the order of requests") {
  // 96 blocks of sizes 1..~300 filled once in order on one thread, then by 1, 2, 3 and 4 threads,
  // thread t taking blocks t, t + T, … in reverse order: every block bit-identical.
  constexpr int count = 96;
  const random_stream s(8, 13);
  const auto size_of = [](int b) { return static_cast<std::ptrdiff_t>(1 + (b * 37) % 301); };
  std::vector<std::vector<double>> reference(count);
  for (int b = 0; b < count; ++b)
    reference[static_cast<std::size_t>(b)] =
        normals(s, random_domain::bridge, static_cast<std::uint64_t>(b), 4, size_of(b));
  for (const int threads : {1, 2, 3, 4}) {
    std::vector<std::vector<double>> got(count);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (int b = count - 1 - (count - 1 - t) % threads; b >= 0; b -= threads)
          got[static_cast<std::size_t>(b)] =
              normals(s, random_domain::bridge, static_cast<std::uint64_t>(b), 4, size_of(b));
      });
    for (auto& th : pool) th.join();
    int identical = 0;
    for (int b = 0; b < count; ++b)
      identical +=
          got[static_cast<std::size_t>(b)].size() == static_cast<std::size_t>(size_of(b)) &&
          agreements(got[static_cast<std::size_t>(b)], reference[static_cast<std::size_t>(b)]) ==
              size_of(b);
    CAPTURE(threads);
    CHECK(identical == count);
  }
}
