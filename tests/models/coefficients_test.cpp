#include "ncsde/models/coefficients.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "ncsde/error.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/noise.hpp"
#include "ncsde/psd.hpp"
#include "ncsde/symmetric.hpp"
#include "support/random_matrices.hpp"

namespace {

using ncsde::matrix;
using ncsde::vector;
namespace models = ncsde::models;

constexpr double eps = std::numeric_limits<double>::epsilon();

/// max|a − b| / max|b| (NaN-safe: a NaN makes the comparison against any bound fail).
double rel_err(const matrix& a, const matrix& b) {
  return (a - b).cwiseAbs().maxCoeff() / b.cwiseAbs().maxCoeff();
}

/// Exact covariance over packed pairs of a noise map linear in an m×m Gaussian input:
/// Σ = Σ_j vec(N(e_j)) vec(N(e_j))ᵀ over the m² basis inputs (no sampling).
matrix sampler_covariance(int m, const std::function<void(const matrix&, matrix&)>& noise) {
  const int kk = ncsde::packed_size(m);
  matrix columns(kk, m * m);
  matrix basis = matrix::Zero(m, m);
  matrix out;
  for (int j = 0; j < m * m; ++j) {
    basis.setZero();
    basis(j) = 1.0;
    noise(basis, out);
    ncsde::pack_upper(out, columns.col(j));
  }
  return columns * columns.transpose();
}

/// P_a (0-indexed a): centring projector on tokens 0..a, zero elsewhere.
matrix prefix_projector(int m, int a) {
  matrix p = matrix::Zero(m, m);
  const int k = a + 1;
  p.topLeftCorner(k, k) = matrix::Identity(k, k) - matrix::Constant(k, k, 1.0 / k);
  return p;
}

/// Direct O(m⁵) causal drift, literally docs/maths.md §3.2.3: u_a from P_a V P_a,
/// T^{ab} = tr(P_a V P_b V).
matrix b_causal_direct(const matrix& v, double tau0) {
  const int m = static_cast<int>(v.rows());
  std::vector<matrix> p(m);
  for (int a = 0; a < m; ++a) p[a] = prefix_projector(m, a);
  matrix out(m, m);
  for (int a = 0; a < m; ++a)
    for (int b = 0; b < m; ++b) {
      auto vu = [&](int row, int col) {
        const int k = row + 1;
        const matrix pvp = p[row] * v * p[row];
        vector u = vector::Zero(m);
        for (int nu = 0; nu <= row; ++nu) u(nu) = 0.5 * (pvp(nu, nu) - pvp.trace() / k);
        return (v * u)(col);
      };
      const double t = (p[a] * v * p[b] * v).trace();
      out(a, b) = (v(a, a) / (a + 1) * vu(a, b) + v(b, b) / (b + 1) * vu(b, a) +
                   v(a, b) * t / ((a + 1.0) * (b + 1.0))) /
                  (tau0 * tau0);
    }
  return out;
}

/// hᵀ Σ h over packed pairs = Σ_{abcd} H^{ab} H^{cd} Σ^{ab,cd}: off-diagonal pairs count twice.
double quadratic_form(const matrix& sigma, const matrix& h) {
  const int m = static_cast<int>(h.rows());
  vector hp(ncsde::packed_size(m));
  for (int a = 0; a < m; ++a)
    for (int b = a; b < m; ++b) hp(ncsde::packed_index(a, b, m)) = (a == b ? 1.0 : 2.0) * h(a, b);
  return hp.dot(sigma * hp);
}

struct named_model {
  std::string name;
  models::architecture arch;
  models::shaped_params params;
};

std::vector<named_model> all_models() {
  using models::architecture;
  std::vector<named_model> out;
  models::shaped_params p;
  p.c_plus = 0.3;
  p.c_minus = -1.5;
  p.gamma2 = 0.6;
  p.hidden_ratio = 2.0;
  p.tau0 = 0.8;
  models::shaped_params lin = p;
  out.push_back({"mlp", architecture::mlp, lin});
  out.push_back({"resnet", architecture::resnet, lin});
  out.push_back({"attention", architecture::attention, p});
  models::shaped_params mha = p;
  mha.heads = 4;
  mha.output_projection = true;
  out.push_back({"mha with W^O", architecture::attention, mha});
  models::shaped_params mha_avg = p;
  mha_avg.heads = 3;
  out.push_back({"mha without W^O", architecture::attention, mha_avg});
  models::shaped_params causal = p;
  causal.causal = true;
  out.push_back({"causal attention", architecture::attention, causal});
  out.push_back({"transformer", architecture::transformer, p});
  out.push_back({"causal transformer", architecture::transformer, causal});
  return out;
}

}  // namespace

TEST_CASE("structured noise samplers have exactly the dense covariance, for any factor of V") {
  // Each sampler is linear in its Gaussian input, so its covariance is a sum over the m² basis
  // inputs. Both sides are sums of O(m²) products of O(m³)-flop quantities; relative round-off is a
  // few hundred ε at m = 6 (≈ 5e-14), so 1e-13 is the bound (docs/maths.md §9.2: ≤ 2e-15 measured).
  const double tol = 1e-13;
  const double tau0 = 0.7;
  for (int m : {2, 3, 4, 6}) {
    CAPTURE(m);
    const matrix v = support::random_spd(m, 100 + m, 0.2);
    const matrix chol = models::factor(v);
    // A non-Cholesky factor: (L O)(L O)ᵀ = V for orthogonal O.
    const matrix rotated = chol * support::random_orthogonal(m, 200 + m);
    matrix lin, att, causal;
    models::sigma_lin(v, lin);
    models::sigma_att(v, tau0, att);
    models::sigma_causal(v, tau0, causal);
    for (const matrix& l : {chol, rotated}) {
      const matrix c_lin = sampler_covariance(
          m, [&](const matrix& g, matrix& out) { models::noise_lin(l, g, out); });
      const matrix c_att = sampler_covariance(
          m, [&](const matrix& z, matrix& out) { models::noise_att(l, v, z, tau0, out); });
      const matrix c_causal = sampler_covariance(
          m, [&](const matrix& z, matrix& out) { models::noise_causal(l, v, z, tau0, out); });
      CHECK(rel_err(c_lin, lin) <= tol);
      CHECK(rel_err(c_att, att) <= tol);
      CHECK(rel_err(c_causal, causal) <= tol);
    }
    // The rotated factor is genuinely different from the Cholesky one (not lower triangular).
    CHECK(rotated.triangularView<Eigen::StrictlyUpper>().toDenseMatrix().cwiseAbs().maxCoeff() >
          1e-3);
  }
}

TEST_CASE(
    "covariance_sde: the structured diffusion reproduces covariance() for every architecture") {
  // Same bound as for the samplers (sum of k_lin and k_att parts adds one rounding).
  const double tol = 1e-13;
  for (const named_model& model : all_models()) {
    CAPTURE(model.name);
    const models::covariance_sde sde(model.arch, model.params);
    for (int m : {2, 3, 4, 6}) {
      CAPTURE(m);
      const matrix v = support::random_spd(m, 300 + m, 0.2);
      matrix sigma;
      sde.covariance(v, sigma, 0.0);
      const matrix structured = ncsde::noise_covariance(sde, v);
      CHECK(rel_err(structured, sigma) <= tol);
      CHECK(sde.noise_dimension(m) == (sde.has_attention() ? 2 * m * m : m * m));
      // Σ^{ab,cd} = Σ^{cd,ab}: K×K symmetric to round-off.
      CHECK((sigma - sigma.transpose()).cwiseAbs().maxCoeff() <=
            64 * eps * sigma.cwiseAbs().maxCoeff());
      // The drift is symmetric, finite, and sized like V.
      matrix b;
      sde.drift(v, b, 0.0);
      REQUIRE(b.rows() == m);
      CHECK(b.allFinite());
      CHECK((b - b.transpose()).cwiseAbs().maxCoeff() <=
            64 * eps * (1.0 + b.cwiseAbs().maxCoeff()));
    }
    // A singular PSD V (rank m − 1): Cholesky fails and the eigen-factor takes over; the structured
    // covariance still matches, up to the eigensolver's O(m ε |V|) reconstruction error of L Lᵀ.
    const int m = 4;
    vector lambda(m);
    lambda << 0.0, 0.4, 1.1, 2.3;
    const matrix v = support::with_eigenvalues(lambda, 17);
    matrix sigma;
    sde.covariance(v, sigma, 0.0);
    CHECK(rel_err(ncsde::noise_covariance(sde, v), sigma) <= 1e-12);
  }
}

TEST_CASE("covariance_sde: coefficient table of docs/maths.md §3.3 and §3.4") {
  using models::architecture;
  models::shaped_params p;
  p.gamma2 = 0.5;
  p.hidden_ratio = 2.0;
  // Values worked by hand from the table, γ² = ½, r = 2, γ⁴ = ¼.
  CHECK(models::covariance_sde(architecture::mlp, p).k_lin() == 1.0);
  CHECK(models::covariance_sde(architecture::mlp, p).k_att() == 0.0);
  CHECK(models::covariance_sde(architecture::resnet, p).k_lin() ==
        doctest::Approx(0.875).epsilon(1e-15));
  CHECK(models::covariance_sde(architecture::attention, p).k_lin() ==
        doctest::Approx(0.75).epsilon(1e-15));
  CHECK(models::covariance_sde(architecture::attention, p).k_att() ==
        doctest::Approx(0.25).epsilon(1e-15));
  CHECK(models::covariance_sde(architecture::transformer, p).k_lin() ==
        doctest::Approx(1.625).epsilon(1e-15));
  CHECK(models::covariance_sde(architecture::transformer, p).k_att() ==
        doctest::Approx(0.25).epsilon(1e-15));
  models::shaped_params mha = p;
  mha.heads = 4;
  mha.output_projection = true;
  // W^O with n_h = 4: 2γ² = 1, γ⁴/4 = 1/16. W^O with n_h = 1 is not row 3: 2γ² ≠ γ²(2 − γ²).
  CHECK(models::covariance_sde(architecture::attention, mha).k_lin() ==
        doctest::Approx(1.0).epsilon(1e-15));
  CHECK(models::covariance_sde(architecture::attention, mha).k_att() ==
        doctest::Approx(0.0625).epsilon(1e-15));
  mha.heads = 1;
  CHECK(models::covariance_sde(architecture::attention, mha).k_lin() ==
        doctest::Approx(1.0).epsilon(1e-15));
  models::shaped_params avg = p;
  avg.heads = 2;
  CHECK(models::covariance_sde(architecture::attention, avg).k_lin() ==
        doctest::Approx(0.75).epsilon(1e-15));
  CHECK(models::covariance_sde(architecture::attention, avg).k_att() ==
        doctest::Approx(0.125).epsilon(1e-15));

  // Drifts: transformer = γ²(b_att + b_ReLU), causal attention = γ² b_causal, resnet = γ² b_ReLU.
  const matrix v = support::random_spd(4, 5, 0.3);
  matrix relu, att, causal, got;
  models::b_relu(v, p.c_plus, p.c_minus, relu);
  models::b_att(v, p.tau0, att);
  models::b_causal(v, p.tau0, causal);
  const double tol = 16 * eps;
  models::covariance_sde(architecture::transformer, p).drift(v, got, 0.0);
  CHECK(rel_err(got, 0.5 * (att + relu)) <= tol);
  models::covariance_sde(architecture::resnet, p).drift(v, got, 0.0);
  CHECK(rel_err(got, 0.5 * relu) <= tol);
  models::covariance_sde(architecture::mlp, p).drift(v, got, 0.0);
  CHECK(rel_err(got, relu) <= tol);
  models::shaped_params c = p;
  c.causal = true;
  models::covariance_sde(architecture::attention, c).drift(v, got, 0.0);
  CHECK(rel_err(got, 0.5 * causal) <= tol);
}

TEST_CASE("b_ReLU: zero diagonal, ν at ρ ∈ {0, ±1}, no NaN at |ρ| → 1, degree-1 homogeneity") {
  const double c_plus = 0.0, c_minus = -2.0;
  const double nu0 = 4.0 / (2.0 * std::numbers::pi);  // (c₊ − c₋)²/(2π)
  matrix b;
  for (int m : {2, 3, 6}) {
    const matrix v = support::random_spd(m, 40 + m);
    models::b_relu(v, c_plus, c_minus, b);
    for (int a = 0; a < m; ++a) CHECK(b(a, a) == 0.0);
    CHECK(b == b.transpose());
    CHECK((b.array() >= 0.0).all());  // ν ≥ 0 on [−1, 1]
    // Degree 1: b(sV) = s b(V); every operation is O(1) flops, so a few ε relative.
    const double s = 1.7;
    matrix bs;
    models::b_relu(s * v, c_plus, c_minus, bs);
    CHECK((bs - s * b).cwiseAbs().maxCoeff() <= 16 * eps * s * b.cwiseAbs().maxCoeff());
  }
  // ρ = 0: ν(0)√(V¹¹V²²).
  matrix v(2, 2);
  v << 2.0, 0.0, 0.0, 0.5;
  models::b_relu(v, c_plus, c_minus, b);
  CHECK(std::abs(b(0, 1) - nu0) <= 4 * eps * nu0);
  // ρ = 1 exactly: V = [[1,1],[1,1]], ν(1) = 0; ρ = −1: ν(−1) = (c₊ − c₋)²/2 = 2.
  v << 1.0, 1.0, 1.0, 1.0;
  models::b_relu(v, c_plus, c_minus, b);
  CHECK(b.allFinite());
  CHECK(b.cwiseAbs().maxCoeff() == 0.0);
  v << 1.0, -1.0, -1.0, 1.0;
  models::b_relu(v, c_plus, c_minus, b);
  CHECK(std::abs(b(0, 1) - 2.0) <= 4 * eps * 2.0);
  // Round-off beyond |ρ| = 1, and a slightly negative diagonal: clipped, finite.
  v << 1.0, 1.0 + 1e-14, 1.0 + 1e-14, 1.0;
  models::b_relu(v, c_plus, c_minus, b);
  CHECK(b.allFinite());
  CHECK(std::abs(b(0, 1)) <= 1e-12);
  v << -1e-17, 0.0, 0.0, 1.0;
  models::b_relu(v, c_plus, c_minus, b);
  CHECK(b.allFinite());
  CHECK(b(0, 1) == 0.0);
}

TEST_CASE("b_att and Σ: homogeneity degrees, symmetry, quadratic-form identities") {
  const double tau0 = 0.9;
  for (int m : {2, 3, 4, 6}) {
    CAPTURE(m);
    const matrix v = support::random_spd(m, 60 + m, 0.3);
    const double s = 1.7;
    matrix b, bs, c, cs, sl, sls, sa, sas, sc, scs;
    models::b_att(v, tau0, b);
    models::b_att(s * v, tau0, bs);
    models::b_causal(v, tau0, c);
    models::b_causal(s * v, tau0, cs);
    models::sigma_lin(v, sl);
    models::sigma_lin(s * v, sls);
    models::sigma_att(v, tau0, sa);
    models::sigma_att(s * v, tau0, sas);
    models::sigma_causal(v, tau0, sc);
    models::sigma_causal(s * v, tau0, scs);
    // Evaluations involve up to O(m²) sums of products of ≤ 5 factors: 64 m ε relative covers them.
    const double tol = 64 * m * eps;
    CHECK(rel_err(bs, std::pow(s, 3) * b) <= tol);
    CHECK(rel_err(cs, std::pow(s, 3) * c) <= tol);
    CHECK(rel_err(sls, std::pow(s, 2) * sl) <= tol);
    CHECK(rel_err(sas, std::pow(s, 4) * sa) <= tol);
    CHECK(rel_err(scs, std::pow(s, 4) * sc) <= tol);
    // Symmetry of b and of Σ^{ab,cd} = Σ^{cd,ab}.
    CHECK(b == b.transpose());
    CHECK(rel_err(c, c.transpose()) <= tol);
    CHECK(rel_err(sl, sl.transpose()) <= tol);
    CHECK(rel_err(sa, sa.transpose()) <= tol);
    CHECK(rel_err(sc, sc.transpose()) <= tol);
    // Var(tr(H dV)) = 2 tr(HVHV) for Σ_lin and (4/(m²τ₀²)) tr(HVHΦ), Φ = VPVPV, for Σ_att.
    const matrix h = support::random_symmetric(m, 80 + m);
    const matrix p = matrix::Identity(m, m) - matrix::Constant(m, m, 1.0 / m);
    const matrix phi = v * p * v * p * v;
    const double lin_expected = 2.0 * (h * v * h * v).trace();
    const double att_expected = 4.0 / (m * m * tau0 * tau0) * (h * v * h * phi).trace();
    const double scale_lin = 2.0 * (h * v).squaredNorm();  // bounds |tr(HVHV)|-type sums
    const double scale_att = 4.0 / (m * m * tau0 * tau0) * (h * v).norm() * (h * phi).norm();
    CHECK(std::abs(quadratic_form(sl, h) - lin_expected) <= tol * scale_lin);
    CHECK(std::abs(quadratic_form(sa, h) - att_expected) <= tol * scale_att);
    CHECK(quadratic_form(sa, h) >= 0.0);
  }
}

TEST_CASE("b_causal: the O(m³) prefix-sum evaluation equals the direct formula") {
  // The direct form sums O(m²) products per entry of T; relative round-off ≲ 64 m ε.
  const double tau0 = 0.75;
  for (int m : {1, 2, 3, 4, 6, 9}) {
    CAPTURE(m);
    const matrix v = support::random_spd(m, 500 + m, 0.2);
    matrix fast;
    models::b_causal(v, tau0, fast);
    const matrix direct = b_causal_direct(v, tau0);
    if (m == 1) {
      CHECK(fast(0, 0) == 0.0);
      continue;
    }
    CHECK(rel_err(fast, direct) <= 64 * m * eps);
    // Token 1 gets no attention: b^{11} = b^{12} = 0 exactly (u₁ = u₂ = 0, P₁ = 0).
    CHECK(fast(0, 0) == 0.0);
    CHECK(fast(0, 1) == 0.0);
    CHECK(fast(1, 0) == 0.0);
    // The last token sees every token (P_m = P, u_m = u): b_causal^{mm} = b_att^{mm}.
    matrix full;
    models::b_att(v, tau0, full);
    CHECK(std::abs(fast(m - 1, m - 1) - full(m - 1, m - 1)) <=
          64 * m * eps * full.cwiseAbs().maxCoeff());
  }
}

TEST_CASE("causal noise: token 1 is never perturbed") {
  // Row 1 of N = (1/a) ζ P_a is zero (P₁ = 0), so N_causal^{11} = 2 (N V)^{11} = 0 exactly and the
  // (1,1) row and column of Σ_causal vanish: V^{11} moves only through the linear noise.
  const double tau0 = 0.8;
  for (int m : {2, 3, 5}) {
    CAPTURE(m);
    const matrix v = support::random_spd(m, 700 + m, 0.2);
    const matrix l = models::factor(v);
    matrix out;
    for (std::uint64_t seed = 0; seed < 3; ++seed) {
      const matrix z = support::random_gaussian(m, m, 900 + seed);
      models::noise_causal(l, v, z, tau0, out);
      CHECK(out(0, 0) == 0.0);
      CHECK(out.cwiseAbs().maxCoeff() > 0.0);
      CHECK(out == out.transpose());
    }
    matrix sc;
    models::sigma_causal(v, tau0, sc);
    CHECK(sc.row(0).cwiseAbs().maxCoeff() == 0.0);
    CHECK(sc.col(0).cwiseAbs().maxCoeff() == 0.0);
    CHECK(sc.row(1).cwiseAbs().maxCoeff() > 0.0);  // only the (1,1) pair is frozen
  }
}

TEST_CASE("at a singular V with null vector x: xᵀ b_att x = 0 and the noise vanishes along x") {
  const int m = 4;
  vector lambda(m);
  lambda << 0.0, 0.5, 1.2, 2.0;
  const std::uint64_t seed = 23;
  const matrix v = support::with_eigenvalues(lambda, seed);
  const vector x = support::random_orthogonal(m, seed).col(0);  // eigenvector of λ = 0
  REQUIRE((v * x).norm() <= 16 * m * eps * v.norm());
  matrix b;
  // xᵀ b x = (tr(PVPV)/m²)·xᵀVx + (2/m)(xᵀdiag V)(xᵀVu): both vanish with Vx = 0, up to the
  // O(m ε |V|) residual of Vx; relative to |b|, 1e-13.
  models::b_att(v, 0.8, b);
  CHECK(std::abs(x.dot(b * x)) <= 1e-13 * b.cwiseAbs().maxCoeff());
  // The drift is not zero along x in general: it couples x to the range of V.
  CHECK((b * x).norm() > 1e-3 * b.norm());
  models::b_relu(v, 0.0, -2.0, b);
  CHECK(x.dot(b * x) > 0.0);
  models::b_causal(v, 0.8, b);
  CHECK(x.dot(b * x) >= -1e-13 * b.cwiseAbs().maxCoeff());
  // Noise: L = eigen-factor (Cholesky fails on a singular V), so xᵀL ≈ 0 and every sampler vanishes
  // along x for every input.
  models::psd_factor f;
  CHECK_FALSE(f.compute(v));
  const matrix z = support::random_gaussian(m, m, 31);
  matrix n;
  const double tol = 1e-13;
  models::noise_lin(f.l(), z, n);
  CHECK(std::abs(x.dot(n * x)) <= tol * n.cwiseAbs().maxCoeff());
  models::noise_att(f.l(), v, z, 0.8, n);
  CHECK(std::abs(x.dot(n * x)) <= tol * n.cwiseAbs().maxCoeff());
  models::noise_causal(f.l(), v, z, 0.8, n);
  CHECK(std::abs(x.dot(n * x)) <= tol * n.cwiseAbs().maxCoeff());
}

TEST_CASE("psd_factor: Cholesky when positive definite, clipped eigen-factor otherwise") {
  models::psd_factor f;
  const matrix v = support::random_spd(5, 3);
  CHECK(f.compute(v));
  CHECK((f.l().triangularView<Eigen::StrictlyUpper>().toDenseMatrix().cwiseAbs().maxCoeff()) ==
        0.0);
  CHECK(rel_err(f.l() * f.l().transpose(), v) <= 16 * 5 * eps);
  // |ρ| = 1: V = [[1,1],[1,1]] is PSD of rank 1; Cholesky hits a zero pivot.
  matrix one(2, 2);
  one << 1.0, 1.0, 1.0, 1.0;
  CHECK_FALSE(f.compute(one));
  CHECK(f.l().allFinite());
  CHECK(rel_err(f.l() * f.l().transpose(), one) <= 16 * 2 * eps);
  // Slightly outside the cone: the factor reproduces the projection onto it.
  vector lambda(3);
  lambda << -1e-6, 0.5, 1.5;
  const matrix outside = support::with_eigenvalues(lambda, 9);
  CHECK_FALSE(f.compute(outside));
  CHECK(rel_err(f.l() * f.l().transpose(), ncsde::project_psd(outside)) <= 1e-13);
}

TEST_CASE("attention blow-up rate: dv/dt = γ²(m−1)v³/(m²τ₀²) on V = vI") {
  models::shaped_params p;
  p.gamma2 = 0.5;
  p.tau0 = 1.3;
  const models::covariance_sde sde(models::architecture::attention, p);
  for (int m : {2, 3, 5}) {
    for (double v0 : {0.5, 1.0, 2.5}) {
      const matrix v = v0 * matrix::Identity(m, m);
      matrix b;
      sde.drift(v, b, 0.0);
      const double rate = p.gamma2 * (m - 1) * v0 * v0 * v0 / (m * m * p.tau0 * p.tau0);
      // u = 0 exactly in exact arithmetic; O(m) flops per entry: 16 m ε relative.
      const matrix expected = rate * matrix::Identity(m, m);
      CHECK((b - expected).cwiseAbs().maxCoeff() <= 16 * m * eps * rate);
    }
  }
  // Blow-up time t* = m²τ₀²/(2γ²(m−1)v₀²) of the ODE v' = k v³: 4.5 for m = 3, τ₀ = 1, γ² = ½, v₀
  // = 1.
  const double k = 0.5 * 2 / 9.0;
  CHECK(std::abs(1.0 / (2.0 * k) - 4.5) <= 4 * eps * 4.5);
}

TEST_CASE("covariance_sde rejects bad parameters, naming the parameter and the value") {
  using models::architecture;
  auto expect = [](architecture arch, models::shaped_params p, const std::string& message) {
    CHECK_THROWS_WITH_AS(models::covariance_sde(arch, p), doctest::Contains(message.c_str()),
                         ncsde::invalid_argument);
  };
  models::shaped_params p;
  p.gamma2 = 1.5;
  expect(architecture::resnet, p, "covariance_sde: gamma2 must be in [0, 1] (got 1.5)");
  p.gamma2 = -0.1;
  expect(architecture::attention, p, "gamma2 must be in [0, 1] (got -0.1)");
  p.gamma2 = std::nan("");
  expect(architecture::attention, p, "gamma2 must be in [0, 1] (got nan)");
  p = {};
  p.tau0 = 0.0;
  expect(architecture::attention, p, "tau0 must be finite and > 0 (got 0)");
  p.tau0 = -0.5;
  expect(architecture::transformer, p, "tau0 must be finite and > 0 (got -0.5)");
  p.tau0 = std::numeric_limits<double>::infinity();
  expect(architecture::attention, p, "tau0 must be finite and > 0 (got inf)");
  p = {};
  p.heads = 0;
  expect(architecture::attention, p, "heads must be >= 1 (got 0)");
  p = {};
  p.hidden_ratio = 0.0;
  expect(architecture::resnet, p, "hidden_ratio must be finite and > 0 (got 0)");
  p = {};
  p.c_plus = std::numeric_limits<double>::infinity();
  expect(architecture::mlp, p, "c_plus must be finite (got inf)");
  p = {};
  p.c_minus = std::nan("");
  expect(architecture::mlp, p, "c_minus must be finite (got nan)");
  p = {};
  p.causal = true;
  expect(architecture::mlp, p, "causal must be false for mlp and resnet (no attention) (got true)");
  p = {};
  p.heads = 2;
  expect(architecture::resnet, p, "heads must be 1 for mlp and resnet (no attention) (got 2)");
  // The boundary values are accepted.
  p = {};
  p.gamma2 = 0.0;
  CHECK_NOTHROW(models::covariance_sde(architecture::transformer, p));
  p.gamma2 = 1.0;
  CHECK_NOTHROW(models::covariance_sde(architecture::transformer, p));
}
