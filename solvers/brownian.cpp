#include "ncsde/brownian.hpp"

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

}  // namespace ncsde
