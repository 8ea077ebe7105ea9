#include "ncsde/networks/sample.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "../../solvers/byte_codec.hpp"

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

network_ensemble merge_network_pieces(std::vector<network_ensemble> pieces) {
  constexpr const char* where = "merge_network_pieces";
  if (pieces.empty()) throw_invalid(where, "no pieces");
  network_ensemble out = std::move(pieces.front());
  for (std::size_t i = 1; i < pieces.size(); ++i) {
    network_ensemble& p = pieces[i];
    auto differs = [&](const char* what) {
      throw_invalid(where,
                    ncsde::detail::format_message(
                        "piece {} is from another run (its {} differs from piece 0's)", i, what));
    };
    if (p.m != out.m) differs("m");
    if (p.n != out.n) differs("n");
    if (p.d != out.d) differs("d");
    if (p.seed != out.seed) differs("seed");
    if (std::bit_cast<std::uint64_t>(p.stop_level) != std::bit_cast<std::uint64_t>(out.stop_level))
      differs("stop level");
    if (p.depths != out.depths) differs("depths");
    if (p.networks != out.networks) differs("number of networks");
    const long long end = out.first + static_cast<long long>(out.records.size());
    if (p.first != end)
      throw_invalid(where, ncsde::detail::format_message(
                               "piece {} starts at network {} but the pieces before it end at "
                               "network {} ({})",
                               i, p.first, end, p.first > end ? "a gap" : "an overlap"));
    out.records.insert(out.records.end(), std::make_move_iterator(p.records.begin()),
                       std::make_move_iterator(p.records.end()));
    out.completed += p.completed;
    out.stopped += p.stopped;
    out.blown_up += p.blown_up;
    out.seconds += p.seconds;
  }
  return out;
}

namespace {

constexpr std::string_view network_magic = "ncsde network ensemble v1\n";

class network_writer : public ncsde::detail::byte_writer<network_writer> {
 public:
  using byte_writer::put;
  void put(const network_record& r) {
    put(r.status);
    put(static_cast<std::int64_t>(r.stop_layer));
    put(r.packed);
    put(r.at_stop);
  }
};

}  // namespace

std::string serialize(const network_ensemble& e) {
  network_writer w;
  w.out.append(network_magic);
  w.put(static_cast<std::int64_t>(e.m));
  w.put(static_cast<std::int64_t>(e.n));
  w.put(static_cast<std::int64_t>(e.d));
  w.put(e.seed);
  w.put(static_cast<std::int64_t>(e.threads));
  w.put(e.stop_level);
  w.put(e.depths);
  w.put(e.networks);
  w.put(e.first);
  w.put(e.completed);
  w.put(e.stopped);
  w.put(e.blown_up);
  w.put(e.seconds);
  w.put(e.records);
  return std::move(w.out);
}

network_ensemble deserialize_network_ensemble(std::string_view bytes) {
  if (bytes.substr(0, network_magic.size()) != network_magic)
    throw invalid_argument(
        "deserialize_network_ensemble: not a network ensemble (the data does not start with '" +
        std::string(network_magic.substr(0, network_magic.size() - 1)) + "')");
  ncsde::detail::byte_reader in(bytes.substr(network_magic.size()),
                                "deserialize_network_ensemble: not a complete network ensemble");
  network_ensemble e;
  const long long m = in.i64(), n = in.i64(), d = in.i64();
  // m at most 2^15 (m(m+1)/2 fits an int), n and d ints.
  if (m < 1 || m > (1 << 15) || n < 1 || d < 1 || n > std::numeric_limits<int>::max() ||
      d > std::numeric_limits<int>::max())
    in.fail("a shape out of range");
  e.m = static_cast<int>(m);
  e.n = static_cast<int>(n);
  e.d = static_cast<int>(d);
  e.seed = in.u64();
  e.threads = static_cast<int>(in.i64());
  e.stop_level = in.f64();
  const std::size_t depths = in.count(8);
  for (std::size_t i = 0; i < depths; ++i) {
    const long long l = in.i64();
    if (l < 0 || l > e.d || (i > 0 && l <= e.depths.back())) in.fail("depths out of order");
    e.depths.push_back(static_cast<int>(l));
  }
  if (e.depths.empty()) in.fail("no depths");
  e.networks = in.i64();
  e.first = in.i64();
  e.completed = in.i64();
  e.stopped = in.i64();
  e.blown_up = in.i64();
  e.seconds = in.f64();
  const std::size_t records = in.count(32);
  // Each count within [0, records] before they are added (no overflow on any input).
  const long long held = static_cast<long long>(records);
  auto counted = [held](long long c) { return c >= 0 && c <= held; };
  if (e.first < 0 || e.networks < 0 || e.first > e.networks || held > e.networks - e.first ||
      !counted(e.completed) || !counted(e.stopped) || !counted(e.blown_up) ||
      e.completed + e.stopped + e.blown_up != held)
    in.fail("network counts that do not add up");
  const Eigen::Index K = packed_size(e.m);
  e.records.resize(records);
  for (network_record& r : e.records) {
    r.status = in.enumeration(path_status::stopped, "network status");
    const long long layer = in.i64();
    if (layer < 0 || layer > e.d) in.fail("a stop layer out of range");
    r.stop_layer = static_cast<int>(layer);
    r.packed = in.vecs();
    r.at_stop = in.vec();
    if (r.packed.size() != e.depths.size()) in.fail("a record of another shape");
    for (const vector& v : r.packed)
      if (v.size() != K) in.fail("a record of another shape");
    if (r.at_stop.size() != 0 && r.at_stop.size() != K) in.fail("a record of another shape");
  }
  if (!in.done()) in.fail("trailing bytes");
  return e;
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
