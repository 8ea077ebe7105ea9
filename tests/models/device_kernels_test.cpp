// The device form of the dense kernels (solvers/device/dense.hpp) and of the models' coefficients
// (lib/models/device/shaped_kernels.hpp, shaped_tanh_kernels.hpp), compiled for the host: a CUDA
// thread runs the same code, so here it must give the CPU's numbers bit for bit. The products and
// the Cholesky factor against ncsde::detail's; each coefficient against models::b_relu …
// noise_causal; the composed drift and diffusion against the per-path ones of covariance_sde and
// shaped_activation_sde, on ncsde::matrix and on the fixed-size states.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "../../lib/models/device/shaped_device.hpp"
#include "../../solvers/device/dense.hpp"
#include "ncsde/dense_kernels.hpp"
#include "ncsde/models/coefficients.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/models/shaped_tanh.hpp"
#include "ncsde/psd.hpp"
#include "support/device_checks.hpp"
#include "support/random_matrices.hpp"

namespace {

using ncsde::matrix;
using ncsde::square_matrix;
using ncsde::vector;
namespace models = ncsde::models;
namespace dev = ncsde::models::device;

static_assert(dev::pi == std::numbers::pi && dev::sqrt2 == std::numbers::sqrt2);

constexpr int sizes[] = {1, 2, 3, 4, 5, 8, 9, 17};
constexpr double nan = std::numeric_limits<double>::quiet_NaN();
using support::differing_entries;
using support::nans;

/// The positive-definite V of the tests: A Aᵀ/m + 0.1 Id, A Gaussian from `seed`.
matrix spd(int m, std::uint64_t seed) { return support::random_spd(m, seed, 0.1); }

/// ξ with k iid N(0, 1) entries.
vector noise(int k, std::uint64_t seed) { return support::random_gaussian(k, 1, seed, 3); }

/// The device Cholesky factor of v; REQUIREs that it exists.
std::vector<double> device_factor(const matrix& v) {
  const int m = static_cast<int>(v.rows());
  std::vector<double> l = nans(m * m);
  REQUIRE(ncsde::device::cholesky(v.data(), m, l.data()));
  return l;
}

TEST_CASE("device kernels: the comparison sees one ulp and the sign of zero") {
  const double a[2] = {1.0, 0.0};
  const double b[2] = {std::nextafter(1.0, 2.0), -0.0};
  CHECK(differing_entries(a, b, 2) == 2);
  CHECK(differing_entries(a, a, 2) == 0);
}

TEST_CASE("device dense kernels: products as detail::matrix_product(_transposed), bit for bit") {
  for (const int m : sizes) {
    CAPTURE(m);
    const int mm = m * m;
    const matrix x = support::random_gaussian(m, m, 11);
    const matrix full = support::random_gaussian(m, m, 12);
    matrix chol(m, m);
    REQUIRE(ncsde::detail::matrix_cholesky(spd(m, 13).data(), m, chol.data()));
    // With `lower` both sides skip L's upper triangle, whatever it holds: the full L checks that
    // they skip the same terms, the Cholesky factor is what the models multiply by.
    const matrix* const factors[] = {&full, &chol};
    for (const matrix* l : factors)
      for (const bool lower : {false, true}) {
        CAPTURE(lower);
        CAPTURE(l == &chol);
        matrix cpu(m, m);
        std::vector<double> out = nans(mm);
        ncsde::detail::matrix_product(l->data(), x.data(), m, lower, cpu.data());
        ncsde::device::product(l->data(), x.data(), m, lower, out.data());
        CHECK(differing_entries(cpu, out) == 0);
        out = nans(mm);
        ncsde::detail::matrix_product_transposed(x.data(), l->data(), m, lower, cpu.data());
        ncsde::device::product_transposed(x.data(), l->data(), m, lower, out.data());
        CHECK(differing_entries(cpu, out) == 0);
      }
  }
}

TEST_CASE("device dense kernels: cholesky as detail::matrix_cholesky, refusing what it refuses") {
  for (const int m : sizes) {
    CAPTURE(m);
    const matrix v = spd(m, 21);
    matrix cpu(m, m);
    REQUIRE(ncsde::detail::matrix_cholesky(v.data(), m, cpu.data()));
    const std::vector<double> l = device_factor(v);
    CHECK(differing_entries(cpu, l) == 0);
    // Not positive definite (a negative last pivot), and NaN on the diagonal: both refuse.
    matrix bad = v;
    bad(m - 1, m - 1) = -1.0;
    std::vector<double> ws = nans(m * m);
    CHECK(ncsde::detail::matrix_cholesky(bad.data(), m, cpu.data()) == false);
    CHECK(ncsde::device::cholesky(bad.data(), m, ws.data()) == false);
    bad = v;
    bad(0, 0) = nan;
    CHECK(ncsde::detail::matrix_cholesky(bad.data(), m, cpu.data()) == false);
    CHECK(ncsde::device::cholesky(bad.data(), m, ws.data()) == false);
  }
}

template <int M>
void check_fixed_cholesky() {
  CAPTURE(M);
  const square_matrix<M> v = spd(M, 22);
  square_matrix<M> l;
  REQUIRE(ncsde::detail::small_cholesky(v, l));
  CHECK(differing_entries(matrix(l), device_factor(matrix(v))) == 0);
}

TEST_CASE("device dense kernels: cholesky as small_cholesky on the fixed sizes, bit for bit") {
  []<int... Ms>(std::integer_sequence<int, Ms...>) {
    (check_fixed_cholesky<Ms>(), ...);
  }(ncsde::fixed_sizes{});
}

TEST_CASE("device coefficients: max_zero and clamp are std::max(x, 0) and std::clamp(x, -1, 1)") {
  constexpr double inf = std::numeric_limits<double>::infinity();
  for (const double x : {nan, -nan, 0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, inf, -inf}) {
    CAPTURE(x);
    const double max_cpu = std::max(x, 0.0), max_dev = dev::max_zero(x);
    const double clamp_cpu = std::clamp(x, -1.0, 1.0), clamp_dev = dev::clamp(x, -1.0, 1.0);
    CHECK(differing_entries(&max_cpu, &max_dev, 1) == 0);
    CHECK(differing_entries(&clamp_cpu, &clamp_dev, 1) == 0);
  }
}

TEST_CASE(
    "device coefficients: each building block as models::b_relu … noise_causal, bit for bit") {
  const double tau0 = 0.7, c_plus = 0.3, c_minus = -1.5;
  for (const int m : sizes) {
    CAPTURE(m);
    const int mm = m * m;
    // Drifts at a positive-definite V and at a symmetric V off the cone (negative diagonal entries
    // take max(V^aa, 0) = 0, the branch without ρ).
    for (const matrix& v : {spd(m, 31), support::random_symmetric(m, 32)}) {
      matrix cpu;
      std::vector<double> out = nans(mm), ws = nans(dev::b_causal_workspace_doubles(m));
      models::b_relu(v, c_plus, c_minus, cpu);
      dev::b_relu(v.data(), m, c_plus, c_minus, out.data());
      CHECK(differing_entries(cpu, out) == 0);
      out = nans(mm);
      models::b_att(v, tau0, cpu);
      dev::b_att(v.data(), m, tau0, out.data(), ws.data());
      CHECK(differing_entries(cpu, out) == 0);
      out = nans(mm);
      models::b_causal(v, tau0, cpu);
      dev::b_causal(v.data(), m, tau0, out.data(), ws.data());
      CHECK(differing_entries(cpu, out) == 0);
    }
    // Noise: the public functions multiply by the whole L (lower = false), for any L; the device
    // with lower = false on a full L, and with lower = true on the Cholesky factor.
    const matrix v = spd(m, 33);
    const matrix g = support::random_gaussian(m, m, 34), z = support::random_gaussian(m, m, 35);
    const matrix full = support::random_gaussian(m, m, 36);
    const std::vector<double> chol_data = device_factor(v);
    const matrix chol = Eigen::Map<const matrix>(chol_data.data(), m, m);
    for (const bool lower : {false, true}) {
      CAPTURE(lower);
      const matrix& l = lower ? chol : full;
      matrix cpu;
      std::vector<double> out = nans(mm), ws = nans(dev::noise_att_workspace_doubles(m));
      models::noise_lin(l, g, cpu);
      dev::noise_lin(l.data(), lower, g.data(), m, out.data(), ws.data());
      CHECK(differing_entries(cpu, out) == 0);
      out = nans(mm);
      models::noise_att(l, v, z, tau0, cpu);
      dev::noise_att(l.data(), lower, v.data(), z.data(), m, tau0, out.data(), ws.data());
      CHECK(differing_entries(cpu, out) == 0);
      out = nans(mm);
      models::noise_causal(l, v, z, tau0, cpu);
      dev::noise_causal(l.data(), lower, v.data(), z.data(), m, tau0, out.data(), ws.data());
      CHECK(differing_entries(cpu, out) == 0);
    }
  }
}

TEST_CASE("device coefficients: b_relu passes NaN on as the CPU does") {
  // A NaN diagonal entry gives √V^aa = NaN, so norm > 0 is false and the pair's drift is 0; a NaN
  // off-diagonal entry gives ρ = NaN (std::clamp keeps it) and a NaN drift.
  for (const int m : {3, 5}) {
    CAPTURE(m);
    matrix v = spd(m, 41);
    v(1, 1) = nan;
    v(0, 2) = v(2, 0) = nan;
    matrix cpu;
    std::vector<double> out = nans(m * m);
    models::b_relu(v, 0.0, -2.0, cpu);
    dev::b_relu(v.data(), m, 0.0, -2.0, out.data());
    int agree = 0;
    for (int k = 0; k < m * m; ++k)
      agree += (std::isnan(cpu(k)) && std::isnan(out[static_cast<std::size_t>(k)])) ||
                       differing_entries(cpu.data() + k, out.data() + k, 1) == 0
                   ? 1
                   : 0;
    CHECK(agree == m * m);
    CHECK(out[1 + 2 * m] == 0.0);       // (1, 2): V^11 is NaN
    CHECK(std::isnan(out[0 + 2 * m]));  // (0, 2): V^02 is NaN
  }
}

/// A covariance SDE of the model test and its description.
struct named_sde {
  std::string name;
  models::covariance_sde sde;
};

/// Every architecture; attention and transformer with 1 and 4 heads, causal or not, with and
/// without W^O; γ² ∈ {0, 0.3, 1}; the default parameters and others (c₊ = 0.5, c₋ = −1.5, τ₀ = 0.7,
/// r = 2).
std::vector<named_sde> model_sdes() {
  std::vector<named_sde> out;
  using models::architecture;
  const std::pair<architecture, const char*> archs[] = {{architecture::mlp, "mlp"},
                                                        {architecture::resnet, "resnet"},
                                                        {architecture::attention, "attention"},
                                                        {architecture::transformer, "transformer"}};
  for (const auto& [arch, arch_name] : archs)
    for (const double gamma2 : {0.0, 0.3, 1.0})
      for (const bool defaults : {true, false}) {
        models::shaped_params p;
        p.gamma2 = gamma2;
        if (!defaults) {
          p.c_plus = 0.5;
          p.c_minus = -1.5;
          p.tau0 = 0.7;
          p.hidden_ratio = 2.0;
        }
        const bool attention = arch == architecture::attention || arch == architecture::transformer;
        for (const int heads : {1, 4})
          for (const bool causal : {false, true})
            for (const bool projection : {false, true}) {
              if (!attention && (heads != 1 || causal || projection)) continue;
              p.heads = heads;
              p.causal = causal;
              p.output_projection = projection;
              out.push_back({std::string(arch_name) + " gamma2=" + std::to_string(gamma2) +
                                 " heads=" + std::to_string(heads) + (causal ? " causal" : "") +
                                 (projection ? " W^O" : "") +
                                 (defaults ? "" : " c+=0.5 c-=-1.5 tau0=0.7 r=2"),
                             models::covariance_sde(arch, p)});
            }
      }
  return out;
}

/// Entries where the device drift and diffusion at v differ from sde's on ncsde::matrix.
std::pair<int, int> device_vs_cpu(const models::covariance_sde& sde, const matrix& v,
                                  const vector& xi) {
  const int m = static_cast<int>(v.rows());
  const dev::shaped_device_model d = models::device_model_of(sde);
  matrix drift, diffusion;
  sde.drift(v, drift, 0.0);
  sde.diffusion(v, xi, diffusion, 0.0);
  std::vector<double> out = nans(m * m), ws = nans(dev::shaped_workspace_doubles(m));
  d.drift(v.data(), m, out.data(), ws.data());
  const int drift_diff = differing_entries(drift, out);
  const std::vector<double> l = device_factor(v);
  out = nans(m * m);
  ws = nans(dev::shaped_workspace_doubles(m));
  d.diffusion(v.data(), l.data(), xi.data(), m, out.data(), ws.data());
  return {drift_diff, differing_entries(diffusion, out)};
}

/// The same on the fixed-size state square_matrix<M>.
template <int M>
std::pair<int, int> device_vs_cpu_fixed(const models::covariance_sde& sde, const vector& xi) {
  const square_matrix<M> v = spd(M, 52);
  const dev::shaped_device_model d = models::device_model_of(sde);
  square_matrix<M> drift, diffusion;
  sde.drift(v, drift, 0.0);
  sde.diffusion(v, xi, diffusion, 0.0);
  std::vector<double> out = nans(M * M), ws = nans(dev::shaped_workspace_doubles(M));
  d.drift(v.data(), M, out.data(), ws.data());
  const int drift_diff = differing_entries(matrix(drift), out);
  const std::vector<double> l = device_factor(matrix(v));
  out = nans(M * M);
  d.diffusion(v.data(), l.data(), xi.data(), M, out.data(), ws.data());
  return {drift_diff, differing_entries(matrix(diffusion), out)};
}

TEST_CASE(
    "device model: drift and diffusion as covariance_sde's, every architecture, bit for bit") {
  for (const named_sde& c : model_sdes()) {
    INFO(c.name);
    const dev::shaped_device_model d = models::device_model_of(c.sde);
    CHECK(d.k_lin == c.sde.k_lin());
    CHECK(d.k_att == c.sde.k_att());
    for (const int m : sizes) {
      CAPTURE(m);
      CHECK(d.noise_dimension(m) == c.sde.noise_dimension(m));
      const auto [drift_diff, diffusion_diff] =
          device_vs_cpu(c.sde, spd(m, 51), noise(c.sde.noise_dimension(m), 53));
      CHECK(drift_diff == 0);
      CHECK(diffusion_diff == 0);
    }
    []<int... Ms>(const models::covariance_sde& sde, std::integer_sequence<int, Ms...>) {
      auto one = [&]<int M>() {
        CAPTURE(M);
        const auto [drift_diff, diffusion_diff] =
            device_vs_cpu_fixed<M>(sde, noise(sde.noise_dimension(M), 54));
        CHECK(drift_diff == 0);
        CHECK(diffusion_diff == 0);
      };
      (one.template operator()<Ms>(), ...);
    }(c.sde, ncsde::fixed_sizes{});
  }
}

TEST_CASE("device model: drift and diffusion as shaped_activation_sde's, bit for bit") {
  const std::pair<const char*, models::shaped_activation_sde> cases[] = {
      {"tanh a=1", models::shaped_activation_sde::tanh(1.0)},
      {"tanh a=0.7", models::shaped_activation_sde::tanh(0.7)},
      {"swish a=1.3", models::shaped_activation_sde(models::swish_activation(), 1.3)},
      {"d2=0.4 d3=-1.1 a=0.9", models::shaped_activation_sde({0.4, -1.1, 0.9})}};
  for (const auto& c : cases) {
    // A structured binding would not be captured by INFO's lambda (Clang before 16).
    const auto& name = c.first;
    const auto& sde = c.second;
    INFO(name);
    const dev::shaped_activation_device_model d = models::device_model_of(sde);
    for (const int m : sizes) {
      CAPTURE(m);
      CHECK(d.noise_dimension(m) == sde.noise_dimension(m));
      const matrix v = spd(m, 61);
      const vector xi = noise(sde.noise_dimension(m), 62);
      matrix cpu;
      std::vector<double> out = nans(m * m), ws = nans(d.workspace_doubles(m));
      sde.drift(v, cpu, 0.0);
      d.drift(v.data(), m, out.data(), ws.data());
      CHECK(differing_entries(cpu, out) == 0);
      sde.diffusion(v, xi, cpu, 0.0);
      const std::vector<double> l = device_factor(v);
      out = nans(m * m);
      d.diffusion(v.data(), l.data(), xi.data(), m, out.data(), ws.data());
      CHECK(differing_entries(cpu, out) == 0);
    }
  }
}

}  // namespace
