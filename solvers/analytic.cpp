#include "ncsde/analytic.hpp"

#include <fmt/format.h>

#include <unsupported/Eigen/MatrixFunctions>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <utility>

#include "ncsde/dense_kernels.hpp"
#include "ncsde/error.hpp"
#include "ncsde/psd.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::analytic {

namespace {

/// Kronecker product a ⊗ b: (a ⊗ b)(i·rb + k, j·cb + l) = a(i, j) b(k, l), so that
/// vec(X Y Z) = (Zᵀ ⊗ X) vec(Y) for column-major vec.
matrix kron(const matrix& a, const matrix& b) {
  matrix out(a.rows() * b.rows(), a.cols() * b.cols());
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index j = 0; j < a.cols(); ++j)
      out.block(i * b.rows(), j * b.cols(), b.rows(), b.cols()) = a(i, j) * b;
  return out;
}

/// x^n by binary powering (n ≥ 0): O(log n) products, each exact to round-off.
matrix matrix_power(const matrix& x, long long n) {
  matrix result = matrix::Identity(x.rows(), x.cols());
  matrix base = x;
  while (n > 0) {
    if (n & 1) result = (result * base).eval();
    n >>= 1;
    if (n > 0) base = (base * base).eval();
  }
  return result;
}

vector vec(const matrix& v) { return Eigen::Map<const vector>(v.data(), v.size()); }

matrix unvec(const vector& x, int m) { return Eigen::Map<const matrix>(x.data(), m, m); }

/// The m²×m² second-moment matrix from the m⁴-vector vec(M).
matrix unvec_square(const vector& x, int n) { return Eigen::Map<const matrix>(x.data(), n, n); }

void require_square_finite(std::string_view where, const std::string& param, const matrix& x,
                           int size) {
  if (x.rows() != x.cols() || x.rows() < 1)
    throw_invalid_argument(where, param, fmt::format("{}x{}", x.rows(), x.cols()),
                           "a non-empty square matrix");
  if (size > 0 && x.rows() != size)
    throw_invalid_argument(where, param, fmt::format("{}x{}", x.rows(), x.cols()),
                           fmt::format("{}x{} like A", size, size));
  if (!x.allFinite()) throw_invalid_argument(where, param, "a non-finite entry", "finite");
}

void require_symmetric(std::string_view where, const std::string& param, const matrix& x) {
  const double asym = asymmetry(x);
  if (!(asym <= symmetry_tolerance * std::max(1.0, x.cwiseAbs().maxCoeff())))
    throw_invalid_argument(where, param, fmt::format("max |X - X^T| = {:.3g}", asym), "symmetric");
}

void require_time(std::string_view where, double t) {
  if (!(t >= 0) || !std::isfinite(t)) throw_invalid_argument(where, "t", t, ">= 0 and finite");
}

void require_steps(std::string_view where, double h, long long n) {
  if (!(h > 0) || !std::isfinite(h)) throw_invalid_argument(where, "h", h, "> 0 and finite");
  if (n < 0) throw_invalid_argument(where, "n", n, ">= 0");
}

void require_state(std::string_view where, const matrix& v0, int size) {
  if (v0.rows() != v0.cols() || v0.rows() < 1 || (size > 0 && v0.rows() != size))
    throw_invalid_argument(where, "V0", fmt::format("{}x{}", v0.rows(), v0.cols()),
                           size > 0 ? fmt::format("{}x{}", size, size) : std::string("square"));
}

void require_noise(std::string_view where, const Eigen::Ref<const vector>& w, int k) {
  if (w.size() != k) throw_invalid_argument(where, "W_T size", w.size(), fmt::format("{}", k));
}

/// Moments of a linear SDE in vec form, dx = 𝓛₀ x dt + Σ_j 𝓑_j x dW_j (x = vec V ∈ ℝⁿ):
/// E[x_t] = e^{t𝓛₀} x0; vec E[x xᵀ] solves the generator 𝓜 = I⊗𝓛₀ + 𝓛₀⊗I + Σ_j 𝓑_j⊗𝓑_j.
/// Euler–Maruyama: x_{k+1} = (I + h𝓛₀ + Σ_j 𝓑_j ΔW_j) x_k, so E[x_{k+1}] = (I + h𝓛₀) E[x_k] and
/// E[x xᵀ]_{k+1} = (I + h𝓛₀) E[x xᵀ]_k (I + h𝓛₀)ᵀ + h Σ_j 𝓑_j E[x xᵀ]_k 𝓑_jᵀ (exact recursions).
vector linear_mean(const matrix& gen, const vector& x0, double t) { return (t * gen).exp() * x0; }

matrix linear_second(const matrix& gen, const std::vector<matrix>& noise, const vector& x0,
                     double t) {
  const Eigen::Index n = gen.rows();
  const matrix id = matrix::Identity(n, n);
  matrix big = kron(id, gen) + kron(gen, id);
  for (const matrix& b : noise) big += kron(b, b);
  const matrix p0 = x0 * x0.transpose();
  return unvec_square((t * big).exp() * vec(p0), static_cast<int>(n));
}

vector linear_euler_mean(const matrix& gen, const vector& x0, double h, long long steps) {
  const matrix step = matrix::Identity(gen.rows(), gen.cols()) + h * gen;
  return matrix_power(step, steps) * x0;
}

matrix linear_euler_second(const matrix& gen, const std::vector<matrix>& noise, const vector& x0,
                           double h, long long steps) {
  const Eigen::Index n = gen.rows();
  const matrix step = matrix::Identity(n, n) + h * gen;
  matrix big = kron(step, step);
  for (const matrix& b : noise) big += h * kron(b, b);
  const matrix p0 = x0 * x0.transpose();
  return unvec_square(matrix_power(big, steps) * vec(p0), static_cast<int>(n));
}

void require_weights(std::string_view where, const matrix& f, int m) {
  if (f.rows() != m * m || f.cols() != m * m)
    throw_invalid_argument(where, "F", fmt::format("{}x{}", f.rows(), f.cols()),
                           fmt::format("{}x{} (m^2 x m^2 for m = {})", m * m, m * m, m));
  if (!f.allFinite()) throw_invalid_argument(where, "F", "a non-finite entry", "finite");
}

/// Q with vec Q = exp(τ Gᵀ) vec F for a second-moment generator G acting on vec(E[x xᵀ]) (n² × n²).
matrix adjoint_weights(const matrix& generator, const matrix& f, double tau) {
  const Eigen::Index n = f.rows();
  return unvec_square(((tau * generator.transpose()).exp() * vec(f)).eval(), static_cast<int>(n));
}

}  // namespace

double quadratic_form::operator()(const matrix& v) const {
  const Eigen::Map<const vector> x(v.data(), v.size());
  NCSDE_ASSERT(q.rows() == x.size() && q.cols() == x.size(),
               "quadratic_form: V has the wrong size");
  double value = c + x.dot(q * x);
  if (l.size() > 0) value += l.dot(x);
  return value;
}

// ---- gram_factor ----

namespace detail {

const matrix& gram_factor::factor(const matrix& v) {
  if (m_valid && v.rows() == m_v.rows() && v.cols() == m_v.cols() && v == m_v) return m_l;
  m_v = v;
  m_valid = true;
  // The positive-definiteness check's Cholesky factor, which is the lanes' (lane_cholesky).
  m_cholesky = ncsde::detail::cholesky_factor(v, m_l);
  if (!m_cholesky) {
    m_eigen.compute(v, Eigen::ComputeEigenvectors);
    m_s = m_eigen.eigenvalues().cwiseMax(0.0).cwiseSqrt();
    m_l.noalias() = m_eigen.eigenvectors() * m_s.asDiagonal() * m_eigen.eigenvectors().transpose();
  }
  return m_l;
}

void gram_factor::derivative(const matrix& h, matrix& out) {
  NCSDE_ASSERT(m_valid, "gram_factor::derivative called before factor()");
  const Eigen::Index m = m_l.rows();
  if (m_cholesky) {
    // X = L⁻¹ H L⁻ᵀ (H symmetric): two triangular solves.
    m_work = m_l.triangularView<Eigen::Lower>().solve(h);
    m_x = m_l.triangularView<Eigen::Lower>().solve(m_work.transpose());
    m_x.triangularView<Eigen::StrictlyUpper>().setZero();
    m_x.diagonal() *= 0.5;
    out.noalias() = m_l * m_x;
    return;
  }
  const matrix& u = m_eigen.eigenvectors();
  const vector& lambda = m_eigen.eigenvalues();
  m_x.noalias() = u.transpose() * h * u;
  for (Eigen::Index j = 0; j < m; ++j)
    for (Eigen::Index i = 0; i < m; ++i) {
      const bool pi = lambda(i) > 0, pj = lambda(j) > 0;
      double f = 0.0;
      if (pi && pj)
        f = 1.0 / (m_s(i) + m_s(j));
      else if (pi)
        f = m_s(i) / (lambda(i) - lambda(j));
      else if (pj)
        f = m_s(j) / (lambda(j) - lambda(i));
      m_x(i, j) *= f;
    }
  out.noalias() = u * m_x * u.transpose();
}

void lane_factors::factor(const lane_block& states, int m) {
  // lane_cholesky, or the engine's factors of these states: gram_factor's Cholesky factor bit for
  // bit (detail::cholesky_factor); the other lanes take gram_factor itself (the PSD square root).
  hint.factor(states, m, l, ok);
  triangular = ok.all();
  if (triangular) return;
  v.resize(m, m);
  for (int lane = 0; lane < batch_width; ++lane) {
    if (ok(lane)) continue;
    for (int b = 0; b < m; ++b)
      for (int a = 0; a < m; ++a) v(a, b) = states(lane, a + b * m);
    const matrix& f = scalar.factor(v);
    for (int b = 0; b < m; ++b)
      for (int a = 0; a < m; ++a) l(lane, a + b * m) = f(a, b);
  }
}

}  // namespace detail

// ---- gbm ----

gbm::gbm() : gbm(params{}) {}

gbm::gbm(params p) : m_params(p) {
  if (!std::isfinite(p.mu)) throw_invalid_argument("gbm", "mu", p.mu, "finite");
  if (!std::isfinite(p.sigma)) throw_invalid_argument("gbm", "sigma", p.sigma, "finite");
}

void gbm::drift(const matrix& v, matrix& out, double) const { out = m_params.mu * v; }

void gbm::diffusion(const matrix& v, const vector& xi, matrix& out, double) const {
  NCSDE_ASSERT(xi.size() == 1, "gbm: xi must have size 1");
  out = (m_params.sigma * xi(0)) * v;
}

void gbm::diffusion_derivative(const matrix&, const matrix& h, const vector& xi, matrix& out,
                               double) const {
  NCSDE_ASSERT(xi.size() == 1, "gbm: xi must have size 1");
  out = (m_params.sigma * xi(0)) * h;
}

void gbm::drift_lanes(const lane_block& v, lane_block& out, double) const { out = m_params.mu * v; }

void gbm::diffusion_lanes(const lane_block& v, const lane_block& xi, lane_block& out,
                          double) const {
  NCSDE_ASSERT(xi.cols() == 1, "gbm: xi must have one noise");
  const lane_column s = m_params.sigma * xi.col(0);
  out.resize(batch_width, v.cols());
  for (Eigen::Index c = 0; c < v.cols(); ++c) out.col(c) = s * v.col(c);
}

matrix gbm::exact(const matrix& v0, const Eigen::Ref<const vector>& w_t, double t) const {
  require_state("gbm::exact", v0, 0);
  require_time("gbm::exact", t);
  require_noise("gbm::exact", w_t, 1);
  const double s = m_params.sigma;
  return v0 * std::exp((m_params.mu - 0.5 * s * s) * t + s * w_t(0));
}

matrix gbm::mean(const matrix& v0, double t) const {
  require_state("gbm::mean", v0, 0);
  require_time("gbm::mean", t);
  return v0 * std::exp(m_params.mu * t);
}

quadratic_form gbm::conditional_second_moment(const matrix& f, double tau) const {
  require_time("gbm::conditional_second_moment", tau);
  if (f.rows() != f.cols() || !f.allFinite())
    throw_invalid_argument("gbm::conditional_second_moment", "F",
                           fmt::format("{}x{}", f.rows(), f.cols()), "square and finite");
  const double s = m_params.sigma;
  quadratic_form u;
  u.q = f * std::exp((2 * m_params.mu + s * s) * tau);
  return u;
}

matrix gbm::second_moments(const matrix& v0, double t) const {
  require_state("gbm::second_moments", v0, 0);
  require_time("gbm::second_moments", t);
  const double s = m_params.sigma;
  const vector x = vec(v0);
  return (x * x.transpose()) * std::exp((2 * m_params.mu + s * s) * t);
}

// ---- lane groups ----

namespace {

/// f.t = L X lane by lane (L = f.l; lane_product).
void lane_factor_product(detail::lane_factors& f, const lane_block& x, int m) {
  lane_product(f.l, x, m, f.triangular, f.t);
}

/// out = L W Lᵀ lane by lane (L = f.l, W = f.w): T = L W, then out = T Lᵀ.
void lane_congruence(detail::lane_factors& f, int m, lane_block& out) {
  lane_product(f.l, f.w, m, f.triangular, f.t);
  lane_product_transposed(f.t, f.l, m, f.triangular, out);
}

/// The m×m matrix x in every lane of a lane group.
lane_block in_every_lane(const matrix& x) {
  lane_block r(batch_width, x.size());
  for (Eigen::Index c = 0; c < x.size(); ++c) r.col(c).setConstant(x.data()[c]);
  return r;
}

/// out = X + Xᵀ lane by lane (entry (a, b): X^{ab} + X^{ba}, as Eigen's x + x.transpose()).
void add_transpose(const lane_block& x, int m, lane_block& out) {
  out.resize(batch_width, x.cols());
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) out.col(a + b * m) = x.col(a + b * m) + x.col(b + a * m);
}

}  // namespace

// ---- hadamard_linear ----

hadamard_linear::hadamard_linear(matrix a, std::vector<matrix> b)
    : m_a(std::move(a)), m_b(std::move(b)) {
  require_square_finite("hadamard_linear", "A", m_a, 0);
  require_symmetric("hadamard_linear", "A", m_a);
  if (m_b.empty())
    throw_invalid_argument("hadamard_linear", "number of noise coefficients B_j", 0, ">= 1");
  for (std::size_t j = 0; j < m_b.size(); ++j) {
    const std::string name = fmt::format("B[{}]", j);
    require_square_finite("hadamard_linear", name, m_b[j], size());
    require_symmetric("hadamard_linear", name, m_b[j]);
  }
}

hadamard_linear hadamard_linear::diagonal_lift(const vector& alpha,
                                               const std::vector<vector>& beta) {
  const Eigen::Index m = alpha.size();
  if (m < 1) throw_invalid_argument("hadamard_linear::diagonal_lift", "alpha size", m, ">= 1");
  matrix a = alpha.replicate(1, m) + alpha.transpose().replicate(m, 1);
  std::vector<matrix> b;
  for (std::size_t j = 0; j < beta.size(); ++j) {
    if (beta[j].size() != m)
      throw_invalid_argument("hadamard_linear::diagonal_lift", fmt::format("beta[{}] size", j),
                             beta[j].size(), fmt::format("{} (the size of alpha)", m));
    a += beta[j] * beta[j].transpose();
    b.push_back(beta[j].replicate(1, m) + beta[j].transpose().replicate(m, 1));
  }
  return hadamard_linear(std::move(a), std::move(b));
}

int hadamard_linear::noise_dimension(int m) const {
  if (m != size())
    throw_invalid_argument("hadamard_linear", "m", m,
                           fmt::format("equal to the coefficient size {}", size()));
  return static_cast<int>(m_b.size());
}

void hadamard_linear::drift(const matrix& v, matrix& out, double) const {
  out = m_a.cwiseProduct(v);
}

void hadamard_linear::diffusion(const matrix& v, const vector& xi, matrix& out, double) const {
  NCSDE_ASSERT(xi.size() == static_cast<Eigen::Index>(m_b.size()),
               "hadamard_linear: xi has the wrong size");
  out.setZero(v.rows(), v.cols());
  for (std::size_t j = 0; j < m_b.size(); ++j)
    out += xi(static_cast<Eigen::Index>(j)) * m_b[j].cwiseProduct(v);
}

void hadamard_linear::drift_lanes(const lane_block& v, lane_block& out, double) const {
  NCSDE_ASSERT(v.cols() == m_a.size(), "hadamard_linear: lane states of the wrong size");
  out.resize(batch_width, v.cols());
  for (Eigen::Index c = 0; c < v.cols(); ++c) out.col(c) = m_a.data()[c] * v.col(c);
}

void hadamard_linear::diffusion_lanes(const lane_block& v, const lane_block& xi, lane_block& out,
                                      double) const {
  NCSDE_ASSERT(v.cols() == m_a.size(), "hadamard_linear: lane states of the wrong size");
  NCSDE_ASSERT(xi.cols() == static_cast<Eigen::Index>(m_b.size()),
               "hadamard_linear: xi has the wrong size");
  // diffusion()'s out += ξ_j (B_j∘V), entry by entry: ξ_j (B_j^c V^c) added to the sum so far.
  out.setZero(batch_width, v.cols());
  for (std::size_t j = 0; j < m_b.size(); ++j)
    for (Eigen::Index c = 0; c < v.cols(); ++c)
      out.col(c) += xi.col(static_cast<Eigen::Index>(j)) * (m_b[j].data()[c] * v.col(c));
}

void hadamard_linear::diffusion_derivative(const matrix& v, const matrix& h, const vector& xi,
                                           matrix& out, double t) const {
  diffusion(h, xi, out, t);  // G is linear in V: DG(V)[H] ξ = G(H) ξ
  (void)v;
}

matrix hadamard_linear::exact(const matrix& v0, const Eigen::Ref<const vector>& w_t,
                              double t) const {
  require_state("hadamard_linear::exact", v0, size());
  require_time("hadamard_linear::exact", t);
  require_noise("hadamard_linear::exact", w_t, static_cast<int>(m_b.size()));
  matrix exponent = m_a * t;
  for (std::size_t j = 0; j < m_b.size(); ++j)
    exponent += -0.5 * t * m_b[j].cwiseAbs2() + w_t(static_cast<Eigen::Index>(j)) * m_b[j];
  return v0.cwiseProduct(exponent.array().exp().matrix());
}

matrix hadamard_linear::mean(const matrix& v0, double t) const {
  require_state("hadamard_linear::mean", v0, size());
  require_time("hadamard_linear::mean", t);
  return v0.cwiseProduct((m_a * t).array().exp().matrix());
}

matrix hadamard_linear::second_moments(const matrix& v0, double t) const {
  require_state("hadamard_linear::second_moments", v0, size());
  require_time("hadamard_linear::second_moments", t);
  const vector x = vec(v0), ax = vec(m_a);
  matrix rate = ax.replicate(1, x.size()) + ax.transpose().replicate(x.size(), 1);
  for (const matrix& b : m_b) rate += vec(b) * vec(b).transpose();
  return (x * x.transpose()).cwiseProduct((rate * t).array().exp().matrix());
}

quadratic_form hadamard_linear::conditional_second_moment(const matrix& f, double tau) const {
  require_time("hadamard_linear::conditional_second_moment", tau);
  require_weights("hadamard_linear::conditional_second_moment", f, size());
  const vector ax = vec(m_a);
  matrix rate = ax.replicate(1, ax.size()) + ax.transpose().replicate(ax.size(), 1);
  for (const matrix& b : m_b) rate += vec(b) * vec(b).transpose();
  quadratic_form u;
  u.q = f.cwiseProduct((rate * tau).array().exp().matrix());
  return u;
}

matrix hadamard_linear::euler_mean(const matrix& v0, double h, long long n) const {
  require_state("hadamard_linear::euler_mean", v0, size());
  require_steps("hadamard_linear::euler_mean", h, n);
  // E[V^{ab}_{k+1}] = (1 + h A^{ab}) E[V^{ab}_k].
  return v0.cwiseProduct((1.0 + h * m_a.array()).pow(static_cast<double>(n)).matrix());
}

matrix hadamard_linear::euler_second_moments(const matrix& v0, double h, long long n) const {
  require_state("hadamard_linear::euler_second_moments", v0, size());
  require_steps("hadamard_linear::euler_second_moments", h, n);
  // E[V^{ab}V^{cd}]_{k+1} = ((1 + hA^{ab})(1 + hA^{cd}) + h Σ_j B_j^{ab} B_j^{cd})
  // E[V^{ab}V^{cd}]_k.
  const vector x = vec(v0), ax = (1.0 + h * vec(m_a).array()).matrix();
  matrix factor = ax * ax.transpose();
  for (const matrix& b : m_b) factor += h * vec(b) * vec(b).transpose();
  return (x * x.transpose()).cwiseProduct(factor.array().pow(static_cast<double>(n)).matrix());
}

// ---- lifted_linear ----

lifted_linear::lifted_linear(matrix a, std::vector<matrix> b)
    : m_a(std::move(a)), m_b(std::move(b)) {
  require_square_finite("lifted_linear", "A", m_a, 0);
  if (m_b.empty())
    throw_invalid_argument("lifted_linear", "number of noise coefficients B_j", 0, ">= 1");
  for (std::size_t j = 0; j < m_b.size(); ++j)
    require_square_finite("lifted_linear", fmt::format("B[{}]", j), m_b[j], size());

  std::vector<const matrix*> all{&m_a};
  for (const matrix& bj : m_b) all.push_back(&bj);
  m_commuting = true;
  for (std::size_t i = 0; i < all.size(); ++i)
    for (std::size_t j = i + 1; j < all.size(); ++j) {
      const matrix& x = *all[i];
      const matrix& y = *all[j];
      const double scale = x.norm() * y.norm();
      if ((x * y - y * x).norm() > 1e-12 * scale) m_commuting = false;
    }

  const int m = size();
  const matrix id = matrix::Identity(m, m);
  m_generator = kron(id, m_a) + kron(m_a, id);
  for (const matrix& bj : m_b) {
    m_generator += kron(bj, bj);
    m_noise_generators.push_back(kron(id, bj) + kron(bj, id));
  }
  m_a_lanes = in_every_lane(m_a);
  for (const matrix& bj : m_b) m_b_lanes.push_back(in_every_lane(bj));
}

int lifted_linear::noise_dimension(int m) const {
  if (m != size())
    throw_invalid_argument("lifted_linear", "m", m,
                           fmt::format("equal to the coefficient size {}", size()));
  return static_cast<int>(m_b.size());
}

void lifted_linear::drift(const matrix& v, matrix& out, double) const {
  // The products in the lane arithmetic's order, as drift_lanes.
  ncsde::detail::matrix_product(out, m_a, v, false);
  out += out.transpose().eval();
  matrix bv, sandwich;
  for (const matrix& bj : m_b) {
    ncsde::detail::matrix_product(bv, bj, v, false);
    ncsde::detail::matrix_product_transposed(sandwich, bv, bj, false);
    out += sandwich;
  }
}

void lifted_linear::diffusion(const matrix& v, const vector& xi, matrix& out, double) const {
  NCSDE_ASSERT(xi.size() == static_cast<Eigen::Index>(m_b.size()),
               "lifted_linear: xi has the wrong size");
  out.setZero(v.rows(), v.cols());
  matrix bv;
  for (std::size_t j = 0; j < m_b.size(); ++j) {
    ncsde::detail::matrix_product(bv, m_b[j], v, false);
    out += xi(static_cast<Eigen::Index>(j)) * bv;
  }
  out += out.transpose().eval();
}

void lifted_linear::drift_lanes(const lane_block& v, lane_block& out, double) const {
  const int m = lane_matrix_size(v);
  NCSDE_ASSERT(m == size(), "lifted_linear: lane states of the wrong size");
  lane_product(m_a_lanes, v, m, false, m_product);  // A V
  add_transpose(m_product, m, out);                 // A V + (A V)ᵀ
  for (const lane_block& bj : m_b_lanes) {
    lane_product(bj, v, m, false, m_product);                      // B_j V
    lane_product_transposed(m_product, bj, m, false, m_sandwich);  // B_j V B_jᵀ
    out += m_sandwich;
  }
}

void lifted_linear::diffusion_lanes(const lane_block& v, const lane_block& xi, lane_block& out,
                                    double) const {
  const int m = lane_matrix_size(v);
  NCSDE_ASSERT(m == size(), "lifted_linear: lane states of the wrong size");
  NCSDE_ASSERT(xi.cols() == static_cast<Eigen::Index>(m_b.size()),
               "lifted_linear: xi has the wrong size");
  m_sandwich.setZero(batch_width, v.cols());
  for (std::size_t j = 0; j < m_b_lanes.size(); ++j) {
    lane_product(m_b_lanes[j], v, m, false, m_product);  // B_j V
    const auto xj = xi.col(static_cast<Eigen::Index>(j));
    for (Eigen::Index c = 0; c < v.cols(); ++c) m_sandwich.col(c) += xj * m_product.col(c);
  }
  add_transpose(m_sandwich, m, out);
}

void lifted_linear::diffusion_derivative(const matrix& v, const matrix& h, const vector& xi,
                                         matrix& out, double t) const {
  diffusion(h, xi, out, t);  // G is linear in V
  (void)v;
}

matrix lifted_linear::exact(const matrix& v0, const Eigen::Ref<const vector>& w_t, double t) const {
  if (!m_commuting)
    throw_invalid("lifted_linear::exact",
                  "A and the B_j do not commute, so there is no pathwise closed-form solution");
  require_state("lifted_linear::exact", v0, size());
  require_time("lifted_linear::exact", t);
  require_noise("lifted_linear::exact", w_t, static_cast<int>(m_b.size()));
  matrix exponent = m_a * t;
  for (std::size_t j = 0; j < m_b.size(); ++j)
    exponent += -0.5 * t * (m_b[j] * m_b[j]) + w_t(static_cast<Eigen::Index>(j)) * m_b[j];
  const matrix e = exponent.exp();
  return e * v0 * e.transpose();
}

matrix lifted_linear::mean(const matrix& v0, double t) const {
  require_state("lifted_linear::mean", v0, size());
  require_time("lifted_linear::mean", t);
  return unvec(linear_mean(m_generator, vec(v0), t), size());
}

matrix lifted_linear::second_moments(const matrix& v0, double t) const {
  require_state("lifted_linear::second_moments", v0, size());
  require_time("lifted_linear::second_moments", t);
  return linear_second(m_generator, m_noise_generators, vec(v0), t);
}

quadratic_form lifted_linear::conditional_second_moment(const matrix& f, double tau) const {
  require_time("lifted_linear::conditional_second_moment", tau);
  require_weights("lifted_linear::conditional_second_moment", f, size());
  const Eigen::Index n = m_generator.rows();
  const matrix id = matrix::Identity(n, n);
  matrix big = kron(id, m_generator) + kron(m_generator, id);
  for (const matrix& b : m_noise_generators) big += kron(b, b);
  quadratic_form u;
  u.q = adjoint_weights(big, f, tau);
  return u;
}

matrix lifted_linear::euler_mean(const matrix& v0, double h, long long n) const {
  require_state("lifted_linear::euler_mean", v0, size());
  require_steps("lifted_linear::euler_mean", h, n);
  return unvec(linear_euler_mean(m_generator, vec(v0), h, n), size());
}

matrix lifted_linear::euler_second_moments(const matrix& v0, double h, long long n) const {
  require_state("lifted_linear::euler_second_moments", v0, size());
  require_steps("lifted_linear::euler_second_moments", h, n);
  return linear_euler_second(m_generator, m_noise_generators, vec(v0), h, n);
}

// ---- linear_covariance ----

namespace {

/// The m⁴×m⁴ generator 𝓚 of the second moments of the linear covariance SDE acting on vec(M),
/// M(a + m b, c + m d) = E[V^{ab}V^{cd}]: (𝓚M)^{ab,cd} = M^{ac,bd} + M^{ad,bc}.
matrix linear_covariance_generator(int m) {
  const int n = m * m;
  auto idx = [m](int a, int b) { return a + m * b; };
  matrix k = matrix::Zero(n * n, n * n);
  for (int a = 0; a < m; ++a)
    for (int b = 0; b < m; ++b)
      for (int c = 0; c < m; ++c)
        for (int d = 0; d < m; ++d) {
          const int row = idx(a, b) + n * idx(c, d);
          k(row, idx(a, c) + n * idx(b, d)) += 1.0;
          k(row, idx(a, d) + n * idx(b, c)) += 1.0;
        }
  return k;
}

}  // namespace

void linear_covariance::drift(const matrix& v, matrix& out, double) const {
  out.setZero(v.rows(), v.cols());
}

void linear_covariance::diffusion(const matrix& v, const vector& xi, matrix& out, double) const {
  const Eigen::Index m = v.rows();
  NCSDE_ASSERT(xi.size() == m * m, "linear_covariance: xi must have m*m entries");
  const Eigen::Map<const matrix> g(xi.data(), m, m);
  m_w = (g + g.transpose()) / std::numbers::sqrt2;
  const matrix& l = m_factor.factor(v);
  // L W Lᵀ as diffusion_lanes forms it: T = L W, then T Lᵀ.
  ncsde::detail::matrix_product(m_h, l, m_w, m_factor.cholesky());
  ncsde::detail::matrix_product_transposed(out, m_h, l, m_factor.cholesky());
}

void linear_covariance::diffusion_derivative(const matrix& v, const matrix& h, const vector& xi,
                                             matrix& out, double) const {
  const Eigen::Index m = v.rows();
  NCSDE_ASSERT(xi.size() == m * m, "linear_covariance: xi must have m*m entries");
  const Eigen::Map<const matrix> g(xi.data(), m, m);
  m_w = (g + g.transpose()) / std::numbers::sqrt2;
  const matrix& l = m_factor.factor(v);
  m_factor.derivative(h, m_h);
  out.noalias() = m_h * m_w * l.transpose();
  out += out.transpose().eval();
}

void linear_covariance::drift_lanes(const lane_block& v, lane_block& out, double) const {
  out.setZero(batch_width, v.cols());
}

void linear_covariance::diffusion_lanes(const lane_block& v, const lane_block& xi, lane_block& out,
                                        double) const {
  const int m = lane_matrix_size(v);
  NCSDE_ASSERT(xi.cols() == m * m, "linear_covariance: xi must have m*m entries");
  m_lanes.factor(v, m);
  lane_block& w = m_lanes.w;
  w.resize(batch_width, v.cols());
  // W = (Ξ + Ξᵀ)/√2 is symmetric, and Ξ_ab + Ξ_ba is Ξ_ba + Ξ_ab exactly: each pair once.
  for (int b = 0; b < m; ++b)
    for (int a = b; a < m; ++a) {
      w.col(a + b * m) = (xi.col(a + b * m) + xi.col(b + a * m)) / std::numbers::sqrt2;
      if (a != b) w.col(b + a * m) = w.col(a + b * m);
    }
  lane_congruence(m_lanes, m, out);
}

void linear_covariance::covariance(const matrix& v, matrix& sigma, double) const {
  fill_packed_covariance(static_cast<int>(v.rows()), sigma, [&](int a, int b, int c, int d) {
    return v(a, c) * v(b, d) + v(a, d) * v(b, c);
  });
}

matrix linear_covariance::second_moments(const matrix& v0, double t) const {
  require_state("linear_covariance::second_moments", v0, 0);
  require_time("linear_covariance::second_moments", t);
  const int m = static_cast<int>(v0.rows());
  const vector x = vec(v0);
  const matrix p0 = x * x.transpose();
  return unvec_square((t * linear_covariance_generator(m)).exp() * vec(p0), m * m);
}

quadratic_form linear_covariance::conditional_second_moment(const matrix& f, double tau) const {
  require_time("linear_covariance::conditional_second_moment", tau);
  const int m = static_cast<int>(std::lround(std::sqrt(static_cast<double>(f.rows()))));
  require_weights("linear_covariance::conditional_second_moment", f, m);
  quadratic_form u;
  u.q = adjoint_weights(linear_covariance_generator(m), f, tau);
  return u;
}

matrix linear_covariance::euler_second_moments(const matrix& v0, double h, long long n) const {
  require_state("linear_covariance::euler_second_moments", v0, 0);
  require_steps("linear_covariance::euler_second_moments", h, n);
  // V_{k+1} = V_k + G(V_k)ΔW: E[V⊗V]_{k+1} = E[V⊗V]_k + h E[Σ_lin(V_k)] = (I + h𝓚) E[V⊗V]_k.
  const int m = static_cast<int>(v0.rows());
  const matrix k = linear_covariance_generator(m);
  const matrix step = matrix::Identity(k.rows(), k.cols()) + h * k;
  const vector x = vec(v0);
  const matrix p0 = x * x.transpose();
  return unvec_square(matrix_power(step, n) * vec(p0), m * m);
}

// ---- wishart ----

namespace {

/// S(V) as an m²×m² matrix over vec indices: S^{ab,cd} = V^{ac}δ^{bd} + V^{ad}δ^{bc} + V^{bc}δ^{ad}
/// + V^{bd}δ^{ac}.
matrix wishart_s(const matrix& v) {
  const Eigen::Index m = v.rows();
  matrix s = matrix::Zero(m * m, m * m);
  for (Eigen::Index a = 0; a < m; ++a)
    for (Eigen::Index b = 0; b < m; ++b)
      for (Eigen::Index c = 0; c < m; ++c)
        for (Eigen::Index d = 0; d < m; ++d)
          s(a + m * b, c + m * d) = (b == d ? v(a, c) : 0.0) + (b == c ? v(a, d) : 0.0) +
                                    (a == d ? v(b, c) : 0.0) + (a == c ? v(b, d) : 0.0);
  return s;
}

}  // namespace

wishart::wishart(double p) : m_p(p) {
  if (!(p > 0) || !std::isfinite(p)) throw_invalid_argument("wishart", "p", p, "> 0 and finite");
}

void wishart::drift(const matrix& v, matrix& out, double) const {
  out = m_p * matrix::Identity(v.rows(), v.cols());
}

void wishart::diffusion(const matrix& v, const vector& xi, matrix& out, double) const {
  const Eigen::Index m = v.rows();
  NCSDE_ASSERT(xi.size() == m * m, "wishart: xi must have m*m entries");
  const Eigen::Map<const matrix> g(xi.data(), m, m);
  const matrix& l = m_factor.factor(v);
  ncsde::detail::matrix_product(out, l, g, m_factor.cholesky());
  out += out.transpose().eval();
}

void wishart::drift_lanes(const lane_block& v, lane_block& out, double) const {
  const int m = lane_matrix_size(v);
  out.setZero(batch_width, v.cols());
  for (int a = 0; a < m; ++a) out.col(a + a * m).setConstant(m_p);
}

void wishart::diffusion_lanes(const lane_block& v, const lane_block& xi, lane_block& out,
                              double) const {
  const int m = lane_matrix_size(v);
  NCSDE_ASSERT(xi.cols() == m * m, "wishart: xi must have m*m entries");
  m_lanes.factor(v, m);
  // T = L Ξ, out = T + Tᵀ.
  lane_factor_product(m_lanes, xi, m);
  const lane_block& t = m_lanes.t;
  out.resize(batch_width, v.cols());
  for (int b = 0; b < m; ++b)
    for (int a = 0; a < m; ++a) out.col(a + b * m) = t.col(a + b * m) + t.col(b + a * m);
}

void wishart::diffusion_derivative(const matrix& v, const matrix& h, const vector& xi, matrix& out,
                                   double) const {
  const Eigen::Index m = v.rows();
  NCSDE_ASSERT(xi.size() == m * m, "wishart: xi must have m*m entries");
  const Eigen::Map<const matrix> g(xi.data(), m, m);
  m_factor.factor(v);
  m_factor.derivative(h, m_h);
  out.noalias() = m_h * g;
  out += out.transpose().eval();
}

void wishart::covariance(const matrix& v, matrix& sigma, double) const {
  fill_packed_covariance(static_cast<int>(v.rows()), sigma, [&](int a, int b, int c, int d) {
    return (b == d ? v(a, c) : 0.0) + (b == c ? v(a, d) : 0.0) + (a == d ? v(b, c) : 0.0) +
           (a == c ? v(b, d) : 0.0);
  });
}

matrix wishart::exact_in_law(const matrix& x0, const matrix& w) {
  if (w.rows() != x0.rows() || w.cols() != x0.cols())
    throw_invalid_argument("wishart::exact_in_law", "W", fmt::format("{}x{}", w.rows(), w.cols()),
                           fmt::format("{}x{} like X0", x0.rows(), x0.cols()));
  const matrix x = x0 + w;
  return x * x.transpose();
}

matrix wishart::mean(const matrix& v0, double t) const {
  require_state("wishart::mean", v0, 0);
  require_time("wishart::mean", t);
  return v0 + m_p * t * matrix::Identity(v0.rows(), v0.cols());
}

matrix wishart::second_moments(const matrix& v0, double t) const {
  require_state("wishart::second_moments", v0, 0);
  require_time("wishart::second_moments", t);
  const Eigen::Index m = v0.rows();
  const matrix id = matrix::Identity(m, m);
  const vector x = vec(v0), e = vec(id);
  const double p = m_p;
  return x * x.transpose() + t * (p * (e * x.transpose() + x * e.transpose()) + wishart_s(v0)) +
         0.5 * t * t * (2 * p * p * e * e.transpose() + p * wishart_s(id));
}

quadratic_form wishart::conditional_second_moment(const matrix& f, double tau) const {
  require_time("wishart::conditional_second_moment", tau);
  const int m = static_cast<int>(std::lround(std::sqrt(static_cast<double>(f.rows()))));
  require_weights("wishart::conditional_second_moment", f, m);
  const matrix id = matrix::Identity(m, m);
  const vector e = vec(id);
  const double p = m_p;
  quadratic_form u;
  u.q = f;
  // ⟨F, p(e xᵀ + x eᵀ)⟩ = p (Fᵀe + F e)ᵀ x; ⟨F, S(x)⟩ is linear in x: read it off the unit
  // matrices.
  u.l = p * (f.transpose() * e + f * e);
  matrix unit = matrix::Zero(m, m);
  for (int i = 0; i < m * m; ++i) {
    unit(i % m, i / m) = 1.0;
    u.l(i) += f.cwiseProduct(wishart_s(unit)).sum();
    unit(i % m, i / m) = 0.0;
  }
  u.l *= tau;
  u.c = 0.5 * tau * tau * f.cwiseProduct(2 * p * p * e * e.transpose() + p * wishart_s(id)).sum();
  return u;
}

matrix wishart::euler_second_moments(const matrix& v0, double h, long long n) const {
  require_state("wishart::euler_second_moments", v0, 0);
  require_steps("wishart::euler_second_moments", h, n);
  // E[V_k] = V0 + p k h I exactly; E[V⊗V]_{k+1} = E[V⊗V]_k + p h (I⊗E[V_k] + E[V_k]⊗I) + p²h² I⊗I
  // + h S(E[V_k]). Summed over k < n with Σ_k E[V_k] = n V0 + p h n(n−1)/2 I.
  const Eigen::Index m = v0.rows();
  const matrix id = matrix::Identity(m, m);
  const double p = m_p, nn = static_cast<double>(n);
  const matrix sum_mean = nn * v0 + p * h * nn * (nn - 1) / 2 * id;
  const vector x = vec(v0), e = vec(id), s = vec(sum_mean);
  return x * x.transpose() + p * h * (e * s.transpose() + s * e.transpose()) +
         nn * p * p * h * h * e * e.transpose() + h * wishart_s(sum_mean);
}

}  // namespace ncsde::analytic
