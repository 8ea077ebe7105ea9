#include "fidelity/fidelity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "ncsde/error.hpp"

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

comparison mean_difference(std::string name, const std::vector<double>& sample,
                           const std::vector<double>& reference) {
  if (sample.empty() || reference.empty())
    throw_invalid_argument("mean_difference", "samples", "empty", "both samples non-empty");
  auto moments = [](const std::vector<double>& x) {
    double mean = 0.0;
    for (const double v : x) mean += v;
    mean /= static_cast<double>(x.size());
    double ss = 0.0;
    for (const double v : x) ss += (v - mean) * (v - mean);
    const double var = x.size() > 1 ? ss / static_cast<double>(x.size() - 1) : 0.0;
    return std::pair{mean, var / static_cast<double>(x.size())};
  };
  const auto [m1, v1] = moments(sample);
  const auto [m2, v2] = moments(reference);
  if (!std::isfinite(m1) || !std::isfinite(m2) || !std::isfinite(v1) || !std::isfinite(v2))
    throw_invalid_argument("mean_difference", "samples", "non-finite values",
                           "finite values of a bounded functional");
  comparison c;
  c.statistic = std::move(name);
  c.value = m1;
  c.reference = m2;
  c.stderr_ = std::sqrt(v1 + v2);
  if (c.stderr_ > 0.0)
    c.p_value = std::erfc(std::abs(m1 - m2) / c.stderr_ / std::sqrt(2.0));
  else
    c.p_value = m1 == m2 ? 1.0 : 0.0;
  return c;
}

std::vector<std::string> smooth_names(int m) {
  std::vector<std::string> names;
  for (int a = 0; a < m; ++a)
    for (int b = a + 1; b < m; ++b) names.push_back(fmt::format("E rho{}{}", a + 1, b + 1));
  for (int a = 0; a < m; ++a) names.push_back(fmt::format("E V{}{}∧K", a + 1, a + 1));
  return names;
}

std::vector<std::vector<double>> smooth_values(int m, const stopped_sample& s, double stop_level) {
  std::vector<std::vector<double>> out;
  auto collect = [&](const functional& f, double at_blowup, double low, double high) {
    std::vector<double> x = s.values(f, m);
    for (double& v : x) v = std::isfinite(v) ? std::clamp(v, low, high) : at_blowup;
    out.push_back(std::move(x));
  };
  for (int a = 0; a < m; ++a)
    for (int b = a + 1; b < m; ++b) collect(correlation_functional(a, b), 1.0, -1.0, 1.0);
  for (int a = 0; a < m; ++a) collect(entry_functional(a, a), stop_level, -stop_level, stop_level);
  return out;
}

std::vector<comparison> smooth_gaps(int m, const stopped_sample& sample,
                                    const stopped_sample& reference, double stop_level) {
  const std::vector<std::string> names = smooth_names(m);
  const std::vector<std::vector<double>> x = smooth_values(m, sample, stop_level);
  const std::vector<std::vector<double>> y = smooth_values(m, reference, stop_level);
  std::vector<comparison> out;
  for (std::size_t f = 0; f < names.size(); ++f)
    out.push_back(mean_difference(names[f], x[f], y[f]));
  return out;
}

power_fit fit_power(const std::vector<double>& n, const std::vector<std::vector<double>>& gaps,
                    const std::vector<std::vector<double>>& stderrs) {
  if (gaps.size() != stderrs.size())
    throw_invalid_argument("fit_power", "stderrs", stderrs.size(),
                           fmt::format("one list per functional ({})", gaps.size()));
  power_fit fit;
  for (std::size_t f = 0; f < gaps.size(); ++f) {
    if (gaps[f].size() != n.size() || stderrs[f].size() != n.size())
      throw_invalid_argument("fit_power", "gaps", gaps[f].size(),
                             fmt::format("one gap and one stderr per width ({})", n.size()));
    for (std::size_t i = 0; i < n.size(); ++i)
      if (!(stderrs[f][i] > 0.0) || !std::isfinite(gaps[f][i]) || !(n[i] > 0.0))
        throw_invalid_argument("fit_power", "stderr", stderrs[f][i],
                               "> 0, with finite gaps and positive widths");
  }
  fit.points = static_cast<int>(gaps.size() * n.size());
  fit.dof = fit.points - static_cast<int>(gaps.size()) - 1;
  // Profile χ²: for fixed β each C_f = Σ w g x / Σ w x², x = n^{−β}.
  auto chi2 = [&](double beta) {
    double total = 0.0;
    for (std::size_t f = 0; f < gaps.size(); ++f) {
      double sxy = 0.0, sxx = 0.0;
      for (std::size_t i = 0; i < n.size(); ++i) {
        const double w = 1.0 / (stderrs[f][i] * stderrs[f][i]);
        const double x = std::pow(n[i], -beta);
        sxy += w * gaps[f][i] * x;
        sxx += w * x * x;
      }
      const double c = sxy / sxx;
      for (std::size_t i = 0; i < n.size(); ++i) {
        const double r = (gaps[f][i] - c * std::pow(n[i], -beta)) / stderrs[f][i];
        total += r * r;
      }
    }
    return total;
  };
  constexpr double lo = -1.0, hi = 3.0, h = 1e-3;
  const int steps = static_cast<int>(std::lround((hi - lo) / h));
  std::vector<double> profile(static_cast<std::size_t>(steps) + 1);
  std::size_t best = 0;
  for (int k = 0; k <= steps; ++k) {
    profile[k] = chi2(lo + h * k);
    if (profile[k] < profile[best]) best = static_cast<std::size_t>(k);
  }
  double beta = lo + h * static_cast<double>(best);
  double chi_min = profile[best];
  if (best > 0 && best + 1 < profile.size()) {
    const double a = profile[best - 1], b = profile[best], c = profile[best + 1];
    const double curvature = a - 2.0 * b + c;
    if (curvature > 0.0) {
      const double shift = 0.5 * (a - c) / curvature;
      beta += h * shift;
      chi_min = std::min(chi_min, b - 0.25 * (a - c) * shift);
    }
  }
  // The Δχ² = 1 interval, scanned outwards from the minimum on the grid.
  std::size_t left = best, right = best;
  while (left > 0 && profile[left] <= chi_min + 1.0) --left;
  while (right + 1 < profile.size() && profile[right] <= chi_min + 1.0) ++right;
  fit.bounded = profile[left] > chi_min + 1.0 && profile[right] > chi_min + 1.0;
  const double scale = fit.dof > 0 ? std::max(1.0, std::sqrt(chi_min / fit.dof)) : 1.0;
  fit.exponent = beta;
  fit.exponent_stderr = 0.5 * h * static_cast<double>(right - left) * scale;
  fit.chi2 = chi_min;
  return fit;
}

std::vector<comparison> limit_gaps(const std::vector<double>& n,
                                   const std::vector<std::string>& names,
                                   const std::vector<std::vector<double>>& gaps,
                                   const std::vector<std::vector<double>>& stderrs, double beta) {
  if (n.size() < 2) throw_invalid_argument("limit_gaps", "widths", n.size(), ">= 2");
  if (!std::isfinite(beta) || !(beta > 0.0))
    throw_invalid_argument("limit_gaps", "beta", beta, "> 0 and finite");
  if (gaps.size() != names.size() || stderrs.size() != names.size())
    throw_invalid_argument("limit_gaps", "gaps", gaps.size(),
                           fmt::format("one list per functional ({})", names.size()));
  std::vector<comparison> out;
  for (std::size_t f = 0; f < names.size(); ++f) {
    if (gaps[f].size() != n.size() || stderrs[f].size() != n.size())
      throw_invalid_argument("limit_gaps", "gaps", gaps[f].size(),
                             fmt::format("one gap and one stderr per width ({})", n.size()));
    double s0 = 0.0, sx = 0.0, sxx = 0.0, sy = 0.0, sxy = 0.0;
    for (std::size_t i = 0; i < n.size(); ++i) {
      if (!(stderrs[f][i] > 0.0) || !std::isfinite(gaps[f][i]))
        throw_invalid_argument("limit_gaps", "stderr", stderrs[f][i], "> 0 with a finite gap");
      const double w = 1.0 / (stderrs[f][i] * stderrs[f][i]);
      const double x = std::pow(n[i], -beta);
      s0 += w;
      sx += w * x;
      sxx += w * x * x;
      sy += w * gaps[f][i];
      sxy += w * x * gaps[f][i];
    }
    const double det = s0 * sxx - sx * sx;
    if (!(det > 0.0))
      throw_invalid_argument("limit_gaps", "widths", n.size(), "at least two distinct widths");
    const double a = (sxx * sy - sx * sxy) / det;
    const double c = (s0 * sxy - sx * sy) / det;
    double chi2 = 0.0;
    for (std::size_t i = 0; i < n.size(); ++i) {
      const double r = (gaps[f][i] - a - c * std::pow(n[i], -beta)) / stderrs[f][i];
      chi2 += r * r;
    }
    const int dof = static_cast<int>(n.size()) - 2;
    const double widen = dof > 0 ? std::max(1.0, std::sqrt(chi2 / dof)) : 1.0;
    comparison out_f;
    out_f.statistic = names[f];
    out_f.value = a;
    out_f.reference = 0.0;
    out_f.stderr_ = std::sqrt(sxx / det) * widen;
    out_f.p_value = std::erfc(std::abs(a) / out_f.stderr_ / std::sqrt(2.0));
    out.push_back(std::move(out_f));
  }
  return out;
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
                                const stopped_sample& reference_unstopped, double stop_level,
                                double tail_level, double unstopped_level) {
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
  for (comparison& c : smooth_gaps(m, sample, reference, stop_level)) out.push_back(std::move(c));
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
