#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "ncsde/brownian.hpp"
#include "ncsde/error.hpp"
#include "support/mc_stats.hpp"

namespace {

using ncsde::brownian_grid;
using ncsde::levy_area_method;
using ncsde::matrix;
using ncsde::noise_increment;
using ncsde::random_domain;
using ncsde::random_stream;
using ncsde::stream_brownian;
using ncsde::vector;

constexpr double eps = std::numeric_limits<double>::epsilon();

/// max_ij |I_ij + I_ji − (dw_i dw_j − dt δ_ij)| relative to the entries' scale (see levy_area_test).
double symmetric_part_defect(const noise_increment& inc) {
  const int k = inc.dimension();
  double worst = 0.0;
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j) {
      const double target = inc.dw(i) * inc.dw(j) - (i == j ? inc.dt : 0.0);
      const double scale = std::abs(inc.iterated(i, j)) + std::abs(inc.iterated(j, i)) +
                           std::abs(inc.dw(i) * inc.dw(j)) + inc.dt;
      worst = std::max(worst, std::abs(inc.iterated(i, j) + inc.iterated(j, i) - target) / scale);
    }
  return worst;
}

}  // namespace

TEST_CASE("stream_brownian: step i's increment is √dt times the normals at (increments, i, 0)") {
  const random_stream s(12, 34);
  stream_brownian source(s, 3);
  CHECK(source.dimension() == 3);
  CHECK(source.stream().seed() == 12);
  CHECK(source.stream().path() == 34);
  noise_increment a, b;
  // Any order: step 7 after step 2 equals step 7 drawn first.
  source.increment(2, 0.25, false, b);
  source.increment(7, 0.25, true, a);
  stream_brownian fresh(s, 3);
  noise_increment c;
  fresh.increment(7, 0.25, true, c);
  CHECK(a.dw == c.dw);
  CHECK(a.iterated == c.iterated);
  vector z(3);
  s.normals(random_domain::increments, 7, 0, z);
  CHECK(a.dw == (z * std::sqrt(0.25)).eval());
  CHECK(a.dt == 0.25);
  CHECK(a.has_iterated);
  CHECK_FALSE(b.has_iterated);
  // The iterated integrals are those of iterated_integrals at (levy_area, step, node 1).
  noise_increment d = a;
  ncsde::iterated_integrals gen(levy_area_method::wiktorsson);
  gen.generate(d, s, 7, 1);
  CHECK(d.iterated == a.iterated);
  CHECK(symmetric_part_defect(a) <= 8 * eps);
}

TEST_CASE(
    "stream_brownian::split: left + right = parent, reproducibly, with the bridge's variances") {
  // Bridge: given the parent increment P over h, left ~ N(P/2, h/4) per component; unconditionally
  // left and right are independent N(0, h/2). left + right = P up to the one rounding of
  // right = P − left and of the sum: |left + right − P| ≤ 2 ε max(|left|, |right|, |P|).
  // 100'000 splits; moments within 5 standard errors.
  const double h = 0.8;
  const int k = 2, n = 100'000;
  stream_brownian source(random_stream(99, 5), k);
  support::sample_mean var_left, var_right, cov_lr, var_cond;
  double worst = 0.0;
  for (int i = 0; i < n; ++i) {
    noise_increment parent, left, right;
    source.increment(static_cast<std::uint64_t>(i), h, false, parent);
    source.split(parent, static_cast<std::uint64_t>(i), 1, false, left, right);
    CHECK(left.dt == 0.5 * h);
    CHECK(right.dt == 0.5 * h);
    for (int j = 0; j < k; ++j) {
      const double bound =
          2 * eps * std::max({std::abs(left.dw(j)), std::abs(right.dw(j)), std::abs(parent.dw(j))});
      worst = std::max(worst, std::abs(left.dw(j) + right.dw(j) - parent.dw(j)) - bound);
    }
    var_left.add(left.dw(0) * left.dw(0));
    var_right.add(right.dw(1) * right.dw(1));
    cov_lr.add(left.dw(0) * right.dw(0));
    const double c = left.dw(1) - 0.5 * parent.dw(1);
    var_cond.add(c * c);
  }
  CHECK(worst <= 0.0);
  CHECK(std::abs(var_left.mean() - h / 2) <= 5 * var_left.stderr_of_mean());
  CHECK(std::abs(var_right.mean() - h / 2) <= 5 * var_right.stderr_of_mean());
  CHECK(std::abs(cov_lr.mean()) <= 5 * cov_lr.stderr_of_mean());
  CHECK(std::abs(var_cond.mean() - h / 4) <= 5 * var_cond.stderr_of_mean());

  // Reproducible: the bridge normals are addressed by (bridge, step, node).
  noise_increment parent, l1, r1, l2, r2, l3, r3;
  source.increment(3, h, true, parent);
  source.split(parent, 3, 1, true, l1, r1);
  source.split(parent, 3, 1, true, l2, r2);
  CHECK(l1.dw == l2.dw);
  CHECK(r1.dw == r2.dw);
  CHECK(l1.iterated == l2.iterated);
  CHECK(r1.iterated == r2.iterated);
  source.split(parent, 3, 2, true, l3, r3);  // another bridge node: another midpoint
  CHECK(l3.dw != l1.dw);
  // The halves carry iterated integrals consistent with their own increments.
  CHECK(l1.has_iterated);
  CHECK(r1.has_iterated);
  CHECK(symmetric_part_defect(l1) <= 8 * eps);
  CHECK(symmetric_part_defect(r1) <= 8 * eps);
  // Splitting again (heap nodes 2 and 3) keeps the sum of the leaves at the parent.
  noise_increment ll, lr, rl, rr;
  source.split(l1, 3, 2, false, ll, lr);
  source.split(r1, 3, 3, false, rl, rr);
  const vector sum = ll.dw + lr.dw + rl.dw + rr.dw;
  CHECK((sum - parent.dw).cwiseAbs().maxCoeff() <=
        8 * eps * parent.dw.cwiseAbs().maxCoeff() + 8 * eps);
}

namespace {

/// Splits piece `node` of `step` (increment `piece`) with both sources down to `below` more halvings,
/// checking on the way that the increments agree bit for bit, that halves at depth ≤ D carry iterated
/// integrals whose Chen combination is their parent's (to round-off), and that deeper halves are the
/// D = 0 source's own draws. Returns the largest Chen defect relative to the entries' scale.
double check_tree(stream_brownian& tree, stream_brownian& plain, std::uint64_t step,
                  std::uint64_t node, const noise_increment& piece, int below, int depth_limit) {
  if (below == 0) return 0.0;
  noise_increment l, r, pl, pr;
  tree.split(piece, step, node, true, l, r);
  plain.split(piece, step, node, true, pl, pr);
  CHECK(l.dw == pl.dw);
  CHECK(r.dw == pr.dw);
  CHECK(symmetric_part_defect(l) <= 64 * eps);
  double worst = 0.0;
  const int child_depth = static_cast<int>(std::bit_width(node));  // depth of the halves
  if (child_depth <= depth_limit) {
    const matrix chen = l.iterated + r.iterated + l.dw * r.dw.transpose();
    const double scale = piece.iterated.cwiseAbs().maxCoeff() + piece.dt;
    worst = (chen - piece.iterated).cwiseAbs().maxCoeff() / scale;
  } else {
    CHECK(l.iterated == pl.iterated);
    CHECK(r.iterated == pr.iterated);
  }
  worst = std::max(worst, check_tree(tree, plain, step, 2 * node, l, below - 1, depth_limit));
  return std::max(worst, check_tree(tree, plain, step, 2 * node + 1, r, below - 1, depth_limit));
}

}  // namespace

TEST_CASE(
    "stream_brownian with area_depth: Chen-consistent iterated integrals, the same increments") {
  // k = 3, D = 4, steps of 0.3: every piece of depth ≤ 4 is the Chen combination of its halves
  // (I_parent = I_left + I_right + ΔW_left ΔW_rightᵀ) to round-off, pieces deeper than D are drawn
  // as with D = 0, and the increments are those of D = 0 bit for bit. The tree of a step is rebuilt
  // identically when another step was asked for in between.
  const int k = 3, depth = 4;
  const double h = 0.3;
  stream_brownian tree(random_stream(8, 2), k, levy_area_method::wiktorsson, depth);
  stream_brownian plain(random_stream(8, 2), k);
  CHECK(tree.area_depth() == depth);
  double worst = 0.0;
  for (std::uint64_t step : {0u, 5u, 3u, 5u}) {
    noise_increment root, plain_root;
    tree.increment(step, h, true, root);
    plain.increment(step, h, true, plain_root);
    CHECK(root.dw == plain_root.dw);
    CHECK(root.has_iterated);
    CHECK(symmetric_part_defect(root) <= 64 * eps);
    worst = std::max(worst, check_tree(tree, plain, step, 1, root, depth + 2, depth));
  }
  MESSAGE("largest Chen defect (relative): " << worst);
  CHECK(worst <= 1e-14);

  // A split when the source holds another step's tree, and a step asked for twice, agree.
  noise_increment a, b, al, ar, bl, br, other;
  tree.increment(9, h, true, a);
  tree.split(a, 9, 1, true, al, ar);
  tree.increment(2, h, true, other);
  tree.split(a, 9, 1, true, bl, br);
  CHECK(al.iterated == bl.iterated);
  CHECK(ar.iterated == br.iterated);
  tree.increment(9, h, true, b);
  CHECK(a.iterated == b.iterated);
  // Without iterated integrals the source is the D = 0 one.
  noise_increment c, d;
  tree.increment(4, h, false, c);
  plain.increment(4, h, false, d);
  CHECK(c.dw == d.dw);
  CHECK_FALSE(c.has_iterated);

  // Bad depths are named errors; the leaves' series terms are those of a 2^D times longer step.
  CHECK_THROWS_WITH_AS(stream_brownian(random_stream(1, 0), 2, levy_area_method::wiktorsson, 17),
                       doctest::Contains("area_depth must be in [0, 16] (got 17)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(stream_brownian(random_stream(1, 0), 100, levy_area_method::wiktorsson, 12),
                       doctest::Contains("256 MiB for k = 100"), ncsde::invalid_argument);
  CHECK(ncsde::levy_area_leaf_terms(3, 1e-3, 4, levy_area_method::wiktorsson) ==
        ncsde::levy_area_terms(3, 16e-3, levy_area_method::wiktorsson));
  CHECK(ncsde::levy_area_leaf_terms(3, 1e-3, 0, levy_area_method::fourier) ==
        ncsde::levy_area_terms(3, 1e-3, levy_area_method::fourier));
}

TEST_CASE("stream_brownian with area_depth: the pieces' Lévy areas have Brownian motion's law") {
  // k = 2, D = 6, steps of h = 1, N = 40'000 steps. For Brownian motion the Lévy area
  // A = (I_01 − I_10)/2 of a piece of length h has E[A²] = h²/4 and E[A⁴] = 5h⁴/16 (its
  // characteristic function is 1/cosh(λh/2)); the areas of the two halves are uncorrelated; and
  // the area is correlated with the bridge midpoint B(h/2) = ΔW_left − ΔW/2 given the increment:
  // Cov(B_0(h/2), A | ΔW) = (h/8)ΔW_1, so E[B_0(h/2)·A·ΔW_1] = h²/8. Drawing the halves' areas
  // given their increments only (D = 0) loses that correlation: there the same mean is 0. All
  // checks within 5 standard errors.
  const int k = 2, depth = 6, n = 40'000;
  const double h = 1.0;
  auto area = [](const noise_increment& inc) {
    return 0.5 * (inc.iterated(0, 1) - inc.iterated(1, 0));
  };
  for (const int d : {depth, 0}) {
    stream_brownian source(random_stream(77, 1), k, levy_area_method::wiktorsson, d);
    support::sample_mean second, fourth, half_second, halves, midpoint;
    for (int i = 0; i < n; ++i) {
      const auto step = static_cast<std::uint64_t>(i);
      noise_increment root, left, right;
      source.increment(step, h, true, root);
      source.split(root, step, 1, true, left, right);
      const double a = area(root);
      second.add(a * a);
      fourth.add(a * a * a * a);
      half_second.add(area(left) * area(left));
      halves.add(area(left) * area(right));
      midpoint.add((left.dw(0) - 0.5 * root.dw(0)) * a * root.dw(1));
    }
    CAPTURE(d);
    CHECK(std::abs(second.mean() - h * h / 4) <= 5 * second.stderr_of_mean());
    CHECK(std::abs(half_second.mean() - h * h / 16) <= 5 * half_second.stderr_of_mean());
    CHECK(std::abs(halves.mean()) <= 5 * halves.stderr_of_mean());
    MESSAGE("area depth " << d << ": E[A^4] = " << fourth.mean() << " ± " << fourth.stderr_of_mean()
                          << " (5/16), E[B(h/2) A dW] = " << midpoint.mean() << " ± "
                          << midpoint.stderr_of_mean() << " (1/8 for Brownian motion)");
    if (d == depth) {
      CHECK(std::abs(fourth.mean() - 5 * h * h * h * h / 16) <= 5 * fourth.stderr_of_mean());
      CHECK(std::abs(midpoint.mean() - h * h / 8) <= 5 * midpoint.stderr_of_mean());
    } else {
      CHECK(std::abs(midpoint.mean()) <= 5 * midpoint.stderr_of_mean());
    }
  }
}

TEST_CASE("brownian_grid: fine steps are stream_brownian's, coarse increments are sums") {
  const random_stream s(2, 9);
  const int k = 3;
  const long long n = 48;
  const double h = 0.01;
  const brownian_grid grid(s, k, n, h, true);
  CHECK(grid.dimension() == k);
  CHECK(grid.fine_steps() == n);
  CHECK(grid.fine_dt() == h);
  CHECK(grid.value(0).isZero(0.0));
  stream_brownian source(s, k);
  vector running = vector::Zero(k);
  // W(t_i) is accumulated, so a fine increment read back as W(t_{i+1}) − W(t_i) differs from the drawn
  // one by the roundings of the running sum: ≤ 4 ε max|W|.
  double wmax = 0.0;
  for (long long i = 0; i <= n; ++i) wmax = std::max(wmax, grid.value(i).cwiseAbs().maxCoeff());
  for (long long i = 0; i < n; ++i) {
    noise_increment a, b;
    source.increment(static_cast<std::uint64_t>(i), h, true, a);
    grid.increment(i, 1, true, b);
    CHECK((a.dw - b.dw).cwiseAbs().maxCoeff() <= 4 * eps * wmax);
    CHECK(a.iterated == b.iterated);  // stored as drawn; Chen adds (W(t_i) − W(t_i))·ΔWᵀ = 0
    CHECK(b.dt == h);
    running += a.dw;
  }
  for (const long long ratio : {2LL, 3LL, 8LL, 16LL, 48LL}) {
    CAPTURE(ratio);
    for (long long step = 0; step * ratio < n; ++step) {
      noise_increment c;
      grid.coarse_increment(step, ratio, true, c);
      CHECK(c.dt == static_cast<double>(ratio) * h);  // count·h, not accumulated
      vector sum = vector::Zero(k);
      for (long long i = step * ratio; i < (step + 1) * ratio; ++i) {
        noise_increment f;
        grid.increment(i, 1, false, f);
        CHECK_FALSE(f.has_iterated);
        sum += f.dw;
      }
      // Telescoping sum of differences of the stored path: exact up to ratio roundings of size ε max|W|.
      CHECK((c.dw - sum).cwiseAbs().maxCoeff() <= 2.0 * static_cast<double>(ratio) * eps * wmax);
      // Chen-combined iterated integrals keep I + Iᵀ = dW dWᵀ − dt·Id to round-off: the sums of
      // `ratio` terms of size ≤ |W|² lose at most ~ratio·ε relative.
      CHECK(symmetric_part_defect(c) <= 4.0 * static_cast<double>(ratio) * eps);
    }
  }
  CHECK((grid.value(n) - running).cwiseAbs().maxCoeff() <= 4 * eps * static_cast<double>(n) * wmax);
}

TEST_CASE("brownian_grid: Chen's relation composes coarse steps") {
  // I[s,u] = I[s,v] + I[v,u] + ΔW[s,v] ΔW[v,u]ᵀ for s < v < u on the grid. Both sides are sums of the
  // same fine terms in a different grouping: agreement to 8·(steps)·ε·max(|W|², h) per entry.
  const brownian_grid grid(random_stream(5, 1), 2, 32, 0.05, true, levy_area_method::fourier);
  double scale = 0.05;
  for (long long i = 0; i <= 32; ++i) scale = std::max(scale, grid.value(i).squaredNorm());
  for (const long long v : {1LL, 7LL, 16LL, 31LL}) {
    noise_increment whole, a, b;
    grid.increment(0, 32, true, whole);
    grid.increment(0, v, true, a);
    grid.increment(v, 32 - v, true, b);
    const matrix chen = a.iterated + b.iterated + a.dw * b.dw.transpose();
    CHECK((whole.iterated - chen).cwiseAbs().maxCoeff() <= 8 * 32 * eps * scale);
  }
}

TEST_CASE("brownian_grid: a coarse step's Lévy area has variance (r h)²/4") {
  // The Chen combination of r fine steps is the iterated integral of the same path over the coarse
  // step, so its area has E[A_12²] = (r h)²/4 (see levy_area_test for the constant), here with
  // Wiktorsson's p = 1 fine areas, which have the exact second moment. 20'000 grids, 5 SE.
  const int n = 20'000;
  const long long r = 8;
  const double h = 0.125;
  support::sample_mean a2;
  for (int g = 0; g < n; ++g) {
    const brownian_grid grid(random_stream(777, static_cast<std::uint64_t>(g)), 2, r, h, true);
    noise_increment c;
    grid.coarse_increment(0, r, true, c);
    const double a = 0.5 * (c.iterated(0, 1) - c.iterated(1, 0));
    a2.add(a * a);
  }
  CHECK(std::abs(a2.mean() - (r * h) * (r * h) / 4) <= 5 * a2.stderr_of_mean());
}

TEST_CASE("brownian_grid: bad arguments are rejected with the parameter and value") {
  const random_stream s(1, 1);
  CHECK_THROWS_WITH_AS(brownian_grid(s, 0, 4, 0.1, false),
                       doctest::Contains("brownian_grid: k must be >= 1 (got 0)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(brownian_grid(s, 2, 0, 0.1, false),
                       doctest::Contains("brownian_grid: n_fine must be >= 1 (got 0)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(brownian_grid(s, 2, 4, -0.1, false),
                       doctest::Contains("brownian_grid: h must be > 0 and finite (got -0.1)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(brownian_grid(s, 2, 4, std::numeric_limits<double>::infinity(), false),
                       doctest::Contains("h must be > 0 and finite (got inf)"),
                       ncsde::invalid_argument);
  const brownian_grid grid(s, 2, 4, 0.1, false);
  noise_increment out;
  CHECK_THROWS_WITH_AS(
      grid.increment(2, 3, false, out),
      doctest::Contains("brownian_grid::increment: fine steps [2, 5) are outside the grid [0, 4)"),
      ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(grid.increment(-1, 1, false, out), doctest::Contains("[-1, 0) are outside"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(grid.increment(0, 0, false, out), doctest::Contains("[0, 0) are outside"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(grid.increment(0, 2, true, out),
                       doctest::Contains("iterated integrals requested but not sampled"),
                       ncsde::invalid_argument);
}

TEST_CASE("stream_brownian: a piece's fresh Lévy areas take the series terms of its grid step") {
  // k = 18 (m = 3 attention), grid step 0.01, pieces down to depth 40. Terms for a piece's own
  // length would be levy_area_terms(18, 0.01·2^-40) = 10^7 (the cap): 2.9 GB of normals per
  // piece, which made adaptive Milstein take 2,033 s and 3.7 GB (issue 31). Every piece takes
  // the grid step's terms (9), so each half is the draw given its increment with those terms.
  const int k = 18;
  const double h = 0.01;
  const random_stream s(5, 2);
  stream_brownian source(s, k);
  const int terms = ncsde::levy_area_terms(k, h, levy_area_method::wiktorsson);
  CHECK(terms == 9);
  noise_increment piece, left, right;
  source.increment(7, h, true, piece);
  std::uint64_t node = 1;
  for (int depth = 1; depth <= 40; ++depth) {
    source.split(piece, 7, node, true, left, right);
    for (const bool is_right : {false, true}) {
      noise_increment expected;
      expected.dt = left.dt;
      expected.dw = is_right ? right.dw : left.dw;
      ncsde::iterated_integrals(levy_area_method::wiktorsson)
          .generate(expected, s, 7, 2 * node + (is_right ? 1 : 0), terms);
      CHECK((is_right ? right : left).iterated == expected.iterated);
    }
    piece = left;
    node *= 2;
  }
  CHECK(piece.dt == std::ldexp(h, -40));
}
