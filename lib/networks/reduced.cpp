#include "ncsde/networks/reduced.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "ncsde/error.hpp"
#include "ncsde/models/coefficients.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::networks {

namespace {

constexpr const char* where = "reduced_network";

/// i1 offset of the uniforms of a gamma variate (bit 63; reduced tags stay below 2⁶³).
constexpr std::uint64_t uniform_offset = std::uint64_t{1} << 63;

/// i1 offset of part 1 (the first χ² variate) of a Wishart factor.
constexpr std::uint64_t part_unit = std::uint64_t{1} << 36;

}  // namespace

double standard_gamma(const random_stream& stream, random_domain domain, std::uint64_t i0,
                      std::uint64_t i1, double a) {
  if (!(a > 0.0) || !std::isfinite(a))
    throw_invalid_argument("standard_gamma", "a", a, "finite and > 0");
  NCSDE_ASSERT(i1 < uniform_offset, "standard_gamma: i1 must be < 2^63");
  // Shape < 1 is boosted: Gamma(a) = Gamma(a + 1) U^{1/a} (Marsaglia–Tsang 2000, §6).
  const double shape = a < 1.0 ? a + 1.0 : a;
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  // The first block (3 attempts: one Philox call for the normals, one for the 4 uniforms) lives on
  // the stack; the larger blocks (needed with probability ≤ 0.05³) on the heap.
  constexpr std::ptrdiff_t first = 3;
  std::array<double, first> x_first;
  std::array<double, first + 1> u_first;
  std::vector<double> x_more;
  std::vector<double> u_more;
  std::ptrdiff_t begin = 0;
  std::ptrdiff_t count = first;
  for (;;) {
    const double* x = x_first.data();
    const double* u = u_first.data();
    if (count == first) {
      stream.normals(domain, i0, i1, x_first.data(), first);
      stream.uniforms(domain, i0, i1 + uniform_offset, u_first.data(), first + 1);
    } else {
      x_more.resize(static_cast<std::size_t>(count));
      u_more.resize(static_cast<std::size_t>(count) + 1);
      stream.normals(domain, i0, i1, x_more.data(), count);
      stream.uniforms(domain, i0, i1 + uniform_offset, u_more.data(), count + 1);
      x = x_more.data();
      u = u_more.data();
    }
    for (std::ptrdiff_t j = begin; j < count; ++j) {
      const double xj = x[j];
      double v = 1.0 + c * xj;
      if (!(v > 0.0)) continue;
      v = v * v * v;
      const double uj = u[j + 1];
      const double x2 = xj * xj;
      // Squeeze first (cheap, accepts ≈ 98%), then the exact log test.
      if (uj < 1.0 - 0.0331 * x2 * x2 || std::log(uj) < 0.5 * x2 + d * (1.0 - v + std::log(v))) {
        const double g = d * v;
        return a < 1.0 ? g * std::pow(u[0], 1.0 / a) : g;
      }
    }
    begin = count;
    count *= 8;
  }
}

double chi_squared(const random_stream& stream, random_domain domain, std::uint64_t i0,
                   std::uint64_t i1, double dof) {
  if (!(dof > 0.0) || !std::isfinite(dof))
    throw_invalid_argument("chi_squared", "dof", dof, "finite and > 0");
  return 2.0 * standard_gamma(stream, domain, i0, i1, 0.5 * dof);
}

void wishart_factor(const random_stream& stream, random_domain domain, std::uint64_t i0,
                    std::uint64_t i1, int dof, int m, matrix& f) {
  if (m < 1) throw_invalid_argument("wishart_factor", "m", m, ">= 1");
  if (dof < 0) throw_invalid_argument("wishart_factor", "dof", dof, ">= 0");
  NCSDE_ASSERT(i1 < part_unit, "wishart_factor: i1 must be part 0 of a reduced_tag");
  if (dof < m) {
    // Singular Wishart: Bartlett needs dof > m − 1, so draw the Gram factor G itself.
    f.resize(m, dof);
    if (dof > 0) stream.normals(domain, i0, i1, f.data(), f.size());
    return;
  }
  // The strictly lower entries are the normals at their column-major positions of an m×m block;
  // the diagonal and upper positions are overwritten (O(m²) either way).
  f.resize(m, m);
  stream.normals(domain, i0, i1, f.data(), f.size());
  f.triangularView<Eigen::StrictlyUpper>().setZero();
  for (int i = 0; i < m; ++i)
    f(i, i) = std::sqrt(chi_squared(stream, domain, i0,
                                    i1 + part_unit * static_cast<std::uint64_t>(1 + i),
                                    static_cast<double>(dof - i)));
}

/// Per-thread workspace of the reduced sampler: sized on first use at a given m, reused after.
struct reduced_network::workspace {
  models::psd_factor factor_v;       // L with L Lᵀ = V (Cholesky, eigen fallback)
  models::psd_factor factor_branch;  // M with M Mᵀ = Ṽ
  matrix vt;                         // Ṽ
  matrix f;                          // a Wishart factor
  matrix f2;                         // a second Wishart factor (value heads)
  matrix z;                          // Z of the logits
  matrix t;                          // F Z, the law of G_q G_kᵀ
  matrix lt;                         // L T
  matrix s;                          // logits
  matrix a;                          // attention matrix
  matrix al;                         // A L
  matrix alf;                        // A L F
  matrix g;                          // G' of a read-out
  matrix p;                          // M G'
  matrix r;                          // M F
  matrix cross;                      // L Pᵀ
  matrix chunk;                      // a column chunk of G or G₁
  matrix h;                          // σ_s(L · chunk)
};

reduced_network::workspace& reduced_network::local_workspace() {
  thread_local workspace ws;
  return ws;
}

reduced_network::reduced_network(models::architecture arch, const models::shaped_params& p, int m,
                                 int n, int n_k, attention_form form)
    : m_arch(arch),
      m_params(p),
      m_m(m),
      m_n(n),
      m_n_k(n_k),
      m_form(form),
      m_k(validate_network(where, arch, p, m, n, n_k, form)) {}

matrix reduced_network::initial_state(const matrix& v0, const random_stream& /*stream*/) const {
  return validate_initial_covariance(where, v0, m_m);
}

namespace {

/// out = Σ over column chunks of σ_s(L G_j) σ_s(L G_j)ᵀ, G = [G_0, G_1, …] ∈ ℝ^{m×width} iid
/// N(0, 1), chunk j from the normals of (user, l, reduced_tag(kind, 0, j)).
void relu_gram(const matrix& l_factor, int width, reduced_kind kind, std::uint64_t l,
               const random_stream& stream, double s_plus, double s_minus, matrix& chunk, matrix& h,
               matrix& out) {
  const int m = static_cast<int>(l_factor.rows());
  const int cols = reduced_network::chunk_columns;
  chunk.resize(m, cols);
  h.resize(m, cols);
  out.setZero(m, m);
  for (int start = 0, j = 0; start < width; start += cols, ++j) {
    const int w = std::min(cols, width - start);
    // Column-major: the first w columns of `chunk` are its first m·w entries.
    stream.normals(random_domain::user, l, reduced_tag(kind, 0, static_cast<std::uint64_t>(j)),
                   chunk.data(), static_cast<std::ptrdiff_t>(m) * w);
    h.leftCols(w).noalias() = l_factor * chunk.leftCols(w);
    // σ_s(x) = s₊ max(x, 0) + s₋ min(x, 0): exactly s₊x or s₋x (the other term is a zero), and
    // branch-free, so it vectorises (a branch on the sign of a normal mispredicts half the time).
    h.leftCols(w) = s_plus * h.leftCols(w).cwiseMax(0.0) + s_minus * h.leftCols(w).cwiseMin(0.0);
    out.noalias() += h.leftCols(w) * h.leftCols(w).transpose();
  }
}

}  // namespace

const matrix& reduced_network::relu_factor(std::uint64_t l, const random_stream& stream,
                                           workspace& ws) const {
  relu_gram(ws.factor_v.l(), m_k.hidden, reduced_kind::relu_hidden, l, stream, m_k.s_plus,
            m_k.s_minus, ws.chunk, ws.h, ws.vt);
  ws.vt *= m_k.c / m_k.hidden;
  symmetrize(ws.vt);
  // Ṽ is singular when r·n < m (or a row of σ_s(H) vanishes): the eigen fallback covers it.
  ws.factor_branch.compute(ws.vt);
  return ws.factor_branch.l();
}

const matrix& reduced_network::attention_factor(std::uint64_t l, const random_stream& stream,
                                                workspace& ws) const {
  const matrix& lf = ws.factor_v.l();
  const int heads = m_params.heads;
  const bool projected = m_params.output_projection;
  if (projected || heads > 1) ws.vt.setZero(m_m, m_m);
  for (int h = 0; h < heads; ++h) {
    // Logits S = L (G_q G_kᵀ) Lᵀ/τ with G_q G_kᵀ drawn as F Z, F Fᵀ ~ Wishart(n_k, I_m).
    wishart_factor(stream, random_domain::user, l, reduced_tag(reduced_kind::key, h), m_n_k, m_m,
                   ws.f);
    ws.z.resize(ws.f.cols(), m_m);
    stream.normals(random_domain::user, l, reduced_tag(reduced_kind::query, h), ws.z.data(),
                   ws.z.size());
    ws.t.noalias() = ws.f * ws.z;
    ws.lt.noalias() = lf * ws.t;
    ws.s.noalias() = ws.lt * lf.transpose();
    ws.s /= m_k.tau;
    attention_matrix(ws.s, m_params.causal, ws.a, m_form);
    ws.al.noalias() = ws.a * lf;
    if (projected) {
      // Head h's block of H has Gram matrix A_h L (O W^V_h)(O W^V_h)ᵀ Lᵀ A_hᵀ, Wishart(n/n_h).
      wishart_factor(stream, random_domain::user, l, reduced_tag(reduced_kind::value, h),
                     m_n / heads, m_m, ws.f2);
      ws.alf.noalias() = ws.al * ws.f2;
      ws.vt.noalias() += ws.alf * ws.alf.transpose();
    } else if (heads > 1) {
      ws.vt.noalias() += ws.al * ws.al.transpose();
    }
  }
  if (projected) {
    // Y = H W^O/√n: given H, iid columns N(0, HHᵀ/n).
    ws.vt *= 1.0 / m_n;
  } else if (heads > 1) {
    // Y = (1/√n_h) Σ_h A_h L (O W^V_h): given the A_h, iid columns N(0, (1/n_h) Σ_h A_h V A_hᵀ),
    // and rotating Y's columns leaves its law unchanged, so Y = M G with G independent of X.
    ws.vt *= 1.0 / heads;
  } else {
    return ws.al;  // Y = A L (O W^V): M = A L exactly
  }
  symmetrize(ws.vt);
  ws.factor_branch.compute(ws.vt);
  return ws.factor_branch.l();
}

void reduced_network::read_out(matrix& v, const matrix& mf, std::uint64_t l, reduced_kind cross,
                               reduced_kind rest, const random_stream& stream,
                               workspace& ws) const {
  const matrix& lf = ws.factor_v.l();
  ws.g.resize(m_m, m_m);
  stream.normals(random_domain::user, l, reduced_tag(cross), ws.g.data(), ws.g.size());
  wishart_factor(stream, random_domain::user, l, reduced_tag(rest), m_n - m_m, m_m, ws.f);
  ws.p.noalias() = mf * ws.g;  // P = M G'
  ws.r.noalias() = mf * ws.f;  // R = M F, F Fᵀ = W_{n−m}
  const double inv_n = 1.0 / m_n;
  v *= m_k.lambda * m_k.lambda;
  if (m_k.lambda > 0.0) {
    ws.cross.noalias() = lf * ws.p.transpose();  // L G'ᵀ Mᵀ
    const double w = m_k.lambda * m_k.gamma * std::sqrt(inv_n);
    v.noalias() += w * ws.cross;
    v.noalias() += w * ws.cross.transpose();
  }
  const double g2n = m_k.gamma * m_k.gamma * inv_n;
  v.noalias() += g2n * (ws.p * ws.p.transpose());
  v.noalias() += g2n * (ws.r * ws.r.transpose());
  symmetrize(v);
}

void reduced_network::step(state& v, std::uint64_t l, const random_stream& stream) const {
  NCSDE_ASSERT(v.rows() == m_m && v.cols() == m_m, "reduced_network::step: V must be m x m");
  workspace& ws = local_workspace();
  ws.factor_v.compute(v);
  switch (m_arch) {
    case models::architecture::mlp:
      relu_gram(ws.factor_v.l(), m_n, reduced_kind::mlp, l, stream, m_k.s_plus, m_k.s_minus,
                ws.chunk, ws.h, v);
      v *= m_k.c / m_n;
      symmetrize(v);
      return;
    case models::architecture::resnet:
      read_out(v, relu_factor(l, stream, ws), l, reduced_kind::relu_cross, reduced_kind::relu_rest,
               stream, ws);
      return;
    case models::architecture::attention:
      read_out(v, attention_factor(l, stream, ws), l, reduced_kind::att_cross,
               reduced_kind::att_rest, stream, ws);
      return;
    case models::architecture::transformer:
      read_out(v, attention_factor(l, stream, ws), l, reduced_kind::att_cross,
               reduced_kind::att_rest, stream, ws);
      ws.factor_v.compute(v);  // the ReLU sublayer reads the new V
      read_out(v, relu_factor(l, stream, ws), l, reduced_kind::relu_cross, reduced_kind::relu_rest,
               stream, ws);
      return;
  }
}

std::vector<matrix> reduced_network::run(const matrix& v0, int d, const std::vector<int>& depths,
                                         const random_stream& stream) const {
  return detail::run_network(*this, "reduced_network::run", v0, d, depths, stream);
}

}  // namespace ncsde::networks
