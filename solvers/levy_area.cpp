#include "ncsde/levy_area.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "ncsde/error.hpp"

namespace ncsde {
namespace {

/// ψ'(p + 1) = Σ_{r > p} 1/r² = π²/6 − Σ_{r ≤ p} 1/r² (summed from the small end for accuracy).
double trigamma_tail(int p) {
  double head = 0.0;
  for (int r = p; r >= 1; --r) head += 1.0 / (static_cast<double>(r) * r);
  return std::max(0.0, std::numbers::pi * std::numbers::pi / 6.0 - head);
}

}  // namespace

int levy_area_terms(int k, double h, levy_area_method method) {
  if (!(h > 0)) throw_invalid_argument("levy_area_terms", "h", h, "> 0");
  if (k < 1) throw_invalid_argument("levy_area_terms", "k", k, ">= 1");
  const double pi = std::numbers::pi;
  double p = 1.0;
  switch (method) {
    case levy_area_method::wiktorsson:
      p = std::sqrt(5.0 * k) / (std::sqrt(12.0) * pi * std::sqrt(h));
      break;
    case levy_area_method::fourier:
      p = 3.0 / (2.0 * pi * pi * h);
      break;
  }
  return static_cast<int>(std::max(1.0, std::ceil(std::min(p, 1e7))));
}

int levy_area_leaf_terms(int k, double h, int depth, levy_area_method method) {
  if (depth < 0 || depth > 62)
    throw_invalid_argument("levy_area_leaf_terms", "depth", depth, "in [0, 62]");
  // Both methods' terms scale as a power of 1/h (h^(−1/2), h^(−1)) matching the 2^(−depth/2),
  // 2^(−depth) the leaves need: they take the terms of a step 2^depth times as long.
  return levy_area_terms(k, std::ldexp(h, depth), method);
}

std::ptrdiff_t iterated_integrals::normals_needed(int k, int terms, levy_area_method method) {
  const std::ptrdiff_t series = 2 * static_cast<std::ptrdiff_t>(k) * terms;
  return method == levy_area_method::wiktorsson ? series + k * (k - 1) / 2 : series;
}

void iterated_integrals::generate(noise_increment& inc, const random_stream& stream,
                                  std::uint64_t step, std::uint64_t node, int terms) {
  const int k = inc.dimension();
  if (terms <= 0) terms = levy_area_terms(k, inc.dt, m_method);
  m_normals.resize(normals_needed(k, terms, m_method));
  stream.normals(random_domain::levy_area, step, node, m_normals);
  generate_from(inc, m_normals, terms);
}

void iterated_integrals::generate_from(noise_increment& inc,
                                       const Eigen::Ref<const vector>& normals, int terms) {
  const int k = inc.dimension();
  const double h = inc.dt;
  NCSDE_ASSERT(h > 0, "iterated_integrals: dt must be > 0");
  NCSDE_ASSERT(normals.size() == normals_needed(k, terms, m_method),
               "iterated_integrals: wrong number of normals");
  // Work on the unit step: w = dw/√h; I_h = h·I_1(w).
  const double sqrt_h = std::sqrt(h);
  m_w = inc.dw / sqrt_h;
  m_x = Eigen::Map<const matrix>(normals.data(), terms, k);
  m_y = Eigen::Map<const matrix>(normals.data() + static_cast<std::ptrdiff_t>(terms) * k, k, terms);
  // Fourier coefficients of the bridge: column r of Y becomes (Y_r − √2 w)/r.
  for (int r = 0; r < terms; ++r) m_y.col(r) = (m_y.col(r) - std::numbers::sqrt2 * m_w) / (r + 1.0);
  // S = Y X. Eigen packs a product's operands into buffers of up to depth·k doubles, on the stack
  // below EIGEN_STACK_ALLOCATION_LIMIT and on the heap above it (at every step). A deep product is
  // therefore summed over chunks of at most `chunk` terms; a product that fits (terms ≤ chunk, e.g.
  // k = 128 up to 128 terms) is the single plain product.
  const int chunk =
      std::max(1, static_cast<int>(EIGEN_STACK_ALLOCATION_LIMIT / sizeof(double)) / k);
  if (terms <= chunk) {
    m_a.noalias() = m_y * m_x;
  } else {
    m_a.noalias() = m_y.leftCols(chunk) * m_x.topRows(chunk);
    for (int first = chunk; first < terms; first += chunk) {
      const int n = std::min(chunk, terms - first);
      m_a.noalias() += m_y.middleCols(first, n) * m_x.middleRows(first, n);
    }
  }
  if (m_method == levy_area_method::wiktorsson) {
    // Tail: a Gaussian antisymmetric G with scale √(2ψ'(p+1)), then the correction that matches the
    // tail's covariance conditional on w: A += G_lower + (G w) wᵀ / (1 + √(1 + |w|²)).
    const double scale = std::sqrt(2.0 * trigamma_tail(terms));
    const double* g = normals.data() + 2 * static_cast<std::ptrdiff_t>(terms) * k;
    matrix& anti = inc.iterated;  // borrowed as workspace, overwritten below
    anti.setZero(k, k);
    for (int j = 0; j < k; ++j)
      for (int i = j + 1; i < k; ++i) {
        const double x = scale * *g++;
        anti(i, j) = x;
        anti(j, i) = -x;
        m_a(i, j) += x;
      }
    m_gw.noalias() = anti * m_w;
    m_a.noalias() += (m_gw / (1.0 + std::sqrt(1.0 + m_w.squaredNorm()))) * m_w.transpose();
  }
  // Lévy area A = (S − Sᵀ)/(2π); I = (w wᵀ − Id)/2 + A, scaled back by h.
  inc.iterated = (m_a - m_a.transpose()) / (2.0 * std::numbers::pi);
  inc.iterated.noalias() += 0.5 * m_w * m_w.transpose();
  inc.iterated.diagonal().array() -= 0.5;
  inc.iterated *= h;
  inc.has_iterated = true;
}

}  // namespace ncsde
