#include "ncsde/models/shaped_tanh.hpp"

#include <fmt/format.h>

#include <Eigen/QR>
#include <algorithm>
#include <cmath>

#include "ncsde/error.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::models {

smooth_activation tanh_activation() {
  return {"tanh", [](double x) { return std::tanh(x); }, 0.0, -2.0, 0.0, 16.0};
}

smooth_activation swish_activation() {
  return {"2x*sigmoid(x)",
          [](double x) { return 2.0 * x / (1.0 + std::exp(-x)); },
          1.0,
          0.0,
          -1.0,
          0.0};
}

void validate_activation(std::string_view where, const smooth_activation& act) {
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

namespace {

shaped_activation_sde::params checked_params(const smooth_activation& act, double a) {
  validate_activation("shaped_activation_sde", act);
  return shaped_activation_sde::params{act.d2, act.d3, a};
}

}  // namespace

shaped_activation_sde::shaped_activation_sde(const params& p) : m_params(p) {
  constexpr std::string_view where = "shaped_activation_sde";
  if (!(p.a > 0) || !std::isfinite(p.a))
    ncsde::throw_invalid_argument(where, "a", p.a, "> 0 and finite");
  if (!std::isfinite(p.d2)) ncsde::throw_invalid_argument(where, "d2", p.d2, "finite");
  if (!std::isfinite(p.d3)) ncsde::throw_invalid_argument(where, "d3", p.d3, "finite");
  m_q = p.d2 * p.d2 / (4 * p.a * p.a);
  m_r = p.d3 / (2 * p.a * p.a);
}

shaped_activation_sde::shaped_activation_sde(const smooth_activation& act, double a)
    : shaped_activation_sde(checked_params(act, a)) {}

void shaped_activation_sde::drift(const matrix& v, matrix& out, double /*t*/) const {
  const Eigen::Index m = v.rows();
  out.resize(m, m);
  for (Eigen::Index a = 0; a < m; ++a)
    for (Eigen::Index b = a; b < m; ++b) {
      const double vab = v(a, b);
      out(a, b) = m_q * (v(a, a) * v(b, b) + 2 * vab * vab) + m_r * vab * (v(a, a) + v(b, b));
      out(b, a) = out(a, b);
    }
}

void shaped_activation_sde::diffusion(const matrix& v, const vector& xi, matrix& out,
                                      double /*t*/) const {
  const Eigen::Index m = v.rows();
  NCSDE_ASSERT(xi.size() == m * m, "shaped_activation_sde: xi must have m^2 entries");
  m_factor.compute(v);
  noise_lin(m_factor.l(), Eigen::Map<const matrix>(xi.data(), m, m), out);
}

void shaped_activation_sde::covariance(const matrix& v, matrix& sigma, double /*t*/) const {
  sigma_lin(v, sigma);
}

shaped_activation_network::shaped_activation_network(const smooth_activation& act, double a, int m,
                                                     int n)
    : m_act(act), m_a(a), m_m(m), m_n(n) {
  constexpr std::string_view where = "shaped_activation_network";
  validate_activation(where, act);
  if (!(a > 0) || !std::isfinite(a)) ncsde::throw_invalid_argument(where, "a", a, "> 0 and finite");
  if (!(m >= 1)) ncsde::throw_invalid_argument(where, "m", m, ">= 1");
  if (!(n >= 2)) ncsde::throw_invalid_argument(where, "n", n, ">= 2");
  if (!(n >= m))
    ncsde::throw_invalid_argument(where, "n", n,
                                  fmt::format(">= m = {} (X0 has m orthonormal rows)", m));
  m_s = a * std::sqrt(static_cast<double>(n));
}

matrix shaped_activation_network::initial_state(const matrix& v0,
                                                const random_stream& stream) const {
  const matrix v = ncsde::validate_state("shaped_activation_network", "V0", v0);
  if (v.rows() != m_m)
    ncsde::throw_invalid_argument("shaped_activation_network", "V0 rows", v.rows(),
                                  fmt::format("m = {}", m_m));
  matrix g(m_n, m_m);
  stream.normals(ncsde::random_domain::initial, 0, 0, g.data(), g.size());
  // A Gaussian n×m matrix has full column rank with probability 1.
  const Eigen::HouseholderQR<matrix> qr(g);
  const matrix q = qr.householderQ() * matrix::Identity(m_n, m_m);
  return std::sqrt(static_cast<double>(m_n)) * (factor(v) * q.transpose());
}

void shaped_activation_network::layer(const matrix& x, std::uint64_t l, const random_stream& stream,
                                      matrix& w, matrix& h, matrix& x_next) const {
  NCSDE_ASSERT(x.rows() == m_m && x.cols() == m_n, "shaped_activation_network: X must be m×n");
  w.resize(m_n, m_n);
  stream.normals(ncsde::random_domain::user, l, 0, w.data(), w.size());
  h.noalias() = x * w;
  h *= 1.0 / std::sqrt(static_cast<double>(m_n));
  x_next = h.unaryExpr([this](double y) { return sigma_s(y); });
}

void shaped_activation_network::step(state& s, std::uint64_t l, const random_stream& stream) const {
  layer(s.x, l, stream, s.w, s.h, s.next);
  s.x.swap(s.next);
}

matrix shaped_activation_network::covariance(const state& s) const {
  return (s.x * s.x.transpose() / static_cast<double>(m_n)).eval();
}

matrix shaped_activation_network::run(const matrix& v0, int d, const random_stream& stream) const {
  if (!(d >= 0)) ncsde::throw_invalid_argument("shaped_activation_network", "d", d, ">= 0");
  matrix x = initial_state(v0, stream), w, h, x_next;
  for (int l = 0; l < d; ++l) {
    layer(x, static_cast<std::uint64_t>(l), stream, w, h, x_next);
    x.swap(x_next);
  }
  return (x * x.transpose() / static_cast<double>(m_n)).eval();
}

}  // namespace ncsde::models
