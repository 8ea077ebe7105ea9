// The device forms of the analytic problems (solvers/device/analytic_kernels.hpp) compiled for the
// host: a CUDA thread runs the same code, so here it must give the CPU's numbers bit for bit. The
// drift and noise map of gbm, linear_covariance and wishart against the per-path ones of
// analytic.hpp; and their ensembles on the emulated device (the device engine's path kernel)
// against the CPU engines, batched and per path: every path's status, stop time, final and saved
// states, every counter and summary, paths handed back to the CPU (cone exits) included.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../../solvers/device/analytic_kernels.hpp"
#include "ncsde/analytic.hpp"
#include "ncsde/device.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "support/device_checks.hpp"
#include "support/ensemble_compare.hpp"
#include "support/random_matrices.hpp"

namespace {

using ncsde::matrix;
using ncsde::vector;
namespace analytic = ncsde::analytic;
namespace dev = ncsde::device;

static_assert(ncsde::DeviceSde<analytic::gbm> && ncsde::DeviceSde<analytic::linear_covariance> &&
              ncsde::DeviceSde<analytic::wishart>);
static_assert(!ncsde::DeviceSde<analytic::hadamard_linear> &&
              !ncsde::DeviceSde<analytic::lifted_linear>);

using support::differing_entries;
using support::nans;

/// The device form `model` of `sde` against sde's drift and diffusion at a positive-definite V and
/// a Gaussian ξ, bit for bit, at m = 1, 2, 3, 4, 8.
template <class Sde, class Model>
void check_kernels(const Sde& sde, const Model& model) {
  for (const int m : {1, 2, 3, 4, 8}) {
    CAPTURE(m);
    const int mm = m * m;
    for (const std::uint64_t seed : {3u, 17u}) {
      CAPTURE(seed);
      const matrix v = support::random_spd(m, seed, 0.1);
      const int k = sde.noise_dimension(m);
      REQUIRE(model.noise_dimension(m) == k);
      const vector xi = support::random_gaussian(k, 1, seed + 100, 3);
      std::vector<double> l = nans(mm);
      REQUIRE(dev::cholesky(v.data(), m, l.data()));
      std::vector<double> ws = nans(model.workspace_doubles(m));
      matrix cpu(m, m);
      std::vector<double> out = nans(mm);
      sde.drift(v, cpu, 0.0);
      model.drift(v.data(), m, out.data(), ws.data());
      CHECK(differing_entries(cpu, out) == 0);
      out = nans(mm);
      ws = nans(model.workspace_doubles(m));
      sde.diffusion(v, xi, cpu, 0.0);
      model.diffusion(v.data(), l.data(), xi.data(), m, out.data(), ws.data());
      CHECK(differing_entries(cpu, out) == 0);
    }
  }
}

/// The emulated device's ensemble of prob against the CPU's (support::check_device_is_cpu).
template <class S>
long long check_device_is_cpu(const ncsde::problem<S>& prob, const ncsde::integrate_options& io) {
  return support::check_device_is_cpu(prob, io, 9);
}

ncsde::integrate_options options() {
  ncsde::integrate_options io;
  io.dt = 0.01;
  io.save_times = {0.1, 0.25};
  return io;
}

}  // namespace

TEST_CASE("device analytic kernels: the comparison sees one ulp and the sign of zero") {
  const double a[2] = {1.0, 0.0};
  const double b[2] = {std::nextafter(1.0, 2.0), -0.0};
  CHECK(differing_entries(a, b, 2) == 2);
  CHECK(differing_entries(a, a, 2) == 0);
}

TEST_CASE("device analytic kernels: gbm's drift and noise map are the CPU's, bit for bit") {
  for (const analytic::gbm::params p :
       {analytic::gbm::params{0.5, 0.5}, analytic::gbm::params{-0.3, 1.7}}) {
    CAPTURE(p.mu);
    CAPTURE(p.sigma);
    dev::gbm_device_model model;
    model.mu = p.mu;
    model.sigma = p.sigma;
    check_kernels(analytic::gbm(p), model);
  }
}

TEST_CASE(
    "device analytic kernels: linear_covariance's drift and noise map are the CPU's, bit for bit") {
  check_kernels(analytic::linear_covariance{}, dev::linear_covariance_device_model{});
}

TEST_CASE("device analytic kernels: wishart's drift and noise map are the CPU's, bit for bit") {
  for (const double p : {0.7, 2.0, 9.5}) {
    CAPTURE(p);
    dev::wishart_device_model model;
    model.p = p;
    check_kernels(analytic::wishart(p), model);
  }
}

TEST_CASE(
    "the emulated device's ensembles of gbm and linear_covariance are the CPU's, bit for bit") {
  const ncsde::integrate_options io = options();
  long long handed_back = 0;
  for (const int m : {2, 3, 4}) {
    CAPTURE(m);
    const ncsde::problem<analytic::gbm> gbm{analytic::gbm({0.4, 0.8}),
                                            support::random_spd<matrix>(m, 5, 0.5), 0.5};
    handed_back += check_device_is_cpu(gbm, io);
    const ncsde::problem<analytic::linear_covariance> lin{
        analytic::linear_covariance{}, support::random_spd<matrix>(m, 6, 0.5), 0.5};
    handed_back += check_device_is_cpu(lin, io);
  }
  // The device ran the paths: the CPU resumed few of 240, if any.
  CHECK(handed_back < 24);
}

TEST_CASE(
    "the emulated device's ensembles of wishart are the CPU's, bit for bit, cone exits handed back "
    "to the CPU engine") {
  ncsde::integrate_options io = options();
  // p = 2(m + 1) ≥ m + 1 and λ_min(V0) ≥ 1: the exact process stays in the open cone, its smallest
  // eigenvalue pushed up by p − (m − 1) ≥ m + 3, and the device runs nearly every step itself (an
  // Euler step leaves the cone only from a small eigenvalue; with p = m + 1.5 and λ_min(V0) ≥ 0.5
  // a third of the paths at m = 3, 4 come that close within T = 0.5).
  long long inside = 0;
  for (const int m : {2, 3, 4}) {
    CAPTURE(m);
    const ncsde::problem<analytic::wishart> prob{analytic::wishart(2.0 * (m + 1)),
                                                 support::random_spd<matrix>(m, 7, 1.0), 0.5};
    inside += check_device_is_cpu(prob, io);
  }
  CHECK(inside < 12);  // of 120 paths (1 with this seed)
  // p = 0.5 < m and λ_min(V0) ≥ 0.02: Euler steps leave the cone (29 of 40 paths at m = 2, all 40
  // at m = 3, 4 with this seed), the device hands those paths back at that step, and the CPU engine
  // counts or projects them by its policy.
  for (const ncsde::pd_policy policy : {ncsde::pd_policy::count, ncsde::pd_policy::project}) {
    CAPTURE(ncsde::to_string(policy));
    io.policy = policy;
    long long outside = 0;
    for (const int m : {2, 3, 4}) {
      CAPTURE(m);
      const ncsde::problem<analytic::wishart> prob{analytic::wishart(0.5),
                                                   support::random_spd<matrix>(m, 8, 0.02), 0.5};
      outside += check_device_is_cpu(prob, io);
    }
    CHECK(outside > 0);
  }
}
