// The ensembles of Python SDEs on symmetric and cone states, every registry scheme.
#include "python_sde.hpp"

namespace ncsde::python {

ensemble_result run_python_sde(const python_sde<state_space::symmetric>& sde, const matrix& v0,
                               std::string_view scheme, double t_end, const integrate_options& iopt,
                               const ensemble_options& eopt) {
  return run_python_sde_impl(sde, v0, scheme, t_end, iopt, eopt);
}

ensemble_result run_python_sde(const python_sde<state_space::psd_cone>& sde, const matrix& v0,
                               std::string_view scheme, double t_end, const integrate_options& iopt,
                               const ensemble_options& eopt) {
  return run_python_sde_impl(sde, v0, scheme, t_end, iopt, eopt);
}

}  // namespace ncsde::python
