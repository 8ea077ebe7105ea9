#pragma once
/// What the device engine's tests share: bitwise comparison of coefficient arrays, NaN-filled
/// buffers, and an ensemble on the emulated device checked against the CPU engines.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "ncsde/device.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "support/ensemble_compare.hpp"

namespace support {

/// Entries k < n whose bits differ between a and b (memcmp: +0 and −0 differ, so do two NaNs with
/// different payloads).
inline int differing_entries(const double* a, const double* b, int n) {
  int count = 0;
  for (int k = 0; k < n; ++k) count += std::memcmp(a + k, b + k, sizeof(double)) != 0 ? 1 : 0;
  return count;
}
inline int differing_entries(const ncsde::matrix& a, const std::vector<double>& b) {
  REQUIRE(static_cast<std::size_t>(a.size()) == b.size());
  return differing_entries(a.data(), b.data(), static_cast<int>(b.size()));
}

/// A buffer filled with NaN, so that an entry the device code reads before writing shows up.
inline std::vector<double> nans(int n) {
  return std::vector<double>(static_cast<std::size_t>(n), std::numeric_limits<double>::quiet_NaN());
}

inline constexpr ncsde::device_spec emulated_device{ncsde::device_kind::emulated, 0};

/// The ensembles of the device tests: 40 paths of seed `seed`, records kept, on `device`.
inline ncsde::ensemble_options device_test_ensemble(ncsde::device_spec device, std::uint64_t seed,
                                                    int threads = 2) {
  ncsde::ensemble_options eo;
  eo.paths = 40;
  eo.seed = seed;
  eo.threads = threads;
  eo.keep_paths = true;
  eo.progress = ncsde::progress_mode::off;
  eo.device = device;
  return eo;
}

/// The emulated device's Euler–Maruyama ensemble of prob against the CPU's, batched and per path,
/// bit for bit (check_identical); returns the paths the device handed back, after checking that
/// they are the paths that left the open cone (these runs have no asymmetric or non-finite step).
template <class S>
long long check_device_is_cpu(const ncsde::problem<S>& prob, const ncsde::integrate_options& io,
                              std::uint64_t seed) {
  const ncsde::euler_maruyama<> em;
  const ncsde::ensemble_result d =
      ncsde::run_ensemble(em, prob, io, device_test_ensemble(emulated_device, seed));
  CHECK(d.device.device == "emulated");
  ncsde::ensemble_options per_path = device_test_ensemble({}, seed);
  per_path.batched = false;
  ncsde::test::check_identical(d,
                               ncsde::run_ensemble(em, prob, io, device_test_ensemble({}, seed)));
  ncsde::test::check_identical(d, ncsde::run_ensemble(em, prob, io, per_path));
  CHECK(d.device.handed_back >= d.paths_with_violations);
  CHECK(d.device.handed_back <= d.paths_with_violations + d.pd.boundary);
  return d.device.handed_back;
}

}  // namespace support
