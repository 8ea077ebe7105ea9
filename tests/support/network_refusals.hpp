#pragma once
/// The refusals shared by the finite-network samplers literal_network and reduced_network: one
/// invariant, checked by one function (validate_network, validate_depths), so the same bad input
/// gives the same message with the sampler's own name in it.
#include <doctest/doctest.h>

#include <string>

#include "ncsde/models/shaped.hpp"
#include "ncsde/networks/literal.hpp"
#include "ncsde/random.hpp"
#include "support/message_of.hpp"

namespace support {

/// Checks that Network (`name` in its messages: "literal_network" or "reduced_network") refuses
/// every parameter outside the invariant of literal_network, and bad run() and initial_state()
/// arguments, with "<name>: <param> must be … (got <value>)"; `v0` is a valid 3×3 V₀.
template <class Network>
void check_network_refusals(const std::string& name, const ncsde::matrix& v0) {
  using ncsde::models::architecture;
  using ncsde::networks::attention_form;
  const ncsde::models::shaped_params ok;
  CHECK(message_of([&] { Network(architecture::mlp, ok, 3, 1); }) ==
        name + ": n must be >= 2 (got 1)");
  CHECK(message_of([&] { Network(architecture::mlp, ok, 0, 8); }) ==
        name + ": m must be >= 1 (got 0)");
  CHECK(message_of([&] { Network(architecture::mlp, ok, 4, 3); }) ==
        name + ": n must be >= m = 4 (X0 has m orthonormal rows) (got 3)");
  CHECK(message_of([&] { Network(architecture::attention, ok, 3, 8, 0); }) ==
        name + ": n_k must be >= 1 (got 0)");
  ncsde::models::shaped_params heads = ok;
  heads.heads = 3;
  CHECK(message_of([&] { Network(architecture::attention, heads, 3, 8); }) ==
        name + ": heads must be a divisor of n = 8 (got 3)");
  CHECK(message_of([&] { Network(architecture::resnet, heads, 3, 9); }) ==
        name + ": heads must be 1 for mlp and resnet (no attention) (got 3)");
  ncsde::models::shaped_params ratio = ok;
  ratio.hidden_ratio = 0.3;
  for (const architecture arch : {architecture::resnet, architecture::transformer})
    CHECK(message_of([&] { Network(arch, ratio, 3, 8); }) ==
          name +
              ": hidden_ratio must be such that r·n is a positive integer (n = 8, r·n = 2.4) "
              "(got 0.3)");
  // The hidden width r·n is an int: a larger one is refused, not converted (undefined behaviour).
  ncsde::models::shaped_params wide = ok;
  wide.hidden_ratio = 3e8;
  for (const architecture arch : {architecture::resnet, architecture::transformer})
    CHECK(message_of([&] { Network(arch, wide, 3, 8); }) ==
          name +
              ": hidden_ratio must be such that the hidden width r·n is at most 2147483647 "
              "(n = 8, r·n = 2400000000) (got 300000000)");
  // r·n only matters with a ReLU branch.
  CHECK(message_of([&] { Network(architecture::attention, ratio, 3, 8); }) == "");
  ncsde::models::shaped_params tau = ok;
  tau.tau0 = -0.5;
  CHECK(message_of([&] { Network(architecture::attention, tau, 3, 8); }) ==
        name + ": tau0 must be finite and > 0 (got -0.5)");
  ncsde::models::shaped_params g2 = ok;
  g2.gamma2 = 1.5;
  CHECK(message_of([&] { Network(architecture::transformer, g2, 3, 8); }) ==
        name + ": gamma2 must be in [0, 1] (got 1.5)");
  // The unshaped form needs attention.
  for (const architecture arch : {architecture::mlp, architecture::resnet})
    CHECK(message_of([&] { Network(arch, ok, 3, 8, 1, attention_form::unshaped); }) ==
          name + ": form must be shaped for mlp and resnet (no attention) (got unshaped)");

  const Network net(architecture::mlp, ok, 3, 8);
  const ncsde::random_stream stream(1, 0);
  CHECK(message_of([&] { net.run(v0, 0, {0}, stream); }) == name + "::run: d must be >= 1 (got 0)");
  CHECK(message_of([&] { net.run(v0, 4, {}, stream); }) ==
        name + "::run: depths must be non-empty");
  CHECK(message_of([&] {
          net.run(v0, 4, {1, 5}, stream);
        }) == name + "::run: depths[1] must be in [0, d = 4] (got 5)");
  CHECK(message_of([&] {
          net.run(v0, 4, {2, 2}, stream);
        }) == name + "::run: depths[1] must be > depths[0] = 2 (strictly increasing) (got 2)");
  CHECK(message_of([&] { net.initial_state(ncsde::matrix::Identity(2, 2), stream); }) ==
        name + ": V0 must be 3x3 (m = 3) (got 2x2)");
  ncsde::matrix indefinite = v0;
  indefinite(0, 0) = -1.0;
  CHECK(message_of([&] { net.initial_state(indefinite, stream); }).starts_with(name + ": V0"));
}

}  // namespace support
