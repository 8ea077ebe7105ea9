/// `ncsde rank-collapse`: unshaped against shaped attention in finite networks of the same width
/// and depth, recorded at about 64 depths from 0 to d (ncsde::networks::sample_networks).
///
///   ncsde rank-collapse [--n 128] [--d 512] [--networks 200] [--V0 "..."] [--model attention]
///                       [model flags: --gamma2 0.5 --tau0 1 …] [--nk K (default n)]
///                       [--sampler reduced|literal] [--seed 1] [--threads 0] [--out FILE.csv]
///                       [--plots DIR]
///
/// unshaped: A = Softmax(S), τ = τ₀√n_k (standard softmax attention); shaped: A = I + Softmax(S) −
/// 11ᵀ/m, τ = τ₀√(n n_k) (docs/maths.md §2.4; unshaped: §2.9). Both keep the residual X' = λX + γ·(A X W^V/√n).
/// Per depth l and form, over the networks whose V is finite:
///   mean ρ     = mean over networks of ρ̄ = (2/(m(m−1))) Σ_{a<b} ρ^{ab}, ± its standard error;
///   λ̃_min      = λ_min(V)/(tr V/m), scale-free (1 for V ∝ I, 0 at rank collapse): median and
///                quartiles over networks.
/// Rank collapse is ρ̄ → 1 and λ̃_min → 0. Table on stdout; --out writes the same as CSV (one row
/// per depth); --plots DIR writes DIR/rank_collapse.csv and DIR/rank_collapse.png through
/// validation/plots/rank_collapse_plot.py (/usr/bin/python3 with matplotlib).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "command.hpp"
#include "limits.hpp"
#include "models/model_flags.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/networks/sample.hpp"
#include "ncsde/psd.hpp"
#include "ncsde/statistics.hpp"
#include "ncsde/symmetric.hpp"
#include "process.hpp"

#ifndef NCSDE_RANK_COLLAPSE_PLOT_SCRIPT
#error "NCSDE_RANK_COLLAPSE_PLOT_SCRIPT must name validation/plots/rank_collapse_plot.py"
#endif

namespace ncsde::cli {
namespace {

/// docs/maths.md §9.1 reference state V3: diag (1, 1.6, 0.7), ρ¹² = 0.5, ρ¹³ = 0.3, ρ²³ = 0.7.
constexpr const char* default_v0 =
    "1, 0.6324555320336759, 0.25099800796022265; "
    "0.6324555320336759, 1.6, 0.7408103670980852; "
    "0.25099800796022265, 0.7408103670980852, 0.7";

struct rank_collapse_args {
  model_flags model;
  network_flags net;
  std::string v0 = default_v0;
  std::string out;
  std::string plots;
};

/// About 64 depths in [0, d]: 32 evenly spaced (0, d/32, …, d) together with 32 geometrically
/// spaced ones (1 … d), so that both the first layers, where unshaped attention collapses, and
/// the time scale t = l/n of the shaped network are resolved. Every depth when d ≤ 64.
std::vector<int> depth_grid(int d) {
  std::vector<int> depths;
  if (d <= 64) {
    for (int l = 0; l <= d; ++l) depths.push_back(l);
    return depths;
  }
  constexpr int points = 32;
  for (int k = 0; k <= points; ++k)
    depths.push_back(static_cast<int>(std::lround(static_cast<double>(k) * d / points)));
  for (int k = 0; k < points; ++k)
    depths.push_back(static_cast<int>(
        std::lround(std::exp(std::log(static_cast<double>(d)) * k / (points - 1)))));
  std::sort(depths.begin(), depths.end());
  depths.erase(std::unique(depths.begin(), depths.end()), depths.end());
  return depths;
}

/// The statistics of one form at one depth.
struct depth_summary {
  long long networks = 0;  ///< networks with a finite V (the others are left out)
  double mean_rho = std::numeric_limits<double>::quiet_NaN();
  double mean_rho_stderr = std::numeric_limits<double>::quiet_NaN();
  double lambda_median = std::numeric_limits<double>::quiet_NaN();
  double lambda_q25 = std::numeric_limits<double>::quiet_NaN();
  double lambda_q75 = std::numeric_limits<double>::quiet_NaN();
};

/// ρ̄ = mean of ρ^{ab} over a < b (correlation_functional's clamped ρ), m ≥ 2.
double mean_correlation(const matrix& v) {
  const int m = static_cast<int>(v.rows());
  double sum = 0.0;
  for (int a = 0; a < m; ++a)
    for (int b = a + 1; b < m; ++b) {
      const double scale = std::sqrt(std::max(v(a, a), 0.0) * std::max(v(b, b), 0.0));
      sum += scale > 0.0 ? std::clamp(v(a, b) / scale, -1.0, 1.0) : 0.0;
    }
  return sum / (0.5 * m * (m - 1));
}

/// λ̃_min = λ_min(V)/(tr V/m); 0 for V = 0.
double normalised_min_eigenvalue(const matrix& v) {
  const double mean_diagonal = v.trace() / static_cast<double>(v.rows());
  return mean_diagonal > 0.0 ? min_eigenvalue(v) / mean_diagonal : 0.0;
}

std::vector<depth_summary> summarise(const networks::network_ensemble& e) {
  std::vector<depth_summary> out(e.depths.size());
  matrix v(e.m, e.m);
  for (std::size_t j = 0; j < e.depths.size(); ++j) {
    std::vector<double> rho, lambda;
    for (const networks::network_record& r : e.records) {
      unpack_upper(r.packed[j], v);
      if (!v.allFinite()) continue;
      rho.push_back(mean_correlation(v));
      lambda.push_back(normalised_min_eigenvalue(v));
    }
    depth_summary& s = out[j];
    s.networks = static_cast<long long>(rho.size());
    if (rho.empty()) continue;
    double sum = 0.0;
    for (const double x : rho) sum += x;
    s.mean_rho = sum / static_cast<double>(rho.size());
    if (rho.size() > 1) {
      double squares = 0.0;
      for (const double x : rho) squares += (x - s.mean_rho) * (x - s.mean_rho);
      s.mean_rho_stderr = std::sqrt(squares / static_cast<double>(rho.size() - 1) /
                                    static_cast<double>(rho.size()));
    }
    std::sort(lambda.begin(), lambda.end());
    s.lambda_median = quantile_sorted(lambda, 0.5);
    s.lambda_q25 = quantile_sorted(lambda, 0.25);
    s.lambda_q75 = quantile_sorted(lambda, 0.75);
  }
  return out;
}

void write_rank_collapse_csv(const networks::network_ensemble& unshaped,
                             const std::vector<depth_summary>& u,
                             const std::vector<depth_summary>& s, std::ostream& out) {
  out << "depth,t";
  for (const char* form : {"unshaped", "shaped"})
    out << fmt::format(
        ",{0}_mean_rho,{0}_mean_rho_stderr,{0}_lambda_median,{0}_lambda_q25,{0}_lambda_q75,"
        "{0}_networks",
        form);
  out << '\n';
  for (std::size_t j = 0; j < unshaped.depths.size(); ++j) {
    const int l = unshaped.depths[j];
    out << l << ',' << fmt::format("{:.17g}", static_cast<double>(l) / unshaped.n);
    for (const depth_summary* d : {&u[j], &s[j]})
      out << fmt::format(",{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{}", d->mean_rho,
                         d->mean_rho_stderr, d->lambda_median, d->lambda_q25, d->lambda_q75,
                         d->networks);
    out << '\n';
  }
}

int run_rank_collapse_command(const rank_collapse_args& a) {
  const std::optional<models::architecture> arch = builtin_architecture(a.model.model);
  if (arch != models::architecture::attention && arch != models::architecture::transformer) {
    std::fprintf(stderr,
                 "ncsde: error: rank-collapse: --model must be attention or transformer (the "
                 "comparison is between two attention forms) (got %s)\n",
                 a.model.model.c_str());
    return exit_usage;
  }
  const std::optional<matrix> v0 = read_initial_state(a.v0, "--V0", 2);
  if (!v0) return exit_usage;
  const int m = static_cast<int>(v0->rows());
  const std::optional<any_network> unshaped_net =
      make_network(a.model, a.net, m, networks::attention_form::unshaped);
  if (!unshaped_net) return exit_usage;
  const std::optional<any_network> shaped_net =
      make_network(a.model, a.net, m, networks::attention_form::shaped);
  if (!shaped_net) return exit_usage;

  networks::network_options opt = network_options_of(a.net);
  opt.depths = depth_grid(a.net.d);
  // The run's size (limits.hpp): two ensembles, kept at once, each V at every recorded depth.
  try {
    const bool literal = a.net.sampler == "literal";
    check_network_work(a.model, literal, m, a.net.n, a.net.key_dimension(), a.net.networks, a.net.d,
                       2);
    check_network_memory(a.model, a.net, literal, m, opt.depths.size(), 2, 16.0);
  } catch (const ncsde::invalid_argument& e) {
    report_invalid_argument(e);
    return exit_usage;
  }

  // Every output is checked before the run, so that a bad path fails at once: the plot directory
  // is created and the files are created as temporaries, which replace their targets only once
  // the run has succeeded.
  const std::filesystem::path script(NCSDE_RANK_COLLAPSE_PLOT_SCRIPT);
  const std::filesystem::path dir(a.plots);
  std::vector<std::unique_ptr<output_file>> plots;  // rank_collapse.csv
  if (!a.plots.empty())
    if (const int failed =
            open_plot_files("rank-collapse", script.string(), dir, {"rank_collapse.csv"}, plots))
      return failed;
  std::optional<output_file> file;
  if (!a.out.empty()) {
    file.emplace("rank-collapse", "--out", a.out);
    if (!file->ok()) return exit_usage;
  }

  // One seed for both forms: network i of each form starts from the same stream (seed, i).
  const std::optional<networks::network_ensemble> unshaped_run =
      sample_any_network(*unshaped_net, *v0, a.net.d, opt);
  if (!unshaped_run) return exit_usage;
  const std::optional<networks::network_ensemble> shaped_run =
      sample_any_network(*shaped_net, *v0, a.net.d, opt);
  if (!shaped_run) return exit_usage;
  const networks::network_ensemble& unshaped = *unshaped_run;
  const networks::network_ensemble& shaped = *shaped_run;
  const std::vector<depth_summary> u = summarise(unshaped);
  const std::vector<depth_summary> s = summarise(shaped);

  const models::shaped_params p = a.model.params();
  std::cout << fmt::format(
      "rank collapse: {} networks, {} sampler, m = {}, n = {}, d = {} (T = {:g}), n_k = {}, "
      "gamma2 = {:g}, tau0 = {:g}, heads = {}, {} networks per form, seed {}\n",
      a.model.model, a.net.sampler, m, a.net.n, a.net.d, static_cast<double>(a.net.d) / a.net.n,
      a.net.key_dimension(), p.gamma2, p.tau0, p.heads, a.net.networks, a.net.seed);
  std::cout << "unshaped: A = Softmax(S), tau = tau0 sqrt(n_k); shaped: A = I + Softmax(S) - "
               "11^T/m, tau = tau0 sqrt(n n_k)\n"
               "mean rho = mean over networks of the average of rho^ab over a < b (± standard "
               "error); lambda = median over networks of lambda_min(V)/(tr V/m)\n";
  std::cout << fmt::format("{:>6} {:>8}  {:>22} {:>11}  {:>22} {:>11}\n", "depth", "t",
                           "unshaped mean rho", "lambda", "shaped mean rho", "lambda");
  for (std::size_t j = 0; j < unshaped.depths.size(); ++j) {
    const int l = unshaped.depths[j];
    std::cout << fmt::format(
        "{:>6} {:>8.4f}  {:>11.6f} ± {:<8.2g} {:>11.3e}  {:>11.6f} ± {:<8.2g} {:>11.3e}\n", l,
        static_cast<double>(l) / a.net.n, u[j].mean_rho, u[j].mean_rho_stderr, u[j].lambda_median,
        s[j].mean_rho, s[j].mean_rho_stderr, s[j].lambda_median);
  }
  const long long left_out = unshaped.blown_up + shaped.blown_up;
  if (left_out > 0)
    std::cout << fmt::format(
        "{} unshaped and {} shaped networks reached a non-finite V and are left out from then on\n",
        unshaped.blown_up, shaped.blown_up);
  std::cout << fmt::format("(unshaped {:.2f} s, shaped {:.2f} s, {} threads)\n", unshaped.seconds,
                           shaped.seconds, unshaped.threads);

  if (file) {
    write_rank_collapse_csv(unshaped, u, s, file->stream());
    if (!file->commit()) return exit_failure;
  }
  if (!plots.empty()) {
    write_rank_collapse_csv(unshaped, u, s, plots[0]->stream());
    if (!plots[0]->commit()) return exit_failure;
    const std::filesystem::path csv = dir / "rank_collapse.csv";
    const std::string title =
        fmt::format("{} networks, m = {}, n = {}, gamma2 = {:g}, tau0 = {:g}, {} networks per form",
                    a.model.model, m, a.net.n, p.gamma2, p.tau0, a.net.networks);
    if (!run_plot_script("rank-collapse", script.string(), {csv.string(), dir.string(), title}))
      return exit_failure;
  }
  return exit_ok;
}

}  // namespace

command rank_collapse_command() {
  command c;
  c.name = "rank-collapse";
  c.description =
      "Rank collapse of unshaped softmax attention against shaped attention in finite networks";
  c.setup = [](CLI::App& sub) -> std::function<int()> {
    auto a = std::make_shared<rank_collapse_args>();
    a->model.model = "attention";
    a->net.n = 128;
    a->net.d = 512;
    a->net.networks = 200;
    add_model_flags(sub, a->model);
    add_network_flags(sub, a->net, /*require_size=*/false);
    sub.add_option(
           "--V0", a->v0,
           "Initial covariance V0 (m >= 2), rows separated by ';', entries by ','; "
           "default: the docs/maths.md §9.1 reference state V3 (diag 1, 1.6, 0.7; rho12 = 0.5, "
           "rho13 = 0.3, rho23 = 0.7)")
        ->capture_default_str();
    sub.add_option("--out", a->out, "Write the table as CSV (one row per depth) to this file");
    add_plots_flag(sub, a->plots,
                   "Write rank_collapse.csv and rank_collapse.png into this directory");
    sub.footer(
        "Defaults: the docs/maths.md §9.1 path-test parameters (attention, gamma2 = 1/2, tau0 = 1, "
        "V0 = "
        "V3), n = 128, d = 512 (T = 4). gamma2 = 1/2 keeps a residual stream in both forms, so "
        "the comparison is about the attention matrix alone. Unshaped softmax attention is "
        "row-stochastic with O(1) logits: each layer keeps about lambda^2 = 1/2 of the tokens' "
        "centred energy, so mean rho -> 1 and lambda_min -> 0 geometrically per layer, whatever "
        "n (round-off, ~1e-16, after ~50 layers). Shaped attention is I + O(1/sqrt(n)): V moves "
        "only on the time scale t = l/n; mean rho stays near its initial 0.5, and lambda_min "
        "decays only as the layers' noise spreads V's eigenvalues (as in any product of random "
        "layers), to ~1e-4 at T = 4. With gamma2 = 1 (no skip) the unshaped collapse takes 2-4 "
        "layers, too fast to follow on the depth grid; with smaller gamma2 it is slower.");
    return [a]() { return run_rank_collapse_command(*a); };
  };
  return c;
}

}  // namespace ncsde::cli
