#include "ncsde/brownian.hpp"

#include <fmt/format.h>

#include <bit>

#include "ncsde/error.hpp"

namespace ncsde {

brownian_grid::brownian_grid(const random_stream& stream, int k, long long n_fine, double h,
                             bool with_iterated, levy_area_method method)
    : m_k(k), m_n(n_fine), m_h(h), m_has_iterated(with_iterated) {
  if (k < 1) throw_invalid_argument("brownian_grid", "k", k, ">= 1");
  if (n_fine < 1) throw_invalid_argument("brownian_grid", "n_fine", n_fine, ">= 1");
  if (!(h > 0) || !std::isfinite(h)) throw_invalid_argument("brownian_grid", "h", h, "> 0 and finite");
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

}  // namespace ncsde
