// The report of `ncsde validate` from its samples (validate_report.hpp).
#include "fidelity/validate_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/special_functions/erf.hpp>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "ncsde/error.hpp"
#include "ncsde/networks/sample.hpp"
#include "ncsde/statistics.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::cli {
namespace {

struct report_row {
  std::string source;     ///< e.g. "network n=64"
  std::string reference;  ///< e.g. "SDE on grid 1/64"
  std::string key;        ///< short name used in the CSV files, e.g. "network_n64"
  int n = 0;              ///< width whose grid was used
  std::vector<comparison> comparisons;
  double adjusted_p = 1.0;
  std::vector<double> rho12_quantiles;
};

/// The gaps of one SDE to the networks, extrapolated to n → ∞ (limit_gaps).
struct limit_row {
  std::string source;
  std::vector<comparison> gaps;
  double adjusted_p = 1.0;
  /// The gaps it extrapolates: [functional][width], and their standard errors.
  std::vector<std::vector<double>> by_width, by_width_stderr;
};

const std::vector<double> quantile_levels{0.05, 0.25, 0.5, 0.75, 0.95};

std::vector<double> quantiles_of(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  std::vector<double> q;
  for (const double p : quantile_levels) q.push_back(quantile_sorted(x, p));
  return q;
}

std::string packed_header(int m) {
  std::string h;
  for (int a = 1; a <= m; ++a)
    for (int b = a; b <= m; ++b) h += fmt::format(",V{}{}", a, b);
  return h;
}

void write_values(std::ostream& out, const std::string& key, const stopped_sample& s) {
  for (std::size_t i = 0; i < s.status.size(); ++i) {
    out << key << ',' << i << ',' << to_string(s.status[i]);
    for (Eigen::Index j = 0; j < s.packed[i].size(); ++j)
      out << ',' << fmt::format("{:.17g}", s.packed[i](j));
    out << '\n';
  }
}

std::string format_p(double p) {
  return p < 1e-4 ? fmt::format("{:.1e}", p) : fmt::format("{:.4f}", p);
}

bool is_smooth(const comparison& c) { return c.statistic.rfind("E ", 0) == 0; }
bool is_ks(const comparison& c) { return c.statistic.rfind("KS ", 0) == 0; }

/// The smooth-statistic table: per row, E f(source) − E f(reference) ± SE for every smooth
/// functional, and the rate fitted over the network rows.
std::string smooth_table(const std::vector<report_row>& rows, const std::string& rate) {
  std::ostringstream s;
  s << "\n**Smooth statistics**: E f(source) − E f(reference) ± SE [z = gap/SE], f of V_{T∧τ}\n\n"
       "| source | reference |";
  std::size_t count = 0;
  for (const comparison& c : rows.front().comparisons)
    if (is_smooth(c)) {
      s << ' ' << c.statistic << " |";
      ++count;
    }
  s << "\n|---|---|";
  for (std::size_t i = 0; i < count; ++i) s << "---|";
  s << '\n';
  for (const report_row& r : rows) {
    s << "| " << r.source << " | " << r.reference << " |";
    for (const comparison& c : r.comparisons)
      if (is_smooth(c)) {
        const double gap = c.value - c.reference;
        s << fmt::format(" {:+.4f} ± {:.4f} [{:+.1f}] |", gap, c.stderr_, gap / c.stderr_);
      }
    s << '\n';
  }
  s << "\n" << rate << "\n";
  return s.str();
}

std::string limit_table(const std::vector<limit_row>& limits, double alpha,
                        const std::vector<int>& widths, double beta,
                        const std::string& beta_source) {
  if (limits.empty()) return {};
  std::ostringstream s;
  s << fmt::format(
      "\n**Extrapolated to n → ∞** (information; the verdict is the test at n = {}): per "
      "functional, the gaps E f(network) − E f(SDE) at n = {}…{} fitted as a + c·n^−β with β = "
      "{:.2f} ({}); a ± SE [z]. A right SDE leaves a ≈ 0 however large the finite-width gaps; a "
      "wrong one keeps a gap in the limit.\n\n| SDE |",
      widths.back(), widths.front(), widths.back(), beta, beta_source);
  for (const comparison& c : limits.front().gaps) s << ' ' << c.statistic << " |";
  s << " Bonferroni p | a = 0 at α = " << alpha << " |\n|---|";
  for (std::size_t i = 0; i < limits.front().gaps.size() + 2; ++i) s << "---|";
  s << '\n';
  for (const limit_row& r : limits) {
    s << "| " << r.source << " |";
    for (const comparison& c : r.gaps)
      s << fmt::format(" {:+.4f} ± {:.4f} [{:+.1f}] |", c.value, c.stderr_, c.value / c.stderr_);
    s << ' ' << format_p(r.adjusted_p) << " | "
      << (r.adjusted_p < alpha ? "**rejected**" : "not rejected") << " |\n";
  }
  return s.str();
}

std::string markdown(const validate_setup& a, const std::vector<report_row>& rows,
                     const report_row& sde_row, const std::string& header, double critical,
                     const std::string& smooth, const std::string& trend,
                     const std::vector<std::string>& verdicts) {
  std::ostringstream s;
  s << header << '\n';
  const std::vector<comparison>& first = rows.front().comparisons;
  s << "| source | reference |";
  std::size_t columns = 0;
  for (const comparison& c : first)
    if (!is_smooth(c)) {
      s << ' ' << c.statistic << (c.in_family ? "" : " (info, not tested)") << " |";
      ++columns;
    }
  s << " Bonferroni p | verdict (α = " << a.alpha << ") |\n|---|---|";
  for (std::size_t i = 0; i < columns + 2; ++i) s << "---|";
  s << '\n';
  for (const report_row& r : rows) {
    s << "| " << r.source << " | " << r.reference << " |";
    for (const comparison& c : r.comparisons) {
      if (is_smooth(c)) continue;
      if (is_ks(c))
        s << fmt::format(" {:.4f} [{}] |", c.value, format_p(c.p_value));
      else
        s << fmt::format(" {:.4f} vs {:.4f} ± {:.4f} [{}] |", c.value, c.reference, c.stderr_,
                         format_p(c.p_value));
    }
    s << ' ' << format_p(r.adjusted_p) << " | "
      << (r.adjusted_p < a.alpha ? "**rejected**" : "not rejected") << " |\n";
  }
  s << fmt::format(
      "\nKS entries: distance [p-value]; proportions: sample vs reference ± SE of the difference "
      "[two-proportion z-test p]. Two-sample KS critical distance at α = {}: {:.4f} (per "
      "statistic, {} vs {} samples). The Bonferroni p covers the stopped-process statistics only "
      "(with the smooth-statistic z-tests below); the unstopped tail looks beyond the stop level, "
      "where the networks need not follow the SDE (local convergence, docs/maths.md §8.1): its "
      "trend in n is information, not a test.\n",
      a.alpha, critical, a.networks, a.paths);
  s << smooth;
  s << "\n**Quantiles of ρ¹² at T∧τ**\n\n| source |";
  for (const double p : quantile_levels) s << fmt::format(" {:g}% |", 100 * p);
  s << "\n|---|";
  for (std::size_t i = 0; i < quantile_levels.size(); ++i) s << "---|";
  s << '\n';
  std::vector<const report_row*> quantile_rows{&sde_row};
  for (const report_row& r : rows) quantile_rows.push_back(&r);
  for (const report_row* r : quantile_rows) {
    s << "| " << r->source << " |";
    for (const double q : r->rho12_quantiles) s << fmt::format(" {:.4f} |", q);
    s << '\n';
  }
  s << "\n**Trend in n**: " << trend << "\n\n";
  for (const std::string& v : verdicts) s << "- " << v << '\n';
  return s.str();
}

/// The samples' sizes against the setup, before any comparison reads them.
void check_samples(const validate_setup& a, const validate_samples& samples) {
  const std::size_t widths = a.widths.size();
  auto fail = [](const std::string& what, const std::string& expected) {
    throw_invalid_argument("validate", "samples", what, expected);
  };
  if (widths == 0) fail("no widths", "one width or more");
  if (a.m < 2) fail(fmt::format("m = {}", a.m), "m >= 2 (ρ needs two tokens)");
  if (samples.nets_stopped.size() != widths || samples.nets_unstopped.size() != widths)
    fail(fmt::format("{} network samples", samples.nets_stopped.size()),
         fmt::format("one per width ({})", widths));
  if (samples.reference.by_width.size() != widths)
    fail(fmt::format("the SDE monitored on {} grids", samples.reference.by_width.size()),
         fmt::format("one grid per width ({})", widths));
  if (samples.floor.by_width.empty()) fail("a noise-floor run without a grid", "the widest grid");
  if (samples.wrong_names.size() != samples.wrong.size())
    fail(
        fmt::format("{} wrong SDEs and {} names", samples.wrong.size(), samples.wrong_names.size()),
        "one name per wrong SDE");
  for (const sde_sample& w : samples.wrong)
    if (w.by_width.size() != widths)
      fail(fmt::format("a wrong SDE monitored on {} grids", w.by_width.size()),
           fmt::format("one grid per width ({})", widths));
  const Eigen::Index K = packed_size(a.m);
  auto check = [&](const stopped_sample& s, const std::string& name) {
    if (s.status.empty()) fail(name + " empty", "at least one sample");
    if (s.packed.size() != s.status.size())
      fail(name + ": statuses and values differ in count", "one status per value");
    for (const vector& v : s.packed)
      if (v.size() != K)
        fail(fmt::format("{} with {} coordinates", name, v.size()),
             fmt::format("{} (the upper triangle of an {}x{} V)", K, a.m, a.m));
  };
  for (std::size_t i = 0; i < widths; ++i) {
    check(samples.nets_stopped[i], fmt::format("networks n={}", a.widths[i]));
    check(samples.nets_unstopped[i], fmt::format("networks n={} (unstopped)", a.widths[i]));
    check(samples.reference.by_width[i], fmt::format("SDE on grid 1/{}", a.widths[i]));
  }
  check(samples.reference.unstopped, "SDE (unstopped)");
  check(samples.floor.by_width[0], "SDE, independent run");
  check(samples.floor.unstopped, "SDE, independent run (unstopped)");
  for (std::size_t v = 0; v < samples.wrong.size(); ++v) {
    for (std::size_t i = 0; i < widths; ++i)
      check(samples.wrong[v].by_width[i], "wrong SDE " + samples.wrong_names[v]);
    check(samples.wrong[v].unstopped, "wrong SDE " + samples.wrong_names[v] + " (unstopped)");
  }
}

/// What a family that is not rejected would need to be: its largest z-tested gap (the smooth
/// statistics and the proportions, whose z grows as √N with the sample size N; the KS distances
/// are left out) against the Bonferroni threshold of the family, z* = √2·erfc⁻¹(α/k) for k tests,
/// and the factor (z*/z)² on N at which they would meet if the observed gap were the true one. The
/// largest of k noisy gaps overstates the true one, so the factor is a lower bound, not a promise.
struct power_shortfall {
  std::string source;
  std::string statistic;
  double z = 0.0;
  double z_needed = 0.0;
  double factor = 0.0;
};

/// What the stages of make_validate_report compute, in order.
struct report_parts {
  double critical = 0.0;  ///< the two-sample KS critical distance at α
  std::vector<report_row> rows;
  report_row sde_row;  ///< the SDE's ρ¹² quantiles
  std::vector<double> mean_ks;
  double floor_ks = 0.0;
  std::string trend;
  std::vector<std::string> smooth_stat;
  std::vector<std::vector<double>> gaps, gap_se;  ///< [functional][width]
  nlohmann::json smooth_json;
  std::string rate;
  std::vector<limit_row> limits;
  double limit_beta = 0.5;
  std::string limit_kind = "default";  ///< "given", "fitted" or "default" (no rate resolved)
  std::string limit_source = "the O(n^−1/2) default: no rate resolved";
  std::vector<std::string> verdicts;
  bool right_accepted = false;
  bool wrong_rejected = true;
  bool limit_accepted = false;
  check_outcome check = check_outcome::failed;
  std::optional<check_outcome> limit_check;
  std::vector<power_shortfall> shortfalls;  ///< of the wrong SDEs not rejected at the widest n
  /// What the right SDE's runs (the reference and the noise floor) ran on; handed_back summed.
  device_report device;
  std::string wrong_sdes_device = "none";  ///< where the wrong SDEs ran: "cpu", or "none" ran
};

/// The report's rows: every width's networks against the SDE on its grid, the noise floor, each
/// wrong SDE against the widest networks; and the SDE's ρ¹² quantiles.
void comparison_rows(const validate_setup& a, const validate_samples& samples, report_parts& p) {
  const int m = a.m;
  const std::vector<int>& widths = a.widths;
  const int n_max = widths.back();
  const sde_sample& reference = samples.reference;
  const sde_sample& floor = samples.floor;
  const std::vector<sde_sample>& wrong_samples = samples.wrong;
  const std::vector<stopped_sample>& net_stopped = samples.nets_stopped;
  // Comparisons. The networks as stopped samples, once: every comparison and output reads them.
  std::vector<report_row>& rows = p.rows;
  const functional rho12 = correlation_functional(0, 1);
  for (std::size_t i = 0; i < widths.size(); ++i) {
    report_row r;
    r.n = widths[i];
    r.source = fmt::format("network n={}", r.n);
    r.reference = fmt::format("SDE, grid 1/{}", r.n);
    r.key = fmt::format("network_n{}", r.n);
    const stopped_sample& s = net_stopped[i];
    r.comparisons = compare(m, s, reference.by_width[i], samples.nets_unstopped[i],
                            reference.unstopped, a.stop_level, a.tail_level, a.unstopped_level);
    r.rho12_quantiles = quantiles_of(s.values(rho12, m));
    rows.push_back(std::move(r));
  }
  const stopped_sample& widest_net = net_stopped.back();
  const stopped_sample& widest_net_unstopped = samples.nets_unstopped.back();
  {
    report_row r;
    r.n = n_max;
    r.source = "SDE, independent run";
    r.reference = fmt::format("SDE, grid 1/{} (noise floor)", n_max);
    r.key = "sde_floor";
    r.comparisons = compare(m, floor.by_width[0], reference.by_width.back(), floor.unstopped,
                            reference.unstopped, a.stop_level, a.tail_level, a.unstopped_level);
    r.rho12_quantiles = quantiles_of(floor.by_width[0].values(rho12, m));
    rows.push_back(std::move(r));
  }
  for (std::size_t i = 0; i < samples.wrong.size(); ++i) {
    report_row r;
    r.n = n_max;
    r.source = fmt::format("wrong SDE: {}", samples.wrong_names[i]);
    r.reference = fmt::format("network n={}", n_max);
    r.key = fmt::format("variant_{}", samples.wrong_names[i]);
    r.comparisons =
        compare(m, wrong_samples[i].by_width.back(), widest_net, wrong_samples[i].unstopped,
                widest_net_unstopped, a.stop_level, a.tail_level, a.unstopped_level);
    r.rho12_quantiles = quantiles_of(wrong_samples[i].by_width.back().values(rho12, m));
    rows.push_back(std::move(r));
  }
  for (report_row& r : rows) r.adjusted_p = bonferroni(r.comparisons);
  report_row& sde_row = p.sde_row;
  sde_row.source = fmt::format("SDE, grid 1/{}", n_max);
  sde_row.rho12_quantiles = quantiles_of(reference.by_width.back().values(rho12, m));
}

/// The mean KS distance per width, the noise floor's, and the trend in n.
void trend_in_n(const validate_setup& a, report_parts& p) {
  const std::vector<int>& widths = a.widths;
  std::vector<report_row>& rows = p.rows;
  // Trend in n: least-squares slope of log(mean KS distance over the statistics) on log n.
  std::vector<double> log_n, log_ks;
  std::vector<double>& mean_ks = p.mean_ks;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    double sum = 0.0;
    int count = 0;
    for (const comparison& c : rows[i].comparisons)
      if (c.statistic.rfind("KS ", 0) == 0) {
        sum += c.value;
        ++count;
      }
    mean_ks.push_back(sum / count);
    log_n.push_back(std::log(widths[i]));
    log_ks.push_back(std::log(sum / count));
  }
  double& floor_ks = p.floor_ks;
  {
    int count = 0;
    for (const comparison& c : rows[widths.size()].comparisons)
      if (c.statistic.rfind("KS ", 0) == 0) {
        floor_ks += c.value;
        ++count;
      }
    floor_ks /= count;
  }
  std::string& trend = p.trend;
  for (std::size_t i = 0; i < widths.size(); ++i)
    trend += fmt::format("{}mean KS {:.4f} at n = {}", i ? ", " : "", mean_ks[i], widths[i]);
  trend += fmt::format("; noise floor (two SDE runs) {:.4f}", floor_ks);
  {
    std::string tails;
    for (std::size_t i = 0; i < widths.size(); ++i) {
      const comparison& c = rows[i].comparisons.back();
      tails += fmt::format("{}{:.4f} at n = {}", i ? ", " : "", c.value, widths[i]);
    }
    trend += fmt::format("; unstopped tail P(max V^aa_T >= {:g}): networks {} vs SDE {:.4f}",
                         a.unstopped_level, tails, rows[0].comparisons.back().reference);
  }
  if (widths.size() >= 3) {
    const linear_fit f = fit_line(log_n, log_ks);
    trend += fmt::format(
        "; log-log slope {:.2f} ± {:.2f} (a slope near 0 with every width at the "
        "floor means the finite-n error is below the Monte Carlo resolution)",
        f.slope, f.slope_stderr);
  }
}

/// The smooth-statistic gaps per width and their rate in n (fit_power), as text and JSON.
void smooth_rate(const validate_setup& a, report_parts& p) {
  const std::vector<int>& widths = a.widths;
  std::vector<report_row>& rows = p.rows;
  // Smooth-statistic rate: the gaps E f(network) − E f(SDE) over the widths, fitted as C_f n^{−β}.
  std::vector<std::string>& smooth_stat = p.smooth_stat;
  for (const comparison& c : rows.front().comparisons)
    if (is_smooth(c)) smooth_stat.push_back(c.statistic);
  std::vector<std::vector<double>>& gaps = p.gaps;
  std::vector<std::vector<double>>& gap_se = p.gap_se;
  gaps.assign(smooth_stat.size(), {});
  gap_se.assign(smooth_stat.size(), {});
  for (std::size_t i = 0; i < widths.size(); ++i) {
    std::size_t f = 0;
    for (const comparison& c : rows[i].comparisons)
      if (is_smooth(c)) {
        gaps[f].push_back(c.value - c.reference);
        gap_se[f].push_back(c.stderr_);
        ++f;
      }
  }
  auto largest_z = [](const report_row& r) {
    double z = 0.0;
    for (const comparison& c : r.comparisons)
      if (is_smooth(c)) z = std::max(z, std::abs(c.value - c.reference) / c.stderr_);
    return z;
  };
  nlohmann::json& smooth_json = p.smooth_json;
  std::string& rate = p.rate;
  for (std::size_t i = 0; i < rows.size(); ++i)
    rate += fmt::format("{}{} {:.1f}", i ? ", " : "largest |z| per row: ", rows[i].source,
                        largest_z(rows[i]));
  rate += ". ";
  if (widths.size() >= 3) {
    const std::vector<double> ns(widths.begin(), widths.end());
    auto describe = [](const power_fit& f) {
      return f.bounded ? fmt::format("{:.2f} ± {:.2f}", f.exponent, f.exponent_stderr)
                       : std::string("not resolved (the gaps are within their noise)");
    };
    const power_fit joint = fit_power(ns, gaps, gap_se);
    rate += fmt::format(
        "Rate in n (gaps fitted as C_f·n^−β, one β for all {} functionals, weights 1/SE²): β = {} "
        "(χ² = {:.1f} on {} dof); per functional:",
        smooth_stat.size(), describe(joint), joint.chi2, joint.dof);
    smooth_json = {{"exponent", joint.exponent},
                   {"exponent_stderr", joint.exponent_stderr},
                   {"chi2", joint.chi2},
                   {"dof", joint.dof},
                   {"resolved", joint.bounded}};
    for (std::size_t f = 0; f < smooth_stat.size(); ++f) {
      const power_fit one = fit_power(ns, {gaps[f]}, {gap_se[f]});
      rate += fmt::format("{} {} {}", f ? "," : "", smooth_stat[f], describe(one));
      smooth_json["per_functional"].push_back({{"statistic", smooth_stat[f]},
                                               {"exponent", one.exponent},
                                               {"exponent_stderr", one.exponent_stderr},
                                               {"chi2", one.chi2},
                                               {"resolved", one.bounded}});
    }
    rate += '.';
  } else {
    rate += "Rate in n: needs at least three widths.";
  }
}

/// Each SDE's gaps extrapolated to n → ∞ (limit_gaps), with the β used and where it came from.
void extrapolated_limits(const validate_setup& a, const validate_samples& samples,
                         report_parts& p) {
  const int m = a.m;
  const std::vector<int>& widths = a.widths;
  const std::vector<sde_sample>& wrong_samples = samples.wrong;
  const std::vector<stopped_sample>& net_stopped = samples.nets_stopped;
  const std::vector<std::string>& smooth_stat = p.smooth_stat;
  const std::vector<std::vector<double>>& gaps = p.gaps;
  const std::vector<std::vector<double>>& gap_se = p.gap_se;
  const nlohmann::json& smooth_json = p.smooth_json;
  // The limit test: each SDE's gaps to the networks over the widths, extrapolated to n → ∞ as
  // a + c·n^{−β} (β = --limit-exponent); the right SDE is the limit when every a is 0.
  std::vector<limit_row>& limits = p.limits;
  double& limit_beta = p.limit_beta;
  std::string& limit_kind = p.limit_kind;
  std::string& limit_source = p.limit_source;
  if (a.given_exponent) {
    limit_beta = *a.given_exponent;
    limit_kind = "given";
    limit_source = "--limit-exponent";
  } else if (smooth_json.is_object() && smooth_json["resolved"].get<bool>() &&
             smooth_json["exponent"].get<double>() > 0.0) {
    limit_beta = smooth_json["exponent"].get<double>();
    limit_kind = "fitted";
    limit_source = "the fitted rate";
  }
  if (widths.size() >= 2) {
    const std::vector<double> ns(widths.begin(), widths.end());
    limit_row right;
    right.source = "right SDE";
    right.gaps = limit_gaps(ns, smooth_stat, gaps, gap_se, limit_beta);
    right.by_width = gaps;
    right.by_width_stderr = gap_se;
    limits.push_back(std::move(right));
    for (std::size_t v = 0; v < samples.wrong.size(); ++v) {
      std::vector<std::vector<double>> wg(smooth_stat.size()), ws(smooth_stat.size());
      for (std::size_t i = 0; i < widths.size(); ++i) {
        const std::vector<comparison> c =
            smooth_gaps(m, net_stopped[i], wrong_samples[v].by_width[i], a.stop_level);
        for (std::size_t f = 0; f < c.size(); ++f) {
          wg[f].push_back(c[f].value - c[f].reference);
          ws[f].push_back(c[f].stderr_);
        }
      }
      limit_row r;
      r.source = fmt::format("wrong SDE: {}", samples.wrong_names[v]);
      r.gaps = limit_gaps(ns, smooth_stat, wg, ws, limit_beta);
      r.by_width = std::move(wg);
      r.by_width_stderr = std::move(ws);
      limits.push_back(std::move(r));
    }
    for (limit_row& r : limits) r.adjusted_p = bonferroni(r.gaps);
  }
}

std::optional<power_shortfall> shortfall_of(const std::string& source,
                                            const std::vector<comparison>& family, double alpha) {
  long long k = 0;
  for (const comparison& c : family) k += c.in_family ? 1 : 0;
  if (k == 0) return std::nullopt;
  power_shortfall s;
  s.source = source;
  s.z_needed = std::sqrt(2.0) * boost::math::erfc_inv(alpha / static_cast<double>(k));
  for (const comparison& c : family) {
    if (!c.in_family || !(c.stderr_ > 0.0)) continue;
    const double z = std::abs(c.value - c.reference) / c.stderr_;
    if (std::isfinite(z) && z > s.z) {
      s.z = z;
      s.statistic = c.statistic;
    }
  }
  if (!(s.z > 0.0)) return std::nullopt;
  s.factor = (s.z_needed / s.z) * (s.z_needed / s.z);
  return s;
}

/// A check's outcome from its right SDE's result and its wrong SDEs' (check_outcome).
check_outcome decide(bool right_accepted, bool any_wrong, bool wrong_rejected) {
  if (any_wrong && !wrong_rejected) return check_outcome::lacks_power;
  return right_accepted ? check_outcome::passed : check_outcome::failed;
}

/// The line that states a check's outcome and what it means.
std::string check_line(std::string_view what, check_outcome outcome, bool any_wrong,
                       bool right_accepted, long long samples) {
  switch (outcome) {
    case check_outcome::passed:
      return any_wrong ? fmt::format(
                             "check, {}: passed (the right SDE is not rejected and every "
                             "wrong SDE is: the run has the power to tell them apart)",
                             what)
                       : fmt::format(
                             "check, {}: passed, power not measured (no wrong SDE ran, "
                             "--variants: the pass says only that {} samples do not "
                             "reject the SDE)",
                             what, samples);
    case check_outcome::failed:
      return fmt::format("check, {}: FAILED (the right SDE is rejected{})", what,
                         any_wrong ? ", and every wrong SDE is: the run has power"
                                   : "; power not measured, no wrong SDE ran");
    case check_outcome::lacks_power:
      break;
  }
  return fmt::format(
      "check, {}: LACKS POWER (a wrong SDE is not rejected, so at {} samples the run cannot tell "
      "the right SDE from a wrong one, and the right SDE's result, {}, is neither a pass nor a "
      "failure: raise --networks and --paths)",
      what, samples, right_accepted ? "not rejected" : "rejected");
}

/// The verdicts: the test at the widest n for the right and the wrong SDEs, the extrapolations,
/// the checks' outcomes and the run's counts.
void verdict_lines(const validate_setup& a, const validate_samples& samples, report_parts& p) {
  const std::vector<int>& widths = a.widths;
  const int n_max = widths.back();
  const sde_sample& reference = samples.reference;
  std::vector<report_row>& rows = p.rows;
  const std::vector<limit_row>& limits = p.limits;
  const double limit_beta = p.limit_beta;
  const double critical = p.critical;
  std::vector<std::string>& verdicts = p.verdicts;
  const report_row& at_max = rows[widths.size() - 1];
  double max_ks = 0.0;
  for (const comparison& c : at_max.comparisons)
    if (c.statistic.rfind("KS ", 0) == 0) max_ks = std::max(max_ks, c.value);
  // The verdict: the test at the widest n (networks there against the SDE; the wrong SDEs
  // against those networks). The extrapolation to n → ∞ is reported beside it: it rests on a
  // model of the finite-width corrections (a + c·n^−β).
  p.right_accepted = at_max.adjusted_p >= a.alpha;
  const bool right_accepted = p.right_accepted;
  verdicts.push_back(fmt::format(
      "right SDE vs networks at n = {}: largest KS distance {:.4f} (critical {:.4f} at α = {}), "
      "Bonferroni p = {} → {}",
      n_max, max_ks, critical, a.alpha, format_p(at_max.adjusted_p),
      right_accepted ? "not rejected" : "REJECTED"));
  bool& wrong_rejected = p.wrong_rejected;
  const long long samples_per_side = std::min(a.networks, a.paths);
  for (std::size_t i = 0; i < samples.wrong.size(); ++i) {
    const report_row& r = rows[widths.size() + 1 + i];
    const bool rejected = r.adjusted_p < a.alpha;
    wrong_rejected = wrong_rejected && rejected;
    std::string outcome = "rejected (the check has power)";
    if (!rejected) {
      outcome = "NOT rejected: the run lacks the power to tell it from the networks";
      if (const std::optional<power_shortfall> s = shortfall_of(r.source, r.comparisons, a.alpha)) {
        outcome += fmt::format(
            "; rejecting it needs at least about {:.1f}× the samples (its largest z-tested gap, "
            "{} at z = {:.1f}, against the Bonferroni threshold z = {:.2f}; the largest of noisy "
            "gaps overstates the true one)",
            s->factor, s->statistic, s->z, s->z_needed);
        p.shortfalls.push_back(*s);
      }
    }
    verdicts.push_back(fmt::format("wrong SDE '{}' vs networks at n = {}: Bonferroni p = {} → {}",
                                   samples.wrong_names[i], n_max, format_p(r.adjusted_p), outcome));
  }
  for (const limit_row& r : limits)
    verdicts.push_back(fmt::format(
        "{} extrapolated to n → ∞ (β = {:.2f}, information): Bonferroni p of a = 0 is {}", r.source,
        limit_beta, format_p(r.adjusted_p)));
  const bool any_wrong = !samples.wrong.empty();
  p.check = decide(right_accepted, any_wrong, wrong_rejected);
  verdicts.push_back(check_line(fmt::format("at n = {} (--check)", n_max), p.check, any_wrong,
                                right_accepted, samples_per_side));
  if (!limits.empty()) {
    // The same on the gaps extrapolated to n → ∞ (limits: the right SDE first).
    const bool limit_right = limits.front().adjusted_p >= a.alpha;
    bool limit_wrong = true;
    for (std::size_t i = 1; i < limits.size(); ++i)
      limit_wrong = limit_wrong && limits[i].adjusted_p < a.alpha;
    p.limit_accepted = limit_right && limit_wrong;
    p.limit_check = decide(limit_right, limits.size() > 1, limit_wrong);
    verdicts.push_back(check_line("extrapolated to n → ∞ (--check-limit)", *p.limit_check,
                                  limits.size() > 1, limit_right, samples_per_side));
  }
  verdicts.push_back(fmt::format(
      "SDE: {} paths, {} blown up (max|V| > 1e6) by T = {}, {} with PD-cone exits (projected), "
      "{:.1f} s; networks: {:.1f} s in total",
      a.paths,
      std::count(reference.unstopped.status.begin(), reference.unstopped.status.end(),
                 path_status::blown_up),
      a.t_end, reference.paths_with_violations, reference.seconds, samples.network_seconds));
  // A run that asked for a device says what the SDE ran on (a CPU run's report is as it was).
  p.device = reference.device;
  p.device.handed_back += samples.floor.device.handed_back;
  if (!samples.wrong.empty()) p.wrong_sdes_device = "cpu";
  if (p.device.device == "cpu" && p.device.shown())
    verdicts.push_back(fmt::format("SDE device: cpu ({})", p.device.note));
  else if (p.device.shown())
    verdicts.push_back(fmt::format(
        "SDE device: {}{}{} ({} paths resumed on the CPU at an exceptional step{})",
        p.device.device, p.device.note.empty() ? "" : ": ", p.device.note, p.device.handed_back,
        samples.wrong.empty() ? "" : "; the wrong SDEs ran on the CPU"));
}

/// The report as JSON (the keys of `ncsde validate --format json`).
nlohmann::json report_json(const validate_setup& a, const report_parts& p) {
  const int m = a.m;
  const std::vector<int>& widths = a.widths;
  const std::vector<report_row>& rows = p.rows;
  const report_row& sde_row = p.sde_row;
  const std::vector<double>& mean_ks = p.mean_ks;
  const double floor_ks = p.floor_ks;
  const nlohmann::json& smooth_json = p.smooth_json;
  const double limit_beta = p.limit_beta;
  const std::string& limit_kind = p.limit_kind;
  const std::vector<limit_row>& limits = p.limits;
  const bool right_accepted = p.right_accepted;
  const bool wrong_rejected = p.wrong_rejected;
  nlohmann::json j;
  const double critical = p.critical;
  j["model"] = a.model;
  j["params"] = nlohmann::json::parse(a.parameters_json);
  j["m"] = m;
  j["T"] = a.t_end;
  j["dt"] = a.dt;
  j["paths"] = a.paths;
  j["networks"] = a.networks;
  j["stop_level"] = a.stop_level;
  j["tail_level"] = a.tail_level;
  j["unstopped_tail_level"] = a.unstopped_level;
  j["alpha"] = a.alpha;
  j["ks_critical"] = critical;
  j["widths"] = widths;
  j["sde_rho12_quantiles"] = sde_row.rho12_quantiles;
  j["mean_ks"] = mean_ks;
  j["floor_mean_ks"] = floor_ks;
  j["smooth_fit"] = smooth_json;
  j["limit_exponent"] = limit_beta;
  j["limit_exponent_source"] = limit_kind;
  for (const limit_row& r : limits) {
    nlohmann::json row;
    row["source"] = r.source;
    row["bonferroni_p"] = r.adjusted_p;
    for (std::size_t f = 0; f < r.gaps.size(); ++f) {
      const comparison& c = r.gaps[f];
      row["gaps"].push_back({{"statistic", c.statistic},
                             {"intercept", c.value},
                             {"stderr", c.stderr_},
                             {"p_value", c.p_value},
                             {"by_width", r.by_width[f]},
                             {"by_width_stderr", r.by_width_stderr[f]}});
    }
    j["limit"].push_back(row);
  }
  if (p.device.shown())
    j["device"] = {{"device", p.device.device},
                   {"note", p.device.note},
                   {"handed_back", p.device.handed_back},
                   {"wrong_sdes", p.wrong_sdes_device}};
  j["right_accepted"] = right_accepted;
  j["wrong_rejected"] = wrong_rejected;
  j["check"] = to_string(p.check);
  j["limit_check"] = p.limit_check ? nlohmann::json(to_string(*p.limit_check)) : nlohmann::json();
  j["power_shortfall"] = nlohmann::json::array();
  for (const power_shortfall& s : p.shortfalls)
    j["power_shortfall"].push_back({{"source", s.source},
                                    {"statistic", s.statistic},
                                    {"z", s.z},
                                    {"z_needed", s.z_needed},
                                    {"sample_factor", s.factor}});
  for (const report_row& r : rows) {
    nlohmann::json row;
    row["source"] = r.source;
    row["reference"] = r.reference;
    row["key"] = r.key;
    row["n"] = r.n;
    row["bonferroni_p"] = r.adjusted_p;
    row["rho12_quantiles"] = r.rho12_quantiles;
    for (const comparison& c : r.comparisons)
      row["comparisons"].push_back({{"statistic", c.statistic},
                                    {"value", c.value},
                                    {"reference", c.reference},
                                    {"stderr", c.stderr_},
                                    {"p_value", c.p_value},
                                    {"in_family", c.in_family}});
    j["rows"].push_back(row);
  }

  return j;
}

}  // namespace

std::optional<double> check_validate_settings(const std::vector<int>& widths, double stop_level,
                                              double tail_level, double unstopped_level,
                                              double alpha, const std::string& limit_exponent,
                                              std::string_view widths_name) {
  if (widths.empty())
    throw_invalid_argument("validate", widths_name, "an empty list", "a list of widths");
  for (std::size_t i = 0; i < widths.size(); ++i) {
    if (widths[i] < 2)
      throw_invalid_argument("validate", widths_name, widths[i], ">= 2 (each width)");
    if (i > 0 && widths[i] <= widths[i - 1])
      throw_invalid_argument("validate", widths_name, widths[i],
                             fmt::format("> {} (widths strictly increasing)", widths[i - 1]));
  }
  if (!(stop_level > 0.0) || !std::isfinite(stop_level))
    throw_invalid_argument("validate", "stop_level", stop_level, "> 0 and finite");
  if (!(tail_level > 0.0) || !std::isfinite(tail_level))
    throw_invalid_argument("validate", "tail_level", tail_level, "> 0 and finite");
  if (!(unstopped_level > 0.0) || !std::isfinite(unstopped_level))
    throw_invalid_argument("validate", "unstopped_tail_level", unstopped_level, "> 0 and finite");
  if (!(alpha > 0.0 && alpha < 1.0))
    throw_invalid_argument("validate", "alpha", alpha, "in (0, 1)");
  // "fitted": the rate fitted to the right SDE's gaps when it is resolved, else 1/2.
  if (limit_exponent == "fitted") return std::nullopt;
  double beta = std::numeric_limits<double>::quiet_NaN();
  const char* first = limit_exponent.data();
  const char* last = first + limit_exponent.size();
  const auto [end, ec] = std::from_chars(first, last, beta);
  if (ec != std::errc() || end != last || !(beta > 0.0 && beta <= 4.0))
    throw_invalid_argument("validate", "limit_exponent", limit_exponent,
                           "'fitted' or a number in (0, 4]");
  return beta;
}

std::string_view to_string(check_outcome outcome) {
  switch (outcome) {
    case check_outcome::passed:
      return "passed";
    case check_outcome::failed:
      return "failed";
    case check_outcome::lacks_power:
      break;
  }
  return "lacks power";
}

matrix validate_reference_state() {
  const double d[3] = {1.0, 1.6, 0.7};
  matrix r(3, 3);
  r << 1.0, 0.5, 0.3, 0.5, 1.0, 0.7, 0.3, 0.7, 1.0;
  matrix v(3, 3);
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) v(a, b) = r(a, b) * std::sqrt(d[a] * d[b]);
  return v;
}

std::vector<double> validate_save_times(double t_end, double dt) {
  constexpr int points = 64;
  const double steps = std::round(t_end / dt);
  std::vector<double> times;
  for (int j = 0; j <= points; ++j) {
    double t = t_end * j / points;
    const double i = steps * j / points;
    if (std::abs(i - std::round(i)) > 1e-9 * std::max(1.0, i))
      t = std::round(i) >= steps ? t_end : std::round(i) * dt;
    if (times.empty() || t > times.back()) times.push_back(t);
  }
  return times;
}

std::vector<sde_variant> validate_variants(const std::string& text,
                                           const models::covariance_sde* shaped,
                                           const std::string& model, std::string_view flag) {
  std::vector<sde_variant> variants;
  if (text == "auto") {
    if (shaped != nullptr && shaped->has_attention()) {
      if (!shaped->params().causal) variants.push_back(sde_variant::vpv);
      variants.push_back(sde_variant::no_attention);
    }
  } else if (text != "none") {
    std::stringstream list(text);
    for (std::string item; std::getline(list, item, ',');) {
      const sde_variant v = parse_variant(item, flag);
      if (v != sde_variant::correct) variants.push_back(v);
    }
  }
  if (!variants.empty() && shaped == nullptr)
    throw_invalid_argument("validate", "variant", text,
                           fmt::format("none for model {} (the wrong SDEs are variants of the "
                                       "attention architectures)",
                                       model));
  return variants;
}

validate_report make_validate_report(const validate_setup& a, const validate_samples& samples) {
  check_samples(a, samples);
  report_parts p;
  p.critical = ks_critical_distance(a.alpha, a.networks, a.paths);
  comparison_rows(a, samples, p);
  trend_in_n(a, p);
  smooth_rate(a, p);
  extrapolated_limits(a, samples, p);
  const std::string smooth = smooth_table(p.rows, p.rate) +
                             limit_table(p.limits, a.alpha, a.widths, p.limit_beta, p.limit_source);
  verdict_lines(a, samples, p);
  const std::string header = fmt::format(
      "## ncsde validate: {} ({}), m = {}, "
      "T = {}\n\nSDE: Euler–Maruyama, dt = {:g}, {} paths. Networks: {}, n_k = {}, {} per "
      "width, d = T·n. Processes stopped at max_a V^aa > {} (the SDE on each network's grid k/n); "
      "the unstopped tail counts SDE blow-up as ≥ K″.\n",
      a.model, a.parameters, a.m, a.t_end, a.dt, a.paths, a.sampler, a.n_k, a.networks,
      a.stop_level);
  validate_report out;
  out.markdown = markdown(a, p.rows, p.sde_row, header, p.critical, smooth, p.trend, p.verdicts);
  out.json = report_json(a, p).dump(2);
  out.right_accepted = p.right_accepted;
  out.wrong_rejected = p.wrong_rejected;
  out.limit_accepted = p.limit_accepted;
  out.check = p.check;
  out.limit_check = p.limit_check;
  return out;
}

void write_validate_values(std::ostream& f, const validate_setup& a,
                           const validate_samples& samples) {
  f << "source,path,status" << packed_header(a.m) << '\n';
  for (std::size_t i = 0; i < a.widths.size(); ++i) {
    write_values(f, fmt::format("sde_n{}", a.widths[i]), samples.reference.by_width[i]);
    write_values(f, fmt::format("network_n{}", a.widths[i]), samples.nets_stopped[i]);
  }
  write_values(f, "sde_floor", samples.floor.by_width[0]);
  for (std::size_t i = 0; i < samples.wrong.size(); ++i)
    write_values(f, fmt::format("variant_{}", samples.wrong_names[i]),
                 samples.wrong[i].by_width.back());
}

void write_validate_paths(std::ostream& f, int m, const std::vector<sampled_paths>& paths) {
  f << "source,path,t" << packed_header(m) << '\n';
  for (const sampled_paths& s : paths)
    for (std::size_t p = 0; p < s.packed.size(); ++p)
      for (std::size_t k = 0; k < s.packed[p].size() && k < s.times.size(); ++k) {
        f << s.source << ',' << p << ',' << fmt::format("{:.17g}", s.times[k]);
        for (Eigen::Index e = 0; e < s.packed[p][k].size(); ++e)
          f << ',' << fmt::format("{:.17g}", s.packed[p][k](e));
        f << '\n';
      }
}

void stop_network_layers(int m, const std::vector<std::vector<vector>>& layers, double stop_level,
                         stopped_sample& stopped, stopped_sample& unstopped) {
  stopped = {};
  unstopped = {};
  const Eigen::Index K = packed_size(m);
  for (const std::vector<vector>& path : layers) {
    if (path.empty())
      throw_invalid_argument("validate", "networks", "a network without layers",
                             "V at layers 0..d");
    const vector* at_stop = &path.back();
    const vector* at_end = &path.back();
    networks::layer_stop_rule rule{stop_level};
    for (std::size_t l = 1; l < path.size(); ++l) {
      const vector& v = path[l];
      if (v.size() != K)
        throw_invalid_argument("validate", "networks", fmt::format("{} coordinates", v.size()),
                               fmt::format("{} (an {}x{} V)", K, m, m));
      double diagonal = -std::numeric_limits<double>::infinity();
      for (int i = 0; i < m; ++i) diagonal = std::max(diagonal, v(packed_index(i, i, m)));
      const networks::layer_stop_rule::outcome o = rule.observe(v.allFinite(), diagonal);
      if (o.stops) at_stop = &v;
      if (o.ends) {
        at_end = &v;
        break;
      }
    }
    const path_status status = rule.status;
    stopped.status.push_back(status);
    stopped.packed.push_back(*at_stop);
    unstopped.status.push_back(status == path_status::blown_up ? path_status::blown_up
                                                               : path_status::completed);
    unstopped.packed.push_back(*at_end);
  }
}

}  // namespace ncsde::cli
