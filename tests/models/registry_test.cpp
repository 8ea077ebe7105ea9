// The model registry (ncsde/models/registry.hpp): lookup and its errors, parameter checks, and that
// the type-erased operations are the concrete calls (the same bits), for a built-in model,
// shaped-tanh, and a model registered here.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ncsde/ensemble.hpp"
#include "ncsde/models/registry.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/models/shaped_tanh.hpp"
#include "ncsde/networks/reduced.hpp"
#include "ncsde/networks/sample.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "support/message_of.hpp"

namespace {

using ncsde::matrix;
namespace models = ncsde::models;

matrix v2() {
  matrix v(2, 2);
  v << 1.0, 0.5, 0.5, 1.0;
  return v;
}

/// A matrix Ornstein–Uhlenbeck SDE on the cone's neighbourhood, written as a user would: dV =
/// −θ V dt + σ dW (symmetrised), declared symmetric.
struct test_ou {
  static constexpr ncsde::state_space space = ncsde::state_space::symmetric;
  double theta = 1.0, sigma = 0.1;
  int noise_dimension(int m) const { return m * m; }
  void drift(const matrix& v, matrix& out, double) const { out = -theta * v; }
  void diffusion(const matrix& v, const ncsde::vector& xi, matrix& out, double) const {
    const Eigen::Map<const matrix> g(xi.data(), v.rows(), v.cols());
    out = 0.5 * sigma * (g + g.transpose());
  }
};

ncsde::ensemble_options small_ensemble() {
  ncsde::ensemble_options e;
  e.paths = 64;
  e.seed = 5;
  e.threads = 2;
  e.functionals.push_back(ncsde::entry_functional(0, 1));
  return e;
}

}  // namespace

TEST_CASE("registry: the built-in models, in order, found by name") {
  const models::model_registry& reg = models::registry();
  const std::vector<std::string> expected{"mlp", "resnet", "attention", "transformer",
                                          "shaped-tanh"};
  const std::vector<std::string> names = reg.names();
  REQUIRE(names.size() >= expected.size());
  CHECK(std::vector<std::string>(names.begin(), names.begin() + 5) == expected);
  CHECK(reg.find("transformer") != nullptr);
  CHECK(reg.find("gpt") == nullptr);
  const models::model_instance att = reg.at("attention").make();
  CHECK(att.name() == "attention");
  REQUIRE(att.get<models::covariance_sde>() != nullptr);
  CHECK(att.get<models::covariance_sde>()->arch() == models::architecture::attention);
  CHECK(att.get<models::shaped_activation_sde>() == nullptr);
  // The flags every command line offers: the architectures' eight, then shaped-tanh's two.
  std::vector<std::string> flags;
  for (const models::parameter& p : reg.all_parameters()) flags.push_back(p.name);
  CHECK(std::vector<std::string>(flags.begin(), flags.begin() + 10) ==
        std::vector<std::string>{"c-plus", "c-minus", "gamma2", "tau0", "hidden-ratio", "heads",
                                 "output-projection", "causal", "a", "activation"});
}

TEST_CASE("registry: an unknown name is refused, naming the registered models") {
  CHECK(support::message_of([] { (void)models::registry().at("foo", "ncsde"); }) ==
        "ncsde: model must be one of mlp, resnet, attention, transformer, shaped-tanh, "
        "shaped-activation (got foo)");
}

TEST_CASE("registry: parameter errors name the parameter") {
  const models::model_entry& resnet = models::registry().at("resnet");
  models::parameter_values bad;
  bad.set("gamma2", 1.5);
  CHECK(support::message_of([&] { (void)resnet.make(bad); }) ==
        "covariance_sde: gamma2 must be in [0, 1] (got 1.5)");
  models::parameter_values wrong_kind;
  wrong_kind.set("heads", 2.5);
  CHECK(support::message_of([&] { (void)resnet.make(wrong_kind); }) ==
        "resnet: heads must be an integer");
  const models::model_entry& tanh = models::registry().at("shaped-tanh");
  models::parameter_values a;
  a.set("a", -1.0);
  CHECK(support::message_of([&] { (void)tanh.make(a); }) ==
        "shaped_activation_sde: a must be > 0 and finite (got -1)");
  models::parameter_values act;
  act.set("activation", std::string("relu"));
  CHECK(support::message_of([&] { (void)tanh.make(act); }) ==
        "shaped-tanh: activation must be one of tanh, swish (got relu)");
  models::parameter_values foreign;
  foreign.set("gamma2", 0.5);
  CHECK(support::message_of([&] { (void)tanh.make(foreign); }) ==
        "shaped-tanh: gamma2 is not a parameter of shaped-tanh (its parameters: a, activation)");
  CHECK(support::message_of([&] { (void)tanh.make_network("reduced", {}, {}); }) ==
        "shaped-tanh: sampler must be one of literal (got reduced)");
}

TEST_CASE("registry: the type-erased operations are the concrete calls, bit for bit") {
  models::parameter_values p;
  p.set("gamma2", 1.0);
  p.set("tau0", 0.5);
  const models::model_instance sde = models::registry().at("transformer").make(p);
  models::shaped_params sp;
  sp.gamma2 = 1.0;
  sp.tau0 = 0.5;
  const models::covariance_sde direct(models::architecture::transformer, sp);
  matrix b1, b2, s1, s2;
  sde.drift(v2(), b1, 0.0);
  direct.drift(v2(), b2, 0.0);
  sde.covariance(v2(), s1, 0.0);
  direct.covariance(v2(), s2, 0.0);
  CHECK(b1 == b2);
  CHECK(s1 == s2);
  ncsde::integrate_options iopt;
  iopt.dt = 1.0 / 64;
  const ncsde::ensemble_result r1 = sde.run_ensemble("em", v2(), 1.0, iopt, small_ensemble());
  const ncsde::ensemble_result r2 = ncsde::run_ensemble(
      ncsde::euler_maruyama<>{}, ncsde::problem<models::covariance_sde>{direct, v2(), 1.0}, iopt,
      small_ensemble());
  CHECK(r1.functionals[0].completed == r2.functionals[0].completed);
  CHECK(r1.functionals[0].completed_mean == r2.functionals[0].completed_mean);
  CHECK(support::message_of(
            [&] { (void)sde.run_ensemble("rk4", v2(), 1.0, iopt, small_ensemble()); }) ==
        "model_instance: scheme must be one of em, milstein, milstein-commutative, "
        "predictor-corrector (got 'rk4')");
  // The reduced sampler through the registry is the concrete one.
  ncsde::networks::network_options nopt;
  nopt.networks = 8;
  nopt.threads = 1;
  const ncsde::networks::network_ensemble e1 = models::registry()
                                                   .at("transformer")
                                                   .make_network("reduced", p, {2, 16, 16})
                                                   .sample(v2(), 16, nopt);
  const ncsde::networks::network_ensemble e2 = ncsde::networks::sample_networks(
      ncsde::networks::reduced_network(models::architecture::transformer, sp, 2, 16, 16), v2(), 16,
      nopt);
  for (std::size_t i = 0; i < e1.records.size(); ++i)
    CHECK(e1.records[i].packed.back() == e2.records[i].packed.back());
}

TEST_CASE("registry: shaped-tanh's SDE and literal network") {
  models::parameter_values p;
  p.set("a", 2.0);
  const models::model_entry& entry = models::registry().at("shaped-tanh");
  const models::model_instance sde = entry.make(p);
  REQUIRE(sde.get<models::shaped_activation_sde>() != nullptr);
  // tanh: b^{ab} = −(1/a²) V^{ab}(V^{aa} + V^{bb}); at V = [[1, .5], [.5, 1]], a = 2: b¹² = −1/4,
  // b¹¹ = −1/2, exactly in binary.
  matrix b;
  sde.drift(v2(), b, 0.0);
  CHECK(b(0, 1) == -0.25);
  CHECK(b(0, 0) == -0.5);
  // The literal sampler through the registry: network i is shaped_activation_network::run on the
  // stream (seed, i), to round-off of the two summation orders (the same operations: equal bits).
  const models::network_instance net = entry.make_network("literal", p, {2, 16, 16});
  ncsde::networks::network_options nopt;
  nopt.networks = 4;
  nopt.threads = 1;
  nopt.seed = 3;
  const ncsde::networks::network_ensemble e = net.sample(v2(), 8, nopt);
  const models::shaped_activation_network direct(models::tanh_activation(), 2.0, 2, 16);
  for (std::size_t i = 0; i < e.records.size(); ++i) {
    const matrix v = direct.run(v2(), 8, ncsde::random_stream(3, i));
    CHECK(e.records[i].packed.back()(1) == v(0, 1));
  }
  CHECK(support::message_of([&] {
          (void)entry.make_network("literal", p,
                                   {2, 16, 16, ncsde::networks::attention_form::unshaped});
        }) == "shaped-tanh: form must be shaped (the model has no attention) (got unshaped)");
}

TEST_CASE("registry: a model registered here is listed and runs an ensemble and a stopped sample") {
  models::model_registry reg;
  reg.add(models::make_entry<test_ou>(
      {"test-ou",
       "matrix Ornstein-Uhlenbeck",
       {models::real_parameter("theta", 1.0, "mean reversion", "finite")}},
      [](const models::parameter_values& p) {
        return test_ou{p.real("theta"), 0.1};
      }));
  CHECK(reg.names() == std::vector<std::string>{"test-ou"});
  CHECK(support::message_of([&] { (void)reg.at("ou"); }) ==
        "model_registry: model must be one of test-ou (got ou)");
  CHECK(support::message_of([&] {
          reg.add(models::make_entry<test_ou>(
              {"test-ou", "again", {}}, [](const models::parameter_values&) { return test_ou{}; }));
        }) == "model_registry: a model called test-ou is already registered");
  models::parameter_values p;
  p.set("theta", 2.0);
  const models::model_instance sde = reg.at("test-ou").make(p);
  CHECK_FALSE(sde.has_covariance());
  ncsde::integrate_options iopt;
  iopt.dt = 1.0 / 32;
  const ncsde::ensemble_result r = sde.run_ensemble("em", v2(), 1.0, iopt, small_ensemble());
  const ncsde::ensemble_result direct = ncsde::run_ensemble(
      ncsde::euler_maruyama<>{}, ncsde::problem<test_ou>{test_ou{2.0, 0.1}, v2(), 1.0}, iopt,
      small_ensemble());
  CHECK(r.completed == 64);
  CHECK(r.functionals[0].completed_mean == direct.functionals[0].completed_mean);
  // E[V¹²_T] = 0.5 e^{−θT} = 0.0677; 64 paths of noise σ/√(2θ)·√(1 − e^{−2θT})/√2 ≈ 0.035 each:
  // a standard error of 0.0044, and 5 of them.
  CHECK(std::abs(r.functionals[0].completed_mean - 0.5 * std::exp(-2.0)) <= 5 * 0.0044);
  models::sde_sample_options sopt;
  sopt.widths = {32};
  sopt.dt = 1.0 / 32;
  sopt.paths = 16;
  sopt.policy = ncsde::pd_policy::count;
  const models::sde_sample s = sde.sample_sde(v2(), sopt);
  CHECK(s.by_width.size() == 1);
  CHECK(s.unstopped.status.size() == 16);
  // A second registration of the same parameter name must agree with the first.
  CHECK(support::message_of([&] {
          reg.add(models::make_entry<test_ou>(
              {"other", "", {models::real_parameter("theta", 3.0, "mean reversion", "finite")}},
              [](const models::parameter_values&) { return test_ou{}; }));
        }).find("other's parameter theta differs") != std::string::npos);
}
