#include "ncsde/brownian.hpp"

#include <fmt/format.h>

#include <bit>

#include "ncsde/error.hpp"

namespace ncsde {

void stream_brownian::validate_area_depth(std::string_view where, int k, int area_depth) {
  if (area_depth < 0 || area_depth > max_area_depth)
    throw_invalid_argument(where, "area_depth", area_depth,
                           fmt::format("in [0, {}]", max_area_depth));
  // The tree holds 2^(D+1) nodes of k + k² doubles.
  const double doubles = std::ldexp(static_cast<double>(k) * (k + 1), area_depth + 1);
  if (doubles > std::ldexp(1.0, 25))
    throw_invalid_argument(
        where, "area_depth", area_depth,
        fmt::format("small enough that the area tree's 2^(area_depth+1)·k·(k+1) doubles fit in "
                    "256 MiB for k = {} (it would take {:.0f} MiB)",
                    k, doubles * 8.0 / (1024.0 * 1024.0)));
}

void stream_brownian::tree_areas(std::uint64_t step, double root_dt, std::uint64_t node,
                                 noise_increment& out) {
  if (!m_tree_valid || m_tree_step != step || m_tree_dt != root_dt) build_tree(step, root_dt);
  out.iterated = m_tree_iterated.middleCols(static_cast<Eigen::Index>(node) * m_k, m_k);
  out.has_iterated = true;
}

void stream_brownian::build_tree(std::uint64_t step, double root_dt) {
  const int depth = m_area_depth;
  const std::uint64_t leaves = std::uint64_t{1} << depth;
  const auto nodes = static_cast<Eigen::Index>(2 * leaves);
  m_tree_dw.resize(m_k, nodes);
  m_tree_iterated.resize(m_k, nodes * m_k);
  // Top-down: the increments, by the very operations of increment() and split().
  m_z.resize(m_k);
  m_stream.normals(random_domain::increments, step, 0, m_z);
  m_tree_dw.col(1) = m_z;
  m_tree_dw.col(1) *= std::sqrt(root_dt);
  for (std::uint64_t n = 1; n < leaves; ++n) {
    const double half = 0.5 * std::ldexp(root_dt, 1 - static_cast<int>(std::bit_width(n)));
    m_stream.normals(random_domain::bridge, step, n, m_z);
    const auto left = static_cast<Eigen::Index>(2 * n);
    m_tree_dw.col(left) =
        0.5 * m_tree_dw.col(static_cast<Eigen::Index>(n)) + std::sqrt(0.5 * half) * m_z;
    m_tree_dw.col(left + 1) = m_tree_dw.col(static_cast<Eigen::Index>(n)) - m_tree_dw.col(left);
  }
  // The leaves' iterated integrals, given their increments.
  const double leaf_dt = std::ldexp(root_dt, -depth);
  const int terms = levy_area_leaf_terms(m_k, root_dt, depth, m_areas.method());
  m_leaf.dt = leaf_dt;
  for (std::uint64_t n = leaves; n < 2 * leaves; ++n) {
    m_leaf.dw = m_tree_dw.col(static_cast<Eigen::Index>(n));
    m_areas.generate(m_leaf, m_stream, step, n, terms);
    m_tree_iterated.middleCols(static_cast<Eigen::Index>(n) * m_k, m_k) = m_leaf.iterated;
  }
  // Bottom-up: Chen's relation, I_n = I_2n + I_2n+1 + ΔW_2n ΔW_2n+1ᵀ.
  for (std::uint64_t n = leaves - 1; n >= 1; --n) {
    const auto i = static_cast<Eigen::Index>(n), l = 2 * i;
    m_tree_iterated.middleCols(i * m_k, m_k) =
        m_tree_iterated.middleCols(l * m_k, m_k) + m_tree_iterated.middleCols((l + 1) * m_k, m_k);
    m_tree_iterated.middleCols(i * m_k, m_k).noalias() +=
        m_tree_dw.col(l) * m_tree_dw.col(l + 1).transpose();
  }
  m_tree_valid = true;
  m_tree_step = step;
  m_tree_dt = root_dt;
}

brownian_grid::brownian_grid(const random_stream& stream, int k, long long n_fine, double h,
                             bool with_iterated, levy_area_method method)
    : m_k(k), m_n(n_fine), m_h(h), m_has_iterated(with_iterated) {
  if (k < 1) throw_invalid_argument("brownian_grid", "k", k, ">= 1");
  if (n_fine < 1) throw_invalid_argument("brownian_grid", "n_fine", n_fine, ">= 1");
  if (!(h > 0) || !std::isfinite(h))
    throw_invalid_argument("brownian_grid", "h", h, "> 0 and finite");
  stream_brownian source(stream, k, method);
  m_w.resize(k, n_fine + 1);
  m_w.col(0).setZero();
  if (with_iterated) m_fine_iterated.resize(static_cast<std::size_t>(n_fine));
  noise_increment inc;
  for (long long i = 0; i < n_fine; ++i) {
    source.increment(static_cast<std::uint64_t>(i), h, with_iterated, inc);
    m_w.col(i + 1) = m_w.col(i) + inc.dw;
    if (with_iterated) m_fine_iterated[static_cast<std::size_t>(i)] = inc.iterated;
  }
}

void brownian_grid::increment(long long first, long long count, bool with_iterated,
                              noise_increment& out) const {
  if (first < 0 || count < 1 || first + count > m_n)
    throw_invalid(
        "brownian_grid::increment",
        fmt::format("fine steps [{}, {}) are outside the grid [0, {})", first, first + count, m_n));
  if (with_iterated && !m_has_iterated)
    throw_invalid("brownian_grid::increment", "iterated integrals requested but not sampled");
  out.dt = static_cast<double>(count) * m_h;
  out.dw = m_w.col(first + count) - m_w.col(first);
  out.has_iterated = with_iterated;
  if (!with_iterated) return;
  // Chen: I[s, u] = Σ_i I_i + Σ_i (W(t_i) − W(s)) ΔW_iᵀ over the fine steps i in [s, u).
  out.iterated.setZero(m_k, m_k);
  for (long long i = first; i < first + count; ++i) {
    out.iterated += m_fine_iterated[static_cast<std::size_t>(i)];
    out.iterated.noalias() +=
        (m_w.col(i) - m_w.col(first)) * (m_w.col(i + 1) - m_w.col(i)).transpose();
  }
}

grid_brownian_source::grid_brownian_source(const brownian_grid& grid, long long ratio)
    : m_grid(&grid), m_ratio(ratio) {
  if (ratio < 1 || grid.fine_steps() % ratio != 0)
    throw_invalid_argument("grid_brownian_source", "ratio", ratio,
                           fmt::format("a divisor of the {} fine steps", grid.fine_steps()));
}

namespace {
const brownian_grid& non_null(const std::shared_ptr<const brownian_grid>& grid) {
  if (!grid) throw_invalid("grid_brownian_source", "grid must not be null");
  return *grid;
}
}  // namespace

grid_brownian_source::grid_brownian_source(std::shared_ptr<const brownian_grid> grid,
                                           long long ratio)
    : grid_brownian_source(non_null(grid), ratio) {
  m_owner = std::move(grid);
}

void grid_brownian_source::increment(std::uint64_t step, double dt, bool with_iterated,
                                     noise_increment& out) const {
  const double expected = static_cast<double>(m_ratio) * m_grid->fine_dt();
  if (!(std::abs(dt - expected) <= 1e-9 * expected))
    throw_invalid_argument(
        "grid_brownian_source::increment", "dt", dt,
        fmt::format("{} fine steps of {} = {}", m_ratio, m_grid->fine_dt(), expected));
  m_grid->coarse_increment(static_cast<long long>(step), m_ratio, with_iterated, out);
}

void grid_brownian_source::split(const noise_increment&, std::uint64_t step, std::uint64_t node,
                                 bool with_iterated, noise_increment& left,
                                 noise_increment& right) const {
  // Node n (heap numbering, 1 = the whole step) is piece n − 2^d of 2^d at depth d = ⌊log₂ n⌋;
  // node 0 (depth −1) or a depth of 63 would make the shift below undefined.
  NCSDE_ASSERT(node >= 1 && node < (std::uint64_t{1} << 62), "split: node is a heap index >= 1");
  const int depth = static_cast<int>(std::bit_width(node)) - 1;
  const long long pieces = 1LL << depth;
  const long long count = m_ratio / pieces;
  if (m_ratio % pieces != 0 || count < 2 || count % 2 != 0)
    throw_invalid_argument("grid_brownian_source::split", "fine steps in the piece",
                           m_ratio % pieces == 0 ? count : 0,
                           "even and >= 2 (the grid cannot be refined further)");
  const long long first = static_cast<long long>(step) * m_ratio +
                          static_cast<long long>(node - static_cast<std::uint64_t>(pieces)) * count;
  m_grid->increment(first, count / 2, with_iterated, left);
  m_grid->increment(first + count / 2, count / 2, with_iterated, right);
}

tree_brownian_source::tree_brownian_source(random_stream stream, int k, double base_dt, int depth,
                                           levy_area_method method, int area_depth)
    : m_root(stream, k, method, area_depth), m_base_dt(base_dt), m_depth(depth) {
  if (!(base_dt > 0) || !std::isfinite(base_dt))
    throw_invalid_argument("tree_brownian_source", "base_dt", base_dt, "> 0 and finite");
  if (depth < 0 || depth > 30)
    throw_invalid_argument("tree_brownian_source", "depth", depth, "in [0, 30]");
  m_levels.resize(static_cast<std::size_t>(depth) + 1);
}

void tree_brownian_source::increment(std::uint64_t step, double dt, bool with_iterated,
                                     noise_increment& out) {
  if (!(std::abs(dt - this->dt()) <= 1e-9 * this->dt()))
    throw invalid_argument(fmt::format(
        "tree_brownian_source: step {} asks for dt = {}, but the source's steps are base_dt / 2^{} "
        "= {}",
        step, dt, m_depth, this->dt()));
  const std::uint64_t base = step >> m_depth;
  const std::uint64_t leaf = step & ((std::uint64_t{1} << m_depth) - 1);
  // The first depth at which the cached step's ancestors differ from this step's.
  int from = 0;
  if (m_cached && with_iterated == m_cached_iterated && (m_cached_step >> m_depth) == base) {
    const std::uint64_t differ = (m_cached_step & ((std::uint64_t{1} << m_depth) - 1)) ^ leaf;
    from = differ == 0 ? m_depth + 1 : m_depth - (std::bit_width(differ) - 1);
  }
  if (from == 0) {
    m_root.increment(base, m_base_dt, with_iterated, m_levels[0]);
    from = 1;
  }
  for (int d = from; d <= m_depth; ++d) {
    // The ancestor at depth d is the child of the one at d − 1 chosen by bit (depth − d) of leaf.
    const std::uint64_t parent_node = (std::uint64_t{1} << (d - 1)) | (leaf >> (m_depth - d + 1));
    const bool right = ((leaf >> (m_depth - d)) & 1) != 0;
    if (right)
      m_root.split(m_levels[d - 1], base, parent_node, with_iterated, m_other, m_levels[d]);
    else
      m_root.split(m_levels[d - 1], base, parent_node, with_iterated, m_levels[d], m_other);
  }
  m_cached = true;
  m_cached_iterated = with_iterated;
  m_cached_step = step;
  out = m_levels[static_cast<std::size_t>(m_depth)];
}

void tree_brownian_source::split(const noise_increment& parent, std::uint64_t step,
                                 std::uint64_t node, bool with_iterated, noise_increment& left,
                                 noise_increment& right) {
  const std::uint64_t leaf = step & ((std::uint64_t{1} << m_depth) - 1);
  const int below = std::bit_width(node) - 1;  // node's depth under the fine step
  if (m_depth + below > 62)
    throw invalid_argument(fmt::format(
        "tree_brownian_source: piece {} of step {} lies deeper than the 62 halvings a bridge node "
        "can number",
        node, step));
  const std::uint64_t absolute =
      (((std::uint64_t{1} << m_depth) | leaf) << below) | (node - (std::uint64_t{1} << below));
  m_root.split(parent, step >> m_depth, absolute, with_iterated, left, right);
}

}  // namespace ncsde
