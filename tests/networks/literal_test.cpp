#include "ncsde/networks/literal.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ncsde/models/coefficients.hpp"
#include "support/mc_stats.hpp"
#include "support/message_of.hpp"
#include "support/network_refusals.hpp"

namespace {

using ncsde::matrix;
namespace models = ncsde::models;
namespace networks = ncsde::networks;

constexpr double eps = std::numeric_limits<double>::epsilon();

/// A fixed, well-conditioned 3×3 covariance (ρ^{01} = 0.3/√0.8 ≈ 0.34, ρ^{02} ≈ −0.18).
matrix v0_3x3() {
  matrix v(3, 3);
  v << 1.0, 0.3, -0.2,  //
      0.3, 0.8, 0.1,    //
      -0.2, 0.1, 1.2;
  return v;
}

/// Per-entry Monte Carlo means of n·(V₁ − V₀) over independent one-layer networks (seed, i).
struct entry_means {
  std::vector<support::sample_mean> e;
  explicit entry_means(int m) : e(static_cast<std::size_t>(m * m)) {}
  support::sample_mean& at(int a, int b, int m) { return e[static_cast<std::size_t>(a * m + b)]; }
};

/// Checks every upper-triangle mean against expected(a, b): within 5 standard errors plus `allowance`.
void check_means(entry_means& means, const matrix& expected, int m, double allowance = 0.0) {
  for (int a = 0; a < m; ++a) {
    for (int b = a; b < m; ++b) {
      const support::sample_mean& s = means.at(a, b, m);
      CAPTURE(a);
      CAPTURE(b);
      CAPTURE(s.mean());
      CAPTURE(expected(a, b));
      CAPTURE(s.stderr_of_mean());
      CHECK(std::abs(s.mean() - expected(a, b)) <= 5 * s.stderr_of_mean() + allowance);
    }
  }
}

}  // namespace

TEST_CASE("literal networks start at X0 X0ᵀ/n = V0 to round-off") {
  const matrix v0 = v0_3x3();
  matrix rank_one(3, 3);  // singular PSD: exercises the eigen-factor
  rank_one << 1.0, 2.0, -1.0, 2.0, 4.0, -2.0, -1.0, -2.0, 1.0;
  for (const int n : {3, 16, 200}) {
    const networks::literal_network net(models::architecture::mlp, {}, 3, n);
    for (const matrix& v : {v0, rank_one}) {
      const matrix x0 = net.initial_state(v, ncsde::random_stream(5, 0));
      REQUIRE(x0.rows() == 3);
      REQUIRE(x0.cols() == n);
      const matrix v_back = x0 * x0.transpose() / n;
      // Householder QR gives QᵀQ = I to O(n ε); the product with L, |L|² = max|V|-sized, and the
      // division by n add O(m ε max|V|). 16 (n + m) ε max|V| leaves headroom 16.
      const double tol = 16.0 * (n + 3) * eps * v.cwiseAbs().maxCoeff();
      CHECK((v_back - v).cwiseAbs().maxCoeff() <= tol);
    }
  }
}

TEST_CASE("MLP one-layer drift is exactly c(n) b_ReLU at finite n (docs/maths.md §6)") {
  // n E[V₁ − V₀ | V₀] = c(n) b_ReLU(V₀) holds exactly for every n (docs/maths.md §5.2), so only
  // Monte Carlo error remains: 20'000 independent one-layer networks at n = 16, 5 standard errors
  // per entry.
  const int m = 3;
  const int n = 16;
  const int draws = 20'000;
  models::shaped_params p;
  p.c_plus = 0.0;
  p.c_minus = -2.0;
  const networks::literal_network net(models::architecture::mlp, p, m, n);
  const matrix v0 = v0_3x3();
  entry_means means(m);
  for (int i = 0; i < draws; ++i) {
    const ncsde::random_stream stream(101, static_cast<std::uint64_t>(i));
    const std::vector<matrix> v = net.run(v0, 1, {1}, stream);
    for (int a = 0; a < m; ++a)
      for (int b = a; b < m; ++b) means.at(a, b, m).add(n * (v[0](a, b) - v0(a, b)));
  }
  matrix b;
  models::b_relu(v0, p.c_plus, p.c_minus, b);
  const double c_n = net.c();
  CHECK(std::abs(c_n - 2.0 / (1.0 + 0.25)) <= 4 * eps);  // s₊ = 1, s₋ = 1 − 2/4
  check_means(means, c_n * b, m);
  // Power: the off-diagonal drift differs from the limit b_ReLU (c = 1) by (c(16) − 1) b_ReLU ≈ 0.6
  // b, which this sample resolves: the factor c(n) is really being tested.
  const support::sample_mean& s01 = means.at(0, 1, m);
  CHECK(std::abs(s01.mean() - b(0, 1)) > 5 * s01.stderr_of_mean());
}

TEST_CASE("causal attention: token 0 gets no attention") {
  SUBCASE("row 0 of A is e0 exactly; rows of A − I sum to 0 over their keys") {
    matrix s(4, 4);
    s << 3.0, -700.0, 2.0, 1.0,  //
        0.5, 800.0, -1.0, 9.0,   //
        -2.0, 0.0, 1.0, 2.0,     //
        1.0, 1.0, 1.0, 1.0;
    matrix a;
    networks::attention_matrix(s, /*causal=*/true, a);
    CHECK(a(0, 0) == 1.0);
    CHECK(a.row(0).tail(3).cwiseAbs().maxCoeff() == 0.0);
    for (int row = 0; row < 4; ++row) {
      CHECK(a.row(row).tail(3 - row).cwiseAbs().sum() == 0.0);  // no key beyond the token
      // Softmax − centring sums to 0 over the a + 1 keys; round-off is a few ε per entry.
      CHECK(std::abs(a.row(row).sum() - 1.0) <= 8 * 4 * eps);
    }
    networks::attention_matrix(s, /*causal=*/false, a);
    CHECK(std::isfinite(a.sum()));  // logits ±800 do not overflow the stable softmax
    for (int row = 0; row < 4; ++row) CHECK(std::abs(a.row(row).sum() - 1.0) <= 8 * 4 * eps);
  }

  SUBCASE("row 0 of X₁ depends on row 0 of X₀ only, and E[V₁⁰⁰] = V₀⁰⁰") {
    const int m = 3;
    const int n = 32;
    models::shaped_params p;
    p.gamma2 = 0.7;
    p.causal = true;
    const networks::literal_network net(models::architecture::attention, p, m, n, 4);
    const ncsde::random_stream stream(7, 3);
    matrix x = net.initial_state(v0_3x3(), stream);
    matrix y = x;
    y.bottomRows(2) *= -3.0;
    net.step(x, 0, stream);
    net.step(y, 0, stream);
    CHECK((x.row(0) - y.row(0)).cwiseAbs().maxCoeff() == 0.0);
    CHECK((x.row(1) - y.row(1)).cwiseAbs().maxCoeff() > 0.0);

    // Drift of V⁰⁰ is exactly 0 at every n (docs/maths.md §6): 20'000 networks, 5 standard errors.
    support::sample_mean d00;
    const matrix v0 = v0_3x3();
    for (int i = 0; i < 20'000; ++i) {
      const std::vector<matrix> v = net.run(v0, 1, {1}, ncsde::random_stream(13, i));
      d00.add(n * (v[0](0, 0) - v0(0, 0)));
    }
    CAPTURE(d00.mean());
    CAPTURE(d00.stderr_of_mean());
    CHECK(std::abs(d00.mean()) <= 5 * d00.stderr_of_mean());
  }
}

TEST_CASE("ResNet one-layer drift is exactly γ² c(n) b_ReLU at finite n (docs/maths.md §6)") {
  // Exact for every n (docs/maths.md §5.2 with the read-out lemma §5.1: E[V₁ | X, ℱ] = λ²V + γ²Ṽ
  // and n E[Ṽ − V] = c(n) b_ReLU). 20'000 networks at n = 16, r = 2 (hidden width 32), 5 standard
  // errors.
  const int m = 3;
  const int n = 16;
  models::shaped_params p;
  p.gamma2 = 0.6;
  p.hidden_ratio = 2.0;
  const networks::literal_network net(models::architecture::resnet, p, m, n);
  REQUIRE(net.hidden_width() == 32);
  const matrix v0 = v0_3x3();
  entry_means means(m);
  for (int i = 0; i < 20'000; ++i) {
    const std::vector<matrix> v = net.run(v0, 1, {1}, ncsde::random_stream(202, i));
    for (int a = 0; a < m; ++a)
      for (int b = a; b < m; ++b) means.at(a, b, m).add(n * (v[0](a, b) - v0(a, b)));
  }
  matrix b;
  models::b_relu(v0, p.c_plus, p.c_minus, b);
  check_means(means, p.gamma2 * net.c() * b, m);
}

TEST_CASE("attention one-layer drift n E[ΔV] ≈ γ² b_att (docs/maths.md §5.3, §6)" *
          doctest::test_suite("statistical")) {
  // One head, no W^O, n = 64, n_k = 16, γ² = 1/2, τ₀ = 1, 40'000 independent networks.
  // Control variate: the same layer with A replaced by I, i.e. X̃₁ = λX₀ + γ X₀ W^V/√n with the very
  // W^V of the network (counter (user, 0, weight_tag(value))), has E[X̃₁X̃₁ᵀ/n] = V₀ exactly, so
  // D = X₁X₁ᵀ − X̃₁X̃₁ᵀ (= n·(V₁ − Ṽ₁)) has E[D] = n E[V₁ − V₀] and a much smaller variance (the
  // Wishart fluctuation of W^V cancels to leading order).
  // Tolerance: 5 standard errors plus an O(1/n) allowance for the next order of the expansion of
  // docs/maths.md §5.3 (terms ε⁴ξ⁴V with ε² = 1/(τ₀²n), ξ ~ V): γ² max|V₀|⁵/(τ₀⁴ n) ≈ 0.019 here.
  const int m = 3;
  const int n = 64;
  const int n_k = 16;
  const int draws = 40'000;
  models::shaped_params p;
  p.gamma2 = 0.5;
  p.tau0 = 1.0;
  const networks::literal_network net(models::architecture::attention, p, m, n, n_k);
  const double lambda = std::sqrt(1.0 - p.gamma2);
  const double gamma = std::sqrt(p.gamma2);
  const matrix v0 = v0_3x3();
  entry_means means(m);
  matrix w(n, n);
  for (int i = 0; i < draws; ++i) {
    const ncsde::random_stream stream(303, i);
    const matrix x0 = net.initial_state(v0, stream);
    matrix x1 = x0;
    net.step(x1, 0, stream);
    stream.normals(ncsde::random_domain::user, 0,
                   networks::weight_tag(networks::weight_kind::value), w.data(), w.size());
    const matrix twin = lambda * x0 + (gamma / std::sqrt(double(n))) * (x0 * w);
    const matrix d = x1 * x1.transpose() - twin * twin.transpose();
    for (int a = 0; a < m; ++a)
      for (int b = a; b < m; ++b) means.at(a, b, m).add(d(a, b));
  }
  matrix b;
  models::b_att(v0, p.tau0, b);
  b *= p.gamma2;
  const double allowance =
      p.gamma2 * std::pow(v0.cwiseAbs().maxCoeff(), 5) / (std::pow(p.tau0, 4) * n);
  check_means(means, b, m, allowance);
  // Power: the drift is resolved (b^{22} ≈ 0.19 is ≈ 10 standard errors), so the check above would
  // see a missing or doubled attention drift.
  const support::sample_mean& s22 = means.at(2, 2, m);
  CHECK(s22.mean() > 5 * s22.stderr_of_mean() + allowance);
}

TEST_CASE("literal networks are reproducible: same (seed, network) → identical V") {
  const matrix v0 = v0_3x3();
  models::shaped_params attention_options;
  attention_options.heads = 4;
  attention_options.output_projection = true;
  models::shaped_params averaged_heads;
  averaged_heads.heads = 2;
  models::shaped_params causal_block;
  causal_block.causal = true;
  const std::vector<networks::literal_network> nets = {
      networks::literal_network(models::architecture::mlp, {}, 3, 16),
      networks::literal_network(models::architecture::resnet, {}, 3, 16),
      networks::literal_network(models::architecture::attention, {}, 3, 16, 2),
      networks::literal_network(models::architecture::attention, attention_options, 3, 16, 2),
      networks::literal_network(models::architecture::attention, averaged_heads, 3, 16, 2),
      networks::literal_network(models::architecture::transformer, causal_block, 3, 16, 2),
  };
  for (const networks::literal_network& net : nets) {
    CAPTURE(static_cast<int>(net.arch()));
    const std::vector<matrix> a = net.run(v0, 5, {0, 2, 5}, ncsde::random_stream(9, 4));
    const std::vector<matrix> b = net.run(v0, 5, {0, 2, 5}, ncsde::random_stream(9, 4));
    const std::vector<matrix> c = net.run(v0, 5, {0, 2, 5}, ncsde::random_stream(9, 5));
    REQUIRE(a.size() == 3);
    // Depth 0 is V₀ up to the round-off of X₀ (see the first test case).
    CHECK((a[0] - v0).cwiseAbs().maxCoeff() <= 16.0 * 19 * eps * 1.2);
    for (std::size_t k = 0; k < a.size(); ++k) {
      CHECK(a[k].allFinite());
      CHECK((a[k] - b[k]).cwiseAbs().maxCoeff() == 0.0);
    }
    CHECK((a[2] - c[2]).cwiseAbs().maxCoeff() > 0.0);  // another network index, other weights
    // Stopping at depth 2 draws the same first two layers.
    const std::vector<matrix> early = net.run(v0, 5, {2}, ncsde::random_stream(9, 4));
    CHECK((early[0] - a[1]).cwiseAbs().maxCoeff() == 0.0);
  }
}

TEST_CASE("literal networks refuse bad input, naming the parameter and the value") {
  support::check_network_refusals<networks::literal_network>("literal_network", v0_3x3());
  matrix s(2, 3);
  s.setZero();
  matrix a;
  CHECK(support::message_of([&] { networks::attention_matrix(s, false, a); }) ==
        "attention_matrix: S must be square (got 2x3)");
}
