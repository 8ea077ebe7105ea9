// The convergence studies of Python SDEs (run_convergence on python_sde), for ncsde.convergence.
#include "python_convergence.hpp"

namespace ncsde::python {

namespace {

template <state_space Space>
std::vector<convergence_series> run_study(const python_sde<Space>& sde,
                                          const python_convergence_problem& p,
                                          const convergence_options& opt) {
  convergence_problem<python_sde<Space>> cp(p.name, problem<python_sde<Space>>{sde, p.v0, p.t_end});
  cp.description = "a Python SDE";
  cp.noise = p.noise;
  cp.first_level = p.first_level;
  cp.levels = p.levels;
  cp.paths = p.paths;
  cp.exact = p.exact;
  cp.weak = p.weak;
  return run_convergence(cp, opt);
}

}  // namespace

std::vector<convergence_series> run_python_convergence(
    const python_sde<state_space::euclidean>& sde, const python_convergence_problem& p,
    const convergence_options& opt) {
  return run_study(sde, p, opt);
}

std::vector<convergence_series> run_python_convergence(
    const python_sde<state_space::symmetric>& sde, const python_convergence_problem& p,
    const convergence_options& opt) {
  return run_study(sde, p, opt);
}

std::vector<convergence_series> run_python_convergence(const python_sde<state_space::psd_cone>& sde,
                                                       const python_convergence_problem& p,
                                                       const convergence_options& opt) {
  return run_study(sde, p, opt);
}

}  // namespace ncsde::python
