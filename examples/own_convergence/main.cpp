/// A user's own SDE with a known solution, and its strong and weak convergence orders measured
/// through ncsde's public API: integrate() driven by a grid_brownian_source, so that every step size
/// reads its increments off one fine Brownian path per sample.
///
///   1. dX = −σ²X(1 − X²) dt + σ(1 − X²) dW on ℝ, solved by X_T = tanh(σW_T + artanh X₀) (Itô:
///      d tanh Z = (1 − tanh²Z) dZ − tanh Z (1 − tanh²Z) d⟨Z⟩ with Z = σW + artanh X₀). States of
///      either sign: the SDE declares no state space, so it is euclidean and nothing is projected.
///      Strong error E|X_dt(T) − X_T| against the exact solution on the same path; weak error
///      E X_dt(T) − E X_T from the coupled differences X_dt(T) − X_T (unbiased, variance O(dt)).
///   2. dX = −sin X dt + ½ dW: additive noise (declared), where Euler–Maruyama has strong order 1;
///      no closed form, so the reference is Euler–Maruyama on the same path with 1/16 of the finest
///      step (its own O(dt) error is 1/16 of the finest level's).
/// Prints a table and exits 1 when a measured order is outside ±0.1 of its expected value.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "ncsde/convergence.hpp"
#include "ncsde/ncsde.hpp"

namespace {

using ncsde::matrix;
using ncsde::vector;

struct tanh_sde {
  static constexpr ncsde::noise_class noise = ncsde::noise_class::commutative;  // k = 1
  double sigma = 0.5;
  int noise_dimension(int) const { return 1; }
  void drift(const matrix& x, matrix& out, double) const {
    out(0, 0) = -sigma * sigma * x(0, 0) * (1 - x(0, 0) * x(0, 0));
  }
  void diffusion(const matrix& x, const vector& xi, matrix& out, double) const {
    out(0, 0) = sigma * (1 - x(0, 0) * x(0, 0)) * xi(0);
  }
  /// d/dε G(x + εh)ξ, for the Milstein scheme (one noise: the commutative form is exact).
  void diffusion_derivative(const matrix& x, const matrix& h, const vector& xi, matrix& out,
                            double) const {
    out(0, 0) = -2 * sigma * x(0, 0) * h(0, 0) * xi(0);
  }
};

struct sine_additive {
  static constexpr ncsde::noise_class noise = ncsde::noise_class::additive;
  int noise_dimension(int) const { return 1; }
  void drift(const matrix& x, matrix& out, double) const { out(0, 0) = -std::sin(x(0, 0)); }
  void diffusion(const matrix&, const vector& xi, matrix& out, double) const {
    out(0, 0) = 0.5 * xi(0);
  }
};

/// Per level: sums of each path's value; order() fits log |mean| on log dt with weights from the
/// Monte Carlo standard errors.
struct series {
  std::vector<double> sum, sum_sq;
  explicit series(int levels) : sum(levels), sum_sq(levels) {}
  void add(int l, double x) { sum[l] += x, sum_sq[l] += x * x; }
  ncsde::linear_fit order(const std::vector<double>& dts, long long n) const {
    std::vector<double> x, y, se;
    for (std::size_t l = 0; l < dts.size(); ++l) {
      const double mean = sum[l] / n, var = (sum_sq[l] / n - mean * mean) * n / (n - 1);
      x.push_back(std::log(dts[l]));
      y.push_back(std::log(std::abs(mean)));
      se.push_back(std::sqrt(var / n) / std::abs(mean));  // the standard error of log |mean|
    }
    return ncsde::fit_line_weighted(x, y, se);
  }
};

/// X_dt(T) of `stepper` on the fine path read at `ratio` fine steps per step.
template <class Stepper, class S>
double solve(Stepper& stepper, const ncsde::problem<S>& prob, const ncsde::brownian_grid& fine,
             long long ratio) {
  ncsde::grid_brownian_source source(fine, ratio);
  ncsde::integrate_options io;
  io.dt = source.dt();
  const ncsde::path_result r = ncsde::integrate(stepper, prob, io, source);
  if (r.status != ncsde::path_status::completed)
    throw std::runtime_error("own_convergence: a path did not reach T (levels too coarse)");
  return r.v(0, 0);
}

/// Strong orders must lie within ±0.1 of theory; weak ones, whose coupled estimates are noisier,
/// within the larger of 0.1 and three standard errors of the fitted slope.
bool report(const char* problem, const char* scheme, const char* kind, const ncsde::linear_fit& f,
            double expected) {
  const double band = kind[0] == 's' ? 0.1 : std::max(0.1, 3 * f.slope_stderr);
  const bool ok = std::abs(f.slope - expected) <= band;
  std::printf("%-14s %-9s %-6s %6.3f ± %5.3f   expected %.1f ± %.2f  %s\n", problem, scheme, kind,
              f.slope, f.slope_stderr, expected, band, ok ? "ok" : "OUTSIDE");
  return ok;
}

}  // namespace

int main() {
  const double t_end = 1.0, x0 = 0.5;
  const tanh_sde sde;
  const ncsde::problem<tanh_sde> prob{sde, matrix::Constant(1, 1, x0), t_end};
  const ncsde::problem<sine_additive> additive{sine_additive{}, matrix::Constant(1, 1, x0), t_end};
  ncsde::euler_maruyama<> em;
  ncsde::milstein_commutative<> milstein;  // k = 1 needs no Lévy areas
  const int levels = 5;
  auto step_sizes = [&](int first) {
    std::vector<double> dts;
    for (int l = 0; l < levels; ++l) dts.push_back(t_end / double(1LL << (first + l)));
    return dts;
  };

  // Strong errors, dt = 2^-4 … 2^-8, on a fine path of 2^12 steps (16 per finest step).
  const long long paths = 20'000, n_fine = 1LL << 12;
  series em_strong(levels), mil_strong(levels), add_strong(levels);
  for (long long p = 0; p < paths; ++p) {
    // One Brownian path per sample; k = 1, so no Lévy areas are needed.
    const ncsde::brownian_grid fine(ncsde::random_stream(2026, p), 1, n_fine, t_end / n_fine,
                                    false);
    const double exact = std::tanh(sde.sigma * fine.value(n_fine)(0) + std::atanh(x0));
    const double reference = solve(em, additive, fine, 1);
    for (int l = 0; l < levels; ++l) {
      const long long ratio = n_fine >> (4 + l);
      em_strong.add(l, std::abs(solve(em, prob, fine, ratio) - exact));
      mil_strong.add(l, std::abs(solve(milstein, prob, fine, ratio) - exact));
      add_strong.add(l, std::abs(solve(em, additive, fine, ratio) - reference));
    }
  }
  // Weak errors E X_dt(T) − E X_T, dt = 2^-2 … 2^-6, where the O(dt) bias stands out of the coupled
  // estimate's O(√dt/√paths) noise. The exact solution needs only W_T, so the fine path has the
  // finest step itself, and ten times the paths are cheap.
  const long long weak_paths = 200'000, n_weak = 1LL << 6;
  series em_weak(levels), mil_weak(levels);
  for (long long p = 0; p < weak_paths; ++p) {
    const ncsde::brownian_grid fine(ncsde::random_stream(2027, p), 1, n_weak, t_end / n_weak,
                                    false);
    const double exact = std::tanh(sde.sigma * fine.value(n_weak)(0) + std::atanh(x0));
    for (int l = 0; l < levels; ++l) {
      const long long ratio = n_weak >> (2 + l);
      em_weak.add(l, solve(em, prob, fine, ratio) - exact);
      mil_weak.add(l, solve(milstein, prob, fine, ratio) - exact);
    }
  }

  std::printf(
      "orders ± standard error; strong: %lld paths, dt = 2^-4 … 2^-8; weak: %lld paths, "
      "dt = 2^-2 … 2^-6\n",
      paths, weak_paths);
  const std::vector<double> strong_dts = step_sizes(4), weak_dts = step_sizes(2);
  bool ok = report("tanh", "em", "strong", em_strong.order(strong_dts, paths), 0.5);
  ok &= report("tanh", "milstein", "strong", mil_strong.order(strong_dts, paths), 1.0);
  ok &= report("tanh", "em", "weak", em_weak.order(weak_dts, weak_paths), 1.0);
  ok &= report("tanh", "milstein", "weak", mil_weak.order(weak_dts, weak_paths), 1.0);
  ok &= report("sine-additive", "em", "strong", add_strong.order(strong_dts, paths), 1.0);
  return ok ? 0 : 1;
}
