// The pieces of `ncsde validate` (validation/fidelity): the wrong SDE variants of the power check,
// the multi-grid stopped SDE sampler, and the proportion test.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "fidelity/fidelity.hpp"
#include "fidelity/variants.hpp"
#include "ncsde/models/coefficients.hpp"
#include "ncsde/noise.hpp"
#include "ncsde/symmetric.hpp"

namespace {

ncsde::matrix v3() {
  const double d[3] = {1.0, 1.6, 0.7};
  const double r[3][3] = {{1, 0.5, 0.3}, {0.5, 1, 0.7}, {0.3, 0.7, 1}};
  ncsde::matrix v(3, 3);
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) v(a, b) = r[a][b] * std::sqrt(d[a] * d[b]);
  return v;
}

ncsde::models::shaped_params attention_params() {
  ncsde::models::shaped_params p;
  p.gamma2 = 0.7;
  p.tau0 = 0.6;
  return p;
}

}  // namespace

TEST_CASE("variant_sde: exact covariances of the wrong variants (basis sums)") {
  using namespace ncsde;
  const matrix v = v3();
  const int m = 3;
  for (const auto arch : {models::architecture::attention, models::architecture::transformer}) {
    const models::covariance_sde base(arch, attention_params());
    matrix lin, att;
    models::sigma_lin(v, lin);
    // vpv: k_lin Σ_lin + k_att Σ with Φ = VPV in place of VPVPV.
    const matrix p = matrix::Identity(m, m) - matrix::Constant(m, m, 1.0 / m);
    const matrix phi = v * p * v;
    const double tau0 = 0.6;
    matrix vpv_att;
    fill_packed_covariance(m, vpv_att, [&](int a, int b, int c, int d) {
      return (v(a, c) * phi(b, d) + v(a, d) * phi(b, c) + v(b, c) * phi(a, d) +
              v(b, d) * phi(a, c)) /
             (m * m * tau0 * tau0);
    });
    const matrix expect_vpv = base.k_lin() * lin + base.k_att() * vpv_att;
    const matrix got_vpv = noise_covariance(cli::variant_sde(base, cli::sde_variant::vpv), v);
    CHECK((got_vpv - expect_vpv).norm() <= 1e-13 * expect_vpv.norm());
    // It is genuinely different from the right Σ (the point of the variant): its attention part is
    // off by more than 30% in Frobenius norm (docs/maths.md §3.2.4: about 50%).
    matrix right;
    base.covariance(v, right, 0.0);
    models::sigma_att(v, tau0, att);
    INFO("relative error of the attention part: ",
         (got_vpv - right).norm() / (base.k_att() * att.norm()));
    CHECK((got_vpv - right).norm() > 0.3 * base.k_att() * att.norm());
    // Dropping the attention noise leaves k_lin Σ_lin; the correct variant is the model itself.
    const matrix got_none =
        noise_covariance(cli::variant_sde(base, cli::sde_variant::no_attention_noise), v);
    CHECK((got_none - base.k_lin() * lin).norm() <= 1e-13 * lin.norm());
    const matrix got_right = noise_covariance(cli::variant_sde(base, cli::sde_variant::correct), v);
    CHECK((got_right - right).norm() <= 1e-13 * right.norm());
    // Drift: no-attention removes γ² b_att, the others keep the model's drift.
    matrix b, b_wrong, b_att;
    base.drift(v, b, 0.0);
    models::b_att(v, tau0, b_att);
    cli::variant_sde(base, cli::sde_variant::no_attention).drift(v, b_wrong, 0.0);
    CHECK((b_wrong - (b - 0.7 * b_att)).norm() <= 1e-14 * b.norm());
    cli::variant_sde(base, cli::sde_variant::vpv).drift(v, b_wrong, 0.0);
    CHECK((b_wrong - b).norm() == 0.0);
  }
  CHECK_THROWS_WITH_AS(cli::variant_sde(models::covariance_sde(models::architecture::mlp, {}),
                                        cli::sde_variant::vpv),
                       doctest::Contains("variant must be 'correct' for a model without attention"),
                       invalid_argument);
  auto causal = attention_params();
  causal.causal = true;
  CHECK_THROWS_WITH_AS(
      cli::variant_sde(models::covariance_sde(models::architecture::attention, causal),
                       cli::sde_variant::vpv),
      doctest::Contains("not vpv for causal"), invalid_argument);
  CHECK_THROWS_WITH_AS(cli::parse_variant("vpvpv", "--variants"),
                       doctest::Contains("--variants must be one of correct, vpv"),
                       invalid_argument);
}

TEST_CASE("sample_sde: stopping on each grid k/n matches the path sampled on that grid") {
  using namespace ncsde;
  const models::covariance_sde sde(models::architecture::attention, attention_params());
  cli::sde_sample_options opt;
  opt.t_end = 1.0;
  opt.dt = 1.0 / 256;
  opt.widths = {8, 32};
  opt.stop_level = 2.0;
  opt.paths = 60;
  opt.seed = 5;
  opt.threads = 1;
  opt.kept_paths = 60;
  for (int j = 0; j <= 256; ++j) opt.save_times.push_back(j / 256.0);
  const cli::sde_sample s = cli::sample_sde(sde, v3(), opt);
  long long stopped8 = 0, stopped32 = 0;
  for (int p = 0; p < 60; ++p) {
    const auto& path = s.kept[static_cast<std::size_t>(p)];
    for (std::size_t w = 0; w < 2; ++w) {
      const int n = opt.widths[w];
      const int stride = 256 / n;
      // Reference: the first grid point k/n (k ≥ 1) of the saved path with max diagonal > K.
      std::size_t tau = 0;
      matrix v(3, 3);
      for (std::size_t j = static_cast<std::size_t>(stride); j < path.size() && tau == 0;
           j += stride) {
        unpack_upper(path[j], v);
        if (v.diagonal().maxCoeff() > 2.0) tau = j;
      }
      const cli::stopped_sample& got = s.by_width[w];
      if (tau == 0) {
        CHECK(got.status[static_cast<std::size_t>(p)] != path_status::stopped);
      } else {
        CHECK(got.status[static_cast<std::size_t>(p)] == path_status::stopped);
        CHECK((got.packed[static_cast<std::size_t>(p)] - path[tau]).norm() == 0.0);
        (w == 0 ? stopped8 : stopped32) += 1;
      }
    }
  }
  CHECK(stopped32 >= stopped8);  // the finer grid sees every passage the coarse one sees
  CHECK(stopped8 > 0);
  // Thread-count independence.
  opt.threads = 2;
  const cli::sde_sample t2 = cli::sample_sde(sde, v3(), opt);
  for (std::size_t p = 0; p < 60; ++p) {
    CHECK((t2.unstopped.packed[p] - s.unstopped.packed[p]).norm() == 0.0);
    CHECK((t2.by_width[1].packed[p] - s.by_width[1].packed[p]).norm() == 0.0);
  }
  opt.dt = 1.0 / 100;  // 1/(32·dt) = 3.125: the grid k/32 is not on the step grid
  CHECK_THROWS_WITH_AS(cli::sample_sde(sde, v3(), opt),
                       doctest::Contains("dt must be such that 1/(n·dt) is an integer for n = 8"),
                       invalid_argument);
}

TEST_CASE("proportion_test and bonferroni") {
  using namespace ncsde::cli;
  // 120/1000 vs 80/1000: pooled p = 0.1, SE = √(0.1·0.9·0.002) = 0.013416, z = 2.981, p = 0.00287.
  const comparison c = proportion_test("x", 120, 1000, 80, 1000);
  CHECK(c.p_value == doctest::Approx(0.002872).epsilon(2e-3));
  CHECK(c.value == 0.12);
  CHECK(c.reference == 0.08);
  CHECK(proportion_test("x", 0, 10, 0, 10).p_value == 1.0);
  CHECK(bonferroni({c, proportion_test("y", 5, 10, 5, 10)}) == doctest::Approx(2 * c.p_value));
  // Comparisons outside the family neither count nor lower the minimum.
  comparison info = proportion_test("z", 900, 1000, 100, 1000);
  info.in_family = false;
  CHECK(bonferroni({c, info, proportion_test("y", 5, 10, 5, 10)}) ==
        doctest::Approx(2 * c.p_value));
}

TEST_CASE("mean_difference: Welch z-test of two means") {
  using namespace ncsde::cli;
  // Means 2 and 1; sample variances 1 (x: 1, 2, 3) and 1 (y: 0, 1, 2); SE = √(1/3 + 1/3) = 0.8165,
  // z = 1.2247, p = erfc(z/√2) = 0.2207.
  const comparison c = mean_difference("E f", {1.0, 2.0, 3.0}, {0.0, 1.0, 2.0});
  CHECK(c.value == doctest::Approx(2.0));
  CHECK(c.reference == doctest::Approx(1.0));
  CHECK(c.stderr_ == doctest::Approx(std::sqrt(2.0 / 3.0)));
  CHECK(c.p_value == doctest::Approx(0.2207).epsilon(1e-3));
  CHECK_THROWS_WITH_AS(mean_difference("E f", {}, {1.0}), doctest::Contains("samples"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(mean_difference("E f", {1.0, std::nan("")}, {1.0}),
                       doctest::Contains("non-finite"), ncsde::invalid_argument);
}

TEST_CASE("fit_power recovers a known exponent; limit_gaps a known intercept") {
  using namespace ncsde::cli;
  const std::vector<double> n{32, 64, 128, 256};
  // Exact gaps C_f·n^{−0.5} for two functionals: the fit returns β = 0.5 with χ² ≈ 0.
  std::vector<std::vector<double>> gaps(2), se(2);
  for (const double w : n) {
    gaps[0].push_back(0.2 / std::sqrt(w));
    gaps[1].push_back(-0.1 / std::sqrt(w));
    se[0].push_back(0.002);
    se[1].push_back(0.002);
  }
  const power_fit fit = fit_power(n, gaps, se);
  CHECK(fit.exponent == doctest::Approx(0.5).epsilon(2e-3));
  CHECK(fit.chi2 < 1e-3);
  CHECK(fit.dof == 8 - 2 - 1);
  CHECK(fit.bounded);
  // The interval half-width is the β-shift that raises χ² by 1 from the minimum: a small positive
  // number that grows with the noise.
  CHECK(fit.exponent_stderr > 0.0);
  CHECK(fit.exponent_stderr < 0.1);
  std::vector<std::vector<double>> noisier = se;
  for (auto& s : noisier)
    for (double& x : s) x *= 4.0;
  CHECK(fit_power(n, gaps, noisier).exponent_stderr > 3.0 * fit.exponent_stderr);
  // Pure noise-level gaps (0 everywhere): no rate is resolved.
  const std::vector<std::vector<double>> zero(1, std::vector<double>(4, 0.0));
  CHECK_FALSE(fit_power(n, zero, {se[0]}).bounded);

  // a + c·n^{−1/2}: the intercept is recovered, with a standard error that is the fit's, and the
  // z-test rejects a = 0 only for the shifted gaps.
  std::vector<double> shifted;
  for (const double g : gaps[0]) shifted.push_back(0.05 + g);
  const std::vector<comparison> lim =
      limit_gaps(n, {"E a", "E b"}, {gaps[0], shifted}, {se[0], se[0]}, 0.5);
  REQUIRE(lim.size() == 2);
  CHECK(std::abs(lim[0].value) < 1e-12);
  CHECK(lim[0].p_value == doctest::Approx(1.0));
  CHECK(lim[1].value == doctest::Approx(0.05));
  CHECK(lim[1].stderr_ > 0.002);  // extrapolation past the widest n costs precision
  CHECK(lim[1].p_value < 1e-6);
  CHECK_THROWS_WITH_AS(limit_gaps({32}, {"E a"}, {{0.1}}, {{0.01}}, 0.5),
                       doctest::Contains("widths"), ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(limit_gaps(n, {"E a"}, {gaps[0]}, {se[0]}, -1.0), doctest::Contains("beta"),
                       ncsde::invalid_argument);
}

TEST_CASE("sample_sde over ranges: the pieces, merged or serialised, are the whole sample") {
  using namespace ncsde;
  const models::covariance_sde sde(models::architecture::attention, attention_params());
  cli::sde_sample_options opt;
  opt.dt = 1.0 / 256;
  opt.widths = {8, 32};
  opt.stop_level = 2.0;
  opt.paths = 50;
  opt.seed = 9;
  opt.threads = 2;
  opt.kept_paths = 12;
  opt.save_times = {0.0, 0.5, 1.0};
  const cli::sde_sample whole = cli::sample_sde(sde, v3(), opt);
  REQUIRE(whole.kept.size() == 12);
  std::vector<cli::sde_sample> pieces;
  for (const path_range r :
       {path_range{0, 7}, path_range{7, 7}, path_range{7, 31}, path_range{31, 50}}) {
    opt.range = r;
    pieces.push_back(
        models::deserialize_sde_sample(models::serialize(cli::sample_sde(sde, v3(), opt))));
    CHECK(pieces.back().first == r.first);
    CHECK(pieces.back().unstopped.status.size() == static_cast<std::size_t>(r.size()));
  }
  const cli::sde_sample merged = models::merge_sde_samples(pieces);
  CHECK(merged.first == 0);
  REQUIRE(merged.kept.size() == whole.kept.size());
  // Bit for bit: the differences are exactly 0 (NaN-free: no path blows up here).
  auto same = [](const std::vector<vector>& x, const std::vector<vector>& y) {
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (x[i].size() != y[i].size() || !(x[i].array() == y[i].array()).all()) return false;
    return true;
  };
  for (std::size_t p = 0; p < whole.kept.size(); ++p) {
    CHECK(!whole.kept[p].empty());
    CHECK(same(merged.kept[p], whole.kept[p]));
  }
  for (std::size_t w = 0; w < 2; ++w) {
    CHECK(merged.by_width[w].status == whole.by_width[w].status);
    CHECK(same(merged.by_width[w].packed, whole.by_width[w].packed));
  }
  CHECK(merged.unstopped.status == whole.unstopped.status);
  CHECK(same(merged.unstopped.packed, whole.unstopped.packed));
  CHECK(merged.pd.violations == whole.pd.violations);
  CHECK(merged.paths_with_violations == whole.paths_with_violations);
  // Pieces out of order, and ranges outside [0, paths], are refused.
  CHECK_THROWS_AS(models::merge_sde_samples({pieces[2], pieces[0]}), invalid_argument);
  opt.range = path_range{40, 51};
  CHECK_THROWS_WITH_AS(cli::sample_sde(sde, v3(), opt), doctest::Contains("range"),
                       invalid_argument);
  CHECK_THROWS_AS(models::deserialize_sde_sample("not a sample"), invalid_argument);
}
