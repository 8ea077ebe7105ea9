#pragma once
/// The scheme registry: the one list of built-in stepper types. Everything that offers a choice of
/// scheme reads it: the convergence engine (convergence_options::schemes, its per-scheme dispatch,
/// the expected orders, the names in its tables and JSON), the `ncsde convergence --scheme` and
/// `ncsde simulate --scheme` options and their help, and the benchmarks. Adding a scheme is its
/// header under steppers/ (a type modelling ncsde::Stepper, stepper.hpp, included below) plus its
/// line in NCSDE_FOR_EACH_BUILTIN_SCHEME below.
///
/// Compile time: builtin_schemes::visit(index, f) calls f(std::type_identity<St>{}) with the index-th
/// stepper type, so a run-time choice dispatches to code compiled for each scheme. Run time:
/// builtin_scheme_descriptors() (names, descriptions, orders per noise class, noise requests, cone),
/// find_scheme(name) and scheme_names().
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ncsde/error.hpp"
#include "ncsde/stepper.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/steppers/milstein.hpp"
#include "ncsde/steppers/predictor_corrector.hpp"

namespace ncsde {

/// A compile-time list of stepper types (with distinct names: checked for builtin_schemes).
template <Stepper... Steppers>
struct scheme_list {
  static constexpr std::size_t size = sizeof...(Steppers);
  /// One stepper of each scheme (the convergence engine's per-thread workspaces).
  using tuple = std::tuple<Steppers...>;
  /// The schemes' declarations, in list order.
  static constexpr std::array<scheme_descriptor, size> descriptors{describe<Steppers>()...};

  /// The position of St in the list (a compile error when it is not listed).
  template <class St>
  static constexpr std::size_t index_of = [] {
    constexpr bool same[] = {std::is_same_v<St, Steppers>...};
    for (std::size_t i = 0; i < size; ++i)
      if (same[i]) return i;
    throw "scheme_list::index_of: the stepper is not in the list";
  }();

  /// f(std::type_identity<St>{}) for St the index-th type; every call must return the same type.
  /// index < size is the caller's invariant (an index from find_scheme), asserted.
  template <class F>
  static decltype(auto) visit(std::size_t index, F&& f) {
    NCSDE_ASSERT(index < size, "scheme_list::visit: index out of range");
    return visit_from<0, Steppers...>(index, f);
  }

  /// f(std::type_identity<St>{}) for every St, in list order.
  template <class F>
  static void for_each(F&& f) {
    (f(std::type_identity<Steppers>{}), ...);
  }

  /// A tuple of steppers, make(std::type_identity<St>{}) returning each.
  template <class F>
  static tuple make_tuple(F&& make) {
    return tuple{make(std::type_identity<Steppers>{})...};
  }

 private:
  template <std::size_t I, class First, class... Rest, class F>
  static decltype(auto) visit_from(std::size_t index, F& f) {
    if constexpr (sizeof...(Rest) == 0) {
      return f(std::type_identity<First>{});
    } else {
      if (index == I) return f(std::type_identity<First>{});
      return visit_from<I + 1, Rest...>(index, f);
    }
  }
};

namespace detail {
/// No two descriptors share a name.
template <std::size_t N>
constexpr bool distinct_names(const std::array<scheme_descriptor, N>& d) {
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = i + 1; j < N; ++j)
      if (d[i].name == d[j].name) return false;
  return true;
}
}  // namespace detail

/// The built-in schemes, in the order the convergence tables list them: the one list. It is an
/// X-macro because explicit instantiations (models/shaped.hpp compiles ensembles of the built-in
/// models once per scheme, in the library) cannot expand a pack; builtin_schemes is made from it.
#define NCSDE_FOR_EACH_BUILTIN_SCHEME(X) \
  X(euler_maruyama<>)                    \
  X(milstein<>)                          \
  X(milstein_commutative<>)              \
  X(predictor_corrector<>)

namespace detail {
template <class Void, class... Steppers>
struct scheme_list_of {
  using type = scheme_list<Steppers...>;
};
}  // namespace detail

#define NCSDE_DETAIL_SCHEME_ENTRY(Stepper) , Stepper
using builtin_schemes = typename detail::scheme_list_of<void NCSDE_FOR_EACH_BUILTIN_SCHEME(
    NCSDE_DETAIL_SCHEME_ENTRY)>::type;
#undef NCSDE_DETAIL_SCHEME_ENTRY
static_assert(detail::distinct_names(builtin_schemes::descriptors),
              "builtin_schemes: two schemes have the same name");

/// builtin_schemes::descriptors.
inline constexpr const std::array<scheme_descriptor, builtin_schemes::size>&
builtin_scheme_descriptors() {
  return builtin_schemes::descriptors;
}

/// The index in builtin_schemes of the scheme called `name`; throws ncsde::invalid_argument
/// "<param> must be one of em, milstein, … (got '<name>')" for a name it does not list.
std::size_t find_scheme(std::string_view name, std::string_view param = "scheme");

/// The descriptor of the scheme called `name` (find_scheme's errors).
const scheme_descriptor& scheme_descriptor_of(std::string_view name,
                                              std::string_view param = "scheme");

/// The built-in schemes' names, in registry order.
std::vector<std::string> scheme_names();

/// The names joined by ", " (for help texts and messages).
std::string scheme_name_list();

}  // namespace ncsde
