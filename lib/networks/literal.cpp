#include "ncsde/networks/literal.hpp"

#include <fmt/format.h>

#include <Eigen/QR>
#include <cmath>
#include <limits>

#include "ncsde/error.hpp"
#include "ncsde/models/coefficients.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::networks {

namespace {

constexpr const char* where = "literal_network";

/// w = an r×c matrix of iid N(0, scale²) normals from counter (user, l, tag). w is resized only when
/// its shape changes, so a weight buffer reused across layers is allocated once.
const matrix& gaussian(matrix& w, const random_stream& stream, std::uint64_t l, std::uint64_t tag,
                       int rows, int cols, double scale) {
  w.resize(rows, cols);
  stream.normals(random_domain::user, l, tag, w.data(), w.size());
  if (scale != 1.0) w *= scale;
  return w;
}

/// Per-thread weight buffers (n×n and n×r·n matrices: megabytes at n = 512). Allocating them afresh
/// on every layer costs page faults that at n = 512 exceeded the layer's arithmetic 10× (bench).
struct weight_buffers {
  matrix query, key, value, output, pre, post;  ///< one per role: their shapes differ (n_k, r·n)
};

weight_buffers& local_weights() {
  thread_local weight_buffers buffers;
  return buffers;
}

}  // namespace

void attention_matrix(const matrix& s, bool causal, matrix& a, attention_form form) {
  if (s.rows() != s.cols())
    throw_invalid("attention_matrix",
                  fmt::format("S must be square (got {}x{})", s.rows(), s.cols()));
  if (!s.allFinite()) throw_invalid("attention_matrix", "S must have finite entries");
  const int m = static_cast<int>(s.rows());
  a.setZero(m, m);
  for (int row = 0; row < m; ++row) {
    const int keys = causal ? row + 1 : m;
    // Subtracting the row maximum keeps every exponent ≤ 0: no overflow, and the largest term is 1,
    // so the normaliser is ≥ 1.
    const double top = s.row(row).head(keys).maxCoeff();
    double total = 0.0;
    for (int nu = 0; nu < keys; ++nu) {
      a(row, nu) = std::exp(s(row, nu) - top);
      total += a(row, nu);
    }
    if (form == attention_form::unshaped) {
      // Causal row 0: exp(0)/1 = 1, so A's row 0 is e₀ᵀ here too.
      for (int nu = 0; nu < keys; ++nu) a(row, nu) /= total;
      continue;
    }
    const double centre = 1.0 / keys;
    for (int nu = 0; nu < keys; ++nu) a(row, nu) = a(row, nu) / total - centre;
    // Causal row 0: exp(0)/1 − 1 + 1 = 1 exactly and nothing else, so A's row 0 is e₀ᵀ.
    a(row, row) += 1.0;
  }
}

network_constants validate_network(const char* where, models::architecture arch,
                                   const models::shaped_params& p, int m, int n, int n_k,
                                   attention_form form) {
  // !(x > 0) rather than x <= 0: the negated forms also reject NaN.
  if (m < 1) throw_invalid_argument(where, "m", m, ">= 1");
  if (n < 2) throw_invalid_argument(where, "n", n, ">= 2");
  if (n < m)
    throw_invalid_argument(where, "n", n, fmt::format(">= m = {} (X0 has m orthonormal rows)", m));
  if (n_k < 1) throw_invalid_argument(where, "n_k", n_k, ">= 1");
  models::validate_params(where, arch, p);
  if (n % p.heads != 0)
    throw_invalid_argument(where, "heads", p.heads, fmt::format("a divisor of n = {}", n));
  const bool has_attention =
      arch == models::architecture::attention || arch == models::architecture::transformer;
  if (!has_attention && form != attention_form::shaped)
    throw_invalid_argument(where, "form", "unshaped", "shaped for mlp and resnet (no attention)");
  network_constants k;
  const bool has_relu_branch =
      arch == models::architecture::resnet || arch == models::architecture::transformer;
  if (has_relu_branch) {
    const double rn = p.hidden_ratio * n;
    const double rounded = std::round(rn);
    if (!(std::abs(rn - rounded) <= 1e-9 * rn) || rounded < 1.0)
      throw_invalid_argument(
          where, "hidden_ratio", p.hidden_ratio,
          fmt::format("such that r·n is a positive integer (n = {}, r·n = {})", n, rn));
    // The hidden width is an int (a matrix dimension): converting a larger r·n would be undefined.
    if (rounded > std::numeric_limits<int>::max())
      throw_invalid_argument(
          where, "hidden_ratio", p.hidden_ratio,
          fmt::format("such that the hidden width r·n is at most {} (n = {}, r·n = {})",
                      std::numeric_limits<int>::max(), n, rn));
    k.hidden = static_cast<int>(rounded);
  }
  const double root_n = std::sqrt(static_cast<double>(n));
  k.s_plus = 1.0 + p.c_plus / root_n;
  k.s_minus = 1.0 + p.c_minus / root_n;
  // s₊² + s₋² > 0 unless s₊ = s₋ = 0, i.e. c₊ = c₋ = −√n: σ_s ≡ 0 and no c normalises it.
  const double norm = k.s_plus * k.s_plus + k.s_minus * k.s_minus;
  if (!(norm > 0.0) && arch != models::architecture::attention)
    throw_invalid_argument(
        where, "c_plus", p.c_plus,
        fmt::format("such that s₊² + s₋² > 0 (c_minus = {}, n = {})", p.c_minus, n));
  k.c = norm > 0.0 ? 2.0 / norm : 1.0;
  if (arch == models::architecture::mlp) {
    k.lambda = 0.0;
    k.gamma = 1.0;
  } else {
    k.lambda = std::sqrt(1.0 - p.gamma2);
    k.gamma = std::sqrt(p.gamma2);
  }
  // Shaped: τ = τ₀√(n n_k) (docs/maths.md §2.4); unshaped: τ = τ₀√n_k, the usual QKᵀ/√n_k
  // at τ₀ = 1.
  k.tau = form == attention_form::shaped ? p.tau0 * std::sqrt(static_cast<double>(n) * n_k)
                                         : p.tau0 * std::sqrt(static_cast<double>(n_k));
  return k;
}

matrix validate_initial_covariance(const char* where, const matrix& v0, int m) {
  matrix v = validate_state(where, "V0", v0, /*require_psd=*/true);
  if (v.rows() != m)
    throw_invalid_argument(where, "V0", fmt::format("{}x{}", v.rows(), v.cols()),
                           fmt::format("{}x{} (m = {})", m, m, m));
  return v;
}

namespace detail {

void validate_depths(const char* where, int d, const std::vector<int>& depths) {
  if (d < 1) throw_invalid_argument(where, "d", d, ">= 1");
  if (depths.empty()) throw_invalid(where, "depths must be non-empty");
  for (std::size_t i = 0; i < depths.size(); ++i) {
    if (depths[i] < 0 || depths[i] > d)
      throw_invalid_argument(where, fmt::format("depths[{}]", i), depths[i],
                             fmt::format("in [0, d = {}]", d));
    if (i > 0 && depths[i] <= depths[i - 1])
      throw_invalid_argument(
          where, fmt::format("depths[{}]", i), depths[i],
          fmt::format("> depths[{}] = {} (strictly increasing)", i - 1, depths[i - 1]));
  }
}

}  // namespace detail

literal_network::literal_network(models::architecture arch, const models::shaped_params& p, int m,
                                 int n, int n_k, attention_form form)
    : m_arch(arch), m_params(p), m_m(m), m_n(n), m_n_k(n_k), m_form(form) {
  const network_constants k = validate_network(where, arch, p, m, n, n_k, form);
  m_hidden = k.hidden;
  m_s_plus = k.s_plus;
  m_s_minus = k.s_minus;
  m_c = k.c;
  m_lambda = k.lambda;
  m_gamma = k.gamma;
  m_tau = k.tau;
}

matrix literal_network::initial_state(const matrix& v0, const random_stream& stream) const {
  const matrix v = validate_initial_covariance(where, v0, m_m);
  const matrix l0 = models::factor(v);
  matrix g(m_n, m_m);
  stream.normals(random_domain::initial, 0, 0, g.data(), g.size());
  // The thin Q of a Gaussian n×m matrix has orthonormal columns (the Gaussian has full rank with
  // probability 1; Householder QR gives QᵀQ = I to round-off regardless).
  const Eigen::HouseholderQR<matrix> qr(g);
  const matrix q = qr.householderQ() * matrix::Identity(m_n, m_m);
  return std::sqrt(static_cast<double>(m_n)) * (l0 * q.transpose());
}

void literal_network::relu_branch(const matrix& x, std::uint64_t l, const random_stream& stream,
                                  matrix& y) const {
  const double inv_root_n = 1.0 / std::sqrt(static_cast<double>(m_n));
  weight_buffers& wb = local_weights();
  const matrix& w_pre =
      gaussian(wb.pre, stream, l, weight_tag(weight_kind::pre), m_n, m_hidden, 1.0);
  matrix h = (x * w_pre) * inv_root_n;
  h = h.unaryExpr([this](double z) { return sigma(z); });
  const matrix& w_post =
      gaussian(wb.post, stream, l, weight_tag(weight_kind::post), m_hidden, m_n, 1.0);
  y.noalias() = h * w_post;
  y *= std::sqrt(m_c / m_hidden);
}

void literal_network::attention_branch(const matrix& x, std::uint64_t l,
                                       const random_stream& stream, matrix& y) const {
  const int heads = m_params.heads;
  const double inv_root_n = 1.0 / std::sqrt(static_cast<double>(m_n));
  const bool projected = m_params.output_projection;
  const int value_width = projected ? m_n / heads : m_n;
  weight_buffers& wb = local_weights();
  matrix a;
  matrix concat;
  if (projected)
    concat.resize(m_m, m_n);
  else
    y.setZero(m_m, m_n);
  for (int h = 0; h < heads; ++h) {
    const matrix& w_q =
        gaussian(wb.query, stream, l, weight_tag(weight_kind::query, h), m_n, m_n_k, inv_root_n);
    const matrix& w_k =
        gaussian(wb.key, stream, l, weight_tag(weight_kind::key, h), m_n, m_n_k, inv_root_n);
    const matrix q = x * w_q;
    const matrix k = x * w_k;
    const matrix s = (q * k.transpose()) / m_tau;
    attention_matrix(s, m_params.causal, a, m_form);
    const matrix& w_v =
        gaussian(wb.value, stream, l, weight_tag(weight_kind::value, h), m_n, value_width, 1.0);
    const matrix head_out = (a * (x * w_v)) * inv_root_n;
    if (projected)
      concat.middleCols(static_cast<Eigen::Index>(h) * value_width, value_width) = head_out;
    else
      y += head_out;
  }
  if (projected) {
    const matrix& w_o =
        gaussian(wb.output, stream, l, weight_tag(weight_kind::output), m_n, m_n, 1.0);
    y.noalias() = concat * w_o;
    y *= inv_root_n;
  } else if (heads > 1) {
    y /= std::sqrt(static_cast<double>(heads));
  }
}

void literal_network::step(matrix& x, std::uint64_t l, const random_stream& stream) const {
  NCSDE_ASSERT(x.rows() == m_m && x.cols() == m_n, "literal_network::step: X must be m x n");
  matrix y;
  switch (m_arch) {
    case models::architecture::mlp: {
      const matrix& w =
          gaussian(local_weights().pre, stream, l, weight_tag(weight_kind::mlp), m_n, m_n, 1.0);
      matrix h = x * w;
      x = std::sqrt(m_c / m_n) * h.unaryExpr([this](double z) { return sigma(z); });
      return;
    }
    case models::architecture::resnet:
      relu_branch(x, l, stream, y);
      x = m_lambda * x + m_gamma * y;
      return;
    case models::architecture::attention:
      attention_branch(x, l, stream, y);
      x = m_lambda * x + m_gamma * y;
      return;
    case models::architecture::transformer:
      attention_branch(x, l, stream, y);
      x = m_lambda * x + m_gamma * y;
      relu_branch(x, l, stream, y);
      x = m_lambda * x + m_gamma * y;
      return;
  }
}

matrix literal_network::covariance(const state& x) const {
  matrix v = (x * x.transpose()) * (1.0 / m_n);
  symmetrize(v);
  return v;
}

std::vector<matrix> literal_network::run(const matrix& v0, int d, const std::vector<int>& depths,
                                         const random_stream& stream) const {
  return detail::run_network(*this, "literal_network::run", v0, d, depths, stream);
}

}  // namespace ncsde::networks
