#pragma once
/// Internals shared by the steppers.
#include <string>
#include <string_view>

#include "ncsde/concepts.hpp"
#include "ncsde/dense_kernels.hpp"

namespace ncsde::detail {

/// ncsde::invalid_argument for an increment whose dimension differs from noise_dimension(m).
[[noreturn]] void ncsde_noise_dimension_error(std::string_view where, int k, int expected, int m);

/// Thrown by a stepper when a coefficient returns a non-finite value or a matrix of the wrong size;
/// the integrator turns it into an ncsde::evaluation_error naming the coefficient, path, step and
/// time. (A step that ends past blowup_threshold stops the path as blown_up before the coefficients
/// see that state.)
struct non_finite_coefficient {
  std::string_view which;                   ///< "drift", "noise map" or "noise map derivative"
  std::string what = "a non-finite value";  ///< what was wrong with it
};

/// "a <rows>x<cols> matrix for a <state_rows>x<state_cols> state".
std::string shape_mismatch(long long rows, long long cols, long long state_rows,
                           long long state_cols);

/// Checks a coefficient's output x against the state v: same shape, every entry finite.
template <class State>
inline void require_finite(const State& x, const State& v, std::string_view which) {
  if (x.rows() != v.rows() || x.cols() != v.cols())
    throw non_finite_coefficient{which, shape_mismatch(x.rows(), x.cols(), v.rows(), v.cols())};
  if (!all_finite(x)) throw non_finite_coefficient{which};
}

/// Checks that an increment has the dimension k = noise_dimension(m) the problem declares.
template <class S, class State>
inline void require_noise_dimension(const S& sde, const State& v, int k, std::string_view where) {
  const int expected = sde.noise_dimension(static_cast<int>(v.rows()));
  if (k != expected) ncsde_noise_dimension_error(where, k, expected, static_cast<int>(v.rows()));
}

template <class State>
inline void resize_like(State& x, const State& v) {
  if (x.rows() != v.rows() || x.cols() != v.cols()) x.resize(v.rows(), v.cols());
}

}  // namespace ncsde::detail
