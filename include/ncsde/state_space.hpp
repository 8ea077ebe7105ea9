#pragma once
/// State spaces: where a problem's state lives, what the engine does to a state after each step,
/// and how states are packed into coordinates, named in output and validated at the boundary.
///
/// A problem's state is an Eigen column vector (ℝᵈ) or matrix (n×m, square or not), and the SDE
/// declares the space its solutions live on with a static member
///     static constexpr ncsde::state_space space = ncsde::state_space::psd_cone;
///  - euclidean (what an SDE that declares nothing lives on): no constraint. The state is never
///    symmetrised, checked against a cone, projected or counted; only blow-up is watched.
///  - symmetric: square matrices with X = Xᵀ. After each step the state is made exactly symmetric;
///    a step whose coefficients returned a clearly non-symmetric matrix is refused (see integrate()).
///  - psd_cone: symmetric positive-semidefinite matrices. Everything `symmetric` does, plus the cone
///    check after each step and the pd_policy (integrate.hpp): the covariance SDEs, the analytic matrix
///    problems.
/// Nothing is ever projected unless the problem asked for the cone.
///
/// Coordinates (the packing of ensemble moments, CSV columns and JSON entries): the upper triangle,
/// row-major, named V11, V12, …, V1m, V22, …, Vmm, on symmetric and cone spaces; every entry on
/// euclidean spaces, named X1, …, Xd for a vector state and X11, X12, …, row-major, for a matrix.
#include <Eigen/Core>

#include <cmath>
#include <concepts>
#include <string>
#include <string_view>
#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/error.hpp"
#include "ncsde/step_rules.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde {

/// "euclidean", "symmetric", "psd_cone".
std::string_view to_string(state_space s);

/// Symmetric and cone states are symmetrised after each step; euclidean ones are left alone.
constexpr bool is_symmetric_space(state_space s) { return s != state_space::euclidean; }

/// The state type of an SDE: S::state_type when S declares one, ncsde::matrix otherwise.
template <class S>
struct default_state {
  using type = matrix;
};
template <class S>
  requires requires { typename S::state_type; }
struct default_state<S> {
  using type = typename S::state_type;
};
template <class S>
using default_state_t = typename default_state<S>::type;

/// A plain Eigen column vector or matrix of doubles: the state types the engine steps.
template <class State>
concept StateType = std::derived_from<State, Eigen::PlainObjectBase<State>> &&
                    std::same_as<typename State::Scalar, double>;

/// The shape of a problem's states and the space they live on: packing, names and validation.
/// Invariant (make_state_layout): rows, cols ≥ 1; square on symmetric and cone spaces.
struct state_layout {
  state_space space = state_space::psd_cone;
  Eigen::Index rows = 0, cols = 0;
  bool vector_state = false;  ///< a column-vector state type (names X1 … Xd)

  /// Number of coordinates: m(m+1)/2 on symmetric and cone spaces, rows·cols on euclidean ones.
  int size() const {
    return is_symmetric_space(space) ? packed_size(static_cast<int>(rows))
                                     : static_cast<int>(rows * cols);
  }
  /// The coordinates' names, in packing order (see the top of this header).
  std::vector<std::string> names() const;

  /// out = the coordinates of x (x has this layout's shape; out has size()).
  template <class Derived>
  void pack(const Eigen::DenseBase<Derived>& x, Eigen::Ref<vector> out) const {
    NCSDE_ASSERT(x.rows() == rows && x.cols() == cols && out.size() == size(),
                 "state_layout::pack: shape mismatch");
    Eigen::Index k = 0;
    if (is_symmetric_space(space)) {
      for (Eigen::Index a = 0; a < rows; ++a)
        for (Eigen::Index b = a; b < cols; ++b) out(k++) = x(a, b);
    } else {
      for (Eigen::Index a = 0; a < rows; ++a)
        for (Eigen::Index b = 0; b < cols; ++b) out(k++) = x(a, b);
    }
  }
};

/// The layout of states shaped like x on `space`; throws ncsde::invalid_argument naming `where` and
/// `param` when x is empty, or not square on a symmetric or cone space.
template <class State>
state_layout make_state_layout(std::string_view where, std::string_view param, state_space space,
                               const State& x) {
  if (x.rows() == 0 || x.cols() == 0)
    throw_invalid(where, detail::format_message("{} must be non-empty (got {}×{})", param, x.rows(),
                                                x.cols()));
  if (is_symmetric_space(space) && x.rows() != x.cols())
    throw_invalid(
        where, detail::format_message("{} must be square on the {} state space (got {}×{}; declare "
                                      "state_space::euclidean for a general matrix state)",
                                      param, to_string(space), x.rows(), x.cols()));
  return {space, x.rows(), x.cols(), State::ColsAtCompileTime == 1};
}

/// Validates a user-supplied state for `space` and returns it as the engine starts from it:
/// non-empty and finite on every space; on symmetric and cone spaces also square and symmetric within
/// symmetry_tolerance (returned exactly symmetric), and on the cone positive semidefinite up to
/// round-off (validate_state in symmetric.hpp). Throws ncsde::invalid_argument naming `where` and
/// `param`.
template <class State>
State validate_state_on(std::string_view where, std::string_view param, state_space space,
                        const State& x) {
  make_state_layout(where, param, space, x);
  if (is_symmetric_space(space))
    return State(validate_state(where, param, matrix(x), space == state_space::psd_cone));
  for (Eigen::Index j = 0; j < x.cols(); ++j)
    for (Eigen::Index i = 0; i < x.rows(); ++i)
      if (!std::isfinite(x(i, j)))
        throw_invalid(where, detail::format_message("{} must be finite (got {} at entry ({}, {}))",
                                                    param, x(i, j), i + 1, j + 1));
  return x;
}

/// V ← (V + Vᵀ)/2 in place, as symmetrize() does (same bits), returning max |V(a,b) − V(b,a)|
/// before (NaN when an off-diagonal pair is not finite): the engine's symmetrisation, which also
/// measures what it removed (step_rules::symmetrize_measured, the device engine's too; a row-major
/// V is the same pairs in the same order).
template <class Derived>
double symmetrize_measured(Eigen::PlainObjectBase<Derived>& v) {
  NCSDE_ASSERT(v.rows() == v.cols(), "symmetrize_measured: the matrix is not square");
  return step_rules::symmetrize_measured(v.data(), static_cast<int>(v.rows()));
}

}  // namespace ncsde
