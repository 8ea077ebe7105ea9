// The batched engine (batched.hpp, lanes.hpp): lane streams and lane Cholesky bit for bit against
// their per-path counterparts, batched ensembles against the unbatched ones (bit-identical where
// the batched coefficients compute in the same order, to round-off otherwise), per-lane semantics
// (blow-up, stop, cone exits and their policies, coefficient errors), and independence of the
// thread count and the path range.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <vector>

#include "../../solvers/random_detail.hpp"
#include "ncsde/analytic.hpp"
#include "ncsde/batched.hpp"
#include "ncsde/dense_kernels.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/steppers/milstein.hpp"
#include "ncsde/steppers/predictor_corrector.hpp"
#include "support/ensemble_compare.hpp"

namespace {

/// The message of any exception f throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

using ncsde::batch_width;
using ncsde::ensemble_options;
using ncsde::ensemble_result;
using ncsde::integrate_options;
using ncsde::lane_block;
using ncsde::matrix;
using ncsde::problem;
using ncsde::vector;
using ncsde::test::all_outputs;
using ncsde::test::check_identical;
using ncsde::test::largest_relative_difference;

/// dV = a V³ dt + σ dB on 2×2 symmetric V (σξ₀ on V11, σξ₁/√2 on V12 = V21, σξ₂ on V22), written
/// with explicit sums so that the per-path and the batched forms perform the same operations in
/// the same order: a user SDE whose batched paths are bit-identical to its unbatched ones. From
/// V0 = [[1, .8], [.8, 1]] with a = 0.1, σ = 0.8, dt = 0.02, T = 1 about a tenth of the paths
/// exceed the blow-up threshold 10³ and many steps leave the cone.
struct cubic_lanes {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  double a = 0.1;
  double sigma = 0.8;
  double nan_above = std::numeric_limits<double>::infinity();  ///< drift NaN once |V12| exceeds it
  double inf_above = std::numeric_limits<double>::infinity();  ///< noise ∞ once |V12| exceeds it

  int noise_dimension(int) const { return 3; }

  /// (V³)(i, j) = Σ_k (Σ_l V(i, l) V(l, k)) V(k, j), sums in increasing index order; T is double
  /// for one path, lane_column for a lane group.
  template <class T, class At, class Out>
  static void cube(At v, Out out) {
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < 2; ++i) {
        T s = (v(i, 0) * v(0, 0) + v(i, 1) * v(1, 0)) * v(0, j);
        s += (v(i, 0) * v(0, 1) + v(i, 1) * v(1, 1)) * v(1, j);
        out(i, j, s);
      }
  }

  // Templates on the state type, so that the engine steps square_matrix<2> (the fixed-size path,
  // where the batched cone check is lane_cholesky).
  template <class M>
  void drift(const M& v, M& out, double) const {
    out.resize(2, 2);
    cube<double>([&](int i, int j) { return v(i, j); },
                 [&](int i, int j, double s) { out(i, j) = a * s; });
    if (std::abs(v(0, 1)) > nan_above) out(0, 0) = std::numeric_limits<double>::quiet_NaN();
  }
  template <class M>
  void diffusion(const M& v, const vector& xi, M& out, double) const {
    out.setZero(v.rows(), v.cols());
    out(0, 0) = sigma * xi(0);
    out(0, 1) = out(1, 0) = sigma * xi(1) / std::sqrt(2.0);
    out(1, 1) = sigma * xi(2);
    if (std::abs(v(0, 1)) > inf_above) out(1, 1) = std::numeric_limits<double>::infinity();
  }

  // Templates on the lane count W (cubic_wide declares 32).
  template <int W>
  void drift_lanes(const ncsde::lane_block_of<W>& v, ncsde::lane_block_of<W>& out, double) const {
    out.resize(W, 4);
    cube<ncsde::lane_column_of<W>>(
        [&](int i, int j) { return v.col(i + 2 * j); },
        [&](int i, int j, const ncsde::lane_column_of<W>& s) { out.col(i + 2 * j) = a * s; });
    for (int l = 0; l < W; ++l)
      if (std::abs(v(l, 2)) > nan_above) out(l, 0) = std::numeric_limits<double>::quiet_NaN();
  }
  template <int W>
  void diffusion_lanes(const ncsde::lane_block_of<W>& v, const ncsde::lane_block_of<W>& xi,
                       ncsde::lane_block_of<W>& out, double) const {
    out.resize(W, 4);
    out.col(0) = sigma * xi.col(0);
    out.col(1) = out.col(2) = sigma * xi.col(1) / std::sqrt(2.0);
    out.col(3) = sigma * xi.col(2);
    for (int l = 0; l < W; ++l)
      if (std::abs(v(l, 2)) > inf_above) out(l, 3) = std::numeric_limits<double>::infinity();
  }
};
static_assert(ncsde::BatchedSde<cubic_lanes>);
static_assert(ncsde::lane_width_of<cubic_lanes> == batch_width);

/// The same SDE in lane groups of 32 paths (lanes.hpp: lane_width_of).
struct cubic_wide : cubic_lanes {
  static constexpr int lane_width = 32;
};
static_assert(ncsde::BatchedSde<cubic_wide> && ncsde::lane_width_of<cubic_wide> == 32);
static_assert(ncsde::Sde<cubic_lanes, ncsde::square_matrix<2>>);
static_assert(ncsde::BatchedSde<ncsde::analytic::gbm>);
static_assert(ncsde::BatchedSde<ncsde::analytic::linear_covariance>);
static_assert(ncsde::BatchedSde<ncsde::analytic::hadamard_linear>);
static_assert(ncsde::BatchedSde<ncsde::analytic::lifted_linear>);

problem<cubic_lanes> cubic_problem() {
  matrix v0(2, 2);
  v0 << 1.0, 0.8, 0.8, 1.0;
  return {cubic_lanes{}, v0, 1.0};
}

integrate_options cubic_options() {
  integrate_options io;
  io.dt = 0.02;
  // Projections are among the events these runs order (the default, automatic, counts exits).
  io.policy = ncsde::pd_policy::project;
  io.blowup_threshold = 1e3;
  io.save_times = {0.5, 1.0};
  return io;
}

/// X Xᵀ/m + 3I, X an m×m matrix of standard normals (stream (11, m)): positive definite, well away
/// from the cone's boundary.
matrix well_conditioned_state(int m) {
  matrix x(m, m);
  ncsde::random_stream(11, static_cast<std::uint64_t>(m))
      .normals(ncsde::random_domain::user, 0, 0, x.data(), m * m);
  return x * x.transpose() / m + 3.0 * matrix::Identity(m, m);
}

ensemble_options options(int threads, bool batched, long long paths = 300) {
  ensemble_options eo;
  eo.paths = paths;
  eo.seed = 5;
  eo.threads = threads;
  eo.keep_paths = true;
  eo.batched = batched;
  eo.progress = ncsde::progress_mode::off;
  eo.functionals = {ncsde::correlation_functional(0, 1), ncsde::entry_functional(0, 0)};
  return eo;
}

}  // namespace

TEST_CASE(
    "lane_normals: stream t is random_stream (seed, paths[t]) at i0s[t] bit for bit, on every "
    "path") {
  using ncsde::detail::simd_path;
  // 32 streams: several paths at several steps, a path twice at one step, large words (the
  // Philox4x64 block keys' 64-bit products carry through every 32-bit column).
  std::vector<std::uint64_t> paths = {
      0,        1,        2, 3, 17, 64,    65,        1000,       7, 8, 123456,
      1u << 31, 99999999, 5, 6, 4,  ~0ull, ~0ull - 1, 1ull << 63, 3, 3, 0xDEADBEEFCAFEF00Dull};
  std::vector<std::uint64_t> steps = {9, 9, 9, 9, 9, 9, 9, 9,     9, 9,  9,
                                      9, 9, 9, 9, 9, 0, 1, ~0ull, 9, 10, 1ull << 40};
  while (paths.size() < 32) {
    paths.push_back(paths.size() * 7919);
    steps.push_back(paths.size() % 3);
  }
  for (const simd_path path : ncsde::detail::compiled_simd_paths()) {
    if (!ncsde::detail::simd_path_supported(path)) continue;
    for (const int streams : {1, 3, 4, 8, 13, 16, 17, 24, 32}) {
      for (const std::ptrdiff_t count : {1, 2, 3, 5, 7, 8, 16, 37}) {
        CAPTURE(ncsde::detail::simd_path_name(path));
        CAPTURE(streams);
        CAPTURE(count);
        const std::ptrdiff_t stride = streams + 2;
        std::vector<double> out(static_cast<std::size_t>(count * stride), -7.0);
        ncsde::detail::lane_normals_on(path, 42, paths.data(), steps.data(), streams,
                                       ncsde::random_domain::increments, 3, out.data(), count,
                                       stride);
        long long differing = 0;
        std::vector<double> one(static_cast<std::size_t>(count));
        for (int t = 0; t < streams; ++t) {
          ncsde::random_stream(42, paths[static_cast<std::size_t>(t)])
              .normals(ncsde::random_domain::increments, steps[static_cast<std::size_t>(t)], 3,
                       one.data(), count);
          for (std::ptrdiff_t j = 0; j < count; ++j)
            differing +=
                out[static_cast<std::size_t>(j * stride + t)] != one[static_cast<std::size_t>(j)];
        }
        CHECK(differing == 0);
        // The padding between streams and stride is left alone.
        for (std::ptrdiff_t j = 0; j < count; ++j)
          for (std::ptrdiff_t t = streams; t < stride; ++t)
            CHECK(out[static_cast<std::size_t>(j * stride + t)] == -7.0);
      }
    }
  }
  // The public entry points: lane_normals (one i0) and lane_normals_at agree with the streams.
  std::vector<double> out(64 * 40), one(5);
  ncsde::lane_normals(42, paths.data(), 32, ncsde::random_domain::levy_area, 4, 2, out.data(), 5,
                      40);
  long long differing = 0;
  for (int t = 0; t < 32; ++t) {
    ncsde::random_stream(42, paths[static_cast<std::size_t>(t)])
        .normals(ncsde::random_domain::levy_area, 4, 2, one.data(), 5);
    for (int j = 0; j < 5; ++j)
      differing += out[static_cast<std::size_t>(j * 40 + t)] != one[static_cast<std::size_t>(j)];
  }
  CHECK(differing == 0);
  CHECK(error_of([&] {
          ncsde::lane_normals(1, paths.data(), 33, ncsde::random_domain::increments, 0, 0,
                              out.data(), 1, 33);
        }).find("lanes") != std::string::npos);
  CHECK(error_of([&] {
          ncsde::lane_normals(1, paths.data(), 4, ncsde::random_domain::increments, 0, 0,
                              out.data(), 1, 3);
        }).find("stride") != std::string::npos);
  CHECK(error_of([&] {
          ncsde::lane_normals_at(1, paths.data(), steps.data(), 0, ncsde::random_domain::increments,
                                 0, out.data(), 1, 3);
        }).find("streams") != std::string::npos);
}

TEST_CASE("lane_cholesky: each lane is small_cholesky bit for bit; non-PD lanes are flagged") {
  constexpr int M = 4;
  lane_block v(batch_width, M * M);
  std::vector<ncsde::square_matrix<M>> mats;
  for (int l = 0; l < batch_width; ++l) {
    ncsde::square_matrix<M> x;
    ncsde::random_stream(3, static_cast<std::uint64_t>(l))
        .normals(ncsde::random_domain::user, 0, 0, x.data(), M * M);
    ncsde::square_matrix<M> s = x * x.transpose();
    if (l == 5) s(2, 2) = -1.0;                          // not PD
    if (l == 6) s.col(1).setZero(), s.row(1).setZero();  // singular
    mats.push_back(s);
    for (int b = 0; b < M; ++b)
      for (int a = 0; a < M; ++a) v(l, a + b * M) = s(a, b);
  }
  // On every instruction set the lane arithmetic is compiled for (lanes.hpp).
  const std::vector<std::string> targets = ncsde::detail::lane_targets();
  REQUIRE(!targets.empty());
  for (const std::string& target : targets) {
    const ncsde::detail::lane_target_scope scope(target);
    CAPTURE(target);
    CHECK(ncsde::detail::lane_target() != 0);
    lane_block l(batch_width, M * M);
    ncsde::lane_mask ok;
    ncsde::lane_cholesky(v, M, l, ok);
    for (int lane = 0; lane < batch_width; ++lane) {
      CAPTURE(lane);
      ncsde::square_matrix<M> expected;
      const bool factored =
          ncsde::detail::small_cholesky(mats[static_cast<std::size_t>(lane)], expected);
      CHECK(ok(lane) == factored);
      CHECK(factored == (lane != 5 && lane != 6));
      if (!factored) continue;
      for (int b = 0; b < M; ++b)
        for (int a = 0; a < M; ++a) CHECK(l(lane, a + b * M) == expected(a, b));
    }
    // A group of 16 lanes (two copies of v) factors each lane the same.
    ncsde::lane_block_of<16> v16(16, M * M), l16;
    v16.topRows(batch_width) = v;
    v16.bottomRows(batch_width) = v;
    ncsde::lane_mask_of<16> ok16;
    ncsde::lane_cholesky(v16, M, l16, ok16);
    for (int lane = 0; lane < batch_width; ++lane)
      if (ok(lane)) {
        CHECK((l16.row(lane) == l.row(lane)).all());
        CHECK((l16.row(lane + batch_width) == l.row(lane)).all());
      }
    CHECK((ok16.head(batch_width) == ok).all());
    CHECK((ok16.tail(batch_width) == ok).all());
  }
  CHECK_THROWS_AS(ncsde::detail::lane_target_scope("PDP-11"), ncsde::invalid_argument);
}

TEST_CASE(
    "lane_trial_columns: the per-path step arithmetic and checks, bit for bit, on every "
    "instruction set") {
  // Reference, lane by lane on ncsde::matrix: x = v + ((h·b + n) [+ t]) entry by entry, then
  // symmetrize_measured; nonfinite is 0 exactly for a finite lane, size its max |x|.
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double h = 0x1p-10 * 3.0;
  for (const int lanes : {batch_width, 2 * batch_width})
    for (const int m : {0, 1, 2, 3, 5}) {  // 0: a vector state of 7 coordinates, not symmetrised
      for (const bool with_term : {false, true}) {
        const Eigen::Index k = m == 0 ? 7 : m * m;
        Eigen::ArrayXXd v(lanes, k), b(lanes, k), n(lanes, k), t(lanes, k);
        for (int l = 0; l < lanes; ++l)
          for (Eigen::Index c = 0; c < k; ++c) {
            const double x = static_cast<double>(l) + 0.37 * static_cast<double>(c);
            v(l, c) = 1.0 + std::sin(x);
            b(l, c) = 1e3 * std::cos(0.7 * x);
            n(l, c) = 0.1 * std::sin(1.3 * x + 0.2);
            t(l, c) = 1e-3 * std::cos(2.1 * x);
          }
        // Special lanes: a NaN drift, an infinite noise, an overflow of d + d, a −0 entry, a
        // large asymmetry.
        b(1, 0) = nan;
        n(2, k - 1) = inf;
        v(3, 0) = 1.7e308;
        b(3, 0) = 1e308 / h;
        v(4, 0) = -0.0;
        b(4, 0) = 0.0;
        n(4, 0) = -0.0;
        t(4, 0) = -0.0;
        if (k > 1) v(5, 1) = 40.0;
        std::vector<double> ref_trial(static_cast<std::size_t>(lanes * k)), ref_asym(lanes),
            ref_size(lanes);
        std::vector<bool> ref_finite(static_cast<std::size_t>(lanes));
        for (int l = 0; l < lanes; ++l) {
          matrix x(m == 0 ? k : m, m == 0 ? 1 : m);
          for (Eigen::Index c = 0; c < k; ++c) {
            const double step = h * b(l, c) + n(l, c);
            x.data()[c] = with_term ? v(l, c) + (step + t(l, c)) : v(l, c) + step;
          }
          ref_asym[static_cast<std::size_t>(l)] = m == 0 ? 0.0 : ncsde::symmetrize_measured(x);
          for (Eigen::Index c = 0; c < k; ++c)
            ref_trial[static_cast<std::size_t>(l + c * lanes)] = x.data()[c];
          ref_finite[static_cast<std::size_t>(l)] = x.allFinite();
          ref_size[static_cast<std::size_t>(l)] = x.cwiseAbs().maxCoeff();
        }
        for (const std::string& target : ncsde::detail::lane_targets()) {
          const ncsde::detail::lane_target_scope scope(target);
          CAPTURE(target);
          CAPTURE(lanes);
          CAPTURE(m);
          CAPTURE(with_term);
          Eigen::ArrayXXd trial(lanes, k);
          std::vector<double> asym(lanes, -1.0), nonfinite(lanes, -1.0), size(lanes, -1.0);
          ncsde::detail::lane_trial_args a{};
          a.v = v.data();
          a.drift = b.data();
          a.noise = n.data();
          a.term = with_term ? t.data() : nullptr;
          a.h = h;
          a.lanes = lanes;
          a.k = k;
          a.m = m;
          a.trial = trial.data();
          a.asymmetry = asym.data();
          a.nonfinite = nonfinite.data();
          a.size = size.data();
          ncsde::detail::lane_trial_columns(a);
          for (int l = 0; l < lanes; ++l) {
            CAPTURE(l);
            const auto sl = static_cast<std::size_t>(l);
            for (Eigen::Index c = 0; c < k; ++c) {
              const double want = ref_trial[static_cast<std::size_t>(l + c * lanes)];
              const double got = trial(l, c);
              // The same bits: NaN where the reference has NaN, the sign of zero included.
              if (std::isnan(want)) {
                CHECK(std::isnan(got));
              } else {
                CHECK(std::bit_cast<std::uint64_t>(got) == std::bit_cast<std::uint64_t>(want));
              }
            }
            CHECK((nonfinite[sl] == 0.0) == ref_finite[sl]);
            if (ref_finite[sl]) {
              CHECK(size[sl] == ref_size[sl]);
              CHECK(std::bit_cast<std::uint64_t>(asym[sl]) ==
                    std::bit_cast<std::uint64_t>(ref_asym[sl]));
            }
          }
          CHECK(nonfinite[1] != 0.0);             // NaN drift
          CHECK(nonfinite[2] != 0.0);             // infinite noise
          if (m > 0) CHECK(nonfinite[3] != 0.0);  // d + d overflows on the diagonal
          CHECK(std::signbit(trial(4, 0)) == std::signbit(ref_trial[4]));
          if (m > 1) CHECK(asym[5] > 1.0);
        }
      }
    }
}

TEST_CASE("lane_product and lane_product_transposed: the same bits on every instruction set") {
  for (const int m : {1, 2, 3, 4, 5, 8}) {
    lane_block l(batch_width, m * m), x(batch_width, 2 * m * m);
    for (int lane = 0; lane < batch_width; ++lane) {
      for (int c = 0; c < m * m; ++c) {
        l(lane, c) = std::sin(1.0 + lane + 0.37 * c);
        x(lane, c) = std::cos(2.0 + 0.5 * lane - 0.29 * c);
        x(lane, m * m + c) = std::sin(0.3 * lane * c);
      }
    }
    // X as the right columns of a wider block (a Ref with the parent's stride), as the models
    // pass their noise.
    const Eigen::Ref<const lane_block> x_right = x.rightCols(m * m);
    lane_block widest[4];
    bool first = true;
    for (const std::string& target : ncsde::detail::lane_targets()) {
      const ncsde::detail::lane_target_scope scope(target);
      CAPTURE(target);
      CAPTURE(m);
      lane_block p[4];
      ncsde::lane_product(l, x_right, m, false, p[0]);
      ncsde::lane_product(l, x_right, m, true, p[1]);
      ncsde::lane_product_transposed(x_right, l, m, false, p[2]);
      ncsde::lane_product_transposed(x_right, l, m, true, p[3]);
      if (first) {
        for (int i = 0; i < 4; ++i) widest[i] = p[i];
        first = false;
        // Against Eigen's product on lane 2 (another summation order: round-off).
        Eigen::MatrixXd lm(m, m), xm(m, m);
        for (int c = 0; c < m * m; ++c)
          lm(c % m, c / m) = l(2, c), xm(c % m, c / m) = x_right(2, c);
        const Eigen::MatrixXd full = lm * xm, tr = xm * lm.transpose();
        for (int c = 0; c < m * m; ++c) {
          CHECK(p[0](2, c) == doctest::Approx(full(c % m, c / m)).epsilon(1e-13));
          CHECK(p[2](2, c) == doctest::Approx(tr(c % m, c / m)).epsilon(1e-13));
        }
      }
      for (int i = 0; i < 4; ++i) CHECK((p[i] == widest[i]).all());
    }
  }
}

namespace {
/// Lane `lane` of an m×m lane block as a matrix.
matrix lane_as_matrix(const lane_block& x, int lane, int m) {
  matrix out(m, m);
  for (int c = 0; c < m * m; ++c) out(c % m, c / m) = x(lane, c);
  return out;
}
}  // namespace

TEST_CASE(
    "matrix_product, matrix_product_transposed, matrix_cholesky: a lane's numbers bit for bit, "
    "every target") {
  // The per-path dense kernels (dense_kernels.hpp) against the lane arithmetic, lane by lane, on
  // every instruction set: sizes with no full vector of rows, whole vectors, and leftover rows on
  // every vector width; `lower` with a full L (the same terms skipped) as well as a triangular one.
  for (const int m : {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 24}) {
    const int mm = m * m;
    lane_block l(batch_width, mm), x(batch_width, mm), v(batch_width, mm);
    for (int lane = 0; lane < batch_width; ++lane) {
      matrix g(m, m);
      for (int c = 0; c < mm; ++c) {
        l(lane, c) = std::sin(1.0 + lane + 0.37 * c);
        x(lane, c) = std::cos(2.0 + 0.5 * lane - 0.29 * c);
        g(c % m, c / m) = std::sin(0.7 * lane + 0.13 * c * c);
      }
      // V = G Gᵀ + m I/4: positive definite; lane 3 (m > 1) gets a negative eigenvalue.
      matrix vm = g * g.transpose() + 0.25 * m * matrix::Identity(m, m);
      if (lane == 3 && m > 1) vm(m - 1, m - 1) = -1.0;
      for (int c = 0; c < mm; ++c) v(lane, c) = vm(c % m, c / m);
    }
    for (const std::string& target : ncsde::detail::lane_targets()) {
      const ncsde::detail::lane_target_scope scope(target);
      CAPTURE(target);
      CAPTURE(m);
      lane_block p[4], factors;
      ncsde::lane_mask ok;
      ncsde::lane_product(l, x, m, false, p[0]);
      ncsde::lane_product(l, x, m, true, p[1]);
      ncsde::lane_product_transposed(x, l, m, false, p[2]);
      ncsde::lane_product_transposed(x, l, m, true, p[3]);
      ncsde::lane_cholesky(v, m, factors, ok);
      for (int lane = 0; lane < batch_width; ++lane) {
        CAPTURE(lane);
        const matrix lm = lane_as_matrix(l, lane, m), xm = lane_as_matrix(x, lane, m),
                     vm = lane_as_matrix(v, lane, m);
        matrix out(m, m);
        for (int i = 0; i < 4; ++i) {
          const bool lower = i % 2 == 1;
          if (i < 2)
            ncsde::detail::matrix_product(lm.data(), xm.data(), m, lower, out.data());
          else
            ncsde::detail::matrix_product_transposed(xm.data(), lm.data(), m, lower, out.data());
          CHECK(out == lane_as_matrix(p[i], lane, m));
        }
        matrix f(m, m);
        const bool factored = ncsde::detail::matrix_cholesky(vm.data(), m, f.data());
        CHECK(factored == ok(lane));
        CHECK(factored == (lane != 3 || m == 1));
        if (factored) {
          CHECK(f == lane_as_matrix(factors, lane, m));
          CHECK(((f * f.transpose() - vm).cwiseAbs().maxCoeff()) <=
                1e-13 * vm.cwiseAbs().maxCoeff());
        }
      }
    }
  }
}

TEST_CASE("all_finite: Eigen's allFinite on every target, every length and position") {
  const double bad[] = {std::numeric_limits<double>::quiet_NaN(),
                        std::numeric_limits<double>::infinity(),
                        -std::numeric_limits<double>::infinity()};
  for (const std::string& target : ncsde::detail::lane_targets()) {
    const ncsde::detail::lane_target_scope scope(target);
    CAPTURE(target);
    for (const int n : {0, 1, 7, 8, 15, 16, 17, 63, 64, 65, 100, 4096}) {
      CAPTURE(n);
      vector x = vector::LinSpaced(n, -1e300, 1e300);
      CHECK(ncsde::detail::all_finite(x.data(), n));
      CHECK(ncsde::detail::all_finite(x) == x.allFinite());
      for (int at : {0, n / 2, n - 1}) {
        if (n == 0) continue;
        for (const double b : bad) {
          CAPTURE(at);
          vector y = x;
          y(at) = b;
          CHECK_FALSE(ncsde::detail::all_finite(y.data(), n));
          CHECK_FALSE(ncsde::detail::all_finite(y));
        }
      }
    }
    // The largest finite values stay finite (x − x is 0, not an overflow).
    vector big = vector::Constant(40, std::numeric_limits<double>::max());
    CHECK(ncsde::detail::all_finite(big.data(), 40));
  }
}

TEST_CASE(
    "batched run_ensemble: a declared lane width of 32 gives the per-path bits too, for any thread "
    "count, path range and policy") {
  const auto narrow = cubic_problem();
  const problem<cubic_wide> wide{cubic_wide{}, narrow.v0, narrow.t_end};
  const auto io = cubic_options();
  const ncsde::euler_maruyama<> em;
  const ensemble_result per_path = ncsde::run_ensemble(em, narrow, io, options(1, false));
  REQUIRE(per_path.blown_up >= 10);
  REQUIRE(per_path.pd.violations > 0);
  for (const int threads : {1, 2}) {
    const ensemble_result w = ncsde::run_ensemble(em, wide, io, options(threads, true));
    check_identical(per_path, w);
    // The outputs name the thread count: against the per-path run on as many threads.
    CHECK(all_outputs(ncsde::run_ensemble(em, narrow, io, options(threads, false))) ==
          all_outputs(w));
  }
  // Pieces that start and end inside blocks: groups are cut at the pieces' and blocks' edges.
  std::vector<ncsde::ensemble_partial> pieces;
  for (const auto& [first, last] : {std::pair{0LL, 37LL}, {37LL, 211LL}, {211LL, 300LL}})
    pieces.push_back(
        ncsde::run_ensemble_range(em, wide, io, options(2, true), ncsde::path_range{first, last}));
  CHECK(all_outputs(ncsde::finish_ensemble(ncsde::merge_partials(pieces), options(2, true))) ==
        all_outputs(ncsde::run_ensemble(em, narrow, io, options(2, false))));
  auto counted = io;
  counted.policy = ncsde::pd_policy::count;
  counted.stop_condition = [](const matrix& v, double) { return v(0, 0) > 2.0; };
  const ensemble_result c1 = ncsde::run_ensemble(em, narrow, counted, options(2, false));
  const ensemble_result c2 = ncsde::run_ensemble(em, wide, counted, options(2, true));
  REQUIRE(c1.stopped > 10);
  CHECK(all_outputs(c1) == all_outputs(c2));
  const ncsde::milstein_commutative<> mil;
  CHECK(all_outputs(ncsde::run_ensemble(mil, narrow, io, options(2, false))) ==
        all_outputs(ncsde::run_ensemble(mil, wide, io, options(2, true))));
}

TEST_CASE(
    "batched run_ensemble: a user SDE computing in the same order gives bit-identical paths, with "
    "blow-ups, cone exits and projections") {
  const auto prob = cubic_problem();
  const auto io = cubic_options();
  const ncsde::euler_maruyama<> em;
  const ensemble_result per_path = ncsde::run_ensemble(em, prob, io, options(1, false));
  const ensemble_result batched = ncsde::run_ensemble(em, prob, io, options(1, true));
  REQUIRE(per_path.blown_up >= 10);  // every kind of event is in the run
  REQUIRE(per_path.pd.violations > 0);
  CHECK(per_path.pd.projected == per_path.pd.violations);
  check_identical(per_path, batched);
  CHECK(all_outputs(per_path) == all_outputs(batched));

  SUBCASE("count and throw policies, lane by lane") {
    auto counted = io;
    counted.policy = ncsde::pd_policy::count;
    const ensemble_result a = ncsde::run_ensemble(em, prob, counted, options(2, false));
    const ensemble_result b = ncsde::run_ensemble(em, prob, counted, options(2, true));
    REQUIRE(a.pd.violations > 0);
    CHECK(a.pd.projected == 0);
    CHECK(all_outputs(a) == all_outputs(b));
    auto thrown = io;
    thrown.policy = ncsde::pd_policy::throw_error;
    const std::string m1 =
        error_of([&] { ncsde::run_ensemble(em, prob, thrown, options(2, false)); });
    const std::string m2 =
        error_of([&] { ncsde::run_ensemble(em, prob, thrown, options(2, true)); });
    CHECK(m1.find("left the positive-semidefinite cone") != std::string::npos);
    CHECK(m1 == m2);  // the same lowest path, step and eigenvalue
  }
  SUBCASE("a stop condition, lane by lane") {
    auto stopping = io;
    stopping.stop_condition = [](const matrix& v, double) { return v(0, 0) > 2.0; };
    const ensemble_result a = ncsde::run_ensemble(em, prob, stopping, options(2, false));
    const ensemble_result b = ncsde::run_ensemble(em, prob, stopping, options(2, true));
    REQUIRE(a.stopped > 10);
    CHECK(all_outputs(a) == all_outputs(b));
  }
  SUBCASE("a non-finite drift names the same lowest path as the unbatched run") {
    auto p = prob;
    p.sde.nan_above = 1.5;
    const std::string m1 = error_of([&] { ncsde::run_ensemble(em, p, io, options(2, false)); });
    const std::string m2 = error_of([&] { ncsde::run_ensemble(em, p, io, options(2, true)); });
    CHECK(m1.find("the drift returned a non-finite value at path") != std::string::npos);
    CHECK(m1 == m2);
  }
  SUBCASE("an infinite noise map names the same lowest path as the unbatched run") {
    // The engine scans the coefficients only when a trial state is not finite: an infinite G dW
    // makes the trial infinite, and the error still names the noise map.
    auto p = prob;
    p.sde.inf_above = 1.5;
    const std::string m1 = error_of([&] { ncsde::run_ensemble(em, p, io, options(2, false)); });
    const std::string m2 = error_of([&] { ncsde::run_ensemble(em, p, io, options(2, true)); });
    CHECK(m1.find("the noise map returned a non-finite value at path") != std::string::npos);
    CHECK(m1 == m2);
  }
}

TEST_CASE(
    "batched run_ensemble: bit-identical for any thread count and any cut of the path range") {
  const auto prob = cubic_problem();
  const auto io = cubic_options();
  const ncsde::euler_maruyama<> em;
  const auto eo = options(2, true);
  // The outputs but the reported thread count.
  auto outputs = [](ensemble_result r) {
    r.threads = 2;
    return all_outputs(std::move(r));
  };
  const std::string expected = outputs(ncsde::run_ensemble(em, prob, io, options(1, true)));
  CHECK(outputs(ncsde::run_ensemble(em, prob, io, eo)) == expected);
  CHECK(outputs(ncsde::run_ensemble(em, prob, io, options(3, true))) == expected);
  for (const std::vector<long long>& cut :
       std::vector<std::vector<long long>>{{1}, {63, 65}, {7, 150, 299}}) {
    std::vector<long long> ends = cut;
    ends.insert(ends.begin(), 0);
    ends.push_back(eo.paths);
    std::vector<ncsde::ensemble_partial> pieces;
    for (std::size_t i = 0; i + 1 < ends.size(); ++i)
      pieces.push_back(
          ncsde::run_ensemble_range(em, prob, io, eo, ncsde::path_range{ends[i], ends[i + 1]}));
    CHECK(outputs(ncsde::finish_ensemble(ncsde::merge_partials(pieces), eo)) == expected);
  }
}

TEST_CASE("batched run_ensemble: GBM paths are bit-identical to the unbatched ones (m = 1, 2, 3)") {
  const ncsde::euler_maruyama<> em;
  integrate_options io;
  io.dt = 0.01;
  io.save_times = {0.5};
  for (const int m : {1, 2, 3}) {
    CAPTURE(m);
    matrix v0 = matrix::Identity(m, m);
    if (m > 1) v0(0, 1) = v0(1, 0) = 0.3;
    const problem<ncsde::analytic::gbm> prob{ncsde::analytic::gbm({0.5, 0.8}), v0, 1.0};
    auto eo = options(2, false, 101);
    eo.functionals.clear();
    const ensemble_result a = ncsde::run_ensemble(em, prob, io, eo);
    eo.batched = true;
    const ensemble_result b = ncsde::run_ensemble(em, prob, io, eo);
    check_identical(a, b);
  }
}

TEST_CASE(
    "batched run_ensemble: the linear covariance and Wishart SDEs agree with the unbatched paths "
    "to round-off (fixed m = 2, 4, dynamic m = 5)") {
  const ncsde::euler_maruyama<> em;
  integrate_options io;
  io.dt = 0.01;
  for (const int m : {2, 4, 5}) {
    CAPTURE(m);
    const matrix v0 = well_conditioned_state(m);
    auto eo = options(2, false, 90);
    eo.functionals.clear();
    // The per-path and the batched run of one problem: the same statuses and cone exits, states
    // within the round-off of a few hundred operations (50 steps of sums of m products).
    auto compare = [&](const auto& prob, const integrate_options& o) {
      const ensemble_result a = ncsde::run_ensemble(em, prob, o, eo);
      auto eb = eo;
      eb.batched = true;
      const ensemble_result b = ncsde::run_ensemble(em, prob, o, eb);
      CHECK(largest_relative_difference(a, b) < 1e-12);
      CHECK(a.pd.violations == b.pd.violations);
    };
    compare(problem<ncsde::analytic::linear_covariance>{{}, v0, 0.5}, io);
    // Under `count`: a projected state lies on the cone's boundary, where the factor L jumps from
    // the Cholesky factor to the PSD square root, and a round-off difference can take the other
    // branch there ("agree to round-off" is a statement about paths off the boundary).
    auto counted = io;
    counted.policy = ncsde::pd_policy::count;
    compare(problem<ncsde::analytic::wishart>{ncsde::analytic::wishart(m + 1.0), v0, 0.5}, counted);
  }
}

TEST_CASE(
    "batched run_ensemble: the Hadamard linear SDE is bit-identical to the unbatched paths, the "
    "lifted linear SDE agrees to round-off (fixed m = 2, 4, dynamic m = 5)") {
  const ncsde::euler_maruyama<> em;
  integrate_options io;
  io.dt = 0.01;
  io.save_times = {0.25};
  io.policy = ncsde::pd_policy::count;  // cone exits counted, the paths go on unchanged
  for (const int m : {2, 4, 5}) {
    CAPTURE(m);
    // Coefficient `which`: scale · X, X with standard normal entries (symmetrised when asked).
    auto coefficient = [m](int which, double scale, bool symmetric) {
      matrix x(m, m);
      ncsde::random_stream(13, static_cast<std::uint64_t>(m))
          .normals(ncsde::random_domain::user, static_cast<std::uint64_t>(which), 0, x.data(),
                   m * m);
      if (symmetric) x = ((x + x.transpose()) / 2.0).eval();
      return matrix(scale * x);
    };
    const matrix v0 = well_conditioned_state(m);
    auto eo = options(2, false, 90);
    eo.functionals.clear();
    auto batched = eo;
    batched.batched = true;
    // General symmetric A and B_j (not a lift of a diagonal SDE): the Schur products take many
    // paths out of the cone, and every count and state is the unbatched one, bit for bit.
    const problem<ncsde::analytic::hadamard_linear> h{
        ncsde::analytic::hadamard_linear(coefficient(0, 0.5, true),
                                         {coefficient(1, 2.0, true), coefficient(2, 2.0, true)}),
        v0, 0.5};
    const ensemble_result ha = ncsde::run_ensemble(em, h, io, eo);
    REQUIRE(ha.pd.violations > 0);
    check_identical(ha, ncsde::run_ensemble(em, h, io, batched));
    // Non-commuting A, B_j: lane products sum in another order than Eigen's, so the states agree
    // within the round-off of 50 steps of sums of m products, with the same cone exits.
    const problem<ncsde::analytic::lifted_linear> l{
        ncsde::analytic::lifted_linear(coefficient(3, 0.5, false),
                                       {coefficient(4, 0.7, false), coefficient(5, 0.7, false)}),
        v0, 0.5};
    const ensemble_result la = ncsde::run_ensemble(em, l, io, eo);
    const ensemble_result lb = ncsde::run_ensemble(em, l, io, batched);
    CHECK(largest_relative_difference(la, lb) < 1e-12);
    CHECK(la.pd.violations == lb.pd.violations);
    MESSAGE("lifted_linear m = ", m, ": largest relative difference ",
            largest_relative_difference(la, lb), ", cone exits ", la.pd.violations);
  }
}

TEST_CASE("batched run_ensemble: runs it cannot take are stepped path by path, unchanged") {
  const auto prob = cubic_problem();
  const auto io = cubic_options();
  auto eo = options(2, true);
  // Refine and adaptive steps: the batched flag changes nothing.
  auto off = eo;
  off.batched = false;
  const ncsde::euler_maruyama<> em;
  // Outputs, or the error a run ends with.
  auto outcome = [&](const integrate_options& o, const ensemble_options& e) {
    std::string text;
    const std::string error =
        error_of([&] { text = all_outputs(ncsde::run_ensemble(em, prob, o, e)); });
    return error.empty() ? text : error;
  };
  auto refine = io;
  refine.policy = ncsde::pd_policy::refine;
  refine.refine_depth = 12;
  CHECK(outcome(refine, eo) == outcome(refine, off));
  auto adaptive = io;
  adaptive.control = ncsde::step_control::increment;
  CHECK(outcome(adaptive, eo) == outcome(adaptive, off));
}

TEST_CASE(
    "batched run_ensemble: commutative Milstein (derivative-free) lane by lane agrees with the "
    "per-path scheme") {
  const ncsde::milstein_commutative<> free_form{ncsde::milstein_derivative::derivative_free};
  SUBCASE("GBM (one noise): bit-identical, m = 1, 2, 3, any thread count") {
    integrate_options io;
    io.dt = 0.01;
    io.save_times = {0.5};
    for (const int m : {1, 2, 3}) {
      CAPTURE(m);
      matrix v0 = matrix::Identity(m, m);
      if (m > 1) v0(0, 1) = v0(1, 0) = 0.3;
      const problem<ncsde::analytic::gbm> prob{ncsde::analytic::gbm({0.5, 0.8}), v0, 1.0};
      auto eo = options(1, false, 101);
      eo.functionals.clear();
      const ensemble_result a = ncsde::run_ensemble(free_form, prob, io, eo);
      eo.batched = true;
      const ensemble_result b = ncsde::run_ensemble(free_form, prob, io, eo);
      check_identical(a, b);
      eo.threads = 3;
      ensemble_result c = ncsde::run_ensemble(free_form, prob, io, eo);
      c.threads = b.threads;
      CHECK(all_outputs(c) == all_outputs(b));
    }
  }
  SUBCASE(
      "several noises: bit-identical where the lane coefficients compute in the per-path "
      "order, to round-off elsewhere") {
    // The cubic SDE (k = 3; its batched form computes as its per-path form) with blow-ups, cone
    // exits and projections: bit for bit. The linear covariance SDE (k = m², multiplicative; its
    // lane products sum in another order than Eigen's) at fixed m = 2, 4 and dynamic m = 5: the
    // same events, states within round-off.
    const auto prob = cubic_problem();
    const auto io = cubic_options();
    const ensemble_result a = ncsde::run_ensemble(free_form, prob, io, options(2, false));
    const ensemble_result b = ncsde::run_ensemble(free_form, prob, io, options(2, true));
    REQUIRE(a.blown_up >= 10);
    REQUIRE(a.pd.violations > 0);
    check_identical(a, b);
    CHECK(all_outputs(a) == all_outputs(b));
    integrate_options lin;
    lin.dt = 0.01;
    for (const int m : {2, 4, 5}) {
      CAPTURE(m);
      const matrix v0 = well_conditioned_state(m);
      const problem<ncsde::analytic::linear_covariance> p{{}, v0, 0.5};
      auto eo = options(2, false, 90);
      eo.functionals.clear();
      const ensemble_result c = ncsde::run_ensemble(free_form, p, lin, eo);
      eo.batched = true;
      const ensemble_result d = ncsde::run_ensemble(free_form, p, lin, eo);
      CHECK(largest_relative_difference(c, d) < 1e-12);
      CHECK(c.pd.violations == d.pd.violations);
    }
  }
  SUBCASE("the analytic derivative form is not batched: the flag changes nothing") {
    // GBM has diffusion_derivative, so `automatic` resolves to the analytic form.
    const ncsde::milstein_commutative<> automatic;
    const problem<ncsde::analytic::gbm> prob{ncsde::analytic::gbm({0.5, 0.8}),
                                             matrix::Constant(1, 1, 1.0), 1.0};
    integrate_options io;
    io.dt = 0.01;
    auto eo = options(2, false, 64);
    eo.functionals.clear();
    const std::string off = all_outputs(ncsde::run_ensemble(automatic, prob, io, eo));
    eo.batched = true;
    CHECK(all_outputs(ncsde::run_ensemble(automatic, prob, io, eo)) == off);
    // ... and differs from the derivative-free form (so the comparison above means something).
    CHECK(all_outputs(ncsde::run_ensemble(free_form, prob, io, eo)) != off);
  }
}

TEST_CASE(
    "batched run_ensemble: general Milstein lane by lane, each lane's Levy areas from its own "
    "stream, is the per-path scheme bit for bit") {
  static_assert(ncsde::LaneScheme<ncsde::milstein<ncsde::square_matrix<2>>, cubic_lanes>);
  static_assert(ncsde::LaneScheme<ncsde::milstein<matrix>, cubic_lanes>);
  const ncsde::milstein<> mil{ncsde::milstein_derivative::derivative_free};
  // The cubic SDE (k = 3, non-commutative noise) with blow-ups, cone exits and projections.
  const auto prob = cubic_problem();
  const auto io = cubic_options();
  const ensemble_result a = ncsde::run_ensemble(mil, prob, io, options(1, false));
  REQUIRE(a.blown_up >= 10);
  REQUIRE(a.pd.violations > 0);
  REQUIRE(a.pd.projected > 0);
  const ensemble_result b = ncsde::run_ensemble(mil, prob, io, options(1, true));
  check_identical(a, b);
  CHECK(all_outputs(a) == all_outputs(b));
  // ... and the areas matter: commutative Milstein on the same streams gives other paths.
  const ncsde::milstein_commutative<> commutative{ncsde::milstein_derivative::derivative_free};
  CHECK(all_outputs(ncsde::run_ensemble(commutative, prob, io, options(1, true))) !=
        all_outputs(b));
  SUBCASE("any thread count, and the other area methods and a Chen-consistent area tree") {
    ensemble_result c = ncsde::run_ensemble(mil, prob, io, options(3, true));
    c.threads = b.threads;
    CHECK(all_outputs(c) == all_outputs(b));
    for (const int depth : {0, 2})
      for (const ncsde::levy_area_method method :
           {ncsde::levy_area_method::fourier, ncsde::levy_area_method::wiktorsson}) {
        CAPTURE(depth);
        CAPTURE(static_cast<int>(method));
        auto other = io;
        other.area_depth = depth;
        other.levy_area = method;
        const ensemble_result d = ncsde::run_ensemble(mil, prob, other, options(2, false));
        const ensemble_result e = ncsde::run_ensemble(mil, prob, other, options(2, true));
        check_identical(d, e);
      }
  }
  SUBCASE("a stop condition and the count policy, lane by lane") {
    auto stopping = io;
    stopping.policy = ncsde::pd_policy::count;
    stopping.stop_condition = [](const matrix& v, double) { return v(0, 0) > 2.0; };
    const ensemble_result c = ncsde::run_ensemble(mil, prob, stopping, options(2, false));
    REQUIRE(c.stopped > 10);
    CHECK(all_outputs(c) ==
          all_outputs(ncsde::run_ensemble(mil, prob, stopping, options(2, true))));
  }
}

TEST_CASE(
    "batched run_ensemble: the predictor-corrector lane by lane is bit-identical to the per-path "
    "scheme where the lane coefficients compute in the per-path order") {
  // The scheme declares a lane form (LaneScheme), so the batched runs below take the batched
  // engine on the states it steps (the fixed-size ones included).
  static_assert(
      ncsde::LaneScheme<ncsde::predictor_corrector<ncsde::square_matrix<2>>, cubic_lanes>);
  static_assert(ncsde::LaneScheme<ncsde::predictor_corrector<matrix>, ncsde::analytic::gbm>);
  const ncsde::predictor_corrector<> pc;
  SUBCASE("GBM, m = 1, 2, 3") {
    integrate_options io;
    io.dt = 0.01;
    io.save_times = {0.5};
    for (const int m : {1, 2, 3}) {
      CAPTURE(m);
      matrix v0 = matrix::Identity(m, m);
      if (m > 1) v0(0, 1) = v0(1, 0) = 0.3;
      const problem<ncsde::analytic::gbm> prob{ncsde::analytic::gbm({0.5, 0.8}), v0, 1.0};
      auto eo = options(2, false, 101);
      eo.functionals.clear();
      const ensemble_result a = ncsde::run_ensemble(pc, prob, io, eo);
      eo.batched = true;
      const ensemble_result b = ncsde::run_ensemble(pc, prob, io, eo);
      check_identical(a, b);
    }
  }
  SUBCASE("the cubic SDE: blow-ups, cone exits and projections, any thread count") {
    // The predictor is symmetrised before the drift sees it (the cubic SDE lives on the cone).
    const auto prob = cubic_problem();
    const auto io = cubic_options();
    const ensemble_result a = ncsde::run_ensemble(pc, prob, io, options(2, false));
    const ensemble_result b = ncsde::run_ensemble(pc, prob, io, options(2, true));
    REQUIRE(a.blown_up > 0);
    REQUIRE(a.pd.violations > 0);
    check_identical(a, b);
    CHECK(all_outputs(a) == all_outputs(b));
    ensemble_result c = ncsde::run_ensemble(pc, prob, io, options(3, true));
    c.threads = b.threads;
    CHECK(all_outputs(c) == all_outputs(b));
  }
  SUBCASE("a non-finite drift names the same lowest path as the unbatched run") {
    auto p = cubic_problem();
    p.sde.nan_above = 1.5;
    const auto io = cubic_options();
    const std::string m1 = error_of([&] { ncsde::run_ensemble(pc, p, io, options(2, false)); });
    const std::string m2 = error_of([&] { ncsde::run_ensemble(pc, p, io, options(2, true)); });
    CHECK(m1.find("the drift returned a non-finite value at path") != std::string::npos);
    CHECK(m1 == m2);
  }
}
