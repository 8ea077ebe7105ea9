// The device engine (ncsde/device.hpp) on the host: ensembles on the emulated device, whose paths
// run the device engine's path kernel (solvers/device/path_engine.hpp) with the models' device
// forms, compiled for the CPU, against the CPU engines: every path's status, stop time, final and
// saved states, every counter and summary, bit for bit; paths the device hands back (cone exits,
// projections, an asymmetric or non-finite step) are resumed by the CPU engine at their step. And
// the device choices: what the device engine refuses, and what a build without a CUDA backend (or
// a machine without a GPU) says.
#include <doctest/doctest.h>

#include <string>

#include "ncsde/analytic.hpp"
#include "ncsde/device.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/error.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/models/shaped_tanh.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/steppers/milstein.hpp"
#include "support/device_checks.hpp"
#include "support/ensemble_compare.hpp"
#include "support/model_cases.hpp"
#include "support/random_matrices.hpp"

namespace {

using ncsde::device_kind;
using ncsde::device_spec;
using ncsde::matrix;
namespace models = ncsde::models;

ncsde::ensemble_options ensemble(device_spec device, int threads = 2) {
  return support::device_test_ensemble(device, 5, threads);
}

const device_spec emulated = support::emulated_device;

/// The emulated device's ensemble of prob against the CPU's (support::check_device_is_cpu), adding
/// the paths it handed back to *handed_back.
template <class S>
void check_device_is_cpu(const ncsde::problem<S>& prob, const ncsde::integrate_options& io,
                         long long* handed_back = nullptr) {
  const long long n = support::check_device_is_cpu(prob, io, 5);
  if (handed_back != nullptr) *handed_back += n;
}

}  // namespace

TEST_CASE("the emulated device's ensembles of every model are the CPU's, bit for bit") {
  // γ² = 0.3, τ₀ = 1.5, λ_min(V0) ≥ 1.5: the device runs nearly every step itself; the attention
  // models' few paths that blow up leave the cone on their way, and are handed back there.
  ncsde::integrate_options io;
  io.dt = 0.01;
  io.save_times = {0.1, 0.25};
  long long handed_back = 0;
  for (const support::model_case& c : support::model_cases)
    for (const int m : {2, 3, 4, 5, 8}) {
      INFO(c.name, ", m = ", m);
      const ncsde::problem<models::covariance_sde> prob{
          support::make_sde(c, 0.3, 1.5), support::random_spd<matrix>(m, 12, 1.5), 0.5};
      check_device_is_cpu(prob, io, &handed_back);
    }
  for (const double a : {1.0, 0.7})
    for (const int m : {2, 3, 4, 8}) {
      INFO("shaped tanh, a = ", a, ", m = ", m);
      const ncsde::problem<models::shaped_activation_sde> prob{
          models::shaped_activation_sde::tanh(a), support::random_spd<matrix>(m, 7, 0.5), 0.5};
      check_device_is_cpu(prob, io, &handed_back);
    }
  CHECK(handed_back > 0);
  CHECK(handed_back < 100);  // of 47 runs of 40 paths
}

TEST_CASE(
    "paths the emulated device hands back are resumed by the CPU engine: cone exits under every "
    "policy, projections, blow-ups, bit for bit") {
  // γ² = 0.6, τ₀ = 0.8, V0 near the boundary: attention paths leave the cone (each exit a step
  // the device hands back, so every policy and counter is the CPU's) and some blow up on the
  // device.
  ncsde::integrate_options io;
  io.dt = 0.01;
  io.save_times = {0.1};
  for (const ncsde::pd_policy policy : {ncsde::pd_policy::count, ncsde::pd_policy::project}) {
    io.policy = policy;
    long long handed_back = 0;
    for (const support::model_case& c : support::model_cases)
      for (const int m : {3, 5}) {
        INFO(c.name, ", m = ", m, ", policy ", ncsde::to_string(policy));
        const ncsde::problem<models::covariance_sde> prob{
            support::make_sde(c, 0.6, 0.8), support::random_spd<matrix>(m, 12, 0.05), 0.5};
        check_device_is_cpu(prob, io, &handed_back);
      }
    CHECK(handed_back > 0);
  }
  // Under throw and refine the path that leaves the cone fails on the device as on the CPU: the
  // same path, step and message.
  auto error_of = [&](const ncsde::problem<models::covariance_sde>& prob, device_spec d) {
    try {
      (void)ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, ensemble(d));
    } catch (const ncsde::pd_violation& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  for (const ncsde::pd_policy policy : {ncsde::pd_policy::throw_error, ncsde::pd_policy::refine}) {
    io.policy = policy;
    const ncsde::problem<models::covariance_sde> prob{
        support::make_sde(support::model_cases[2]), support::random_spd<matrix>(5, 12, 0.05), 0.5};
    const std::string cpu = error_of(prob, {});
    CHECK(cpu.find("left the positive-semidefinite cone") != std::string::npos);
    CHECK(error_of(prob, emulated) == cpu);
  }
  // The case that exits the cone and blows up, kept as a check that it is one.
  io.policy = ncsde::pd_policy::count;
  const ncsde::problem<models::covariance_sde> prob{support::make_sde(support::model_cases[2]),
                                                    support::random_spd<matrix>(3, 12, 0.5), 0.5};
  const ncsde::ensemble_result d =
      ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, ensemble(emulated));
  CHECK(d.pd.violations > 0);
  CHECK(d.blown_up > 0);
  CHECK(d.device.handed_back > 0);
  ncsde::test::check_identical(
      d, ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, ensemble({})));
}

TEST_CASE("the stop level runs on the emulated device by the CPU's rule, bit for bit") {
  // max_a V^{aa} > K after a step stops the path (the stopped process); V0's diagonal is about 1.
  ncsde::integrate_options io;
  io.dt = 0.01;
  io.save_times = {0.2, 0.4};
  io.stop_level = 1.6;
  long long stopped = 0;
  for (const support::model_case& c : support::model_cases)
    for (const int m : {2, 4}) {
      INFO(c.name, ", m = ", m);
      const ncsde::problem<models::covariance_sde> prob{
          support::make_sde(c, 0.6, 0.8), support::random_spd<matrix>(m, 4, 0.3), 0.5};
      const ncsde::ensemble_result d =
          ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, ensemble(emulated));
      stopped += d.stopped;
      ncsde::test::check_identical(
          d, ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, ensemble({})));
    }
  CHECK(stopped > 0);
  // The option is checked, and needs square states.
  io.stop_level = 0.0;
  const ncsde::problem<models::covariance_sde> prob{support::make_sde(support::model_cases[0]),
                                                    support::random_spd<matrix>(2, 4, 0.3), 0.5};
  CHECK_THROWS_WITH_AS(
      (void)ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, ensemble(emulated)),
      doctest::Contains("stop_level"), ncsde::invalid_argument);
}

TEST_CASE("the emulated device's results do not depend on the thread count or the path range") {
  ncsde::integrate_options io;
  io.dt = 0.02;
  const ncsde::problem<models::covariance_sde> prob{support::make_sde(support::model_cases[5]),
                                                    support::random_spd<matrix>(4, 3, 0.3), 1.0};
  const ncsde::euler_maruyama<> em;
  const ncsde::ensemble_result one = ncsde::run_ensemble(em, prob, io, ensemble(emulated, 1));
  ncsde::test::check_identical(one, ncsde::run_ensemble(em, prob, io, ensemble(emulated, 2)));
  const ncsde::ensemble_options eo = ensemble(emulated, 2);
  std::vector<ncsde::ensemble_partial> parts;
  parts.push_back(ncsde::run_ensemble_range(em, prob, io, eo, {0, 13}));
  parts.push_back(ncsde::run_ensemble_range(em, prob, io, eo, {13, 40}));
  ncsde::test::check_identical(one,
                               ncsde::finish_ensemble(ncsde::merge_partials(std::move(parts)), eo));
}

TEST_CASE("the device engine refuses the runs it does not take, naming what") {
  ncsde::integrate_options io;
  io.dt = 0.01;
  const ncsde::problem<models::covariance_sde> prob{support::make_sde(support::model_cases[0]),
                                                    support::random_spd<matrix>(3, 1, 0.5), 0.1};
  auto refusal = [&](const auto& stepper, const ncsde::integrate_options& o, device_spec d) {
    try {
      (void)ncsde::run_ensemble(stepper, prob, o, ensemble(d));
    } catch (const ncsde::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(refusal(ncsde::milstein<>{}, io, emulated).find("the scheme 'milstein'") !=
        std::string::npos);
  ncsde::integrate_options adaptive = io;
  adaptive.control = ncsde::step_control::increment;
  CHECK(refusal(ncsde::euler_maruyama<>{}, adaptive, emulated).find("step control 'increment'") !=
        std::string::npos);
  ncsde::integrate_options stopped = io;
  stopped.stop_condition = [](const matrix& v, double) { return v(0, 0) > 10.0; };
  CHECK(refusal(ncsde::euler_maruyama<>{}, stopped, emulated).find("a stop condition") !=
        std::string::npos);
  // An SDE without a device form (an analytic problem with matrix coefficients).
  const ncsde::problem<ncsde::analytic::hadamard_linear> hadamard{
      ncsde::analytic::hadamard_linear(matrix::Constant(1, 1, 0.5), {matrix::Constant(1, 1, 0.3)}),
      matrix::Constant(1, 1, 1.0), 0.1};
  CHECK_THROWS_WITH_AS(
      (void)ncsde::run_ensemble(ncsde::euler_maruyama<>{}, hadamard, io, ensemble(emulated)),
      doctest::Contains("an SDE without a device form"), ncsde::invalid_argument);
  // auto runs such a run on the CPU, and says why.
  const ncsde::ensemble_result r =
      ncsde::run_ensemble(ncsde::milstein<>{}, prob, io, ensemble({device_kind::automatic, 0}));
  CHECK(r.device.device == "cpu");
  CHECK(r.device.note.find("auto: the CPU, since the device engine does not run the scheme") == 0);
}

TEST_CASE("device cuda: a named error without the CUDA backend or without a GPU, never the CPU") {
  ncsde::integrate_options io;
  io.dt = 0.01;
  const ncsde::problem<models::covariance_sde> prob{support::make_sde(support::model_cases[0]),
                                                    support::random_spd<matrix>(3, 1, 0.5), 0.1};
  std::string cuda_error;
  bool has_gpu = false;
  try {
    has_gpu = !ncsde::cuda_devices().empty();
  } catch (const ncsde::device_error& e) {
    cuda_error = e.what();
  }
  if (!ncsde::cuda_backend_built())
    CHECK(cuda_error.find("this build of ncsde has no CUDA backend") != std::string::npos);
  if (has_gpu) return;  // scripts/gpu_check.sh runs the GPU's checks
  CHECK(!cuda_error.empty());
  for (const device_spec d : {device_spec{device_kind::cuda, 0}, device_spec{device_kind::cuda, 3}})
    CHECK_THROWS_AS((void)ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, ensemble(d)),
                    ncsde::device_error);
  const ncsde::ensemble_result r = ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io,
                                                       ensemble({device_kind::automatic, 0}));
  CHECK(r.device.device == "cpu");
  CHECK(r.device.note.find("auto: the CPU, since") == 0);
  CHECK(r.device.note.find(ncsde::cuda_backend_built() ? "device cuda" : "no CUDA backend") !=
        std::string::npos);
}

TEST_CASE("parse_device reads cpu, cuda, cuda:N, auto and emulated, and names a bad one") {
  CHECK(ncsde::parse_device("cpu") == device_spec{device_kind::cpu, 0});
  CHECK(ncsde::parse_device("cuda") == device_spec{device_kind::cuda, 0});
  CHECK(ncsde::parse_device("cuda:2") == device_spec{device_kind::cuda, 2});
  CHECK(ncsde::parse_device("auto") == device_spec{device_kind::automatic, 0});
  CHECK(ncsde::parse_device("emulated") == device_spec{device_kind::emulated, 0});
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:1x", "CPU", ""})
    CHECK_THROWS_WITH_AS(ncsde::parse_device(bad, "--device"), doctest::Contains("--device"),
                         ncsde::invalid_argument);
  for (const char* text : {"cpu", "cuda:0", "cuda:7", "auto", "emulated"})
    CHECK(ncsde::to_string(ncsde::parse_device(text)) == text);
}
