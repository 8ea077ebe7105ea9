// The SDE side of `ncsde validate` on a device (models/stopped_sample.hpp): sample_sde on the
// emulated device, whose paths run the device engine's path kernel with its grid monitors, against
// sample_sde on the CPU: every width's stopped sample (status and V at the passage), the unstopped
// sample, the kept paths and the cone counters, bit for bit; paths the device hands back (cone
// exits under the projection policy) are resumed on the CPU with the passages seen so far. And the
// samples' device report through shards and their binary form.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ncsde/device.hpp"
#include "ncsde/error.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/models/stopped_sample.hpp"
#include "support/device_checks.hpp"
#include "support/model_cases.hpp"
#include "support/random_matrices.hpp"

namespace {

using ncsde::matrix;
using ncsde::vector;
namespace models = ncsde::models;

const ncsde::device_spec emulated = support::emulated_device;

/// Whether two lists of packed states are equal entry by entry (NaN == NaN: blown-up paths).
bool same_states(const std::vector<vector>& x, const std::vector<vector>& y) {
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i].size() != y[i].size()) return false;
    for (Eigen::Index j = 0; j < x[i].size(); ++j)
      if (ncsde::device::bits_of(x[i](j)) != ncsde::device::bits_of(y[i](j))) return false;
  }
  return true;
}

/// Every field of two samples but the timing and the device report, bit for bit.
void check_same_sample(const models::sde_sample& a, const models::sde_sample& b) {
  CHECK(a.m == b.m);
  CHECK(a.first == b.first);
  CHECK(a.widths == b.widths);
  REQUIRE(a.by_width.size() == b.by_width.size());
  for (std::size_t w = 0; w < a.by_width.size(); ++w) {
    INFO("width ", a.widths[w]);
    CHECK(a.by_width[w].status == b.by_width[w].status);
    CHECK(same_states(a.by_width[w].packed, b.by_width[w].packed));
  }
  CHECK(a.unstopped.status == b.unstopped.status);
  CHECK(same_states(a.unstopped.packed, b.unstopped.packed));
  REQUIRE(a.kept.size() == b.kept.size());
  for (std::size_t p = 0; p < a.kept.size(); ++p) CHECK(same_states(a.kept[p], b.kept[p]));
  CHECK(a.pd.violations == b.pd.violations);
  CHECK(a.pd.projected == b.pd.projected);
  CHECK(a.pd.boundary == b.pd.boundary);
  CHECK(ncsde::device::bits_of(a.pd.min_eigenvalue) == ncsde::device::bits_of(b.pd.min_eigenvalue));
  CHECK(a.paths_with_violations == b.paths_with_violations);
}

models::sde_sample_options sample_options(ncsde::device_spec device) {
  models::sde_sample_options opt;
  opt.t_end = 1.0;
  opt.dt = 1.0 / 64;
  opt.widths = {4, 8, 16};  // looks every 16, 8 and 4 steps
  opt.stop_level = 1.6;
  opt.paths = 40;
  opt.seed = 21;
  opt.threads = 2;
  opt.kept_paths = 3;
  opt.save_times = {0.0, 0.5, 1.0};
  opt.device = device;
  return opt;
}

/// A user's SDE on the cone without a device form (no run_device_batch).
struct plain_sde {
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  int noise_dimension(int m) const { return m * m; }
  void drift(const matrix& v, matrix& out, double) const { out = -0.5 * v; }
  void diffusion(const matrix& v, const vector& xi, matrix& out, double) const {
    const int m = static_cast<int>(v.rows());
    const Eigen::Map<const matrix> g(xi.data(), m, m);
    out = 0.1 * (g + g.transpose());
  }
};

long long stopped_paths(const models::sde_sample& s) {
  long long n = 0;
  for (const models::stopped_sample& b : s.by_width) n += b.stopped();
  return n;
}

}  // namespace

TEST_CASE("sample_sde on the emulated device is the CPU's sample, bit for bit, for every model") {
  // V0's diagonal is about 1 and the level 1.6: paths pass it on some grids and not on others;
  // near the boundary (λ_min 0.05) the attention models' paths leave the cone, are handed back at
  // that step and resumed on the CPU with the passages the device saw (project, validate's
  // policy), and some blow up.
  long long handed_back = 0, stopped = 0, violations = 0;
  for (const support::model_case& c : support::model_cases)
    for (const int m : {2, 3, 4}) {
      for (const double floor : {0.3, 0.05}) {
        INFO(c.name, ", m = ", m, ", lambda_min(V0) >= ", floor);
        const models::covariance_sde sde = support::make_sde(c, 0.6, 0.8);
        const matrix v0 = support::random_spd<matrix>(m, 4, floor);
        const models::sde_sample cpu = models::sample_sde(sde, v0, sample_options({}));
        const models::sde_sample dev = models::sample_sde(sde, v0, sample_options(emulated));
        check_same_sample(dev, cpu);
        CHECK(cpu.device.device == "cpu");
        CHECK(dev.device.device == "emulated");
        CHECK(dev.device.handed_back <= 40);
        handed_back += dev.device.handed_back;
        stopped += stopped_paths(cpu);
        violations += cpu.pd.violations;
      }
    }
  CHECK(stopped > 0);
  CHECK(violations > 0);
  CHECK(handed_back > 0);
}

TEST_CASE("sample_sde on the emulated device: threads, shards and the device report") {
  const models::covariance_sde sde = support::make_sde(support::model_cases[5], 0.6, 0.8);
  const matrix v0 = support::random_spd<matrix>(3, 4, 0.05);
  models::sde_sample_options opt = sample_options(emulated);
  const models::sde_sample whole = models::sample_sde(sde, v0, opt);
  REQUIRE(whole.device.handed_back > 0);
  opt.threads = 1;
  const models::sde_sample one = models::sample_sde(sde, v0, opt);
  check_same_sample(one, whole);
  CHECK(one.device.handed_back == whole.device.handed_back);
  // Pieces through their binary form, merged: the whole sample and its device report.
  std::vector<models::sde_sample> pieces;
  for (const ncsde::path_range r :
       {ncsde::path_range{0, 2}, ncsde::path_range{2, 23}, ncsde::path_range{23, 40}}) {
    opt.range = r;
    pieces.push_back(
        models::deserialize_sde_sample(models::serialize(models::sample_sde(sde, v0, opt))));
    CHECK(pieces.back().device.device == "emulated");
  }
  const models::sde_sample merged = models::merge_sde_samples(pieces);
  check_same_sample(merged, whole);
  CHECK(merged.device.device == "emulated");
  CHECK(merged.device.handed_back == whole.device.handed_back);
  // A sample of the first binary form (no device report) reads as a CPU run's.
  std::string bytes = models::serialize(models::sample_sde(sde, v0, sample_options({})));
  const std::string v2 = "ncsde sde sample v2\n";
  REQUIRE(bytes.starts_with(v2));
  bytes.replace(0, v2.size(), "ncsde sde sample v1\n");
  // The v2 tail: "cpu" (8 + 3 bytes), "" (8), handed_back (8).
  bytes.resize(bytes.size() - (8 + 3 + 8 + 8));
  const models::sde_sample old = models::deserialize_sde_sample(bytes);
  CHECK(old.device.device == "cpu");
  CHECK(old.device.handed_back == 0);
  CHECK_THROWS_AS(models::deserialize_sde_sample(bytes + "x"), ncsde::invalid_argument);
}

TEST_CASE("sample_sde refuses a device for an SDE without a device form, by name") {
  const matrix v0 = support::random_spd<matrix>(2, 4, 0.5);
  CHECK_THROWS_WITH_AS(models::sample_sde(plain_sde{}, v0, sample_options(emulated)),
                       doctest::Contains("device form"), ncsde::invalid_argument);
  const models::sde_sample automatic =
      models::sample_sde(plain_sde{}, v0, sample_options({ncsde::device_kind::automatic, 0}));
  CHECK(automatic.device.device == "cpu");
  CHECK(!automatic.device.note.empty());
  check_same_sample(automatic, models::sample_sde(plain_sde{}, v0, sample_options({})));
}
