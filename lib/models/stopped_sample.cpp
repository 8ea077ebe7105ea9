#include "ncsde/models/stopped_sample.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ncsde::models {

namespace detail {

std::vector<long long> steps_per_layer(const sde_sample_options& opt) {
  if (!(opt.dt > 0.0) || !std::isfinite(opt.dt))
    throw_invalid_argument("sample_sde", "dt", opt.dt, "> 0 and finite");
  if (!(opt.t_end > 0.0) || !std::isfinite(opt.t_end))
    throw_invalid_argument("sample_sde", "T", opt.t_end, "> 0 and finite");
  std::vector<long long> out;
  for (const int n : opt.widths) {
    if (n < 1) throw_invalid_argument("sample_sde", "n", n, ">= 1");
    const double per_layer = 1.0 / (n * opt.dt);
    const double rounded = std::round(per_layer);
    if (rounded < 1.0 || std::abs(per_layer - rounded) > 1e-9 * per_layer)
      throw_invalid_argument(
          "sample_sde", "dt", opt.dt,
          fmt::format("such that 1/(n·dt) is an integer for n = {}: the SDE is monitored on every "
                      "network grid k/n, so 1/(n·dt) must be an integer for every width n "
                      "(1/({}·dt) = {:g})",
                      n, n, per_layer));
    const double layers = opt.t_end * n;
    if (std::abs(layers - std::round(layers)) > 1e-9 * layers)
      throw_invalid_argument("sample_sde", "T", opt.t_end,
                             fmt::format("such that T·n is an integer depth for n = {}", n));
    out.push_back(static_cast<long long>(rounded));
  }
  return out;
}

}  // namespace detail

long long stopped_sample::stopped() const {
  return std::count_if(status.begin(), status.end(),
                       [](path_status s) { return s != path_status::completed; });
}

double stopped_sample::fraction() const {
  return status.empty() ? 0.0 : static_cast<double>(stopped()) / static_cast<double>(status.size());
}

double stopped_sample::fraction_stderr() const {
  if (status.empty()) return 0.0;
  const double p = fraction();
  return std::sqrt(p * (1.0 - p) / static_cast<double>(status.size()));
}

std::vector<double> stopped_sample::values(const functional& f, int m) const {
  std::vector<double> out;
  out.reserve(status.size());
  matrix v(m, m);
  for (std::size_t i = 0; i < status.size(); ++i) {
    if (status[i] == path_status::blown_up || !packed[i].allFinite()) {
      out.push_back(std::numeric_limits<double>::infinity());
      continue;
    }
    unpack_upper(packed[i], v);
    out.push_back(f.f(v));
  }
  return out;
}

}  // namespace ncsde::models
