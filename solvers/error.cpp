#include "ncsde/error.hpp"
#include "ncsde/steppers/detail.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace ncsde {
namespace {

void default_assert_handler(const char* file, int line, const char* condition, const char* message) {
  std::fprintf(stderr, "ncsde: assertion failed at %s:%d: %s (%s)\n", file, line, condition, message);
  std::abort();
}

std::atomic<assert_handler> g_handler{&default_assert_handler};

}  // namespace

assert_handler set_assert_handler(assert_handler handler) {
  return g_handler.exchange(handler != nullptr ? handler : &default_assert_handler);
}

void throw_on_assert(const char* file, int line, const char* condition, const char* message) {
  throw assertion_error(fmt::format("{}:{}: assertion '{}' failed: {}", file, line, condition, message));
}

namespace detail {
void assert_failed(const char* file, int line, const char* condition, const char* message) {
  g_handler.load()(file, line, condition, message);
  std::abort();  // a handler that returns is treated as the default one
}
}  // namespace detail

}  // namespace ncsde

namespace ncsde::detail {
void ncsde_noise_dimension_error(std::string_view where, int k, int expected, int m) {
  throw invalid_argument(fmt::format(
      "{}: noise increment has dimension {} but the problem's noise_dimension(m = {}) is {}", where, k,
      m, expected));
}
}  // namespace ncsde::detail
