#pragma once
/// A neural covariance SDE defined outside the ncsde library: the shaped smooth-activation MLP.
///
/// Network (m tokens, width n, one layer = time step 1/n):
///   X_{l+1} = σ_s(X_l W_l/√n),  W_l ∈ ℝ^{n×n} iid N(0, 1),  V_l = X_l X_lᵀ/n,
///   σ_s(x) = s σ(x/s),  s = a√n,  σ smooth with σ(0) = 0, σ'(0) = 1 (tanh by default), a > 0.
/// Given X_l, the columns h_j = X_l w_j/√n of the pre-activation H = X_l W_l/√n are iid N(0, V_l),
/// and V_{l+1} = (1/n) Σ_j σ_s(h_j) σ_s(h_j)ᵀ. With (u, v) = (h^a, h^b) ~ N(0, V) and the Taylor
/// expansion σ_s(x) = x + A x²/s + B x³/s² + C x⁴/s³ + D x⁵/s⁴ + O(s⁻⁵),
///   A = σ''(0)/2, B = σ'''(0)/6, C = σ''''(0)/24, D = σ⁽⁵⁾(0)/120,
/// every term of odd total degree has zero Gaussian mean, so
///   n E[ΔV^{ab} | V] = n (E[σ_s(u)σ_s(v)] − V^{ab}) = b^{ab}(V) + c^{ab}(V)/(a⁴ n) + O(n⁻²),
///   b^{ab} = (1/a²) [ A² E[u²v²] + B E[u³v + uv³] ]
///          = (1/a²) [ (σ''(0)²/4)(V^{aa}V^{bb} + 2(V^{ab})²)
///                     + (σ'''(0)/2) V^{ab}(V^{aa} + V^{bb}) ],
///   c^{ab} = D E[u⁵v + uv⁵] + AC E[u⁴v² + u²v⁴] + B² E[u³v³]
///          = 15D ((V^{aa})² + (V^{bb})²) V^{ab}
///            + 3AC (V^{aa}V^{bb}(V^{aa} + V^{bb}) + 4(V^{aa} + V^{bb})(V^{ab})²)
///            + B² (9V^{aa}V^{bb}V^{ab} + 6(V^{ab})³),
/// from the Gaussian moments E[u²v²] = V^{aa}V^{bb} + 2(V^{ab})², E[u³v] = 3V^{aa}V^{ab},
/// E[u⁵v] = 15(V^{aa})²V^{ab}, E[u⁴v²] = 3(V^{aa})²V^{bb} + 12V^{aa}(V^{ab})²,
/// E[u³v³] = 9V^{aa}V^{bb}V^{ab} + 6(V^{ab})³ (write v = βu + w, β = V^{ab}/V^{aa}, w ⟂ u).
/// The covariance: n Cov(ΔV^{ab}, ΔV^{cd} | V) = Cov(uv, u'v') + O(1/n) (the O(1/s) cross terms are
/// odd), and by Isserlis Cov(h^a h^b, h^c h^d) = V^{ac}V^{bd} + V^{ad}V^{bc} = Σ_lin^{ab,cd}.
/// Hence the limit n → ∞ with t = l/n is the Itô SDE
///   dV = b(V) dt + L W Lᵀ,  L Lᵀ = V,  W = (G + Gᵀ)/√2,  G an m×m matrix of iid dB,
/// whose noise covariance is Σ_lin (ncsde::models::noise_lin). For tanh (σ'' = 0, σ''' = −2,
/// σ'''' = 0, σ⁽⁵⁾ = 16): b^{ab} = −(1/a²) V^{ab}(V^{aa} + V^{bb}), and
/// c^{ab} = 2((V^{aa})² + (V^{bb})²)V^{ab} + V^{aa}V^{bb}V^{ab} + (2/3)(V^{ab})³.
///
/// Two consequences used by the example program. The diagonal is a closed scalar SDE,
/// dV^{aa} = −2(V^{aa})²/a² dt + √2 V^{aa} dB (tanh), whose deterministic limit is
/// V^{aa}(t) = V^{aa}(0)/(1 + 2V^{aa}(0) t/a²). And for an odd σ (σ''(0) = 0) the drift of the
/// correlation ρ^{ab} = V^{ab}/√(V^{aa}V^{bb}) vanishes: b^{ab}/√(V^{aa}V^{bb}) −
/// (ρ^{ab}/2)(b^{aa}/V^{aa} + b^{bb}/V^{bb}) = 0, so the law of ρ does not depend on a or σ'''(0).
#include <fmt/format.h>

#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "ncsde/concepts.hpp"
#include "ncsde/error.hpp"
#include "ncsde/models/coefficients.hpp"
#include "ncsde/random.hpp"
#include "ncsde/symmetric.hpp"

namespace shaped_tanh {

using ncsde::matrix;
using ncsde::vector;

/// An activation σ with σ(0) = 0 and σ'(0) = 1, and its Taylor coefficients at 0:
///   σ(x) = x + d2 x²/2 + d3 x³/6 + d4 x⁴/24 + d5 x⁵/120 + O(x⁶).
/// d2, d3 define the SDE's drift; d4, d5 only its O(1/n) one-step correction c (see the file doc).
struct smooth_activation {
  std::string_view name;
  double (*f)(double) = nullptr;  ///< σ
  double d2 = 0.0;                ///< σ''(0)
  double d3 = 0.0;                ///< σ'''(0)
  double d4 = 0.0;                ///< σ''''(0)
  double d5 = 0.0;                ///< σ⁽⁵⁾(0)
};

/// σ = tanh: tanh x = x − x³/3 + 2x⁵/15 − …, so σ'' = 0, σ''' = −2, σ'''' = 0, σ⁽⁵⁾ = 16.
inline smooth_activation tanh_activation() {
  return {"tanh", [](double x) { return std::tanh(x); }, 0.0, -2.0, 0.0, 16.0};
}

/// σ(x) = 2x·sigmoid(x) (SiLU scaled so that σ'(0) = 1): with sigmoid(x) = 1/2 + x/4 − x³/48 + …,
/// σ(x) = x + x²/2 − x⁴/24 + …, so σ'' = 1, σ''' = 0, σ'''' = −1, σ⁽⁵⁾ = 0. Even part ≠ 0: the
/// drift has the σ''(0)² term that tanh lacks.
inline smooth_activation swish_activation() {
  return {"2x*sigmoid(x)",
          [](double x) { return 2.0 * x / (1.0 + std::exp(-x)); },
          1.0,
          0.0,
          -1.0,
          0.0};
}

/// Checks that `act` is what it declares: f set; f(0) = 0 within 1e-14; and, by central
/// differences, σ'(0) = 1, σ''(0) = d2, σ'''(0) = d3 (the coefficients the SDE is built from)
/// within 1e-5, 1e-5·max(1, |d2|) and 1e-3·max(1, |d3|): the truncation errors h²σ'''/6 (h = 1e-3),
/// h²σ''''/12 (h = 1e-3) and h²σ⁽⁵⁾/4 (h = 1e-2) of the three stencils, with headroom for
/// |σ⁽ᵏ⁾(0)| ≲ 40, and far above their round-off (≲ 1e-9). d4, d5 must be finite.
/// Throws ncsde::invalid_argument naming `where` and the coefficient.
inline void validate_activation(std::string_view where, const smooth_activation& act) {
  if (act.f == nullptr) ncsde::throw_invalid(where, "the activation function is not set");
  const double f0 = act.f(0.0);
  if (!(std::abs(f0) <= 1e-14)) ncsde::throw_invalid_argument(where, "sigma(0)", f0, "0");
  const double h1 = 1e-3;
  const double slope = (act.f(h1) - act.f(-h1)) / (2 * h1);
  if (!(std::abs(slope - 1.0) <= 1e-5))
    ncsde::throw_invalid_argument(where, "sigma'(0)", slope, "1");
  for (const double d : {act.d2, act.d3, act.d4, act.d5})
    if (!std::isfinite(d)) ncsde::throw_invalid(where, "the Taylor coefficients must be finite");
  const double second = (act.f(h1) - 2 * f0 + act.f(-h1)) / (h1 * h1);
  if (!(std::abs(second - act.d2) <= 1e-5 * std::max(1.0, std::abs(act.d2))))
    ncsde::throw_invalid_argument(where, "d2", act.d2,
                                  fmt::format("sigma''(0) = {:.8g} (central difference)", second));
  const double h3 = 1e-2;
  const double third =
      (act.f(2 * h3) - 2 * act.f(h3) + 2 * act.f(-h3) - act.f(-2 * h3)) / (2 * h3 * h3 * h3);
  if (!(std::abs(third - act.d3) <= 1e-3 * std::max(1.0, std::abs(act.d3))))
    ncsde::throw_invalid_argument(where, "d3", act.d3,
                                  fmt::format("sigma'''(0) = {:.8g} (central difference)", third));
}

/// Covariance SDE of the shaped smooth-activation MLP (see the file doc):
///   dV = b(V) dt + L W Lᵀ,  b^{ab} = q (V^{aa}V^{bb} + 2(V^{ab})²) + r V^{ab}(V^{aa} + V^{bb}),
///   q = σ''(0)²/(4a²),  r = σ'''(0)/(2a²),  Cov(dV) = Σ_lin(V) dt.
/// Satisfies ncsde::Sde (noise map applied to ξ = vec G, k = m²) and ncsde::CovarianceSde (dense
/// Σ_lin over packed pairs). Time-homogeneous. Invariant (checked once, in the constructor):
/// d2, d3 finite, a finite and > 0. diffusion() factors V in a mutable workspace, so one object
/// must not be shared between threads (ensembles copy it per thread).
class shaped_activation_sde {
 public:
  /// Solutions live on the positive-semidefinite cone: checks and pd_policy apply.
  static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
  struct params {
    double d2 = 0.0;   ///< σ''(0); finite
    double d3 = -2.0;  ///< σ'''(0); finite
    double a = 1.0;    ///< shaping a = s/√n; finite and > 0
  };

  /// Throws ncsde::invalid_argument("shaped_activation_sde: <param> must be <rule> (got <value>)").
  explicit shaped_activation_sde(const params& p) : m_params(p) {
    constexpr std::string_view where = "shaped_activation_sde";
    if (!(p.a > 0) || !std::isfinite(p.a))
      ncsde::throw_invalid_argument(where, "a", p.a, "> 0 and finite");
    if (!std::isfinite(p.d2)) ncsde::throw_invalid_argument(where, "d2", p.d2, "finite");
    if (!std::isfinite(p.d3)) ncsde::throw_invalid_argument(where, "d3", p.d3, "finite");
    m_q = p.d2 * p.d2 / (4 * p.a * p.a);
    m_r = p.d3 / (2 * p.a * p.a);
  }

  /// The SDE of activation `act` (validated by validate_activation) at shaping a.
  shaped_activation_sde(const smooth_activation& act, double a)
      : shaped_activation_sde(checked_params(act, a)) {}

  /// The tanh preset: σ''(0) = 0, σ'''(0) = −2, b^{ab} = −(1/a²) V^{ab}(V^{aa} + V^{bb}).
  static shaped_activation_sde tanh(double a = 1.0) {
    return shaped_activation_sde(params{0.0, -2.0, a});
  }

  /// The validated parameters.
  const params& parameters() const { return m_params; }
  /// q = σ''(0)²/(4a²), the coefficient of V^{aa}V^{bb} + 2(V^{ab})² in b.
  double quadratic_coefficient() const { return m_q; }
  /// r = σ'''(0)/(2a²), the coefficient of V^{ab}(V^{aa} + V^{bb}) in b.
  double cubic_coefficient() const { return m_r; }

  /// k = m²: the entries of G, column-major.
  int noise_dimension(int m) const { return m * m; }

  /// out = b(V), computed on the upper triangle and mirrored (exactly symmetric).
  void drift(const matrix& v, matrix& out, double /*t*/) const {
    const Eigen::Index m = v.rows();
    out.resize(m, m);
    for (Eigen::Index a = 0; a < m; ++a)
      for (Eigen::Index b = a; b < m; ++b) {
        const double vab = v(a, b);
        out(a, b) = m_q * (v(a, a) * v(b, b) + 2 * vab * vab) + m_r * vab * (v(a, a) + v(b, b));
        out(b, a) = out(a, b);
      }
  }

  /// out = L W Lᵀ with L Lᵀ = V (Cholesky, or the clipped eigen-factor off the open cone) and G the
  /// m×m matrix read column-major from xi (size m²); Cov(out) = Σ_lin(V).
  void diffusion(const matrix& v, const vector& xi, matrix& out, double /*t*/) const {
    const Eigen::Index m = v.rows();
    NCSDE_ASSERT(xi.size() == m * m, "shaped_activation_sde: xi must have m^2 entries");
    m_factor.compute(v);
    ncsde::models::noise_lin(m_factor.l(), Eigen::Map<const matrix>(xi.data(), m, m), out);
  }

  /// sigma = Σ_lin(V), K×K over packed pairs (the dense reference of the noise map).
  void covariance(const matrix& v, matrix& sigma, double /*t*/) const {
    ncsde::models::sigma_lin(v, sigma);
  }

 private:
  static params checked_params(const smooth_activation& act, double a) {
    validate_activation("shaped_activation_sde", act);
    return params{act.d2, act.d3, a};
  }

  params m_params;
  double m_q = 0.0;
  double m_r = 0.0;
  mutable ncsde::models::psd_factor m_factor;  // workspace: one copy per ensemble thread
};

static_assert(ncsde::Sde<shaped_activation_sde>);
static_assert(ncsde::CovarianceSde<shaped_activation_sde>);

/// The O(1/n) one-step correction c(V) of the file doc:
///   n E[ΔV | V] = b(V) + c(V)/(a⁴ n) + O(n⁻²).
inline matrix one_step_correction(const smooth_activation& act, const matrix& v) {
  const double A = act.d2 / 2, B = act.d3 / 6, C = act.d4 / 24, D = act.d5 / 120;
  const Eigen::Index m = v.rows();
  matrix out(m, m);
  for (Eigen::Index a = 0; a < m; ++a)
    for (Eigen::Index b = a; b < m; ++b) {
      const double p = v(a, a), q = v(b, b), r = v(a, b);
      out(a, b) = 15 * D * (p * p + q * q) * r +
                  3 * A * C * (p * q * (p + q) + 4 * (p + q) * r * r) +
                  B * B * (9 * p * q * r + 6 * r * r * r);
      out(b, a) = out(a, b);
    }
  return out;
}

/// Gauss–Hermite rule for E[g(Z)], Z ~ N(0, 1): E[g(Z)] ≈ Σ_i w_i g(z_i), exact for polynomials of
/// degree ≤ 2k − 1, weights summing to 1. Golub–Welsch: the nodes are the eigenvalues of the Jacobi
/// matrix of the monic probabilists' Hermite polynomials (zero diagonal, off-diagonal √j, j
/// = 1..k−1), and w_i the squared first components of its unit eigenvectors. Throws unless 1 ≤ k ≤
/// 400.
class gauss_hermite {
 public:
  explicit gauss_hermite(int k) {
    if (!(k >= 1 && k <= 400))
      ncsde::throw_invalid_argument("gauss_hermite", "k", k, "in [1, 400]");
    vector diag = vector::Zero(k), sub(std::max(k - 1, 0));
    for (int j = 1; j < k; ++j) sub(j - 1) = std::sqrt(static_cast<double>(j));
    Eigen::SelfAdjointEigenSolver<matrix> es;
    es.computeFromTridiagonal(diag, sub, Eigen::ComputeEigenvectors);
    m_nodes = es.eigenvalues();
    m_weights = es.eigenvectors().row(0).transpose().cwiseAbs2();
  }
  const vector& nodes() const { return m_nodes; }
  const vector& weights() const { return m_weights; }

 private:
  vector m_nodes, m_weights;
};

/// Exact one-step moments of the finite network of width n at V (given X with X Xᵀ/n = V), by a
/// tensor Gauss–Hermite rule over (u, v) = (√V^{aa} z₁, β√V^{aa} z₁ + √(V^{bb} − β²V^{aa}) z₂),
/// β = V^{ab}/V^{aa}:
///   mean(a, b)     = n E[ΔV^{ab}]   = n E[σ_s(u)σ_s(v) − uv],
///   variance(a, b) = n Var(ΔV^{ab}) = Var(σ_s(u)σ_s(v)),   s = a√n.
/// Requires V^{aa} > 0 (not checked: a program-internal helper).
struct one_step_moments {
  matrix mean, variance;
};

inline one_step_moments exact_one_step(const smooth_activation& act, double a, int n,
                                       const matrix& v, const gauss_hermite& rule) {
  const double s = a * std::sqrt(static_cast<double>(n));
  const auto sigma_s = [&](double x) { return s * act.f(x / s); };
  const vector& z = rule.nodes();
  const vector& w = rule.weights();
  const Eigen::Index m = v.rows(), k = z.size();
  one_step_moments out{matrix(m, m), matrix(m, m)};
  for (Eigen::Index p = 0; p < m; ++p)
    for (Eigen::Index q = p; q < m; ++q) {
      const double su = std::sqrt(v(p, p));
      const double beta = v(p, q) / v(p, p);
      const double rest = std::sqrt(std::max(v(q, q) - beta * v(p, q), 0.0));
      double diff = 0.0, first = 0.0, second = 0.0;
      for (Eigen::Index i = 0; i < k; ++i) {
        const double u = su * z(i);
        const double fu = sigma_s(u);
        for (Eigen::Index j = 0; j < k; ++j) {
          const double x = beta * u + rest * z(j);
          const double prod = fu * sigma_s(x);
          const double wij = w(i) * w(j);
          diff += wij * (prod - u * x);
          first += wij * prod;
          second += wij * prod * prod;
        }
      }
      out.mean(p, q) = out.mean(q, p) = n * diff;
      out.variance(p, q) = out.variance(q, p) = second - first * first;
    }
  return out;
}

/// The literal finite network of the file doc: m tokens, width n, σ_s(x) = s σ(x/s), s = a√n.
/// Randomness: a network is an ncsde::random_stream keyed by (seed, network index); the weights W_l
/// of layer l (0-based) are the n² normals of the counter (random_domain::user, l, 0),
/// column-major, and the rotation O of the initial state those of (random_domain::initial, 0, 0).
/// So every layer is a fixed function of (seed, network, l), independent of threads and of the
/// other layers. Invariant (checked once, in the constructor): the activation passes
/// validate_activation; a finite and > 0; m ≥ 1; n ≥ 2 and n ≥ m. Const and thread-safe.
class shaped_activation_network {
 public:
  /// Throws ncsde::invalid_argument naming the parameter and value.
  shaped_activation_network(const smooth_activation& act, double a, int m, int n)
      : m_act(act), m_a(a), m_m(m), m_n(n) {
    constexpr std::string_view where = "shaped_activation_network";
    validate_activation(where, act);
    if (!(a > 0) || !std::isfinite(a))
      ncsde::throw_invalid_argument(where, "a", a, "> 0 and finite");
    if (!(m >= 1)) ncsde::throw_invalid_argument(where, "m", m, ">= 1");
    if (!(n >= 2)) ncsde::throw_invalid_argument(where, "n", n, ">= 2");
    if (!(n >= m))
      ncsde::throw_invalid_argument(where, "n", n,
                                    fmt::format(">= m = {} (X0 has m orthonormal rows)", m));
    m_s = a * std::sqrt(static_cast<double>(n));
  }

  int m() const { return m_m; }
  int n() const { return m_n; }
  double a() const { return m_a; }
  /// s = a√n.
  double s() const { return m_s; }
  const smooth_activation& activation() const { return m_act; }
  /// σ_s(x) = s σ(x/s).
  double sigma_s(double x) const { return m_s * m_act.f(x / m_s); }

  /// X₀ = √n L₀ Qᵀ with L₀L₀ᵀ = V₀ (Cholesky, or the clipped eigen-factor of a singular V₀) and Q
  /// (n×m) the thin orthonormal factor of an n×m Gaussian matrix from `stream`, so X₀X₀ᵀ/n = V₀ up
  /// to round-off. Throws ncsde::invalid_argument unless V₀ is m×m, finite, symmetric and PSD.
  matrix initial_state(const matrix& v0, const ncsde::random_stream& stream) const {
    const matrix v = ncsde::validate_state("shaped_activation_network", "V0", v0);
    if (v.rows() != m_m)
      ncsde::throw_invalid_argument("shaped_activation_network", "V0 rows", v.rows(),
                                    fmt::format("m = {}", m_m));
    matrix g(m_n, m_m);
    stream.normals(ncsde::random_domain::initial, 0, 0, g.data(), g.size());
    // A Gaussian n×m matrix has full column rank with probability 1.
    const Eigen::HouseholderQR<matrix> qr(g);
    const matrix q = qr.householderQ() * matrix::Identity(m_n, m_m);
    return std::sqrt(static_cast<double>(m_n)) * (ncsde::models::factor(v) * q.transpose());
  }

  /// One layer l: h = X W_l/√n (the pre-activation) and x_next = σ_s(h) entry-wise; `w` is an n×n
  /// workspace. Sizes are checked with NCSDE_ASSERT.
  void layer(const matrix& x, std::uint64_t l, const ncsde::random_stream& stream, matrix& w,
             matrix& h, matrix& x_next) const {
    NCSDE_ASSERT(x.rows() == m_m && x.cols() == m_n, "shaped_activation_network: X must be m×n");
    w.resize(m_n, m_n);
    stream.normals(ncsde::random_domain::user, l, 0, w.data(), w.size());
    h.noalias() = x * w;
    h *= 1.0 / std::sqrt(static_cast<double>(m_n));
    x_next = h.unaryExpr([this](double y) { return sigma_s(y); });
  }

  /// V_d = X_d X_dᵀ/n after d ≥ 0 layers from initial_state(v0, stream); throws
  /// ncsde::invalid_argument on a bad V₀ or d < 0.
  matrix run(const matrix& v0, int d, const ncsde::random_stream& stream) const {
    if (!(d >= 0)) ncsde::throw_invalid_argument("shaped_activation_network", "d", d, ">= 0");
    matrix x = initial_state(v0, stream), w, h, x_next;
    for (int l = 0; l < d; ++l) {
      layer(x, static_cast<std::uint64_t>(l), stream, w, h, x_next);
      x.swap(x_next);
    }
    return (x * x.transpose() / static_cast<double>(m_n)).eval();
  }

 private:
  smooth_activation m_act;
  double m_a;
  int m_m;
  int m_n;
  double m_s = 1.0;
};

}  // namespace shaped_tanh
