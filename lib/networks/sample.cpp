#include "ncsde/networks/sample.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace ncsde::networks {

double network_ensemble::stopped_fraction() const {
  return records.empty()
             ? 0.0
             : static_cast<double>(stopped + blown_up) / static_cast<double>(records.size());
}

double network_ensemble::stopped_stderr() const {
  if (records.empty()) return 0.0;
  const double p = stopped_fraction();
  return std::sqrt(p * (1.0 - p) / static_cast<double>(records.size()));
}

namespace {

/// f(V) for every record, in network order, V unpacked from the packed upper triangle
/// `packed_of(record)`; +inf for a blown_up record (as ensembles count blown-up paths).
template <class PackedOf>
std::vector<double> record_values(const network_ensemble& e, const functional& f,
                                  PackedOf packed_of) {
  std::vector<double> out;
  out.reserve(e.records.size());
  matrix v(e.m, e.m);
  for (const network_record& r : e.records) {
    if (r.status == path_status::blown_up) {
      out.push_back(std::numeric_limits<double>::infinity());
      continue;
    }
    unpack_upper(packed_of(r), v);
    out.push_back(f.f(v));
  }
  return out;
}

}  // namespace

std::vector<double> network_ensemble::values(std::size_t j, const functional& f) const {
  NCSDE_ASSERT(j < depths.size(), "network_ensemble::values: depth index out of range");
  return record_values(*this, f,
                       [j](const network_record& r) -> const vector& { return r.packed[j]; });
}

std::vector<double> network_ensemble::stopped_values(const functional& f) const {
  return record_values(*this, f,
                       [](const network_record& r) -> const vector& { return r.stopped_value(); });
}

namespace detail {

std::vector<int> resolve_depths(const network_options& opt, int d) {
  constexpr const char* where = "sample_networks";
  if (d < 1) throw_invalid_argument(where, "d", d, ">= 1");
  if (opt.networks < 1) throw_invalid_argument(where, "networks", opt.networks, ">= 1");
  if (opt.threads < 0) throw_invalid_argument(where, "threads", opt.threads, ">= 0 (0: all cores)");
  if (!(opt.stop_level > 0.0))
    throw_invalid_argument(where, "stop_level", opt.stop_level, "> 0 (+inf: never stop)");
  if (opt.depths.empty()) return {d};
  for (std::size_t i = 0; i < opt.depths.size(); ++i) {
    if (opt.depths[i] < 0 || opt.depths[i] > d)
      throw_invalid_argument(where, fmt::format("depths[{}]", i), opt.depths[i],
                             fmt::format("in [0, d = {}]", d));
    if (i > 0 && opt.depths[i] <= opt.depths[i - 1])
      throw_invalid_argument(
          where, fmt::format("depths[{}]", i), opt.depths[i],
          fmt::format("> depths[{}] = {} (strictly increasing)", i - 1, opt.depths[i - 1]));
  }
  return opt.depths;
}

}  // namespace detail
}  // namespace ncsde::networks
