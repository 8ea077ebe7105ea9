#pragma once
/// Many independent finite networks in parallel (docs/maths.md §2, §7), as ensembles of the V-chain
/// V_l = X_l X_lᵀ/n, l = 0..d, one layer per time step 1/n.
///
/// Network i runs on the stream random_stream(seed, i) and on nothing else, and writes only its own
/// record, so the output is bit-identical whatever the number of threads and whatever order the
/// networks ran in. Any sampler with the interface of literal_network / reduced_network works
/// (concept network_sampler).
///
/// Stopped processes (docs/maths.md §8.1, §9.5): with a finite stop_level K, a network stops at the
/// first layer τ ≥ 1 with max_a V_τ^{aa} > K (checked on every layer, i.e. on the grid k/n of its
/// time axis), and every recorded depth at or after τ holds V_τ (the stopped process V_{l∧τ}). With
/// continue_after_stop the network records τ and V_τ but runs on, so one run gives both the stopped
/// and the unstopped laws. A non-finite V (which a valid finite network never produces, but a
/// sampler bug or an overflow could) stops the network with status blown_up instead of propagating
/// NaN.
#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ncsde/ensemble.hpp"
#include "ncsde/error.hpp"
#include "ncsde/executor.hpp"
#include "ncsde/random.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::networks {

/// A finite-network sampler: a state (X for the literal network, V for the reduced one), its
/// initial value from V₀, one layer l on a stream, and V of a state.
template <class N>
concept network_sampler = requires(const N& net, typename N::state& s, const matrix& v0,
                                   const random_stream& stream, std::uint64_t l) {
  { net.m() } -> std::convertible_to<int>;
  { net.n() } -> std::convertible_to<int>;
  { net.initial_state(v0, stream) } -> std::convertible_to<typename N::state>;
  net.step(s, l, stream);
  { net.covariance(s) } -> std::convertible_to<matrix>;
};

struct network_options {
  std::uint64_t seed = 1;
  long long networks = 1000;
  int threads = 0;  ///< 0: all hardware threads
  /// Layers at which V is recorded: strictly increasing, in [0, d]. Empty: {d} only. Networks run
  /// to depths.back() (later layers cannot change what is recorded).
  std::vector<int> depths;
  /// Stop level K for max_a V^{aa} (checked after every layer); +inf: never stop.
  double stop_level = std::numeric_limits<double>::infinity();
  /// Record the first passage τ (stop_layer, at_stop) but keep running: `packed` is then the
  /// unstopped V at each depth.
  bool continue_after_stop = false;
  progress_mode progress = progress_mode::automatic;
  /// Only the networks [first, last) of the run (0 ≤ first ≤ last ≤ networks): a piece of it, for
  /// shards and ranks, that merge_network_pieces joins with the others. Empty: all networks.
  std::optional<path_range> range;
};

/// The stop rule of a network, fed its layers l = 1, 2, … in order (docs/maths.md §8.1): the first
/// layer with a non-finite V (blown up) or with max_a V^{aa} > K (stopped) is where the stopped
/// process stops; a non-finite V also ends the network, blown up. One rule for sample_networks and
/// for networks given as arrays of layers (ncsde validate's user networks, stop_network_layers).
struct layer_stop_rule {
  double stop_level = std::numeric_limits<double>::infinity();
  path_status status = path_status::completed;  ///< the network's, after the layers seen
  /// The stopped process has stopped (at a layer with max_a V^aa > K or a non-finite V).
  bool passed() const { return status != path_status::completed; }
  struct outcome {
    bool stops = false;  ///< the stopped process stops at this layer (the first such)
    bool ends = false;   ///< V is not finite: the network ends here, blown up
  };
  outcome observe(bool finite, double max_diagonal) {
    outcome o;
    if (finite && (passed() || !(max_diagonal > stop_level))) return o;
    if (!passed()) {
      status = finite ? path_status::stopped : path_status::blown_up;
      o.stops = true;
    }
    if (!finite) {
      status = path_status::blown_up;
      o.ends = true;
    }
    return o;
  }
};

/// One network: its status (completed, stopped at max_a V^{aa} > K, or blown_up on a non-finite V),
/// the layer τ at which it stopped (depths.back() when completed), and the upper triangle of V
/// (row-major, as pack_upper) at each recorded depth: frozen at V_τ after stopping, or the unstopped
/// V with continue_after_stop. at_stop holds V_τ (empty when the level was never passed).
struct network_record {
  path_status status = path_status::completed;
  int stop_layer = 0;
  std::vector<vector> packed;
  vector at_stop;
  /// V_{τ∧l} at the last recorded depth l: at_stop if the level was passed, else packed.back().
  const vector& stopped_value() const { return at_stop.size() ? at_stop : packed.back(); }
};

struct network_ensemble {
  int m = 0, n = 0, d = 0;
  std::uint64_t seed = 0;
  int threads = 1;
  double stop_level = std::numeric_limits<double>::infinity();
  std::vector<int> depths;
  long long networks = 0;  ///< networks in the whole run
  long long first = 0;     ///< the network of records[0] (0 unless this is a piece of the run)
  std::vector<network_record> records;  ///< networks first, first + 1, … in order
  long long completed = 0, stopped = 0, blown_up = 0;
  double seconds = 0.0;

  /// The t_stop of a record on the time axis t = l/n.
  double time(const network_record& r) const { return static_cast<double>(r.stop_layer) / n; }
  /// Fraction of networks that stopped (max_a V^{aa} > K, or non-finite) by depths.back(), and its binomial standard
  /// error √(p(1 − p)/N).
  double stopped_fraction() const;
  double stopped_stderr() const;
  /// Values of f(V) at recorded depth j (index into depths), one per network, in network order;
  /// +inf for a blown_up network (as ensembles count blown-up paths).
  std::vector<double> values(std::size_t j, const functional& f) const;
  /// Values of f at the stopped value V_{τ∧l} of each network (record::stopped_value), +inf when
  /// blown_up.
  std::vector<double> stopped_values(const functional& f) const;
};

/// Joins pieces of one run (network_options::range) given in network order, each starting where
/// the one before ends, into the ensemble of their networks: records in order, counts and seconds
/// summed, the first piece's threads. Pieces of a whole run give exactly sample_networks' result
/// for the whole run (timing aside). Throws ncsde::invalid_argument naming the piece for a gap, an
/// overlap or a piece of another run (m, n, d, seed, stop level, depths, networks).
network_ensemble merge_network_pieces(std::vector<network_ensemble> pieces);

/// An ensemble (whole or a piece) as bytes, a versioned binary format whose doubles are bit-exact,
/// and back; the reader throws ncsde::invalid_argument for anything that is not a complete
/// ensemble of this format.
std::string serialize(const network_ensemble& e);
network_ensemble deserialize_network_ensemble(std::string_view bytes);

namespace detail {
/// Checks the options against d (named messages) and returns the depths to record.
std::vector<int> resolve_depths(const network_options& opt, int d);
}  // namespace detail

/// Runs opt.networks independent networks of depth d from V₀ (m×m, PSD). Throws
/// ncsde::invalid_argument naming the parameter and value for d < 1, networks < 1, threads < 0,
/// depths not strictly increasing in [0, d], stop_level not > 0 (NaN included), or a bad V₀ (by the
/// sampler's initial_state). An exception inside a network is rethrown (the lowest network index
/// first) after the workers stop.
template <network_sampler N>
network_ensemble sample_networks(const N& net, const matrix& v0, int d,
                                 const network_options& opt) {
  network_ensemble out;
  out.depths = detail::resolve_depths(opt, d);
  // Validates V₀ before any thread starts (the sampler's own message).
  (void)net.initial_state(v0, random_stream(opt.seed, 0));
  out.m = net.m();
  out.n = net.n();
  out.d = d;
  out.seed = opt.seed;
  out.stop_level = opt.stop_level;
  out.threads = ncsde::detail::resolve_threads(opt.threads);
  const path_range range = opt.range.value_or(path_range{0, opt.networks});
  if (range.first < 0 || range.first > range.last || range.last > opt.networks)
    throw_invalid("sample_networks",
                  ncsde::detail::format_message(
                      "range must lie in [0, networks = {}] with first <= last (got [{}, "
                      "{}))",
                      opt.networks, range.first, range.last));
  out.networks = opt.networks;
  out.first = range.first;
  out.records.resize(static_cast<std::size_t>(range.size()));
  const int last = out.depths.back();
  const int K = packed_size(out.m);

  auto run_one = [&](long long i) {
    // The run's cancel_scope (the executor hands it to its workers): checked between layers, so a
    // cancelled run ends within one layer of every network it is running, however deep.
    const std::atomic<bool>* const cancel = cancel_scope::current();
    const random_stream stream(opt.seed, static_cast<std::uint64_t>(i));
    network_record& rec = out.records[static_cast<std::size_t>(i - range.first)];
    rec.packed.assign(out.depths.size(), vector(K));
    typename N::state s = net.initial_state(v0, stream);
    std::size_t next_depth = 0;
    matrix v = net.covariance(s);
    layer_stop_rule rule{opt.stop_level};
    for (int l = 0;; ++l) {
      if (l > 0) {
        const layer_stop_rule::outcome o = rule.observe(v.allFinite(), v.diagonal().maxCoeff());
        rec.status = rule.status;
        if (o.stops) {
          rec.stop_layer = l;
          rec.at_stop.resize(K);
          pack_upper(v, rec.at_stop);
        }
        if (o.ends || (o.stops && !opt.continue_after_stop)) {
          for (; next_depth < out.depths.size(); ++next_depth)
            pack_upper(v, rec.packed[next_depth]);
          return;
        }
      }
      while (next_depth < out.depths.size() && out.depths[next_depth] == l)
        pack_upper(v, rec.packed[next_depth++]);
      if (l == last) break;
      if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) throw cancelled{};
      net.step(s, static_cast<std::uint64_t>(l), stream);
      v = net.covariance(s);
    }
    if (!rule.passed()) rec.stop_layer = last;
  };

  // Network i writes only its own record: the blocks need no reduction, and any block size gives
  // the same output.
  executor_options xopt;
  xopt.threads = opt.threads;
  xopt.block_size = 16;
  xopt.progress = opt.progress;
  xopt.label = "networks";
  out.seconds = for_each_path(range, xopt, run_one).seconds;
  for (const network_record& r : out.records) {
    if (r.status == path_status::completed) ++out.completed;
    if (r.status == path_status::stopped) ++out.stopped;
    if (r.status == path_status::blown_up) ++out.blown_up;
  }
  return out;
}

}  // namespace ncsde::networks
