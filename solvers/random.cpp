#include "ncsde/random.hpp"

#include <Random123/philox.h>

#include <cmath>
#include <numbers>

namespace ncsde {
namespace {

using philox = r123::Philox4x64;

/// Maps 64 random bits to a double in (0, 1]: the top 53 bits, plus one ulp so 0 never occurs
/// (log(u) in Box–Muller must stay finite).
inline double to_unit_interval(std::uint64_t bits) {
  constexpr double scale = 1.0 / 9007199254740992.0;  // 2^-53
  return (static_cast<double>(bits >> 11) + 1.0) * scale;
}

template <class Emit>
void generate(std::uint64_t seed, std::uint64_t path, random_domain domain, std::uint64_t i0,
              std::uint64_t i1, std::ptrdiff_t count, Emit&& emit) {
  const philox::key_type key = {{seed, path}};
  philox::ctr_type ctr = {{0, i0, i1, static_cast<std::uint64_t>(domain)}};
  philox gen;
  for (std::ptrdiff_t j = 0; j < count; j += 4) {
    ctr[0] = static_cast<std::uint64_t>(j / 4);
    const philox::ctr_type r = gen(ctr, key);
    emit(j, r);
  }
}

}  // namespace

void random_stream::normals(random_domain domain, std::uint64_t i0, std::uint64_t i1, double* out,
                            std::ptrdiff_t count) const {
  generate(m_seed, m_path, domain, i0, i1, count, [&](std::ptrdiff_t j, const philox::ctr_type& r) {
    // Two Box–Muller pairs from four 64-bit words.
    for (int pair = 0; pair < 2; ++pair) {
      const double u1 = to_unit_interval(r[2 * pair]);
      const double u2 = to_unit_interval(r[2 * pair + 1]);
      const double radius = std::sqrt(-2.0 * std::log(u1));
      const double angle = 2.0 * std::numbers::pi * u2;
      const std::ptrdiff_t k = j + 2 * pair;
      if (k < count) out[k] = radius * std::cos(angle);
      if (k + 1 < count) out[k + 1] = radius * std::sin(angle);
    }
  });
}

void random_stream::normals(random_domain domain, std::uint64_t i0, std::uint64_t i1,
                            Eigen::Ref<Eigen::VectorXd> out) const {
  normals(domain, i0, i1, out.data(), out.size());
}

void random_stream::uniforms(random_domain domain, std::uint64_t i0, std::uint64_t i1, double* out,
                             std::ptrdiff_t count) const {
  generate(m_seed, m_path, domain, i0, i1, count, [&](std::ptrdiff_t j, const philox::ctr_type& r) {
    for (int w = 0; w < 4 && j + w < count; ++w) out[j + w] = to_unit_interval(r[w]);
  });
}

}  // namespace ncsde
