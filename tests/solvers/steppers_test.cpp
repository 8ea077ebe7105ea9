#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "ncsde/integrate.hpp"
#include "ncsde/levy_area.hpp"
#include "ncsde/noise.hpp"
#include "ncsde/psd.hpp"
#include "ncsde/stepper.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/steppers/milstein.hpp"
#include "ncsde/steppers/predictor_corrector.hpp"
#include "support/random_matrices.hpp"
#include "support/simple_sdes.hpp"

namespace {

using ncsde::matrix;
using ncsde::noise_increment;
using ncsde::vector;

constexpr double eps = std::numeric_limits<double>::epsilon();

double max_abs(const matrix& x) { return x.cwiseAbs().maxCoeff(); }

support::quadratic_noise make_quadratic(int m, int k, double noise_scale, std::uint64_t seed) {
  support::quadratic_noise sde;
  sde.a = 0.3 * support::random_symmetric(m, seed);
  sde.a(0, m - 1) += 0.2;  // A need not be symmetric
  sde.c = support::random_spd(m, seed + 1);
  for (int l = 0; l < k; ++l)
    sde.b.push_back(noise_scale *
                    support::random_symmetric(m, seed + 2 + static_cast<std::uint64_t>(l)));
  return sde;
}

support::quadratic_noise_with_derivative with_derivative(const support::quadratic_noise& q) {
  support::quadratic_noise_with_derivative d;
  static_cast<support::quadratic_noise&>(d) = q;
  return d;
}

/// An increment of size h built from a unit-step draw: dw = √h z, I = h J, so the normalised
/// increment (z, J) is the same for every h (Brownian scaling).
noise_increment scaled_increment(int k, double h, std::uint64_t seed) {
  const ncsde::random_stream s(seed, 0);
  noise_increment unit;
  unit.dt = 1.0;
  unit.dw.resize(k);
  s.normals(ncsde::random_domain::increments, 0, 0, unit.dw);
  ncsde::iterated_integrals gen;
  gen.generate(unit, s, 0, 1, 2);
  noise_increment inc;
  inc.dt = h;
  inc.dw = std::sqrt(h) * unit.dw;
  inc.iterated = h * unit.iterated;
  inc.has_iterated = true;
  return inc;
}

/// A CovarianceSde with Σ(t, V) = (1 + t)·Σ0 and zero drift.
struct fixed_covariance {
  matrix sigma0;
  void drift(const matrix& v, matrix& out, double) const { out = matrix::Zero(v.rows(), v.cols()); }
  void covariance(const matrix&, matrix& sigma, double t) const { sigma = (1.0 + t) * sigma0; }
};
static_assert(ncsde::CovarianceSde<fixed_covariance>);
static_assert(ncsde::Sde<ncsde::dense_covariance_noise<fixed_covariance>>);

}  // namespace

TEST_CASE("steppers: orders per noise class, names and noise requests") {
  using ncsde::iterated_terms;
  using ncsde::noise_class;
  using em = ncsde::euler_maruyama<>;
  using mil = ncsde::milstein<>;
  using mc = ncsde::milstein_commutative<>;
  static_assert(ncsde::Stepper<em> && ncsde::Stepper<mil> && ncsde::Stepper<mc>);
  static_assert(ncsde::Stepper<ncsde::euler_maruyama<ncsde::square_matrix<2>>>);
  static_assert(ncsde::StepperFor<em, support::quadratic_noise>);
  CHECK(em::strong_order(noise_class::general) == 0.5);
  CHECK(em::strong_order(noise_class::commutative) == 0.5);
  CHECK(em::strong_order(noise_class::additive) == 1.0);
  CHECK(em::weak_order(noise_class::general) == 1.0);
  CHECK(em::request.iterated == iterated_terms::none);
  CHECK_FALSE(em::request.needs_iterated_integrals());
  CHECK_FALSE(em::request.bridge_splits);
  CHECK_FALSE(em::preserves_cone);
  CHECK(em::name == "em");
  CHECK(mil::strong_order(noise_class::general) == 1.0);
  CHECK(mil::request.iterated == iterated_terms::with_levy_areas);
  CHECK(mil::request.needs_iterated_integrals());
  CHECK(mil::name == "milstein");
  CHECK(mc::strong_order(noise_class::general) == 0.5);
  CHECK(mc::strong_order(noise_class::commutative) == 1.0);
  CHECK(mc::strong_order(noise_class::additive) == 1.0);
  // The symmetric part I + Iᵀ = ΔW ΔWᵀ − dt·I is formed from the increment: nothing asked of the
  // source.
  CHECK(mc::request.iterated == iterated_terms::symmetric_part_only);
  CHECK_FALSE(mc::request.needs_iterated_integrals());
  CHECK(mc::name == "milstein-commutative");
  // The run-time descriptor carries the same declarations.
  constexpr ncsde::scheme_descriptor d = ncsde::describe<mc>();
  static_assert(d.strong_order(noise_class::general) == 0.5 &&
                d.weak_order(noise_class::additive) == 1.0);
  CHECK(d.name == "milstein-commutative");
  CHECK(d.request == mc::request);
}

namespace {
/// Declares everything but the noise request: not a Stepper.
struct no_request {
  static constexpr std::string_view name = "x";
  static constexpr std::string_view description = "x";
  static constexpr double strong_order(ncsde::noise_class) { return 1.0; }
  static constexpr double weak_order(ncsde::noise_class) { return 1.0; }
  static constexpr bool preserves_cone = false;
};
/// Orders that are not constant expressions: not a Stepper.
struct runtime_orders : no_request {
  static constexpr ncsde::noise_request request{};
  static double strong_order(ncsde::noise_class) { return 1.0; }
};
/// Everything declared.
struct declared : no_request {
  static constexpr ncsde::noise_request request{};
};
static_assert(!ncsde::Stepper<no_request>);
static_assert(!ncsde::Stepper<runtime_orders>);
static_assert(ncsde::Stepper<declared>);
}  // namespace

TEST_CASE("euler_maruyama: one step is V + b(V) dt + Σ_l dW_l G_l(V)") {
  const int m = 3, k = 2;
  const support::quadratic_noise sde = make_quadratic(m, k, 0.5, 40);
  const matrix v0 = support::random_spd(m, 41);
  const noise_increment inc = scaled_increment(k, 0.04, 42);
  matrix v = v0;
  ncsde::euler_maruyama<> em;
  em.do_step(sde, v, 0.7, inc);
  const matrix drift = sde.a * v0 + v0 * sde.a.transpose() + sde.c;
  matrix expected = v0 + 0.04 * drift;
  double scale = max_abs(v0) + 0.04 * max_abs(drift);
  for (int l = 0; l < k; ++l) {
    const matrix g = v0 * sde.b[static_cast<std::size_t>(l)] * v0;
    expected += inc.dw(l) * g;
    scale += std::abs(inc.dw(l)) * max_abs(g);
  }
  // A handful of roundings per entry, each ≤ ε·scale (the sum of the magnitudes involved); 8 is headroom.
  CHECK(max_abs(v - expected) <= 8 * eps * scale);
  // Twice with the same stepper object (workspaces reused) gives the same result.
  matrix w = v0;
  em.do_step(sde, w, 0.7, inc);
  CHECK(w == v);
}

TEST_CASE("predictor_corrector: V + ½(b(t+h, V̄) + b(t, V)) h + G(t, V) dW, V̄ the EM predictor") {
  using pc = ncsde::predictor_corrector<>;
  using ncsde::noise_class;
  static_assert(ncsde::Stepper<pc>);
  static_assert(ncsde::StepperFor<pc, support::quadratic_noise>);
  CHECK(pc::name == "predictor-corrector");
  CHECK(pc::strong_order(noise_class::general) == 0.5);
  CHECK(pc::strong_order(noise_class::commutative) == 0.5);
  CHECK(pc::strong_order(noise_class::additive) == 1.0);
  for (const noise_class c :
       {noise_class::general, noise_class::commutative, noise_class::additive})
    CHECK(pc::weak_order(c) == 1.0);
  CHECK(pc::request == ncsde::noise_request{});  // the increments only, as EM
  CHECK_FALSE(pc::preserves_cone);
  // The fixed-size paths rebind it.
  static_assert(std::is_same_v<ncsde::detail::stepper_for<pc, ncsde::square_matrix<2>>::type,
                               ncsde::predictor_corrector<ncsde::square_matrix<2>>>);

  const int m = 3, k = 2;
  const support::quadratic_noise sde = make_quadratic(m, k, 0.5, 40);
  const matrix v0 = support::random_spd(m, 41);
  const double h = 0.04;
  const noise_increment inc = scaled_increment(k, h, 42);
  auto drift = [&](const matrix& v) { return (sde.a * v + v * sde.a.transpose() + sde.c).eval(); };
  matrix noise = matrix::Zero(m, m);
  double noise_scale = 0.0;
  for (int l = 0; l < k; ++l) {
    const matrix g = v0 * sde.b[static_cast<std::size_t>(l)] * v0;
    noise += inc.dw(l) * g;
    noise_scale += std::abs(inc.dw(l)) * max_abs(g);
  }
  const matrix predicted = v0 + h * drift(v0) + noise;
  const matrix expected = v0 + 0.5 * h * (drift(predicted) + drift(v0)) + noise;
  matrix v = v0;
  pc stepper;
  stepper.do_step(sde, v, 0.7, inc);
  // Both evaluations round a few times per entry, each ≤ ε·scale, scale the magnitudes involved
  // (the drift at V̄ amplifies the predictor's rounding by ‖A‖ h ≤ 1); 16 is headroom.
  const double scale = max_abs(v0) + h * (max_abs(drift(v0)) + max_abs(drift(predicted))) +
                       noise_scale + max_abs(predicted);
  CHECK(max_abs(v - expected) <= 16 * eps * scale);
  // It differs from Euler–Maruyama by ½ h (b(V̄) − b(V)) only.
  matrix w = v0;
  ncsde::euler_maruyama<> em;
  em.do_step(sde, w, 0.7, inc);
  CHECK(max_abs((v - w) - 0.5 * h * (drift(predicted) - drift(v0))) <= 16 * eps * scale);
}

namespace {
/// dX = t·X dt + σ dW on ℝ (1×1, euclidean): a drift that depends on time, to check that the
/// corrector evaluates it at t + h.
struct time_dependent_drift {
  double sigma = 0.3;
  int noise_dimension(int) const { return 1; }
  void drift(const matrix& x, matrix& out, double t) const { out = t * x; }
  void diffusion(const matrix& x, const vector& xi, matrix& out, double) const {
    out = matrix::Constant(x.rows(), x.cols(), sigma * xi(0));
  }
};
}  // namespace

TEST_CASE("predictor_corrector: the predictor's drift is taken at t + h") {
  const time_dependent_drift sde;
  const double t = 0.5, h = 0.1, x = 1.2, dw = 0.07;
  noise_increment inc;
  inc.dt = h;
  inc.dw = vector::Constant(1, dw);
  matrix v = matrix::Constant(1, 1, x);
  ncsde::predictor_corrector<> stepper;
  stepper.do_step(sde, v, t, inc);
  const double predicted = x + t * x * h + sde.sigma * dw;
  const double expected = x + 0.5 * (t * x + (t + h) * predicted) * h + sde.sigma * dw;
  CHECK(std::abs(v(0, 0) - expected) <= 8 * eps * 2.0);  // |terms| ≤ 2: a few roundings of each
}

TEST_CASE("milstein: scalar SDE equals the classical Milstein formula") {
  // dX = μX dt + σX² dW: X + μXh + σX²ΔW + ½·(σX²)(2σX)·(ΔW² − h), i.e. I_11 = (ΔW² − h)/2.
  const support::scalar_quadratic sde;
  for (const double dw : {-0.31, 0.05, 0.4}) {
    const double x = 1.3, h = 0.09;
    noise_increment inc;
    inc.dt = h;
    inc.dw = vector::Constant(1, dw);
    inc.iterated = matrix::Constant(1, 1, 0.5 * (dw * dw - h));
    inc.has_iterated = true;
    const double g = sde.sigma * x * x;
    const double expected =
        x + sde.mu * x * h + g * dw + 0.5 * g * (2 * sde.sigma * x) * (dw * dw - h);
    const double scale = x + std::abs(sde.mu * x * h) + std::abs(g * dw) +
                         std::abs(g * 2 * sde.sigma * x) * (dw * dw + h);
    matrix v = matrix::Constant(1, 1, x);
    ncsde::milstein<> mil;
    mil.do_step(sde, v, 0.0, inc);
    CHECK(std::abs(v(0, 0) - expected) <= 8 * eps * scale);
    // The commutative variant forms I_11 = (ΔW² − h)/2 itself.
    matrix u = matrix::Constant(1, 1, x);
    ncsde::milstein_commutative<> mc;
    mc.do_step(sde, u, 0.0, inc);
    CHECK(std::abs(u(0, 0) - expected) <= 8 * eps * scale);
  }
}

TEST_CASE(
    "milstein: derivative-free and derivative forms differ by the exact O(dt^{3/2}) remainder") {
  // For G_l(V) = V B_l V the derivative-free support Ῡ_j = V + δ_j, δ_j = h b + √h G_j, gives exactly
  //   [G_l(V + δ) − G_l(V)]/√h = (δ B_l V + V B_l δ + δ B_l δ)/√h,
  // while the derivative form uses DG_l[G_j] = G_j B_l V + V B_l G_j. Their difference per step is
  //   Δ = Σ_{j,l} I_jl [ √h (b B_l V + V B_l b + G_j B_l G_j) + h (b B_l G_j + G_j B_l b) + h^{3/2} b B_l b ],
  // which with I = h J is O(h^{3/2}) and bounded (Frobenius, submultiplicative) by
  //   h^{3/2} Σ |J_jl| ‖B_l‖ [2‖b‖‖V‖ + ‖G_j‖² + 2√h ‖b‖‖G_j‖ + h ‖b‖²].
  const int m = 3, k = 3;
  const support::quadratic_noise plain = make_quadratic(m, k, 0.4, 60);
  const support::quadratic_noise_with_derivative exact = with_derivative(plain);
  const matrix v0 = support::random_spd(m, 61);
  const matrix b = plain.a * v0 + v0 * plain.a.transpose() + plain.c;
  std::vector<matrix> g(k);
  for (int j = 0; j < k; ++j)
    g[static_cast<std::size_t>(j)] = v0 * plain.b[static_cast<std::size_t>(j)] * v0;
  for (const double h : {1e-1, 1e-2, 1e-3, 1e-4}) {
    CAPTURE(h);
    const noise_increment inc = scaled_increment(k, h, 62);
    matrix free_form = v0, derivative_form = v0;
    ncsde::milstein<> m1, m2;
    m1.do_step(plain, free_form, 0.0, inc);
    m2.do_step(exact, derivative_form, 0.0, inc);
    const double rh = std::sqrt(h);
    matrix delta = matrix::Zero(m, m);
    double bound = 0.0, support_scale = 0.0;
    for (int j = 0; j < k; ++j)
      for (int l = 0; l < k; ++l) {
        const matrix& bl = plain.b[static_cast<std::size_t>(l)];
        const matrix& gj = g[static_cast<std::size_t>(j)];
        const double ijl = inc.iterated(j, l);
        delta += ijl * (rh * (b * bl * v0 + v0 * bl * b + gj * bl * gj) +
                        h * (b * bl * gj + gj * bl * b) + h * rh * (b * bl * b));
        bound += std::abs(ijl / h) * bl.norm() *
                 (2 * b.norm() * v0.norm() + gj.squaredNorm() + 2 * rh * b.norm() * gj.norm() +
                  h * b.squaredNorm());
        const matrix support = v0 + h * b + rh * gj;
        support_scale += std::abs(ijl) * max_abs(support * bl * support);
      }
    bound *= h * rh;
    // Round-off of the derivative-free form: G(Ῡ_j)·I_(j,·) and G(V)·ΣI are summed with error
    // ≤ ε·Σ|I_jl||G_l(Ῡ_j)| (and the same at V), then divided by √h; the state's own rounding is ε|V|.
    const double tol = 16 * eps * (max_abs(v0) + 2 * support_scale / rh + max_abs(delta));
    CHECK(max_abs((free_form - derivative_form) - delta) <= tol);
    CHECK((free_form - derivative_form).norm() <= bound * (1 + 1e-12) + tol);
  }
}

TEST_CASE(
    "milstein_commutative equals milstein with zero Lévy area, and on commutative noise with any "
    "area") {
  const int m = 3, k = 3;
  const support::quadratic_noise sde = make_quadratic(m, k, 0.4, 70);
  const matrix v0 = support::random_spd(m, 71);
  noise_increment inc = scaled_increment(k, 0.01, 72);
  // I := (dw dwᵀ − h Id)/2: the commutative scheme's own choice, computed the same way.
  noise_increment symmetric = inc;
  symmetric.iterated = 0.5 * inc.dw * inc.dw.transpose();
  symmetric.iterated.diagonal().array() -= 0.5 * inc.dt;
  for (int pass = 0; pass < 2; ++pass) {
    matrix a = v0, c = v0;
    ncsde::milstein<> mil;
    ncsde::milstein_commutative<> com;
    if (pass == 0) {
      mil.do_step(sde, a, 0.0, symmetric);
      com.do_step(sde, c, 0.0, inc);
    } else {
      const auto d = with_derivative(sde);
      mil.do_step(d, a, 0.0, symmetric);
      com.do_step(d, c, 0.0, inc);
    }
    CHECK(max_abs(a - c) <= 8 * eps * max_abs(v0));
  }
  // Commutative noise: G_l(V) = c_l V² (B_l = c_l Id), so L^j G_l = c_j c_l (V³ + V³) is symmetric in
  // (j, l) and the Lévy areas cancel from Σ_jl L^j G_l I_jl: milstein with areas = milstein_commutative.
  support::quadratic_noise_with_derivative comm = with_derivative(sde);
  for (int l = 0; l < k; ++l)
    comm.b[static_cast<std::size_t>(l)] = (0.2 + 0.1 * l) * matrix::Identity(m, m);
  matrix a = v0, c = v0;
  ncsde::milstein<> mil;
  ncsde::milstein_commutative<> com;
  mil.do_step(comm, a, 0.0, inc);
  com.do_step(comm, c, 0.0, inc);
  // The areas cancel only up to the rounding of the terms c_j c_l 2V³ I_jl: ≤ 8 ε Σ|I| |2V³|·max c².
  const matrix v3 = v0 * v0 * v0;
  CHECK(max_abs(a - c) <=
        8 * eps * (max_abs(v0) + inc.iterated.cwiseAbs().sum() * 2 * max_abs(v3) * 0.16));
  // … whereas on non-commutative noise the areas matter.
  matrix e = v0, f = v0;
  ncsde::milstein<> mil2;
  ncsde::milstein_commutative<> com2;
  mil2.do_step(sde, e, 0.0, inc);
  com2.do_step(sde, f, 0.0, inc);
  CHECK(max_abs(e - f) > 1e-6);
}

TEST_CASE("milstein without iterated integrals is an assertion failure (NCSDE_ASSERT)") {
  const support::quadratic_noise sde = make_quadratic(2, 2, 0.3, 80);
  noise_increment inc = scaled_increment(2, 0.01, 81);
  inc.has_iterated = false;
  matrix v = support::random_spd(2, 82);
  ncsde::milstein<> mil;
  CHECK_THROWS_WITH_AS(mil.do_step(sde, v, 0.0, inc),
                       doctest::Contains("milstein: the increment carries no iterated integrals"),
                       ncsde::assertion_error);
}

TEST_CASE("steppers report a non-finite coefficient as non_finite_coefficient naming it") {
  support::cubic_scalar sde;
  sde.a = std::numeric_limits<double>::infinity();
  noise_increment inc = scaled_increment(1, 0.01, 90);
  matrix v = matrix::Constant(1, 1, 1.0);
  ncsde::euler_maruyama<> em;
  try {
    em.do_step(sde, v, 0.0, inc);
    FAIL("no exception");
  } catch (const ncsde::detail::non_finite_coefficient& e) {
    CHECK(e.which == "drift");
  }
  sde.a = 1.0;
  sde.sigma = std::numeric_limits<double>::quiet_NaN();
  ncsde::milstein<> mil;
  try {
    mil.do_step(sde, v, 0.0, inc);
    FAIL("no exception");
  } catch (const ncsde::detail::non_finite_coefficient& e) {
    CHECK(e.which == "noise map");
  }
}

TEST_CASE("noise_covariance is Σ_j vec(G e_j) vec(G e_j)ᵀ over the packed upper triangle") {
  // decoupled_exit: G ξ = σ ξ E_22, so Σ has the single entry σ² at packed (1,1) = index 2 (m = 2).
  const support::decoupled_exit sde{15.0, 0.5};
  const matrix sigma = ncsde::noise_covariance(sde, matrix::Identity(2, 2));
  matrix expected = matrix::Zero(3, 3);
  expected(2, 2) = 0.25;
  CHECK(sigma == expected);
  // quadratic noise: Σ = Σ_l pack(V B_l V) pack(V B_l V)ᵀ.
  const support::quadratic_noise q = make_quadratic(3, 2, 1.0, 91);
  const matrix v = support::random_spd(3, 92);
  matrix e = matrix::Zero(6, 6);
  for (const matrix& bl : q.b) {
    vector p(6);
    ncsde::pack_upper(v * bl * v, p);
    e += p * p.transpose();
  }
  CHECK(max_abs(ncsde::noise_covariance(q, v) - e) <= 8 * eps * max_abs(e));
}

TEST_CASE("dense_covariance_noise reproduces Σ, clips round-off negatives, rejects negative Σ") {
  const int m = 3, kk = ncsde::packed_size(m);
  const matrix v = support::random_spd(m, 100);
  SUBCASE("positive definite Σ") {
    fixed_covariance base{support::random_spd(kk, 101)};
    const ncsde::dense_covariance_noise<fixed_covariance> dense(base);
    CHECK(dense.noise_dimension(m) == kk);
    CHECK(dense.base().sigma0 == base.sigma0);
    // Σ = F Fᵀ with F from a symmetric eigendecomposition: error O(K ε |Σ|); 16 is headroom.
    const matrix sigma = ncsde::noise_covariance(dense, v, 0.0);
    CHECK(max_abs(sigma - base.sigma0) <= 16 * kk * eps * max_abs(base.sigma0));
    // Time-dependent Σ: the cached factor is refreshed when t changes, Σ(0.5) = 1.5 Σ0.
    const matrix later = ncsde::noise_covariance(dense, v, 0.5);
    CHECK(max_abs(later - 1.5 * base.sigma0) <= 16 * kk * eps * 1.5 * max_abs(base.sigma0));
    // The factor is cached for (t, V): the same object comes back.
    const matrix* f1 = &dense.factor(v, 0.5);
    const matrix* f2 = &dense.factor(v, 0.5);
    CHECK(f1 == f2);
    // The noise map is symmetric and linear in ξ.
    vector xi(kk), zeta(kk);
    for (int i = 0; i < kk; ++i) {
      xi(i) = 0.3 * i - 0.7;
      zeta(i) = std::cos(static_cast<double>(i));
    }
    matrix gx, gz, gs;
    dense.diffusion(v, xi, gx, 0.5);
    dense.diffusion(v, zeta, gz, 0.5);
    dense.diffusion(v, (xi + 2 * zeta).eval(), gs, 0.5);
    CHECK(ncsde::asymmetry(gx) == 0.0);
    CHECK(max_abs(gs - gx - 2 * gz) <= 16 * eps * (max_abs(gx) + 2 * max_abs(gz)));
    matrix d;
    dense.drift(v, d, 0.5);
    CHECK(d.isZero(0.0));
  }
  SUBCASE("singular Σ with round-off negative eigenvalues: they are clipped to 0") {
    // Eigenvalues (3, 2, 1, 0, −1e-13, −1e-12): the negatives are far inside the −1e-10·max|Σ| margin,
    // so they count as round-off; unclipped, their square roots would be NaN. The reproduced Σ is the
    // clipped one, within 1e-12 (the clipped mass) plus the eigensolver's O(K ε |Σ|) error.
    vector lambda(kk);
    lambda << 3.0, 2.0, 1.0, 0.0, -1e-13, -1e-12;
    fixed_covariance base{support::with_eigenvalues(lambda, 102)};
    const ncsde::dense_covariance_noise<fixed_covariance> dense(base);
    CHECK(dense.factor(v, 0.0).allFinite());
    const matrix sigma = ncsde::noise_covariance(dense, v, 0.0);
    CHECK(max_abs(sigma - base.sigma0) <= 1.1e-12 + 16 * kk * eps * max_abs(base.sigma0));
    CHECK(ncsde::min_eigenvalue(sigma) >= -16 * kk * eps * 3.0);
  }
  SUBCASE("clearly negative Σ is an evaluation_error with the smallest eigenvalue") {
    matrix s = matrix::Identity(kk, kk);
    s(3, 3) = -0.5;
    const ncsde::dense_covariance_noise<fixed_covariance> dense(fixed_covariance{s});
    vector xi = vector::Ones(kk);
    matrix out;
    CHECK_THROWS_WITH_AS(
        dense.diffusion(v, xi, out, 0.0),
        doctest::Contains(
            "dense_covariance_noise: covariance is not positive semidefinite at t = 0 "
            "(smallest eigenvalue -0.5)"),
        ncsde::evaluation_error);
  }
  SUBCASE("wrong size or non-finite Σ is an evaluation_error") {
    const ncsde::dense_covariance_noise<fixed_covariance> small(
        fixed_covariance{matrix::Identity(5, 5)});
    CHECK_THROWS_WITH_AS(
        small.factor(v, 0.0),
        doctest::Contains("dense_covariance_noise: covariance must be 6×6 for m = 3 (got 5×5)"),
        ncsde::evaluation_error);
    matrix s = matrix::Identity(kk, kk);
    s(1, 2) = std::numeric_limits<double>::quiet_NaN();
    const ncsde::dense_covariance_noise<fixed_covariance> bad(fixed_covariance{s});
    CHECK_THROWS_WITH_AS(
        bad.factor(v, 0.25),
        doctest::Contains("dense_covariance_noise: covariance is not finite at t = 0.25"),
        ncsde::evaluation_error);
  }
}
