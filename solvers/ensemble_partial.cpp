// Pieces of an ensemble: merging ranges, finishing a run, and the binary form of a piece.
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "byte_codec.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/error.hpp"

namespace ncsde {

namespace {

constexpr const char* merge_where = "merge_partials";

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return false;
  return true;
}

/// Names the first field in which piece `i` belongs to another run than `first`.
void require_same_run(const ensemble_partial& first, const ensemble_partial& p, std::size_t i) {
  auto fail = [&](std::string_view what) {
    throw invalid_argument(
        fmt::format("{}: piece {} (paths [{}, {})) is from another run: its {} "
                    "differs from piece 0's",
                    merge_where, i, p.range.first, p.range.last, what));
  };
  const ensemble_result &a = first.run, &b = p.run;
  if (a.layout.space != b.layout.space || a.layout.rows != b.layout.rows ||
      a.layout.cols != b.layout.cols || a.layout.vector_state != b.layout.vector_state)
    fail("state shape or space");
  if (!same_bits(a.t0, b.t0) || !same_bits(a.t_end, b.t_end)) fail("time interval");
  if (!same_bits(a.dt, b.dt)) fail("dt");
  if (a.paths != b.paths) fail("number of paths");
  if (a.seed != b.seed) fail("seed");
  if (a.scheme != b.scheme) fail("scheme");
  if (a.control != b.control || !same_bits(a.tolerance, b.tolerance)) fail("step control");
  if (!same_bits(a.save_times, b.save_times)) fail("save times");
  if (first.block_size != p.block_size) fail("block size");
  if (first.functionals != p.functionals) fail("number of functionals");
  if (first.keep_paths != p.keep_paths) fail("keep_paths");
  if (first.covariance != p.covariance) fail("covariance mode");
}

/// Folds a cut block whose paths now make up all of its paths (or the last block of the run), for
/// states of K coordinates and `saves` save times.
void fold(detail::block_result& b, int K, std::size_t saves, std::size_t functionals,
          bool keep_paths, bool covariance) {
  detail::block_result w;
  w.index = b.index;
  w.range = b.range;
  w.start_whole(K, saves, functionals, covariance);
  for (const detail::ensemble_path& p : b.paths) w.add(p, keep_paths);
  b = std::move(w);
}

}  // namespace

ensemble_partial merge_partials(std::vector<ensemble_partial> parts) {
  if (parts.empty()) throw_invalid(merge_where, "no pieces to merge");
  ensemble_partial out = std::move(parts.front());
  for (std::size_t i = 1; i < parts.size(); ++i) {
    ensemble_partial& p = parts[i];
    require_same_run(out, p, i);
    if (p.range.first != out.range.last)
      throw invalid_argument(fmt::format(
          "{}: piece {} starts at path {} but the pieces before it end at path {} ({}); pass the "
          "pieces in path order, each starting where the previous one ends",
          merge_where, i, p.range.first, out.range.last,
          p.range.first > out.range.last ? "a gap" : "an overlap"));
    out.range.last = p.range.last;
    out.run.seconds += p.run.seconds;
    // Pieces of one run may have run on different devices (ranks with and without a GPU under
    // "auto"): the merged report names each device once.
    device_report& d = out.run.device;
    d.handed_back += p.run.device.handed_back;
    if (("," + d.device + ",").find("," + p.run.device.device + ",") == std::string::npos)
      d.device += "," + p.run.device.device;
    if (d.note.empty()) d.note = p.run.device.note;
    auto it = p.blocks.begin();
    if (it != p.blocks.end() && !out.blocks.empty() && out.blocks.back().index == it->index) {
      // The block cut between the two pieces: join its paths, fold it once it is complete.
      detail::block_result& joined = out.blocks.back();
      NCSDE_ASSERT(!joined.whole && !it->whole,
                   "merge_partials: a shared block must be cut on both sides");
      joined.paths.insert(joined.paths.end(), std::make_move_iterator(it->paths.begin()),
                          std::make_move_iterator(it->paths.end()));
      joined.range.last = it->range.last;
      const long long b = joined.index * out.block_size;
      if (joined.range == path_range{b, b + out.block_size})
        fold(joined, out.run.layout.size(), out.run.save_times.size(), out.functionals,
             out.keep_paths, out.covariance);
      ++it;
    }
    out.blocks.insert(out.blocks.end(), std::make_move_iterator(it),
                      std::make_move_iterator(p.blocks.end()));
  }
  return out;
}

ensemble_result finish_ensemble(ensemble_partial whole, const ensemble_options& opt) {
  constexpr const char* where = "finish_ensemble";
  if (whole.range != path_range{0, opt.paths})
    throw invalid_argument(fmt::format("{}: the pieces cover paths [{}, {}), not the run's [0, {})",
                                       where, whole.range.first, whole.range.last, opt.paths));
  if (whole.functionals != opt.functionals.size())
    throw_invalid_argument(where, "opt.functionals.size()", opt.functionals.size(),
                           fmt::format("the run's {}", whole.functionals));
  if (whole.keep_paths != opt.keep_paths)
    throw_invalid_argument(where, "opt.keep_paths", opt.keep_paths,
                           fmt::format("the run's {}", whole.keep_paths));
  if (opt.block_size != 0 && whole.block_size != opt.block_size)
    throw_invalid_argument(where, "opt.block_size", opt.block_size,
                           fmt::format("the run's {}", whole.block_size));
  if (whole.covariance != keeps_covariance(opt.covariance, whole.run.layout.size()))
    throw_invalid_argument(where, "opt.covariance", to_string(opt.covariance),
                           fmt::format("the run's, which {} the covariance",
                                       whole.covariance ? "kept" : "did not keep"));

  ensemble_result r = std::move(whole.run);
  const int K = r.layout.size();
  r.terminal.reset(K, whole.covariance);
  r.at_stop.reset(K, whole.covariance);
  r.saved.assign(r.save_times.size(), moments(K, whole.covariance));
  const std::size_t n = static_cast<std::size_t>(opt.paths);
  std::vector<std::vector<double>> values(whole.functionals);
  for (auto& v : values) v.reserve(n);
  std::vector<path_status> statuses;
  statuses.reserve(n);
  if (opt.keep_paths) r.records.reserve(n);
  for (detail::block_result& b : whole.blocks) {
    if (!b.whole)  // the run's last block, when paths is not a multiple of the block size
      fold(b, K, r.save_times.size(), whole.functionals, whole.keep_paths, whole.covariance);
    detail::merge_block(r, b);
    statuses.insert(statuses.end(), b.statuses.begin(), b.statuses.end());
    for (std::size_t j = 0; j < values.size(); ++j)
      values[j].insert(values[j].end(), b.values[j].begin(), b.values[j].end());
    if (opt.keep_paths)
      r.records.insert(r.records.end(), std::make_move_iterator(b.records.begin()),
                       std::make_move_iterator(b.records.end()));
  }
  detail::finish_summary(r, opt, values, statuses);
  return r;
}

// ---- binary form ----

namespace {

// v5: the device report (ensemble_result::device) after the timing.
constexpr std::string_view magic = "ncsde ensemble partial v5\n";

class writer : public detail::byte_writer<writer> {
 public:
  using byte_writer::put;
  void put(const moments& m) {
    put(m.count());
    put(m.mean());
    put(m.m2());
  }
  void put(const pd_counters& c) {
    put(c.violations);
    put(c.projected);
    put(c.refined);
    put(c.boundary);
    put(c.min_eigenvalue);
  }
  void put(const step_stats& c) {
    put(c.refinements);
    put(c.unresolved);
    put(static_cast<std::int64_t>(c.deepest));
  }
  void put(const path_record& r) {
    put(r.path);
    put(r.status);
    put(r.t_stop);
    put(r.packed);
    put(r.saved);
  }
  void put(const detail::ensemble_path& p) {
    put(path_record{p.path, p.status, p.t_stop, p.packed, p.saved});  // the head a record shares
    put(p.pd);
    put(p.values);
    put(p.steps);
    put(p.stepping);
  }
  void put(const detail::block_result& b) {
    put(b.index);
    put(b.range.first);
    put(b.range.last);
    put(b.whole);
    if (!b.whole) {
      put(b.paths);
      return;
    }
    put(b.terminal);
    put(b.at_stop);
    put(b.saved);
    put(b.explosion_times);
    put(b.stop_times);
    put(b.pd);
    put(b.completed);
    put(b.blown_up);
    put(b.stopped);
    put(b.exhausted);
    put(b.with_violations);
    put(b.steps);
    put(b.stepping);
    put(b.statuses);
    put(b.values);
    put(b.records);
  }
};

class reader : public detail::byte_reader {
 public:
  /// The largest counter (steps, cone events) a piece may carry: far above any run's, and sums of
  /// many pieces of such counters stay exact and without overflow.
  static constexpr long long max_count = 1LL << 53;

  explicit reader(std::string_view in)
      : byte_reader(in, "deserialize_ensemble_partial: not a complete ensemble partial") {}

  path_status status() { return enumeration(path_status::exhausted, "path status"); }
  /// Moments of K coordinates, with the K×K M2 (covariance) or its K×1 diagonal.
  moments mom(int K, bool covariance) {
    const long long n = i64();
    vector mean = vec();
    matrix m2 = mat();
    if (n < 0 || mean.size() != K || m2.rows() != K || m2.cols() != (covariance ? K : 1))
      fail("moments of another shape");
    return moments::from_raw(n, std::move(mean), std::move(m2), covariance);
  }
  pd_counters pd() {
    pd_counters c;
    c.violations = i64();
    c.projected = i64();
    c.refined = i64();
    c.boundary = i64();
    c.min_eigenvalue = f64();
    for (const long long n : {c.violations, c.projected, c.refined, c.boundary})
      if (n < 0 || n > max_count) fail("a cone counter out of range");
    return c;
  }
  step_stats stepping() {
    step_stats c;
    c.refinements = i64();
    c.unresolved = i64();
    const long long deepest = i64();
    if (c.refinements < 0 || c.unresolved < 0 || c.refinements > max_count ||
        c.unresolved > max_count || deepest < 0 || deepest > 64)
      fail("step counters out of range");
    c.deepest = static_cast<int>(deepest);
    return c;
  }
  /// path, status, t_stop, packed state, saved states: a path_record, and the head of a path.
  path_record record() {
    path_record r;
    r.path = i64();
    r.status = status();
    r.t_stop = f64();
    r.packed = vec();
    r.saved = vecs();
    return r;
  }
};

}  // namespace

std::string serialize(const ensemble_partial& p) {
  writer w;
  w.out.append(magic);
  const ensemble_result& r = p.run;
  w.put(static_cast<std::int64_t>(r.m));
  w.put(r.layout.space);
  w.put(static_cast<std::int64_t>(r.layout.rows));
  w.put(static_cast<std::int64_t>(r.layout.cols));
  w.put(r.layout.vector_state);
  w.put(r.t0);
  w.put(r.t_end);
  w.put(r.dt);
  w.put(r.paths);
  w.put(r.seed);
  w.put(static_cast<std::int64_t>(r.threads));
  w.put(std::string_view(r.scheme));
  w.put(r.save_times);
  w.put(r.control);
  w.put(r.tolerance);
  w.put(r.seconds);
  w.put(std::string_view(r.device.device));
  w.put(std::string_view(r.device.note));
  w.put(r.device.handed_back);
  w.put(p.range.first);
  w.put(p.range.last);
  w.put(p.block_size);
  w.put(static_cast<std::uint64_t>(p.functionals));
  w.put(p.keep_paths);
  w.put(p.covariance);
  w.put(p.blocks);
  return std::move(w.out);
}

ensemble_partial deserialize_ensemble_partial(std::string_view bytes) {
  constexpr std::string_view family = "ncsde ensemble partial v";
  if (bytes.substr(0, magic.size()) != magic && bytes.starts_with(family))
    throw invalid_argument(
        "deserialize_ensemble_partial: an ensemble partial of another format version than '" +
        std::string(magic.substr(0, magic.size() - 1)) +
        "', written by another version of ncsde: run the piece again with this one");
  if (bytes.substr(0, magic.size()) != magic)
    throw invalid_argument(
        "deserialize_ensemble_partial: not an ensemble partial (the data does not start with '" +
        std::string(magic.substr(0, magic.size() - 1)) + "')");
  reader in(bytes.substr(magic.size()));
  ensemble_partial p;
  ensemble_result& r = p.run;
  const long long m = in.i64();
  if (m < 1 || m > (1 << 15)) in.fail(fmt::format("m = {} out of range", m));
  r.m = static_cast<int>(m);
  const long long space = in.i64();
  if (space < 0 || space > static_cast<long long>(state_space::psd_cone))
    in.fail("an unknown state space");
  r.layout.space = static_cast<state_space>(space);
  r.layout.rows = in.i64();
  r.layout.cols = in.i64();
  r.layout.vector_state = in.boolean();
  // At most 2^15 rows and columns: the state's coordinates (rows·cols, or m(m+1)/2) fit an int.
  if (r.layout.rows < 1 || r.layout.cols < 1 || r.layout.rows > (1 << 15) ||
      r.layout.cols > (1 << 15))
    in.fail("a state shape out of range");
  if (r.layout.space != state_space::euclidean && r.layout.rows != r.layout.cols)
    in.fail("a symmetric state that is not square");
  r.t0 = in.f64();
  r.t_end = in.f64();
  r.dt = in.f64();
  r.paths = in.i64();
  r.seed = in.u64();
  const long long threads = in.i64();
  if (threads < 0 || threads > (1 << 20)) in.fail(fmt::format("threads = {}", threads));
  r.threads = static_cast<int>(threads);
  r.scheme = in.string();
  r.save_times = in.doubles();
  const long long control = in.i64();
  if (control < 0 || control > static_cast<long long>(step_control::doubling))
    in.fail("an unknown step control");
  r.control = static_cast<step_control>(control);
  r.tolerance = in.f64();
  r.seconds = in.f64();
  r.device.device = in.string();
  r.device.note = in.string();
  r.device.handed_back = in.i64();
  if (r.device.handed_back < 0 || r.device.handed_back > r.paths)
    in.fail(fmt::format("{} paths handed back of {}", r.device.handed_back, r.paths));
  p.range.first = in.i64();
  p.range.last = in.i64();
  p.block_size = in.i64();
  p.functionals = in.count(0);
  p.keep_paths = in.boolean();
  p.covariance = in.boolean();
  if (p.range.first < 0 || p.range.last < p.range.first || p.block_size < 1 ||
      p.functionals > (1u << 20))
    in.fail("a range, block size or functional count out of range");
  // The run's own numbers, as run_ensemble accepts them: a partial that no run could have written
  // is refused here rather than printed back.
  if (!std::isfinite(r.t0) || !std::isfinite(r.t_end) || !(r.t_end >= r.t0))
    in.fail(fmt::format("a time interval [{}, {}] that is not finite and ordered", r.t0, r.t_end));
  if (!(r.dt > 0.0) || !std::isfinite(r.dt)) in.fail(fmt::format("dt = {} not > 0", r.dt));
  if (r.paths < 1 || p.range.last > r.paths)
    in.fail(fmt::format("paths = {} with a piece [{}, {})", r.paths, p.range.first, p.range.last));
  if (!std::isfinite(r.seconds) || r.seconds < 0.0) in.fail("a run time that is not >= 0");
  if (r.control != step_control::fixed && !(r.tolerance > 0.0 && r.tolerance <= 1.0))
    in.fail(fmt::format("an adaptive tolerance {} outside (0, 1]", r.tolerance));
  for (std::size_t i = 0; i < r.save_times.size(); ++i)
    if (!(r.save_times[i] >= r.t0 && r.save_times[i] <= r.t_end) ||
        (i > 0 && !(r.save_times[i] >= r.save_times[i - 1])))
      in.fail("save times outside [t0, T] or out of order");
  const int K = r.layout.size();
  const std::size_t saves = r.save_times.size();
  auto read_path = [&] {
    detail::ensemble_path x;
    path_record head = in.record();  // the fields a path and its record share, in that order
    x.path = head.path;
    x.status = head.status;
    x.t_stop = head.t_stop;
    x.packed = std::move(head.packed);
    x.saved = std::move(head.saved);
    x.pd = in.pd();
    x.values = in.doubles();
    x.steps = in.i64();
    if (x.steps < 0 || x.steps > reader::max_count) in.fail("a path's steps out of range");
    x.stepping = in.stepping();
    if (x.packed.size() != K || x.saved.size() > saves || x.values.size() != p.functionals)
      in.fail("a path of another shape");
    for (const vector& v : x.saved)
      if (v.size() != K) in.fail("a saved state of another shape");
    return x;
  };
  const std::size_t blocks = in.count(32);
  for (std::size_t i = 0; i < blocks; ++i) {
    detail::block_result b;
    b.index = in.i64();
    b.range.first = in.i64();
    b.range.last = in.i64();
    b.whole = in.boolean();
    if (b.range.first < p.range.first || b.range.last > p.range.last ||
        b.range.first / p.block_size != b.index || b.range.last < b.range.first)
      in.fail("a block outside the piece's range");
    if (!b.whole) {
      const std::size_t n = in.count(8);
      for (std::size_t j = 0; j < n; ++j) b.paths.push_back(read_path());
      if (static_cast<long long>(b.paths.size()) != b.range.size())
        in.fail("a cut block with missing paths");
      p.blocks.push_back(std::move(b));
      continue;
    }
    b.terminal = in.mom(K, p.covariance);
    b.at_stop = in.mom(K, p.covariance);
    const std::size_t ns = in.count(8);
    if (ns != saves) in.fail("a block with another number of save times");
    for (std::size_t j = 0; j < ns; ++j) b.saved.push_back(in.mom(K, p.covariance));
    b.explosion_times = in.doubles();
    b.stop_times = in.doubles();
    b.pd = in.pd();
    b.completed = in.i64();
    b.blown_up = in.i64();
    b.stopped = in.i64();
    b.exhausted = in.i64();
    b.with_violations = in.i64();
    if (b.with_violations < 0 || b.with_violations > b.range.size())
      in.fail("a block's count of paths with violations out of range");
    b.steps = in.i64();
    if (b.steps < 0 || b.steps > reader::max_count) in.fail("a block's steps out of range");
    b.stepping = in.stepping();
    const std::size_t nst = in.count(8);
    for (std::size_t j = 0; j < nst; ++j) b.statuses.push_back(in.status());
    const std::size_t nf = in.count(8);
    if (nf != p.functionals) in.fail("a block with another number of functionals");
    for (std::size_t j = 0; j < nf; ++j) b.values.push_back(in.doubles());
    const std::size_t nr = in.count(8);
    for (std::size_t j = 0; j < nr; ++j) b.records.push_back(in.record());
    const long long n = b.range.size();
    // Each count within [0, n] before they are added (no overflow on any input).
    auto counted = [n](long long c) { return c >= 0 && c <= n; };
    if (static_cast<long long>(b.statuses.size()) != n || !counted(b.completed) ||
        !counted(b.blown_up) || !counted(b.stopped) || !counted(b.exhausted) ||
        b.completed + b.blown_up + b.stopped + b.exhausted != n ||
        (p.keep_paths && static_cast<long long>(b.records.size()) != n))
      in.fail("a block whose counts do not match its range");
    for (const auto& v : b.values)
      if (static_cast<long long>(v.size()) != n)
        in.fail("a block whose values do not match its range");
    p.blocks.push_back(std::move(b));
  }
  if (!in.done()) in.fail("trailing data");
  return p;
}

}  // namespace ncsde
