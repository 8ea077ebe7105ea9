/// State spaces (euclidean, symmetric, PSD cone), vector and rectangular states, public noise
/// sources, and the checks at the boundary that go with them.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "ncsde/brownian.hpp"
#include "ncsde/convergence.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/ensemble_io.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/odeint.hpp"
#include "ncsde/state_space.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/steppers/milstein.hpp"
#include "support/simple_sdes.hpp"

namespace {

using ncsde::matrix;
using ncsde::vector;

/// dX = −¼X(1 − X²) dt + ½(1 − X²) dW on ℝ (k = 1), solved by X_t = tanh(W_t/2 + artanh X₀): by Itô,
/// d tanh(Z) = (1 − tanh²Z) dZ − tanh Z (1 − tanh²Z) d⟨Z⟩ with dZ = dW/2. States of either sign; the
/// SDE declares nothing, so it is euclidean. Written for any state type (1×1 matrix or 1-vector,
/// dynamic or fixed), as a templated user SDE would be.
struct tanh_sde {
  int noise_dimension(int) const { return 1; }
  template <class State>
  void drift(const State& x, State& out, double) const {
    out(0, 0) = -0.25 * x(0, 0) * (1.0 - x(0, 0) * x(0, 0));
  }
  template <class State>
  void diffusion(const State& x, const vector& xi, State& out, double) const {
    out(0, 0) = 0.5 * (1.0 - x(0, 0) * x(0, 0)) * xi(0);
  }
};
static_assert(ncsde::state_space_of<tanh_sde> == ncsde::state_space::euclidean);

/// E tanh(W_T/2 + artanh x0), W_T ~ N(0, T): Simpson's rule on [−12, 12] standard deviations with
/// 4000 intervals (the integrand is smooth and bounded; the error is far below 1e-12).
double tanh_mean(double x0, double t) {
  const int n = 4000;
  const double a = -12.0, b = 12.0, h = (b - a) / n;
  double sum = 0.0;
  for (int i = 0; i <= n; ++i) {
    const double z = a + i * h;
    const double f = std::tanh(0.5 * std::sqrt(t) * z + std::atanh(x0)) * std::exp(-0.5 * z * z);
    sum += f * (i == 0 || i == n ? 1.0 : (i % 2 == 1 ? 4.0 : 2.0));
  }
  return sum * h / 3.0 / std::sqrt(2.0 * M_PI);
}

/// dX = A X dt + Σ_j B_j X dW_j on ℝ² or on n×m matrices X (A n×n, B_j n×n), plus additive noise
/// σ·Ξ on the entries when `additive` > 0 (k = k_mult + n·m). Non-diagonal noise; states of either
/// sign; euclidean. Euler–Maruyama's mean is exact: E X_{i+1} = (I + h_i A) E X_i.
template <class State>
struct linear_sde {
  using state_type = State;
  matrix a;
  std::vector<matrix> b;
  double additive = 0.0;
  Eigen::Index cols = 1;

  int noise_dimension(int rows) const {
    return static_cast<int>(b.size()) + (additive > 0 ? rows * static_cast<int>(cols) : 0);
  }
  void drift(const State& x, State& out, double) const { out = a * x; }
  void diffusion(const State& x, const vector& xi, State& out, double) const {
    out.setZero(x.rows(), x.cols());
    for (std::size_t j = 0; j < b.size(); ++j) out += xi(static_cast<Eigen::Index>(j)) * (b[j] * x);
    if (additive > 0)
      for (Eigen::Index c = 0, i = static_cast<Eigen::Index>(b.size()); c < x.cols(); ++c)
        for (Eigen::Index r = 0; r < x.rows(); ++r, ++i) out(r, c) += additive * xi(i);
  }
};

/// E X_T of Euler–Maruyama for linear_sde on integrate()'s grid.
template <class State>
State euler_mean(const linear_sde<State>& sde, const State& x0, double t_end, double dt) {
  const ncsde::step_grid grid(0.0, t_end, dt);
  State x = x0;
  for (long long i = 0; i < grid.steps; ++i) x = (x + grid.step_size(i) * (sde.a * x)).eval();
  return x;
}

/// Every coordinate of the ensemble's terminal mean within 4 Monte Carlo standard errors of the
/// exact one (4 SE: a false alarm about once in 16 000 per coordinate).
void check_terminal_mean(const ncsde::ensemble_result& r, const vector& exact) {
  REQUIRE(r.terminal.count() == r.paths);
  const vector mean = r.terminal.mean();
  const vector se = r.terminal.standard_error();
  REQUIRE(mean.size() == exact.size());
  for (Eigen::Index i = 0; i < exact.size(); ++i) {
    INFO("coordinate ", i, ": mean ", mean(i), ", exact ", exact(i), ", stderr ", se(i));
    CHECK(std::abs(mean(i) - exact(i)) <= 4 * se(i));
  }
}

void check_no_cone_counters(const ncsde::ensemble_result& r) {
  CHECK(r.pd.violations == 0);
  CHECK(r.pd.projected == 0);
  CHECK(r.pd.refined == 0);
  CHECK(r.pd.boundary == 0);
  CHECK(r.paths_with_violations == 0);
}

ncsde::ensemble_options quiet(long long paths, std::uint64_t seed = 3) {
  ncsde::ensemble_options eo;
  eo.paths = paths;
  eo.seed = seed;
  eo.threads = 2;
  eo.progress = ncsde::progress_mode::off;
  return eo;
}

}  // namespace

TEST_CASE("a scalar SDE with negative states: default options, exact mean, no cone counters") {
  // Paths cross zero freely; under the old forced cone this mean was biased by z = +44.
  for (const double x0 : {0.5, -0.3, 0.2}) {
    const ncsde::problem<tanh_sde> prob{tanh_sde{}, matrix::Constant(1, 1, x0), 1.0};
    ncsde::integrate_options io;
    io.dt = 2e-3;
    // 20 000 paths: stderr ≈ 0.003, against an EM weak error O(dt) ≈ 1e-4 here.
    const ncsde::ensemble_result r =
        ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, quiet(20'000));
    INFO("x0 = ", x0);
    MESSAGE("x0 = ", x0, ": E X_1 = ", r.terminal.mean()(0), " ± ", r.terminal.standard_error()(0),
            " (exact ", tanh_mean(x0, 1.0), ")");
    CHECK(r.completed == r.paths);
    check_terminal_mean(r, vector::Constant(1, tanh_mean(x0, 1.0)));
    check_no_cone_counters(r);
    CHECK(r.layout.space == ncsde::state_space::euclidean);
  }
}

TEST_CASE("scalar states: 1×1 matrix, 1-vector, fixed and dynamic sizes give the same path") {
  ncsde::integrate_options io;
  io.dt = 1e-2;
  ncsde::euler_maruyama<> em;
  const ncsde::problem<tanh_sde> as_matrix{tanh_sde{}, matrix::Constant(1, 1, -0.4), 1.0};
  const ncsde::problem<tanh_sde, vector> as_vector{tanh_sde{}, vector::Constant(1, -0.4), 1.0};
  // The scalar fast path steps square_matrix<1> / column_vector<1>.
  const int fixed_rows = ncsde::detail::visit_state_type<ncsde::euler_maruyama<>, tanh_sde, vector>(
      1, 1, []<class State>(std::type_identity<State>) { return int(State::RowsAtCompileTime); });
  CHECK(fixed_rows == 1);
  for (std::uint64_t path = 0; path < 5; ++path) {
    const ncsde::path_result m = ncsde::integrate(em, as_matrix, io, 9, path);
    const ncsde::basic_path_result<vector> v = ncsde::integrate(em, as_vector, io, 9, path);
    // The same operations on one double in either layout: the same bits.
    CHECK(m.v(0, 0) == v.v(0));
    CHECK(m.pd.violations == 0);
  }
}

TEST_CASE("the stop level needs a square matrix state: a 1-vector is refused, a 1×1 matrix stops") {
  ncsde::integrate_options io;
  io.dt = 1e-2;
  io.stop_level = 0.2;
  const ncsde::euler_maruyama<> em;
  const ncsde::problem<tanh_sde, vector> as_vector{tanh_sde{}, vector::Constant(1, 0.1), 1.0};
  CHECK_THROWS_WITH_AS((void)ncsde::run_ensemble(em, as_vector, io, quiet(8)),
                       doctest::Contains("stop_level needs square matrix states"),
                       ncsde::invalid_argument);
  const ncsde::problem<tanh_sde> as_matrix{tanh_sde{}, matrix::Constant(1, 1, 0.1), 1.0};
  const ncsde::ensemble_result r = ncsde::run_ensemble(em, as_matrix, io, quiet(200));
  CHECK(r.stopped > 0);
  CHECK(r.stopped + r.completed == 200);
}

TEST_CASE("a 2-vector SDE with non-diagonal multiplicative noise matches its exact EM mean") {
  linear_sde<vector> sde;
  sde.a = matrix{{-0.5, 1.0}, {-1.0, -0.5}};
  sde.b = {matrix{{0.3, 0.2}, {0.0, 0.1}}, matrix{{0.0, 0.2}, {0.3, 0.0}}};
  const vector x0{{1.0, 0.5}};
  const ncsde::problem prob{sde, x0, 1.0};  // problem<linear_sde<vector>, vector>, deduced
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(prob)>,
                               ncsde::problem<linear_sde<vector>, vector>>);
  ncsde::integrate_options io;
  io.dt = 1e-2;
  const ncsde::ensemble_result r =
      ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, quiet(20'000));
  CHECK(r.completed == r.paths);
  check_terminal_mean(r, euler_mean(sde, x0, 1.0, io.dt));
  check_no_cone_counters(r);
  CHECK(r.layout.names() == std::vector<std::string>{"X1", "X2"});
}

TEST_CASE("a 3×2 matrix SDE matches its exact EM mean; outputs are named by shape") {
  linear_sde<matrix> sde;
  sde.a = matrix{{-1.0, 0.5, 0.0}, {0.2, -0.5, 0.3}, {0.0, -0.4, -0.2}};
  sde.b = {matrix{{0.2, 0.0, 0.1}, {0.0, 0.3, 0.0}, {0.1, 0.0, 0.2}}};
  sde.additive = 0.3;
  sde.cols = 2;
  matrix x0(3, 2);
  x0 << 1.0, -0.5, 0.3, 0.8, -0.7, 0.2;
  const ncsde::problem<linear_sde<matrix>> prob{sde, x0, 1.0};
  ncsde::integrate_options io;
  io.dt = 1e-2;
  io.save_times = {0.5};
  ncsde::ensemble_options eo = quiet(20'000);
  eo.keep_paths = true;
  eo.functionals = {ncsde::entry_functional(2, 1)};
  const ncsde::ensemble_result r = ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, eo);
  CHECK(r.completed == r.paths);
  const matrix exact = euler_mean(sde, x0, 1.0, io.dt);
  vector exact_rows(6);  // row-major coordinates X11, X12, X21, …
  for (int i = 0; i < 6; ++i) exact_rows(i) = exact(i / 2, i % 2);
  check_terminal_mean(r, exact_rows);
  check_no_cone_counters(r);
  // The functional sees the state as the 3×2 matrix it is.
  CHECK(std::abs(r.functionals[0].completed_mean - exact(2, 1)) <=
        4 * r.functionals[0].completed_stderr);

  std::ostringstream csv;
  ncsde::write_csv(r, csv);
  CHECK(csv.str().rfind("path,status,t_stop,X11,X12,X21,X22,X31,X32\n", 0) == 0);
  std::ostringstream saved;
  ncsde::write_saved_csv(r, saved);
  CHECK(saved.str().rfind("path,t,X11,X12,X21,X22,X31,X32\n", 0) == 0);
  const std::string json = ncsde::summary_json(r);
  CHECK(json.find("\"state_space\": \"euclidean\"") != std::string::npos);
  CHECK(json.find("\"X32\"") != std::string::npos);
  CHECK(ncsde::summary_table(r).find("state 3×2 (euclidean)") != std::string::npos);
  // Path 7's record is its integrate() result, packed row-major.
  ncsde::euler_maruyama<> em;
  const ncsde::path_result p7 = ncsde::integrate(em, prob, io, eo.seed, 7);
  for (int i = 0; i < 6; ++i) CHECK(r.records[7].packed(i) == p7.v(i / 2, i % 2));
}

TEST_CASE("cone policies act only on the cone; count is the pure scheme on every space") {
  const ncsde::problem<tanh_sde> prob{tanh_sde{}, matrix::Constant(1, 1, 0.5), 1.0};
  ncsde::euler_maruyama<> em;
  for (const auto policy :
       {ncsde::pd_policy::project, ncsde::pd_policy::refine, ncsde::pd_policy::throw_error}) {
    ncsde::integrate_options io;
    io.policy = policy;
    CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, io, 1),
                         doctest::Contains("state space is euclidean"), ncsde::invalid_argument);
    CHECK_THROWS_WITH_AS(
        ncsde::run_ensemble(em, prob, io, quiet(4)),
        doctest::Contains(
            (std::string("pd policy '") + std::string(ncsde::to_string(policy)) + "'").c_str()),
        ncsde::invalid_argument);
  }
  ncsde::integrate_options io;
  io.policy = ncsde::pd_policy::count;
  const ncsde::path_result counted = ncsde::integrate(em, prob, io, 1, 3);
  io.policy = ncsde::pd_policy::automatic;
  const ncsde::path_result automatic = ncsde::integrate(em, prob, io, 1, 3);
  CHECK(counted.v == automatic.v);
  CHECK(counted.pd.violations == 0);
  // On the cone automatic is count too: the one policy that keeps every scheme's law (issue 31).
  CHECK(ncsde::resolve_pd_policy("x", ncsde::state_space::psd_cone, ncsde::pd_policy::automatic) ==
        ncsde::pd_policy::count);
  CHECK(ncsde::parse_pd_policy("automatic") == ncsde::pd_policy::automatic);
}

namespace {

/// dV = −θ(V − M) dt + σ(Ξ + Ξᵀ)/√2 on Sym(2): additive noise, so V leaves the cone freely. Declared
/// symmetric; `skew` adds an antisymmetric part to the noise map (a defect the engine must refuse).
struct symmetric_ou {
  static constexpr ncsde::state_space space = ncsde::state_space::symmetric;
  double skew = 0.0;
  int noise_dimension(int m) const { return m * m; }
  void drift(const matrix& v, matrix& out, double) const {
    out = -(v - matrix::Identity(v.rows(), v.cols()));
  }
  void diffusion(const matrix& v, const vector& xi, matrix& out, double) const {
    const Eigen::Map<const matrix> g(xi.data(), v.rows(), v.cols());
    out = 0.8 * (g + g.transpose()) / std::sqrt(2.0);
    out(0, 1) += skew * xi(0);
  }
};

}  // namespace

TEST_CASE(
    "symmetric space: states stay exactly symmetric, leave the cone, and are never projected") {
  const ncsde::problem<symmetric_ou> prob{symmetric_ou{}, matrix{{0.1, 0.0}, {0.0, 0.1}}, 1.0};
  ncsde::integrate_options io;
  io.dt = 1e-2;
  ncsde::ensemble_options eo = quiet(400);
  eo.keep_paths = true;
  const ncsde::ensemble_result r = ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, eo);
  check_no_cone_counters(r);
  // V11 = 1 − 0.9 e^{-1} + noise of sd ≈ 0.8·√((1 − e^{-2})/2) ≈ 0.53: many paths end indefinite,
  // which a projection would have hidden.
  long long indefinite = 0;
  for (const auto& rec : r.records) {
    matrix v;
    ncsde::unpack_upper(rec.packed, v);
    if (ncsde::min_eigenvalue(v) < 0) ++indefinite;
  }
  CHECK(indefinite > 40);
  CHECK(r.layout.names() == std::vector<std::string>{"V11", "V12", "V22"});
  // A noise map that is not symmetric is refused, naming the space, not silently symmetrised.
  const ncsde::problem<symmetric_ou> skewed{symmetric_ou{0.3}, prob.v0, 1.0};
  ncsde::euler_maruyama<> em;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, skewed, io, 1),
                       doctest::Contains("non-symmetric matrix at path 0, step 0"),
                       ncsde::evaluation_error);
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, skewed, io, 1),
                       doctest::Contains("symmetric state space"), ncsde::evaluation_error);
  // V0 must be symmetric there (not on a euclidean space).
  const ncsde::problem<symmetric_ou> asymmetric{symmetric_ou{}, matrix{{1.0, 0.2}, {0.0, 1.0}},
                                                1.0};
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, asymmetric, io, 1), doctest::Contains("not symmetric"),
                       ncsde::invalid_argument);
}

namespace {

/// An SDE that declares the shape of its states.
struct shaped_2x3 {
  std::pair<Eigen::Index, Eigen::Index> shape() const { return {2, 3}; }
  int noise_dimension(int) const { return 1; }
  void drift(const matrix& x, matrix& out, double) const { out = -x; }
  void diffusion(const matrix& x, const vector& xi, matrix& out, double) const {
    out = 0.1 * xi(0) * matrix::Ones(x.rows(), x.cols());
  }
};

/// A noise source that cannot split increments (no bridge), of a chosen dimension.
struct plain_source {
  ncsde::stream_brownian inner;
  int dimension() const { return inner.dimension(); }
  void increment(std::uint64_t step, double dt, bool with_iterated, ncsde::noise_increment& out) {
    inner.increment(step, dt, with_iterated, out);
  }
};
static_assert(ncsde::NoiseSource<plain_source> && !ncsde::BridgedNoiseSource<plain_source>);

/// An SDE whose copies throw once armed (a copy made for a worker thread).
struct throwing_copy {
  static inline std::atomic<bool> armed{false};
  throwing_copy() = default;
  throwing_copy(const throwing_copy&) {
    if (armed.load()) throw std::runtime_error("throwing_copy: copy refused");
  }
  int noise_dimension(int) const { return 1; }
  void drift(const matrix& x, matrix& out, double) const { out = -x; }
  void diffusion(const matrix& x, const vector& xi, matrix& out, double) const {
    out = xi(0) * matrix::Ones(x.rows(), x.cols());
  }
};

/// noise_dimension as declared, for the bound checks.
struct declared_k {
  int k = 1;
  int noise_dimension(int) const { return k; }
  void drift(const matrix& x, matrix& out, double) const { out = -x; }
  void diffusion(const matrix& x, const vector&, matrix& out, double) const {
    out.setZero(x.rows(), x.cols());
  }
};

}  // namespace

TEST_CASE("bad input is refused with named errors") {
  ncsde::euler_maruyama<> em;
  ncsde::integrate_options io;
  SUBCASE("a state of the wrong shape for the SDE") {
    const ncsde::problem<shaped_2x3> prob{shaped_2x3{}, matrix::Zero(3, 2), 1.0};
    CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, io, 1),
                         "integrate: V0 must be 2×3 for this SDE (got 3×2)",
                         ncsde::invalid_argument);
    const ncsde::problem<shaped_2x3> right{shaped_2x3{}, matrix::Zero(2, 3), 1.0};
    CHECK(ncsde::integrate(em, right, io, 1).status == ncsde::path_status::completed);
  }
  SUBCASE("a non-square state on the cone") {
    const ncsde::problem<support::decoupled_exit> prob{support::decoupled_exit{},
                                                       matrix::Zero(2, 3), 1.0};
    CHECK_THROWS_WITH_AS(
        ncsde::integrate(em, prob, io, 1),
        doctest::Contains("V0 must be square on the psd_cone state space (got 2×3"),
        ncsde::invalid_argument);
  }
  SUBCASE("a noise source of the wrong dimension; refine without a bridge") {
    const ncsde::problem<support::decoupled_exit> prob{support::decoupled_exit{},
                                                       matrix::Identity(2, 2), 1.0};
    plain_source wrong{ncsde::stream_brownian(ncsde::random_stream(1, 0), 3)};
    CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, io, wrong),
                         "integrate: the noise source of path 0 has dimension 3, but the SDE's "
                         "noise_dimension is 1",
                         ncsde::invalid_argument);
    plain_source right{ncsde::stream_brownian(ncsde::random_stream(1, 0), 1)};
    io.policy = ncsde::pd_policy::refine;
    CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, io, right),
                         doctest::Contains("needs a noise source with a bridge split"),
                         ncsde::invalid_argument);
    ncsde::ensemble_options eo = quiet(3);
    io.policy = ncsde::pd_policy::count;
    auto wrong_factory = [](std::uint64_t p) {
      return plain_source{ncsde::stream_brownian(ncsde::random_stream(1, p), 2)};
    };
    CHECK_THROWS_WITH_AS(ncsde::run_ensemble(em, prob, io, eo, wrong_factory),
                         doctest::Contains("the noise source of path 0 has dimension 2"),
                         ncsde::invalid_argument);
  }
  SUBCASE("functional indices outside the state") {
    const ncsde::problem<tanh_sde> prob{tanh_sde{}, matrix::Constant(1, 1, 0.1), 1.0};
    ncsde::ensemble_options eo = quiet(3);
    eo.functionals = {ncsde::correlation_functional(0, 1)};
    CHECK_THROWS_WITH_AS(
        ncsde::run_ensemble(em, prob, io, eo),
        doctest::Contains("correlation_functional(0, 1): the indices must be < 1 for a 1×1 state"),
        ncsde::invalid_argument);
    eo.functionals = {ncsde::entry_functional(1, 0)};
    CHECK_THROWS_WITH_AS(
        ncsde::run_ensemble(em, prob, io, eo),
        doctest::Contains("entry_functional(1, 0): the entry is outside a 1×1 state"),
        ncsde::invalid_argument);
    CHECK_THROWS_WITH_AS(ncsde::correlation_functional(-1, 0),
                         "correlation_functional: a must be >= 0 (indices are 0-based) (got -1)",
                         ncsde::invalid_argument);
    CHECK_THROWS_AS(ncsde::entry_functional(0, -2), ncsde::invalid_argument);
  }
  SUBCASE("noise dimension out of bounds") {
    const ncsde::problem<declared_k> huge{declared_k{std::numeric_limits<int>::max()},
                                          matrix::Identity(2, 2), 1.0};
    CHECK_THROWS_WITH_AS(ncsde::integrate(em, huge, io, 1),
                         doctest::Contains("noise_dimension(m) must be <= 16777216"),
                         ncsde::invalid_argument);
    const ncsde::problem<declared_k> zero{declared_k{0}, matrix::Identity(2, 2), 1.0};
    CHECK_THROWS_WITH_AS(ncsde::integrate(em, zero, io, 1),
                         doctest::Contains("noise_dimension(m) must be >= 1"),
                         ncsde::invalid_argument);
    ncsde::milstein<> mil;
    const ncsde::problem<declared_k> wide{declared_k{5000}, matrix::Identity(2, 2), 1.0};
    CHECK_THROWS_WITH_AS(ncsde::integrate(mil, wide, io, 1),
                         doctest::Contains("<= 4096 for a scheme with iterated integrals"),
                         ncsde::invalid_argument);
  }
  SUBCASE("V0 beyond the blow-up threshold") {
    const ncsde::problem<declared_k> prob{declared_k{}, matrix::Identity(2, 2) * 1e150, 1.0};
    CHECK_THROWS_WITH_AS(
        ncsde::integrate(em, prob, io, 1),
        doctest::Contains("V0 must lie within blowup_threshold = 1e+06 (got max |V0| = 1e+150"),
        ncsde::invalid_argument);
    io.blowup_threshold = 0.5;
    const ncsde::problem<declared_k> one{declared_k{}, matrix::Identity(2, 2), 1.0};
    CHECK_THROWS_AS(ncsde::run_ensemble(em, one, io, quiet(2)), ncsde::invalid_argument);
  }
  SUBCASE("an SDE copy that throws in a worker reaches the caller") {
    const ncsde::problem<throwing_copy> prob{throwing_copy{}, matrix::Identity(1, 1), 1.0};
    throwing_copy::armed = true;
    CHECK_THROWS_WITH_AS(ncsde::run_ensemble(em, prob, io, quiet(8)), "throwing_copy: copy refused",
                         std::runtime_error);
    throwing_copy::armed = false;
  }
}

TEST_CASE("grid_brownian_source: one fine path drives any scheme at several step sizes") {
  // tanh_sde's exact solution at T from the fine path's W_T: Euler–Maruyama's error on that path
  // shrinks with the step (strong convergence on one path; the order is measured in
  // examples/own_convergence).
  const int n_fine = 1024;
  const ncsde::brownian_grid fine(ncsde::random_stream(5, 0), 1, n_fine, 1.0 / n_fine, false);
  const double exact = std::tanh(0.5 * fine.value(n_fine)(0) + std::atanh(0.3));
  const ncsde::problem<tanh_sde> prob{tanh_sde{}, matrix::Constant(1, 1, 0.3), 1.0};
  ncsde::euler_maruyama<> em;
  double coarse_error = 0, fine_error = 0;
  for (const long long ratio : {64LL, 1LL}) {
    ncsde::grid_brownian_source source(fine, ratio);
    ncsde::integrate_options io;
    io.dt = source.dt();
    const ncsde::path_result r = ncsde::integrate(em, prob, io, source);
    (ratio == 64 ? coarse_error : fine_error) = std::abs(r.v(0, 0) - exact);
  }
  CHECK(fine_error < coarse_error);
  CHECK(fine_error < 0.01);
  // A source whose step does not match the run's dt is refused.
  ncsde::grid_brownian_source source(fine, 8);
  ncsde::integrate_options io;
  io.dt = 1.0 / 64;
  CHECK_THROWS_WITH_AS(ncsde::integrate(em, prob, io, source),
                       doctest::Contains("grid_brownian_source::increment"),
                       ncsde::invalid_argument);
  // The shared-ownership form outlives the caller's grid.
  auto owned = std::make_shared<const ncsde::brownian_grid>(ncsde::random_stream(5, 0), 1, n_fine,
                                                            1.0 / n_fine, false);
  ncsde::grid_brownian_source shared(owned, 1);
  owned.reset();
  io.dt = 1.0 / n_fine;
  CHECK(ncsde::integrate(em, prob, io, shared).v(0, 0) ==
        ncsde::integrate(em, prob, io, *std::make_unique<ncsde::grid_brownian_source>(fine, 1))
            .v(0, 0));
}

TEST_CASE("run_ensemble with a source factory: the default stream through it gives the same bits") {
  const ncsde::problem<tanh_sde> prob{tanh_sde{}, matrix::Constant(1, 1, 0.2), 1.0};
  ncsde::integrate_options io;
  io.dt = 1e-2;
  const ncsde::ensemble_options eo = quiet(300, 11);
  const ncsde::ensemble_result by_default =
      ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, eo);
  const ncsde::ensemble_result by_factory =
      ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, eo, [&](std::uint64_t p) {
        return ncsde::stream_brownian(ncsde::random_stream(eo.seed, p), 1, io.levy_area);
      });
  CHECK(by_default.terminal.mean() == by_factory.terminal.mean());
  CHECK(by_default.terminal.covariance() == by_factory.terminal.covariance());
}

TEST_CASE("Milstein: one stepper type, both derivative forms") {
  support::quadratic_noise_with_derivative sde;
  sde.a = matrix{{-0.3, 0.1}, {0.0, -0.2}};
  sde.c = matrix::Identity(2, 2) * 0.1;
  sde.b = {matrix{{0.2, 0.05}, {0.05, 0.1}}, matrix{{0.0, 0.1}, {0.1, 0.0}}};
  const ncsde::problem<support::quadratic_noise_with_derivative> prob{
      sde, matrix{{1.0, 0.2}, {0.2, 0.8}}, 0.5};
  ncsde::integrate_options io;
  io.dt = 1e-3;
  ncsde::milstein<> automatic;
  ncsde::milstein<> analytic{ncsde::milstein_derivative::analytic};
  ncsde::milstein<> derivative_free{ncsde::milstein_derivative::derivative_free};
  const matrix a = ncsde::integrate(automatic, prob, io, 2).v;
  const matrix b = ncsde::integrate(analytic, prob, io, 2).v;
  const matrix c = ncsde::integrate(derivative_free, prob, io, 2).v;
  CHECK(a == b);                  // automatic is analytic when the SDE has the derivative
  CHECK_FALSE(a == c);            // a different scheme …
  CHECK((a - c).norm() <= 1e-3);  // … of the same strong order 1 on the same path: O(dt) apart
  // The rebound fixed-size stepper keeps the option (m = 2 runs on square_matrix<2> when it can).
  ncsde::detail::stepper_for<ncsde::milstein<>, ncsde::square_matrix<2>>::type rebound =
      ncsde::detail::stepper_for<ncsde::milstein<>, ncsde::square_matrix<2>>::make(derivative_free);
  CHECK(rebound.derivative_form() == ncsde::milstein_derivative::derivative_free);
  // Asking for the analytic form of an SDE without diffusion_derivative is refused.
  const ncsde::problem<tanh_sde> scalar{tanh_sde{}, matrix::Constant(1, 1, 0.1), 1.0};
  CHECK_THROWS_WITH_AS(
      ncsde::integrate(analytic, scalar, io, 2),
      doctest::Contains("derivative form 'analytic' needs the SDE's diffusion_derivative"),
      ncsde::invalid_argument);
}

namespace {

/// dX = −X dt + σ dW on ℝ (as a 1×1 matrix): additive noise, declared, with the pathwise solution
/// X_T = e^{−T} X0 + σ ∫ e^{−(T−s)} dW_s, here read off the fine grid by its own exact recursion.
struct additive_ou {
  static constexpr ncsde::noise_class noise = ncsde::noise_class::additive;
  double sigma = 0.5;
  int noise_dimension(int) const { return 1; }
  void drift(const matrix& x, matrix& out, double) const { out = -x; }
  void diffusion(const matrix& x, const vector& xi, matrix& out, double) const {
    out = matrix::Constant(x.rows(), x.cols(), sigma * xi(0));
  }
};

}  // namespace

TEST_CASE("convergence engine: expected orders follow the noise class; a chosen strong measure") {
  CHECK(ncsde::expected_order("em", ncsde::error_kind::strong, ncsde::noise_class::additive) ==
        1.0);
  CHECK(ncsde::expected_order("em", ncsde::error_kind::strong, ncsde::noise_class::commutative) ==
        0.5);
  CHECK(ncsde::expected_order("milstein-commutative", ncsde::error_kind::strong,
                              ncsde::noise_class::additive) == 1.0);
  CHECK(ncsde::expected_order("milstein-commutative", ncsde::error_kind::strong,
                              ncsde::noise_class::general) == 0.5);

  // Euclidean additive OU with the fine-grid Milstein reference: EM's measured strong order is 1.
  ncsde::convergence_problem<additive_ou> cp("additive-ou",
                                             {additive_ou{}, matrix::Constant(1, 1, -0.5), 1.0});
  CHECK(cp.effective_noise() == ncsde::noise_class::additive);
  cp.first_level = 3;
  cp.levels = 4;
  cp.strong_error = ncsde::component_error(0, 0);
  ncsde::convergence_options o;
  o.paths = 200;
  o.threads = 2;
  o.weak = false;
  o.progress = ncsde::progress_mode::off;
  o.schemes = {"em"};
  const auto rows = ncsde::run_convergence(cp, o);
  REQUIRE(rows.size() == 1);
  MESSAGE("additive OU, EM strong order ", rows[0].fit.slope, " ± ", rows[0].fit.slope_stderr);
  CHECK(rows[0].expected == 1.0);
  CHECK(rows[0].error_measure == "|X11 - ref|");
  CHECK(rows[0].failed_paths == 0);
  CHECK(rows[0].cone_exits == 0);
  // 200 paths, 4 levels: the slope's stderr is ≈ 0.03; 0.15 is five of them.
  CHECK(std::abs(rows[0].fit.slope - 1.0) <= 0.15);
  CHECK(ncsde::convergence_json(rows).find("\"error_measure\": \"|X11 - ref|\"") !=
        std::string::npos);
}

TEST_CASE("odeint glue on a euclidean state: no symmetrisation, V0 of any sign") {
  const ncsde::problem<tanh_sde> prob{tanh_sde{}, matrix::Constant(1, 1, -0.6), 1.0};
  ncsde::deterministic_options dopt;
  // dX = −¼X(1 − X²) dt from −0.6: stays negative, tends to 0.
  const ncsde::deterministic_result r = ncsde::solve_deterministic(prob, dopt);
  CHECK(r.status == ncsde::path_status::completed);
  CHECK(r.v(0, 0) < 0);
  CHECK(r.v(0, 0) > -0.6);
}
