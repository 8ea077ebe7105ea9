#pragma once
/// Sources of Brownian increments for one path: the NoiseSource concept and the library's sources.
///
/// A source hands out the increment of step i (and, when the scheme needs them, the step's iterated
/// integrals), and a bridged source can split any increment it handed out into two halves by the
/// Brownian bridge, so a refined step sees the same path: left + right = parent exactly. Sources:
///  - stream_brownian (the default of integrate() and run_ensemble()): increments drawn from the
///    path's counter-based stream, keyed by step index (any step, any order, no storage);
///  - brownian_grid: a path sampled on a fine uniform grid, fine iterated integrals included; a coarse
///    step of r fine steps gets the summed increment and the iterated integrals combined by Chen's
///    relation, I_(j,l)[s,u] = I_(j,l)[s,v] + I_(j,l)[v,u] + ΔW_j[s,v] ΔW_l[v,u], so every step size
///    sees the same Brownian path *and* the same Lévy areas;
///  - grid_brownian_source: a brownian_grid read at one coarse step size, as a NoiseSource: what a
///    user's own strong-order study drives integrate() with, one source per step size over one path;
///  - tree_brownian_source: the bridge tree of stream_brownian read at a fixed depth, i.e. the
///    pieces the adaptive step controllers see, as fixed steps.
#include <bit>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/levy_area.hpp"
#include "ncsde/noise_increment.hpp"
#include "ncsde/random.hpp"

namespace ncsde {

/// Src hands out the Brownian increments of one path, step by step:
///  - src.dimension() → k, the number of Brownian components (must equal the SDE's noise_dimension);
///  - src.increment(step, dt, with_iterated, out): the increment of grid step `step` (0-based), of
///    length dt, into out (noise_increment: dw with variance dt per component, and, when
///    with_iterated, the step's iterated Itô integrals I_(j,l)). The engine asks for each step once,
///    in order; a source may rely on that or, like stream_brownian, answer any step in any order.
template <class Src>
concept NoiseSource =
    requires(Src& src, std::uint64_t step, double dt, bool with_iterated, noise_increment& out) {
      { src.dimension() } -> std::convertible_to<int>;
      src.increment(step, dt, with_iterated, out);
    };

/// A NoiseSource that can also halve an increment it handed out by the Brownian bridge (what the
/// `refine` cone policy needs): src.split(parent, step, node, with_iterated, left, right) with
/// left.dw + right.dw = parent.dw, left.dt = right.dt = parent.dt/2; `node` numbers the pieces of
/// step `step` as a heap (1: the whole step; 2n, 2n + 1: the halves of piece n).
template <class Src>
concept BridgedNoiseSource =
    NoiseSource<Src> &&
    requires(Src& src, const noise_increment& parent, std::uint64_t step, std::uint64_t node,
             bool with_iterated, noise_increment& left,
             noise_increment& right) { src.split(parent, step, node, with_iterated, left, right); };

/// Increments of a k-dimensional Brownian motion from a (seed, path) stream.
/// Step i's increment uses the normals at (increments, i, 0); bridge midpoints use (bridge, i, node)
/// (heap numbering: node 1 is the whole step, 2·node and 2·node + 1 the halves of piece node).
///
/// Iterated integrals, and what a split does to them, depend on `area_depth` D:
///  - D = 0 (the default): each piece's iterated integrals are drawn given its own increment, with
///    the normals at (levy_area, i, node). A split piece's halves have the right law given their
///    increments but are not the parent's: Chen's relation holds in law, not path by path. A
///    piece of length h below the grid step dt takes the series terms of its grid step
///    (levy_area_terms(k, dt)), not of its own length: its root-mean-square area error is then at
///    most h·√dt (h^{3/2} with its own terms), and over the pieces of one grid step together at
///    most dt·√h_max ≤ dt^{3/2}, the step's own bound, at a cost per piece that does not grow as
///    pieces shrink (docs/maths.md §8.4).
///  - D ≥ 1 (Chen-consistent areas): every piece down to D halvings of a step carries the iterated
///    integrals of one and the same Brownian path. The 2^D leaves (depth D) draw theirs given their
///    increments (normals at (levy_area, i, leaf node), levy_area_leaf_terms series terms), and every
///    coarser piece gets its children's, combined by Chen's relation
///      I_parent = I_left + I_right + ΔW_left ΔW_rightᵀ,
///    so that a split returns exactly the halves whose combination the parent carried (to round-off).
///    Pieces deeper than D are drawn as with D = 0. Increments are the same for every D, bit for bit.
///    Cost: the first request with iterated integrals in a step builds the step's whole tree (2^D
///    leaves, kept until another step is asked for): about 2^D·(2k·p_leaf + k²) normals and flops,
///    instead of one draw; memory 2^(D+1)·k·(k + 1) doubles. docs/maths.md §8.4 explains why the
///    areas of a tree cannot be had for less (exact conditional sampling of a piece's halves given
///    its area is known only for k = 2).
class stream_brownian {
 public:
  /// area_depth in [0, max_area_depth], and 2^(area_depth+1)·k·(k+1) doubles at most 2^25
  /// (ncsde::invalid_argument naming area_depth otherwise).
  stream_brownian(random_stream stream, int k,
                  levy_area_method method = levy_area_method::wiktorsson, int area_depth = 0)
      : m_stream(stream), m_k(k), m_areas(method), m_area_depth(area_depth) {
    if (area_depth != 0) validate_area_depth("stream_brownian", k, area_depth);
  }

  /// Throws ncsde::invalid_argument naming `where` and area_depth unless area_depth is in
  /// [0, max_area_depth] and its tree (2^(area_depth+1)·k·(k+1) doubles) fits in 256 MiB.
  static void validate_area_depth(std::string_view where, int k, int area_depth);

  static constexpr int max_area_depth = 16;

  int dimension() const { return m_k; }
  const random_stream& stream() const { return m_stream; }
  int area_depth() const { return m_area_depth; }

  /// Increment of step `step` with length dt (variance dt per component).
  void increment(std::uint64_t step, double dt, bool with_iterated, noise_increment& out) {
    out.dt = dt;
    out.dw.resize(m_k);
    m_stream.normals(random_domain::increments, step, 0, out.dw);
    out.dw *= std::sqrt(dt);
    out.has_iterated = false;
    if (with_iterated) {
      if (m_area_depth == 0)
        m_areas.generate(out, m_stream, step, 1);
      else
        tree_areas(step, dt, 1, out);
    }
  }

  /// Splits `parent` (bridge node `node` of step `step`) into halves by the Brownian bridge:
  /// left.dw = parent.dw/2 + √(dt/4)·Z, right.dw = parent.dw − left.dw. With iterated integrals, the
  /// halves of a piece above depth area_depth get the tree's (Chen-consistent with the parent's);
  /// deeper halves are drawn given their increments.
  void split(const noise_increment& parent, std::uint64_t step, std::uint64_t node,
             bool with_iterated, noise_increment& left, noise_increment& right) {
    const double half = 0.5 * parent.dt;
    m_z.resize(m_k);
    m_stream.normals(random_domain::bridge, step, node, m_z);
    left.dt = half;
    right.dt = half;
    left.dw = 0.5 * parent.dw + std::sqrt(0.5 * half) * m_z;
    right.dw = parent.dw - left.dw;
    left.has_iterated = right.has_iterated = false;
    if (!with_iterated) return;
    const double root_dt = std::ldexp(parent.dt, static_cast<int>(std::bit_width(node)) - 1);
    if (node < (std::uint64_t{1} << m_area_depth)) {
      // The halves lie at depth ≤ area_depth: the tree's, whose combination the parent carries.
      tree_areas(step, root_dt, 2 * node, left);
      tree_areas(step, root_dt, 2 * node + 1, right);
    } else {
      // Fresh areas with the series terms of the grid step, not of the half: terms for the
      // half's own h^{3/2} grow like h^{-1/2} (10^7 at 2^-40 of a step of 0.01, 2.9 GB of
      // normals for k = 18) while the pieces of a step together need only the step's bound.
      const int terms = levy_area_terms(m_k, root_dt, m_areas.method());
      m_areas.generate(left, m_stream, step, 2 * node, terms);
      m_areas.generate(right, m_stream, step, 2 * node + 1, terms);
    }
  }

 private:
  /// Sets out.iterated to piece `node`'s iterated integrals in the area tree of step `step` (grid
  /// step root_dt), building the tree when it holds another step.
  void tree_areas(std::uint64_t step, double root_dt, std::uint64_t node, noise_increment& out);
  void build_tree(std::uint64_t step, double root_dt);

  random_stream m_stream;
  int m_k;
  iterated_integrals m_areas;
  vector m_z;
  int m_area_depth = 0;
  // The area tree of one step (area_depth ≥ 1): column n of m_tree_dw and the k×k block n of
  // m_tree_iterated are heap node n's increment and iterated integrals (n = 1 .. 2^(D+1) − 1).
  bool m_tree_valid = false;
  std::uint64_t m_tree_step = 0;
  double m_tree_dt = 0.0;
  matrix m_tree_dw, m_tree_iterated;
  noise_increment m_leaf;
};

/// A Brownian path on a fine uniform grid of n_fine steps of size h over [t0, t0 + n_fine·h], with
/// each fine step's iterated integrals; coarse steps are read off exactly (sum and Chen's relation).
class brownian_grid {
 public:
  /// Samples the path from `stream` (fine step i uses the same counters as stream_brownian's step i).
  brownian_grid(const random_stream& stream, int k, long long n_fine, double h, bool with_iterated,
                levy_area_method method = levy_area_method::wiktorsson);

  int dimension() const { return m_k; }
  long long fine_steps() const { return m_n; }
  double fine_dt() const { return m_h; }

  /// W(t0 + i·h) − W(t0), i = 0..n_fine.
  Eigen::Ref<const vector> value(long long i) const { return m_w.col(i); }

  /// The increment over fine steps [first, first + count): dt = count·h, dw summed, iterated
  /// integrals (if sampled) combined by Chen's relation.
  void increment(long long first, long long count, bool with_iterated, noise_increment& out) const;

  /// Coarse step `step` of a grid with `ratio` fine steps per coarse step.
  void coarse_increment(long long step, long long ratio, bool with_iterated,
                        noise_increment& out) const {
    increment(step * ratio, ratio, with_iterated, out);
  }

 private:
  int m_k;
  long long m_n;
  double m_h;
  bool m_has_iterated;
  matrix m_w;                           // k × (n+1) path values
  std::vector<matrix> m_fine_iterated;  // per fine step, k × k
};

/// A brownian_grid read at one coarse step size, as a BridgedNoiseSource: coarse step i is fine
/// steps [i·ratio, (i+1)·ratio) (summed increment, Chen-combined iterated integrals). split() halves
/// a (sub)step exactly on the grid (bridge node n of step i covers the n-th dyadic piece at depth
/// ⌊log₂ n⌋), so a refined step sees the same path and areas; it throws ncsde::invalid_argument when
/// the piece has fewer than 2 fine steps or an odd count. increment() checks that dt is ratio fine
/// steps (1e-9 relative) and, when iterated integrals are asked for, that the grid sampled them.
/// The source refers to its grid, which must outlive it, or shares ownership of it.
class grid_brownian_source {
 public:
  /// Reads `grid` (kept by reference) with `ratio` fine steps per coarse step; ratio must divide the
  /// grid's fine steps (ncsde::invalid_argument).
  grid_brownian_source(const brownian_grid& grid, long long ratio);
  /// The same, sharing ownership of the grid (for sources made per path, e.g. by run_ensemble's
  /// source factory).
  grid_brownian_source(std::shared_ptr<const brownian_grid> grid, long long ratio);

  int dimension() const { return m_grid->dimension(); }
  long long ratio() const { return m_ratio; }
  /// The coarse step size ratio·h.
  double dt() const { return static_cast<double>(m_ratio) * m_grid->fine_dt(); }
  const brownian_grid& grid() const { return *m_grid; }

  /// Increment of coarse step `step`; `dt` must equal ratio·h (checked to 1e-9 relative).
  void increment(std::uint64_t step, double dt, bool with_iterated, noise_increment& out) const;
  void split(const noise_increment& parent, std::uint64_t step, std::uint64_t node,
             bool with_iterated, noise_increment& left, noise_increment& right) const;

 private:
  std::shared_ptr<const brownian_grid> m_owner;
  const brownian_grid* m_grid;
  long long m_ratio;
};

/// The Brownian tree of a (seed, path) stream read at a fixed depth: grid step j of size dt/2^depth
/// is piece 2^depth + (j mod 2^depth) (heap numbering) of step ⌊j / 2^depth⌋ of a stream_brownian
/// with step dt, reached by `depth` bridge splits from that step's increment. These are the pieces
/// the adaptive step controllers (integrate.hpp) take at that depth (to the bit where the engine's
/// grid steps are exactly dt; to round-off of the step size elsewhere), so a fixed-step run
/// on this source is the fine-grid solution driven by the same Brownian path (and Lévy areas) as an
/// adaptive run on stream_brownian with base step dt: what pathwise convergence of adaptive runs is
/// measured against. Consecutive steps share their ancestors (kept), so a step costs O(1) splits on
/// average. split() continues the tree below a step. depth in [0, 30] (ncsde::invalid_argument).
class tree_brownian_source {
 public:
  /// area_depth: the root stream_brownian's (Chen-consistent Lévy areas down to that many halvings
  /// of base_dt; reading the tree at depth ≤ area_depth then gives the areas of the same path as an
  /// adaptive run on stream_brownian(stream, k, method, area_depth)).
  tree_brownian_source(random_stream stream, int k, double base_dt, int depth,
                       levy_area_method method = levy_area_method::wiktorsson, int area_depth = 0);

  int dimension() const { return m_root.dimension(); }
  int depth() const { return m_depth; }
  /// The step size base_dt / 2^depth.
  double dt() const { return std::ldexp(m_base_dt, -m_depth); }

  /// Increment of fine step `step`; dt must be base_dt / 2^depth (checked to 1e-9 relative).
  void increment(std::uint64_t step, double dt, bool with_iterated, noise_increment& out);
  /// Splits piece `node` (heap numbering below fine step `step`) of fine step `step`.
  void split(const noise_increment& parent, std::uint64_t step, std::uint64_t node,
             bool with_iterated, noise_increment& left, noise_increment& right);

 private:
  stream_brownian m_root;
  double m_base_dt;
  int m_depth;
  bool m_cached = false, m_cached_iterated = false;
  std::uint64_t m_cached_step = 0;
  std::vector<noise_increment> m_levels;  ///< [d]: the ancestor at depth d of the cached step
  noise_increment m_other;                ///< the sibling of a split, not kept
};

static_assert(BridgedNoiseSource<stream_brownian> && BridgedNoiseSource<grid_brownian_source> &&
              BridgedNoiseSource<tree_brownian_source>);

}  // namespace ncsde
