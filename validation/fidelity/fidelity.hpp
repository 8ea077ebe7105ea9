#pragma once
/// SDE-vs-network fidelity (docs/maths.md §8.1, §9.5): laws of stopped processes compared by
/// two-sample statistics.
///
/// Both processes are stopped at τ = the first time max_a V^{aa} > K, and the SDE is monitored only
/// on the network's grid k/n (a network can only be seen at its layers, so monitoring the SDE more
/// finely would stop it earlier and bias the comparison). One SDE run serves every width: the
/// observer tracks, for each n of the list, the first grid time k/n at which the level is passed,
/// and keeps V there; the unstopped V_T (blow-up = +inf) is kept too, for tail functionals.
#include <cstdint>
#include <string>
#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/integrate.hpp"
#include "ncsde/models/stopped_sample.hpp"
#include "ncsde/networks/sample.hpp"
#include "ncsde/statistics.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"

namespace ncsde::cli {

// The SDE side (sde_sample_options, stopped_sample, sde_sample, sample_sde) lives in the library,
// ncsde/models/stopped_sample.hpp; these names keep the validation code as it was.
using models::sample_sde;
using models::sde_sample;
using models::sde_sample_options;
using models::stopped_sample;
namespace detail {
using models::detail::steps_per_layer;
}  // namespace detail

/// The network ensemble as a stopped sample (records' stopped values) and as an unstopped one
/// (the V at the last depth; requires continue_after_stop).
stopped_sample stopped_of(const networks::network_ensemble& e);
stopped_sample unstopped_of(const networks::network_ensemble& e);

/// One scalar comparison between a sample and a reference.
struct comparison {
  std::string statistic;   ///< "KS rho12", "stopped fraction", "P(V11 >= 2.5)", …
  double value = 0.0;      ///< KS distance, or the sample's proportion
  double reference = 0.0;  ///< the reference's proportion (proportions only)
  double stderr_ = 0.0;    ///< SE of value − reference (proportions only)
  double p_value = 1.0;
  /// Part of the tested family (laws of the stopped processes). The unstopped tail is reported for
  /// information only: beyond the stop level the network need not follow the SDE (the convergence
  /// is local, docs/maths.md §8.1), so a difference there is not evidence against the SDE.
  bool in_family = true;
};

/// The family compared for a verdict, all on the stopped processes V_{T∧τ}: KS distances of every
/// ρ^{ab} (a < b) and V^{aa}, the smooth-statistic gaps (smooth_gaps: differences of the means of
/// ρ^{ab} and min(V^{aa}, K), z-tests), the stopped fractions P(τ ≤ T) and the tail P(V¹¹_{T∧τ} ≥
/// tail_level) (two-proportion z-tests); then, outside the family, P(max_a V^{aa}_T ≥
/// unstopped_level) of the unstopped processes (blow-up counts as ≥).
std::vector<comparison> compare(int m, const stopped_sample& sample,
                                const stopped_sample& reference,
                                const stopped_sample& sample_unstopped,
                                const stopped_sample& reference_unstopped, double stop_level,
                                double tail_level, double unstopped_level);

/// Difference of means E f(sample) − E f(reference) of a bounded functional: value and reference
/// are the two sample means, stderr_ = √(s₁²/N₁ + s₂²/N₂) (unpooled), p from the two-sided z-test
/// (the samples are large: 10⁴ and more, so the normal limit of the difference is accurate).
/// Both samples must be non-empty and finite.
comparison mean_difference(std::string name, const std::vector<double>& sample,
                           const std::vector<double>& reference);

/// The bounded functionals whose means the smooth-statistic comparison takes, in order: ρ^{ab}
/// (a < b; in [−1, 1]) and min(V^{aa}, K) (K the stop level; in [0, K]), of V_{T∧τ}; a blown-up
/// path (no finite V at the stop) counts at the bound: ρ = 1, V^{aa} = K.
std::vector<std::string> smooth_names(int m);
std::vector<std::vector<double>> smooth_values(int m, const stopped_sample& s, double stop_level);

/// Smooth-statistic gaps: mean_difference of every smooth functional (smooth_names, "E ρ12", …)
/// between a sample and a reference.
std::vector<comparison> smooth_gaps(int m, const stopped_sample& sample,
                                    const stopped_sample& reference, double stop_level);

/// Rate of a gap in n: the weighted least-squares fit of g_{f,i} ≈ C_f · n_i^{−β}, one exponent β
/// shared by the functionals f and one scale C_f each, weights 1/σ_{f,i}² (σ the gaps' standard
/// errors). C_f is linear given β, so β minimises the profile χ²(β) (a grid of step 10⁻³ on
/// [−1, 3], then the parabola through the best three points); its standard error is the half
/// width of {β : χ²(β) ≤ χ²_min + 1}, widened by √(χ²_min/dof) when the fit is worse than its
/// noise (dof = points − functionals − 1 > 0). Functionals whose gaps are noise carry little
/// weight (small C_f at any β) but do count in χ².
struct power_fit {
  double exponent = 0.0;
  double exponent_stderr = 0.0;
  double chi2 = 0.0;
  int dof = 0;
  int points = 0;
  bool bounded = true;  ///< false when the interval reaches the grid's end (no rate resolved)
};
power_fit fit_power(const std::vector<double>& n, const std::vector<std::vector<double>>& gaps,
                    const std::vector<std::vector<double>>& stderrs);

/// The gaps extrapolated to n → ∞, the limit the SDE claims to be: per functional the weighted
/// least-squares fit g_i ≈ a + c·n_i^{−β} (β given: the rate of the finite-width corrections,
/// weights 1/σ_i²), reported as a comparison with value = a, reference = 0, stderr_ = SE(a) (from
/// the fit's covariance, widened by √(χ²/dof) when the residuals exceed their noise) and p from the
/// two-sided z-test of a = 0. Needs at least two widths.
std::vector<comparison> limit_gaps(const std::vector<double>& n,
                                   const std::vector<std::string>& names,
                                   const std::vector<std::vector<double>>& gaps,
                                   const std::vector<std::vector<double>>& stderrs, double beta);

/// Two-proportion z-test: p-value of |p₁ − p₂| under equal proportions (pooled variance).
comparison proportion_test(std::string name, long long hits1, long long n1, long long hits2,
                           long long n2);

/// Bonferroni-adjusted smallest p-value of the family (comparisons with in_family): min p × count,
/// capped at 1. The family is rejected at level α when this is < α (family-wise error ≤ α, whatever
/// the dependence between the statistics).
double bonferroni(const std::vector<comparison>& c);

}  // namespace ncsde::cli
