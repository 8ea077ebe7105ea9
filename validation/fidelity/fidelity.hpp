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
/// ρ^{ab} (a < b) and V^{aa}, the stopped fractions P(τ ≤ T) and the tail P(V¹¹_{T∧τ} ≥
/// tail_level) (two-proportion z-tests); then, outside the family, P(max_a V^{aa}_T ≥
/// unstopped_level) of the unstopped processes (blow-up counts as ≥).
std::vector<comparison> compare(int m, const stopped_sample& sample,
                                const stopped_sample& reference,
                                const stopped_sample& sample_unstopped,
                                const stopped_sample& reference_unstopped, double tail_level,
                                double unstopped_level);

/// Two-proportion z-test: p-value of |p₁ − p₂| under equal proportions (pooled variance).
comparison proportion_test(std::string name, long long hits1, long long n1, long long hits2,
                           long long n2);

/// Bonferroni-adjusted smallest p-value of the family (comparisons with in_family): min p × count,
/// capped at 1. The family is rejected at level α when this is < α (family-wise error ≤ α, whatever
/// the dependence between the statistics).
double bonferroni(const std::vector<comparison>& c);

}  // namespace ncsde::cli
