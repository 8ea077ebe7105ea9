// A program outside the ncsde tree: it defines its own SDE, a matrix Ornstein–Uhlenbeck process
// with structured noise,
//   dV = θ (M − V) dt + σ L dW_s Lᵀ,   dW_s = (dW + dWᵀ)/√2,   L Lᵀ = M,
// where dW is an m×m matrix of independent Brownian increments (k = m² noise inputs). The noise map
// is applied to the increment (no dense covariance is formed); its covariance is σ² Σ_lin(M) dt. It
// runs a small Euler–Maruyama ensemble, prints the mean of V_T, and checks it against the exact
// mean of the scheme; it also solves the deterministic limit with odeint (ncsde/odeint.hpp) and
// checks it against e^{-θ t}. Given the path of its models library (models_library.cpp), it loads
// it and runs the same SDE as the registry model "matrix-ou", which must give the same bits.
// Exit status 0 only when every check passes.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "matrix_ou.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/models/models_library.hpp"
#include "ncsde/odeint.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"

using downstream::matrix_ou;

int main(int argc, char** argv) {
  const int m = 3;
  const ncsde::matrix mean_level = downstream::example_mean_level();
  const ncsde::matrix v0 = 2.0 * ncsde::matrix::Identity(m, m);
  const ncsde::problem<matrix_ou> prob{matrix_ou(1.0, 0.2, mean_level), v0, 1.0, 0.0};

  ncsde::integrate_options io;
  io.dt = 0.01;
  // Not on the cone: the unmodified scheme, whose mean is known exactly, with nothing projected.
  ncsde::ensemble_options eo;
  eo.seed = 7;
  eo.paths = 4000;
  eo.threads = 2;
  eo.progress = ncsde::progress_mode::off;
  const ncsde::ensemble_result r = ncsde::run_ensemble(ncsde::euler_maruyama<>{}, prob, io, eo);

  // Euler–Maruyama on a linear drift with additive noise: E[V_{i+1}] − M = (1 − θ h_i)(E[V_i] − M)
  // exactly, over integrate()'s grid.
  const ncsde::step_grid grid(prob.t0, prob.t_end, io.dt);
  double factor = 1.0;
  for (long long i = 0; i < grid.steps; ++i) factor *= 1.0 - prob.sde.theta() * grid.step_size(i);
  const ncsde::matrix exact = mean_level + factor * (v0 - mean_level);
  ncsde::vector exact_packed(ncsde::packed_size(m));
  ncsde::pack_upper(exact, exact_packed);

  ncsde::matrix mean(m, m);
  ncsde::unpack_upper(r.terminal.mean(), mean);
  std::printf("ncsde downstream: %lld/%lld paths completed, %lld cone violations\n", r.completed,
              r.paths, r.pd.violations);
  std::printf("ncsde downstream: mean V_T =\n");
  for (int a = 0; a < m; ++a)
    std::printf("  %9.5f %9.5f %9.5f\n", mean(a, 0), mean(a, 1), mean(a, 2));

  bool ok = r.completed == r.paths;
  // 5 standard errors per entry: a false alarm about once in 1.7 million per entry.
  const ncsde::vector se = r.terminal.standard_error();
  for (Eigen::Index j = 0; j < exact_packed.size(); ++j) {
    const double deviation = std::abs(r.terminal.mean()(j) - exact_packed(j));
    if (!(deviation <= 5 * se(j))) {
      std::printf(
          "ncsde downstream: packed entry %ld deviates by %.3g > 5 standard errors (%.3g)\n",
          static_cast<long>(j), deviation, 5 * se(j));
      ok = false;
    }
  }

  // The deterministic limit V(t) = M + e^{−θ t}(V0 − M); dopri5 at tolerance 1e-10 over a handful
  // of steps is accurate to well below 1e-8.
  ncsde::deterministic_options dopt;
  dopt.abs_tol = dopt.rel_tol = 1e-10;
  const ncsde::deterministic_result ode = ncsde::solve_deterministic(prob, dopt);
  const ncsde::matrix ode_exact =
      mean_level + std::exp(-prob.sde.theta() * prob.t_end) * (v0 - mean_level);
  const double ode_error = (ode.v - ode_exact).cwiseAbs().maxCoeff();
  std::printf("ncsde downstream: deterministic limit V(T) error %.3g after %lld dopri5 steps\n",
              ode_error, ode.steps);
  if (!(ode.status == ncsde::path_status::completed && ode_error <= 1e-8)) ok = false;

  // The same SDE as a registry model from the models library (models_library.cpp), given as the
  // first argument: loaded at run time, run through the registry's type-erased handle, it must
  // give the very same paths.
  if (argc > 1) {
    const std::vector<std::string> added = ncsde::models::load_models_library(argv[1]);
    const ncsde::models::model_instance model = ncsde::models::registry().at("matrix-ou").make();
    const ncsde::ensemble_result q = model.run_ensemble("em", v0, prob.t_end, io, eo);
    const bool same = added == std::vector<std::string>{"matrix-ou"} &&
                      q.terminal.mean() == r.terminal.mean() &&
                      q.terminal.covariance() == r.terminal.covariance();
    std::printf("ncsde downstream: models library %s: matrix-ou %s\n", argv[1],
                same ? "bit-identical to the direct run" : "DIFFERS from the direct run");
    ok = ok && same;
  }

  std::printf("ncsde downstream: %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
