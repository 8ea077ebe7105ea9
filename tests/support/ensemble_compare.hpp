#pragma once
/// Comparisons of ensemble results for the tests: every field bit for bit (NaN equal to NaN), and
/// every output as text.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "ncsde/ensemble.hpp"
#include "ncsde/ensemble_io.hpp"

namespace ncsde::test {

inline bool same_moments(const ncsde::moments& a, const ncsde::moments& b) {
  return a.count() == b.count() && a.mean() == b.mean() && a.covariance() == b.covariance();
}

/// Bitwise equality, with NaN equal to NaN (min_eigenvalue is NaN when nothing was violated).
inline bool same_double(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

inline void check_identical(const ncsde::ensemble_result& a, const ncsde::ensemble_result& b) {
  CHECK(a.completed == b.completed);
  CHECK(a.blown_up == b.blown_up);
  CHECK(a.stopped == b.stopped);
  CHECK(same_moments(a.terminal, b.terminal));
  CHECK(same_moments(a.at_stop, b.at_stop));
  REQUIRE(a.saved.size() == b.saved.size());
  for (std::size_t i = 0; i < a.saved.size(); ++i) CHECK(same_moments(a.saved[i], b.saved[i]));
  CHECK(a.explosion_times == b.explosion_times);
  CHECK(a.stop_times == b.stop_times);
  CHECK(a.pd.violations == b.pd.violations);
  CHECK(a.pd.projected == b.pd.projected);
  CHECK(a.pd.refined == b.pd.refined);
  CHECK(a.pd.boundary == b.pd.boundary);
  CHECK(same_double(a.pd.min_eigenvalue, b.pd.min_eigenvalue));
  CHECK(a.paths_with_violations == b.paths_with_violations);
  REQUIRE(a.functionals.size() == b.functionals.size());
  for (std::size_t f = 0; f < a.functionals.size(); ++f) {
    CHECK(a.functionals[f].name == b.functionals[f].name);
    CHECK(a.functionals[f].completed == b.functionals[f].completed);
    CHECK(a.functionals[f].all == b.functionals[f].all);
    CHECK(same_double(a.functionals[f].completed_mean, b.functionals[f].completed_mean));
    CHECK(same_double(a.functionals[f].completed_stderr, b.functionals[f].completed_stderr));
  }
  REQUIRE(a.records.size() == b.records.size());
  long long differing = 0;
  for (std::size_t p = 0; p < a.records.size(); ++p) {
    const auto& x = a.records[p];
    const auto& y = b.records[p];
    const bool same_packed =
        x.packed.size() == y.packed.size() &&
        std::equal(x.packed.begin(), x.packed.end(), y.packed.begin(), same_double);
    bool same_saved = x.saved.size() == y.saved.size();
    for (std::size_t j = 0; same_saved && j < x.saved.size(); ++j)
      same_saved =
          std::equal(x.saved[j].begin(), x.saved[j].end(), y.saved[j].begin(), same_double);
    differing += !(x.path == y.path && x.status == y.status && x.t_stop == y.t_stop &&
                   same_packed && same_saved);
  }
  CHECK(differing == 0);
}

/// Largest |a − b| / (1 + |b|) over the paths' final states (records); statuses must agree.
inline double largest_relative_difference(const ncsde::ensemble_result& a,
                                          const ncsde::ensemble_result& b) {
  REQUIRE(a.records.size() == b.records.size());
  double worst = 0.0;
  for (std::size_t p = 0; p < a.records.size(); ++p) {
    REQUIRE(a.records[p].status == b.records[p].status);
    const ncsde::vector& x = a.records[p].packed;
    const ncsde::vector& y = b.records[p].packed;
    worst = std::max(worst, ((x - y).array().abs() / (1.0 + y.array().abs())).maxCoeff());
  }
  return worst;
}

/// Every output of a run as text: the JSON summary (timing zeroed), the CSV of the paths and of
/// the saved states, so that two runs can be compared byte for byte.
inline std::string all_outputs(ncsde::ensemble_result r) {
  r.seconds = 0.0;
  std::ostringstream csv, saved;
  ncsde::write_csv(r, csv);
  ncsde::write_saved_csv(r, saved);
  return ncsde::summary_json(r) + "\n" + csv.str() + "\n" + saved.str();
}

}  // namespace ncsde::test
