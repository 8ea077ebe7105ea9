#include "fidelity/fidelity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ncsde::cli {

stopped_sample stopped_of(const networks::network_ensemble& e) {
  stopped_sample s;
  s.status.reserve(e.records.size());
  s.packed.reserve(e.records.size());
  for (const networks::network_record& r : e.records) {
    s.status.push_back(r.status);
    s.packed.push_back(r.stopped_value());
  }
  return s;
}

stopped_sample unstopped_of(const networks::network_ensemble& e) {
  stopped_sample s;
  s.status.reserve(e.records.size());
  s.packed.reserve(e.records.size());
  for (const networks::network_record& r : e.records) {
    s.status.push_back(r.status == path_status::blown_up ? path_status::blown_up
                                                         : path_status::completed);
    s.packed.push_back(r.packed.back());
  }
  return s;
}

comparison proportion_test(std::string name, long long hits1, long long n1, long long hits2,
                           long long n2) {
  comparison c;
  c.statistic = std::move(name);
  c.value = static_cast<double>(hits1) / static_cast<double>(n1);
  c.reference = static_cast<double>(hits2) / static_cast<double>(n2);
  const double pooled = static_cast<double>(hits1 + hits2) / static_cast<double>(n1 + n2);
  const double se = std::sqrt(pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2));
  c.stderr_ = std::sqrt(c.value * (1 - c.value) / n1 + c.reference * (1 - c.reference) / n2);
  if (se > 0.0) {
    const double z = std::abs(c.value - c.reference) / se;
    c.p_value = std::erfc(z / std::sqrt(2.0));
  } else {
    c.p_value = c.value == c.reference ? 1.0 : 0.0;
  }
  return c;
}

std::vector<comparison> compare(int m, const stopped_sample& sample,
                                const stopped_sample& reference,
                                const stopped_sample& sample_unstopped,
                                const stopped_sample& reference_unstopped, double tail_level,
                                double unstopped_level) {
  std::vector<comparison> out;
  auto ks = [&](const std::string& name, const functional& f) {
    const ks_result r = ks_two_sample(sample.values(f, m), reference.values(f, m));
    comparison c;
    c.statistic = "KS " + name;
    c.value = r.distance;
    c.p_value = r.p_value;
    out.push_back(c);
  };
  for (int a = 0; a < m; ++a)
    for (int b = a + 1; b < m; ++b)
      ks(fmt::format("rho{}{}", a + 1, b + 1), correlation_functional(a, b));
  for (int a = 0; a < m; ++a) ks(fmt::format("V{}{}", a + 1, a + 1), entry_functional(a, a));
  out.push_back(proportion_test("stopped fraction", sample.stopped(),
                                static_cast<long long>(sample.status.size()), reference.stopped(),
                                static_cast<long long>(reference.status.size())));
  auto tail_hits = [&](const stopped_sample& s, const functional& f, double level) {
    long long hits = 0;
    for (const double x : s.values(f, m))
      if (x >= level) ++hits;
    return hits;
  };
  auto tail = [&](std::string name, const stopped_sample& a, const stopped_sample& b,
                  const functional& f, double level) {
    return proportion_test(std::move(name), tail_hits(a, f, level),
                           static_cast<long long>(a.status.size()), tail_hits(b, f, level),
                           static_cast<long long>(b.status.size()));
  };
  out.push_back(tail(fmt::format("P(V11_T∧τ >= {:g})", tail_level), sample, reference,
                     entry_functional(0, 0), tail_level));
  // Unstopped: max_a V^{aa}_T, so that an SDE path which blew up (in whichever entry; values() gives
  // it +inf) counts, and a network's growth in any entry too.
  const functional max_diagonal{"max_a V^aa",
                                [](const matrix& v) { return v.diagonal().maxCoeff(); }};
  comparison unstopped = tail(fmt::format("P(max V^aa_T >= {:g}) unstopped", unstopped_level),
                              sample_unstopped, reference_unstopped, max_diagonal, unstopped_level);
  unstopped.in_family = false;
  out.push_back(unstopped);
  return out;
}

double bonferroni(const std::vector<comparison>& c) {
  double p = 1.0;
  long long count = 0;
  for (const comparison& x : c) {
    if (!x.in_family) continue;
    p = std::min(p, x.p_value);
    ++count;
  }
  return std::min(1.0, p * static_cast<double>(count));
}

}  // namespace ncsde::cli
