#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ncsde/error.hpp"
#include "ncsde/networks/sample.hpp"

namespace {

/// A toy sampler with a known law: V_{l+1} = V_l · exp(σ g_l − σ²/2), g_l iid N(0, 1) from counter
/// (user, l, 0), so log V¹¹_l is a Gaussian random walk and every layer's normal is addressable.
/// `poison_layer` makes layer l produce a NaN (to test blow-up handling).
struct toy_sampler {
  using state = ncsde::matrix;
  int m_size = 2;
  double sigma = 0.2;
  int poison_layer = -1;
  int m() const { return m_size; }
  int n() const { return 10; }
  state initial_state(const ncsde::matrix& v0, const ncsde::random_stream&) const {
    if (v0.rows() != m_size) ncsde::throw_invalid_argument("toy_sampler", "V0", v0.rows(), "2x2");
    return v0;
  }
  void step(state& v, std::uint64_t l, const ncsde::random_stream& stream) const {
    double g = 0.0;
    stream.normals(ncsde::random_domain::user, l, 0, &g, 1);
    v *= std::exp(sigma * g - 0.5 * sigma * sigma);
    if (static_cast<int>(l) == poison_layer) v(0, 0) = std::numeric_limits<double>::quiet_NaN();
  }
  ncsde::matrix covariance(const state& v) const { return v; }
};
static_assert(ncsde::networks::network_sampler<toy_sampler>);

ncsde::matrix v0_toy() {
  ncsde::matrix v(2, 2);
  v << 1.0, 0.5, 0.5, 2.0;
  return v;
}

/// The toy's V at layer l by replaying its normals (the reference the runner must reproduce).
ncsde::matrix replay(const toy_sampler& toy, std::uint64_t seed, long long network, int layers) {
  ncsde::matrix v = v0_toy();
  const ncsde::random_stream s(seed, static_cast<std::uint64_t>(network));
  for (int l = 0; l < layers; ++l) toy.step(v, static_cast<std::uint64_t>(l), s);
  return v;
}

}  // namespace

TEST_CASE("sample_networks: records V at the depths, bit-identical for 1, 2 and 3 threads") {
  toy_sampler toy;
  ncsde::networks::network_options opt;
  opt.seed = 9;
  opt.networks = 157;  // not a multiple of anything
  opt.depths = {0, 3, 10};
  opt.threads = 1;
  opt.progress = ncsde::progress_mode::off;
  const auto one = ncsde::networks::sample_networks(toy, v0_toy(), 10, opt);
  REQUIRE(one.records.size() == 157u);
  CHECK(one.completed == 157);
  CHECK(one.stopped_fraction() == 0.0);
  for (long long i : {0LL, 1LL, 77LL, 156LL}) {
    const auto& r = one.records[static_cast<std::size_t>(i)];
    CHECK(r.status == ncsde::path_status::completed);
    CHECK(r.stop_layer == 10);
    ncsde::vector expected(3);
    for (int j = 0; j < 3; ++j) {
      ncsde::pack_upper(replay(toy, 9, i, opt.depths[static_cast<std::size_t>(j)]), expected);
      CHECK((r.packed[static_cast<std::size_t>(j)] - expected).norm() == 0.0);
    }
  }
  for (int threads : {2, 3}) {
    opt.threads = threads;
    const auto many = ncsde::networks::sample_networks(toy, v0_toy(), 10, opt);
    for (std::size_t i = 0; i < one.records.size(); ++i)
      for (std::size_t j = 0; j < 3; ++j)
        CHECK((many.records[i].packed[j] - one.records[i].packed[j]).norm() == 0.0);
  }
  const auto v11 = one.values(2, ncsde::entry_functional(0, 0));
  CHECK(v11.size() == 157u);
  CHECK(v11[5] == replay(toy, 9, 5, 10)(0, 0));
}

TEST_CASE("sample_networks: stopped process V_{l∧τ} at max_a V^{aa} > K, checked on every layer") {
  toy_sampler toy;
  toy.sigma = 0.5;
  ncsde::networks::network_options opt;
  opt.seed = 4;
  opt.networks = 400;
  opt.depths = {5, 20};
  opt.stop_level = 3.0;
  opt.progress = ncsde::progress_mode::off;
  const auto r = ncsde::networks::sample_networks(toy, v0_toy(), 20, opt);
  long long stopped = 0;
  for (long long i = 0; i < opt.networks; ++i) {
    // Reference: first layer l ≥ 1 with max(V¹¹, V²²) > 3 along the replayed path.
    int tau = -1;
    for (int l = 1; l <= 20 && tau < 0; ++l)
      if (replay(toy, 4, i, l).diagonal().maxCoeff() > 3.0) tau = l;
    const auto& rec = r.records[static_cast<std::size_t>(i)];
    if (tau < 0) {
      CHECK(rec.status == ncsde::path_status::completed);
      continue;
    }
    ++stopped;
    CHECK(rec.status == ncsde::path_status::stopped);
    CHECK(rec.stop_layer == tau);
    CHECK(r.time(rec) == doctest::Approx(tau / 10.0));
    ncsde::vector frozen(3);
    ncsde::pack_upper(replay(toy, 4, i, tau), frozen);
    CHECK((rec.packed[1] - frozen).norm() == 0.0);  // depth 20 holds V_τ
    if (tau <= 5) CHECK((rec.packed[0] - frozen).norm() == 0.0);
  }
  CHECK(stopped == r.stopped);
  // continue_after_stop: same τ and V_τ, but the depths hold the unstopped V.
  auto cont = opt;
  cont.continue_after_stop = true;
  const auto u = ncsde::networks::sample_networks(toy, v0_toy(), 20, cont);
  CHECK(u.stopped == r.stopped);
  const auto rho_stopped = r.values(1, ncsde::entry_functional(0, 0));
  const auto rho_from_u = u.stopped_values(ncsde::entry_functional(0, 0));
  for (long long i = 0; i < opt.networks; ++i) {
    const auto& a = r.records[static_cast<std::size_t>(i)];
    const auto& b = u.records[static_cast<std::size_t>(i)];
    CHECK(a.status == b.status);
    CHECK(a.stop_layer == b.stop_layer);
    CHECK(rho_stopped[static_cast<std::size_t>(i)] == rho_from_u[static_cast<std::size_t>(i)]);
    ncsde::vector end(3);
    ncsde::pack_upper(replay(toy, 4, i, 20), end);
    CHECK((b.packed[1] - end).norm() == 0.0);
    if (a.status == ncsde::path_status::completed) CHECK(b.at_stop.size() == 0);
  }
  CHECK(stopped > 20);  // the level is reached often (V²² starts at 2, σ√20 ≈ 2.2)
  CHECK(stopped < 400);
  CHECK(r.stopped_fraction() == doctest::Approx(stopped / 400.0));
  CHECK(r.stopped_stderr() ==
        doctest::Approx(std::sqrt(r.stopped_fraction() * (1 - r.stopped_fraction()) / 400.0)));
}

TEST_CASE("sample_networks: non-finite V is blown_up data, bad options are named") {
  toy_sampler toy;
  toy.poison_layer = 2;
  ncsde::networks::network_options opt;
  opt.networks = 3;
  opt.progress = ncsde::progress_mode::off;
  const auto r = ncsde::networks::sample_networks(toy, v0_toy(), 6, opt);
  CHECK(r.blown_up == 3);
  CHECK(r.records[0].status == ncsde::path_status::blown_up);
  CHECK(r.records[0].stop_layer == 3);
  CHECK(r.stopped_fraction() == 1.0);
  CHECK(std::isinf(r.values(0, ncsde::entry_functional(0, 1))[0]));
  CHECK(std::isinf(r.stopped_values(ncsde::entry_functional(0, 1))[2]));

  toy.poison_layer = -1;
  const ncsde::matrix v = v0_toy();
  auto bad = opt;
  CHECK_THROWS_WITH_AS(ncsde::networks::sample_networks(toy, v, 0, opt),
                       doctest::Contains("sample_networks: d must be >= 1 (got 0)"),
                       ncsde::invalid_argument);
  bad.networks = 0;
  CHECK_THROWS_WITH_AS(ncsde::networks::sample_networks(toy, v, 4, bad),
                       doctest::Contains("networks must be >= 1 (got 0)"), ncsde::invalid_argument);
  bad = opt;
  bad.depths = {2, 2};
  CHECK_THROWS_WITH_AS(ncsde::networks::sample_networks(toy, v, 4, bad),
                       doctest::Contains("depths[1] must be > depths[0] = 2"),
                       ncsde::invalid_argument);
  bad.depths = {5};
  CHECK_THROWS_WITH_AS(ncsde::networks::sample_networks(toy, v, 4, bad),
                       doctest::Contains("depths[0] must be in [0, d = 4] (got 5)"),
                       ncsde::invalid_argument);
  bad = opt;
  bad.stop_level = std::nan("");
  CHECK_THROWS_WITH_AS(ncsde::networks::sample_networks(toy, v, 4, bad),
                       doctest::Contains("stop_level must be > 0"), ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(ncsde::networks::sample_networks(toy, ncsde::matrix::Identity(3, 3), 4, opt),
                       doctest::Contains("toy_sampler: V0"), ncsde::invalid_argument);
}

namespace {

/// Whole ensembles equal record for record, bit for bit (timing aside).
bool same_networks(const ncsde::networks::network_ensemble& a,
                   const ncsde::networks::network_ensemble& b) {
  if (a.m != b.m || a.n != b.n || a.d != b.d || a.seed != b.seed || a.depths != b.depths ||
      a.networks != b.networks || a.first != b.first || a.records.size() != b.records.size() ||
      a.completed != b.completed || a.stopped != b.stopped || a.blown_up != b.blown_up)
    return false;
  for (std::size_t i = 0; i < a.records.size(); ++i) {
    const auto &x = a.records[i], &y = b.records[i];
    if (x.status != y.status || x.stop_layer != y.stop_layer || x.packed.size() != y.packed.size())
      return false;
    for (std::size_t j = 0; j < x.packed.size(); ++j)
      if (x.packed[j].size() != y.packed[j].size() ||
          std::memcmp(x.packed[j].data(), y.packed[j].data(), 8 * x.packed[j].size()) != 0)
        return false;
    if (x.at_stop.size() != y.at_stop.size() ||
        (x.at_stop.size() &&
         std::memcmp(x.at_stop.data(), y.at_stop.data(), 8 * x.at_stop.size()) != 0))
      return false;
  }
  return true;
}

}  // namespace

TEST_CASE(
    "sample_networks: pieces of a run, serialised and merged, are the whole run bit for bit") {
  toy_sampler toy;
  toy.sigma = 0.5;
  ncsde::networks::network_options opt;
  opt.seed = 4;
  opt.networks = 101;
  opt.depths = {2, 10};
  opt.stop_level = 2.5;  // some networks stop, some complete
  opt.threads = 2;
  opt.progress = ncsde::progress_mode::off;
  const auto whole = ncsde::networks::sample_networks(toy, v0_toy(), 10, opt);
  REQUIRE(whole.stopped > 0);
  REQUIRE(whole.completed > 0);
  CHECK(whole.first == 0);
  CHECK(whole.networks == 101);
  for (const std::vector<long long>& cuts :
       {std::vector<long long>{0, 101}, {0, 1, 50, 101}, {0, 33, 33, 100, 101}}) {
    CAPTURE(cuts.size());
    std::vector<ncsde::networks::network_ensemble> pieces;
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      opt.range = ncsde::path_range{cuts[i], cuts[i + 1]};
      const auto piece = ncsde::networks::sample_networks(toy, v0_toy(), 10, opt);
      CHECK(piece.first == cuts[i]);
      CHECK(static_cast<long long>(piece.records.size()) == cuts[i + 1] - cuts[i]);
      const std::string bytes = ncsde::networks::serialize(piece);
      pieces.push_back(ncsde::networks::deserialize_network_ensemble(bytes));
      CHECK(ncsde::networks::serialize(pieces.back()) == bytes);
    }
    CHECK(same_networks(ncsde::networks::merge_network_pieces(pieces), whole));
  }
  // Gaps, overlaps, other runs and broken bytes are refused by name.
  opt.range = ncsde::path_range{0, 40};
  const auto a = ncsde::networks::sample_networks(toy, v0_toy(), 10, opt);
  opt.range = ncsde::path_range{50, 101};
  const auto c = ncsde::networks::sample_networks(toy, v0_toy(), 10, opt);
  opt.range = ncsde::path_range{30, 101};
  const auto overlap = ncsde::networks::sample_networks(toy, v0_toy(), 10, opt);
  CHECK_THROWS_WITH_AS(ncsde::networks::merge_network_pieces({a, c}), doctest::Contains("a gap"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(ncsde::networks::merge_network_pieces({a, overlap}),
                       doctest::Contains("an overlap"), ncsde::invalid_argument);
  opt.seed = 5;
  opt.range = ncsde::path_range{40, 101};
  const auto other = ncsde::networks::sample_networks(toy, v0_toy(), 10, opt);
  CHECK_THROWS_WITH_AS(ncsde::networks::merge_network_pieces({a, other}),
                       doctest::Contains("its seed differs"), ncsde::invalid_argument);
  const std::string bytes = ncsde::networks::serialize(a);
  CHECK_THROWS_WITH_AS(ncsde::networks::deserialize_network_ensemble(bytes.substr(0, 100)),
                       doctest::Contains("not a complete network ensemble"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(ncsde::networks::deserialize_network_ensemble("junk"),
                       doctest::Contains("not a network ensemble"), ncsde::invalid_argument);
  opt.range = ncsde::path_range{90, 120};
  CHECK_THROWS_WITH_AS((void)ncsde::networks::sample_networks(toy, v0_toy(), 10, opt),
                       doctest::Contains("range must lie in [0, networks = 101]"),
                       ncsde::invalid_argument);
}
