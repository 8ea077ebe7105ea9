#pragma once
/// Internals shared by the steppers.
#include <string_view>

#include "ncsde/concepts.hpp"

namespace ncsde::detail {

/// Thrown by a stepper when a coefficient returns a non-finite value; the integrator turns it into
/// an ncsde::evaluation_error naming the coefficient, path, step and time. (A step that ends past
/// blowup_threshold stops the path as blown_up before the coefficients see that state.)
struct non_finite_coefficient {
  std::string_view which;  ///< "drift", "noise map" or "noise map derivative"
};

template <class State>
inline void require_finite(const State& x, std::string_view which) {
  if (!x.allFinite()) throw non_finite_coefficient{which};
}

template <class State>
inline void resize_like(State& x, const State& v) {
  if (x.rows() != v.rows() || x.cols() != v.cols()) x.resize(v.rows(), v.cols());
}

}  // namespace ncsde::detail
