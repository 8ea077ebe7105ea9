// A program outside the ncsde tree: it defines its own SDE, a matrix Ornstein–Uhlenbeck process
// with structured noise,
//   dV = θ (M − V) dt + σ L dW_s Lᵀ,   dW_s = (dW + dWᵀ)/√2,   L Lᵀ = M,
// where dW is an m×m matrix of independent Brownian increments (k = m² noise inputs). The noise map
// is applied to the increment (no dense covariance is formed); its covariance is σ² Σ_lin(M) dt. It
// runs a small Euler–Maruyama ensemble, prints the mean of V_T, and checks it against the exact
// mean of the scheme; it also solves the deterministic limit with odeint (ncsde/odeint.hpp) and
// checks it against e^{-θ t}. Exit status 0 only when both checks pass.
#include <Eigen/Cholesky>

#include <cmath>
#include <cstdio>

#include "ncsde/ensemble.hpp"
#include "ncsde/odeint.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"

namespace {

/// dV = θ (M − V) dt + σ L (dW + dWᵀ)/√2 Lᵀ on Sym(m), L the Cholesky factor of M.
/// Invariant: θ > 0, σ ≥ 0, M symmetric positive definite; checked in the constructor.
class matrix_ou {
 public:
  /// Symmetric matrices, not the cone: the OU process leaves it with positive probability.
  static constexpr ncsde::state_space space = ncsde::state_space::symmetric;
  matrix_ou(double theta, double sigma, const ncsde::matrix& mean_level)
      : m_theta(theta), m_sigma(sigma), m_mean(mean_level) {
    if (!(theta > 0)) ncsde::throw_invalid_argument("matrix_ou", "theta", theta, "> 0");
    if (!(sigma >= 0)) ncsde::throw_invalid_argument("matrix_ou", "sigma", sigma, ">= 0");
    const Eigen::LLT<ncsde::matrix> llt(mean_level);
    if (llt.info() != Eigen::Success)
      ncsde::throw_invalid("matrix_ou", "M must be positive definite");
    m_factor = llt.matrixL();
  }

  int noise_dimension(int m) const { return m * m; }

  void drift(const ncsde::matrix& v, ncsde::matrix& out, double) const {
    out = m_theta * (m_mean - v);
  }

  void diffusion(const ncsde::matrix& v, const ncsde::vector& xi, ncsde::matrix& out,
                 double) const {
    const Eigen::Index m = v.rows();
    const Eigen::Map<const ncsde::matrix> w(xi.data(), m, m);
    const ncsde::matrix w_sym = (w + w.transpose()) / std::sqrt(2.0);
    out = m_sigma * m_factor * w_sym * m_factor.transpose();
  }

  double theta() const { return m_theta; }
  const ncsde::matrix& mean_level() const { return m_mean; }

 private:
  double m_theta;
  double m_sigma;
  ncsde::matrix m_mean;
  ncsde::matrix m_factor;
};
static_assert(ncsde::Sde<matrix_ou>);

}  // namespace

int main() {
  const int m = 3;
  ncsde::matrix mean_level(m, m);
  mean_level << 1.0, 0.3, 0.2,  //
      0.3, 1.0, 0.3,            //
      0.2, 0.3, 1.0;
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

  std::printf("ncsde downstream: %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
