#include "ncsde/models/stopped_sample.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../../solvers/byte_codec.hpp"

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

path_range sample_range(const sde_sample_options& opt) {
  if (!opt.range) return {0, opt.paths};
  const path_range r = *opt.range;
  if (r.first < 0 || r.last > opt.paths || r.last < r.first)
    throw_invalid_argument("sample_sde", "range", fmt::format("[{}, {})", r.first, r.last),
                           fmt::format("a range in [0, paths = {}] with first <= last", opt.paths));
  return r;
}

}  // namespace detail

sde_sample merge_sde_samples(std::vector<sde_sample> pieces) {
  if (pieces.empty()) throw_invalid_argument("merge_sde_samples", "pieces", 0, "at least one");
  sde_sample out = std::move(pieces.front());
  for (std::size_t i = 1; i < pieces.size(); ++i) {
    sde_sample& p = pieces[i];
    const long long next = out.first + static_cast<long long>(out.unstopped.status.size());
    if (p.first != next)
      throw_invalid_argument("merge_sde_samples", "first", p.first,
                             fmt::format("{} (pieces consecutive, in path order)", next));
    if (p.m != out.m || p.widths != out.widths)
      throw_invalid_argument("merge_sde_samples", "widths", p.widths.size(),
                             "the pieces' own m and widths (pieces of one run)");
    auto append = [](stopped_sample& to, stopped_sample& from) {
      to.status.insert(to.status.end(), from.status.begin(), from.status.end());
      to.packed.insert(to.packed.end(), std::make_move_iterator(from.packed.begin()),
                       std::make_move_iterator(from.packed.end()));
    };
    for (std::size_t w = 0; w < out.by_width.size(); ++w) append(out.by_width[w], p.by_width[w]);
    append(out.unstopped, p.unstopped);
    out.kept.insert(out.kept.end(), std::make_move_iterator(p.kept.begin()),
                    std::make_move_iterator(p.kept.end()));
    out.pd += p.pd;
    out.paths_with_violations += p.paths_with_violations;
    out.seconds += p.seconds;
    out.device.handed_back += p.device.handed_back;
  }
  return out;
}

namespace {

// v2 adds the device report after the timing; a v1 sample reads as a CPU run's.
constexpr std::string_view sample_magic = "ncsde sde sample v2\n";
constexpr std::string_view sample_magic_v1 = "ncsde sde sample v1\n";

class sample_writer : public ncsde::detail::byte_writer<sample_writer> {
 public:
  using byte_writer::put;
  void put(const stopped_sample& s) {
    put(s.status);
    put(s.packed);
  }
};

}  // namespace

std::string serialize(const sde_sample& s) {
  sample_writer w;
  w.out.append(sample_magic);
  w.put(static_cast<std::int64_t>(s.m));
  w.put(static_cast<std::int64_t>(s.first));
  w.put(static_cast<std::uint64_t>(s.widths.size()));
  for (const int n : s.widths) w.put(static_cast<std::int64_t>(n));
  w.put(static_cast<std::uint64_t>(s.by_width.size()));
  for (const stopped_sample& b : s.by_width) w.put(b);
  w.put(s.unstopped);
  w.put(static_cast<std::uint64_t>(s.kept.size()));
  for (const std::vector<vector>& k : s.kept) w.put(k);
  w.put(s.pd.violations);
  w.put(s.pd.projected);
  w.put(s.pd.refined);
  w.put(s.pd.boundary);
  w.put(s.pd.min_eigenvalue);
  w.put(s.paths_with_violations);
  w.put(s.seconds);
  w.put(std::string_view(s.device.device));
  w.put(std::string_view(s.device.note));
  w.put(static_cast<std::int64_t>(s.device.handed_back));
  return std::move(w.out);
}

sde_sample deserialize_sde_sample(std::string_view bytes) {
  const bool v1 = bytes.substr(0, sample_magic_v1.size()) == sample_magic_v1;
  if (!v1 && bytes.substr(0, sample_magic.size()) != sample_magic)
    throw invalid_argument(
        "deserialize_sde_sample: not an SDE sample (the data does not start with '" +
        std::string(sample_magic.substr(0, sample_magic.size() - 1)) + "')");
  static_assert(sample_magic.size() == sample_magic_v1.size());
  ncsde::detail::byte_reader in(bytes.substr(sample_magic.size()),
                                "deserialize_sde_sample: not a complete SDE sample");
  sde_sample s;
  const long long m = in.i64();  // at most 2^15: m(m+1)/2 fits an int
  s.first = in.i64();
  if (m < 1 || m > (1 << 15) || s.first < 0) in.fail("a shape out of range");
  s.m = static_cast<int>(m);
  const Eigen::Index K = packed_size(s.m);
  for (std::size_t i = 0, n = in.count(8); i < n; ++i)
    s.widths.push_back(static_cast<int>(in.i64()));
  auto stopped = [&](std::size_t paths_expected, bool check) {
    stopped_sample b;
    const std::size_t n = in.count(8);
    b.status.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
      b.status.push_back(in.enumeration(path_status::exhausted, "path status"));
    b.packed = in.vecs();
    if (b.packed.size() != n || (check && n != paths_expected)) in.fail("a sample of another size");
    for (const vector& v : b.packed)
      if (v.size() != K) in.fail("a state of another size");
    return b;
  };
  const std::size_t widths = in.count(16);
  if (widths != s.widths.size()) in.fail("samples that do not match the widths");
  for (std::size_t w = 0; w < widths; ++w) s.by_width.push_back(stopped(0, false));
  s.unstopped = stopped(0, false);
  const std::size_t paths = s.unstopped.status.size();
  for (const stopped_sample& b : s.by_width)
    if (b.status.size() != paths) in.fail("samples of different sizes");
  const std::size_t kept = in.count(8);
  if (kept > paths) in.fail("more kept paths than paths");
  for (std::size_t i = 0; i < kept; ++i) s.kept.push_back(in.vecs());
  s.pd.violations = in.i64();
  s.pd.projected = in.i64();
  s.pd.refined = in.i64();
  s.pd.boundary = in.i64();
  s.pd.min_eigenvalue = in.f64();
  s.paths_with_violations = in.i64();
  s.seconds = in.f64();
  if (!v1) {
    s.device.device = in.string();
    s.device.note = in.string();
    s.device.handed_back = in.i64();
    if (s.device.handed_back < 0 || s.device.handed_back > static_cast<long long>(paths))
      in.fail("more paths handed back than paths");
  }
  if (!in.done()) in.fail("trailing bytes");
  return s;
}

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
