#pragma once
/// Convergence studies of an ncsde.PythonSde: run_convergence (convergence.hpp) on the Python SDE,
/// with an exact solution and a weak functional written in Python, or neither (the fine-grid
/// reference and the coupled differences of successive levels).
#include <functional>
#include <string>
#include <vector>

#include "ncsde/convergence.hpp"
#include "python_sde.hpp"

namespace ncsde::python {

struct python_convergence_problem {
  std::string name = "python-sde";
  matrix v0;  ///< a d×1 matrix for a vector state
  double t_end = 1.0;
  noise_class noise = noise_class::general;
  int first_level = 1;
  int levels = 5;
  long long paths = 1000;
  /// X_T(X0, W_T, T) when the SDE has a pathwise solution; empty otherwise.
  std::function<matrix(const matrix& v0, const Eigen::Ref<const vector>& w_t, double t)> exact;
  functional weak;  ///< f of the weak errors; empty: strong errors only
};

/// The study of `p` for the SDE (python_convergence.cpp: one instantiation per state space).
std::vector<convergence_series> run_python_convergence(
    const python_sde<state_space::euclidean>& sde, const python_convergence_problem& p,
    const convergence_options& opt);
std::vector<convergence_series> run_python_convergence(
    const python_sde<state_space::symmetric>& sde, const python_convergence_problem& p,
    const convergence_options& opt);
std::vector<convergence_series> run_python_convergence(const python_sde<state_space::psd_cone>& sde,
                                                       const python_convergence_problem& p,
                                                       const convergence_options& opt);

}  // namespace ncsde::python
