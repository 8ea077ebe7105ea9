#include "ncsde/error.hpp"
#include "ncsde/steppers/detail.hpp"

#include <fmt/args.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace ncsde {
namespace {

void default_assert_handler(const char* file, int line, const char* condition,
                            const char* message) {
  std::fprintf(stderr, "ncsde: assertion failed at %s:%d: %s (%s)\n", file, line, condition,
               message);
  std::abort();
}

std::atomic<assert_handler> g_handler{&default_assert_handler};

}  // namespace

assert_handler set_assert_handler(assert_handler handler) {
  return g_handler.exchange(handler != nullptr ? handler : &default_assert_handler);
}

void throw_on_assert(const char* file, int line, const char* condition, const char* message) {
  throw assertion_error(
      fmt::format("{}:{}: assertion '{}' failed: {}", file, line, condition, message));
}

void throw_invalid(std::string_view where, std::string_view message) {
  throw invalid_argument(fmt::format("{}: {}", where, message));
}

namespace detail {

std::string vformat_message(std::string_view pattern, std::initializer_list<format_arg> args) {
  fmt::dynamic_format_arg_store<fmt::format_context> store;
  for (const format_arg& a : args) {
    switch (a.type()) {
      case format_arg::kind::signed_integer:
        store.push_back(a.signed_value());
        break;
      case format_arg::kind::unsigned_integer:
        store.push_back(a.unsigned_value());
        break;
      case format_arg::kind::floating:
        store.push_back(a.floating_value());
        break;
      case format_arg::kind::boolean:
        store.push_back(a.boolean_value());
        break;
      case format_arg::kind::text:
        store.push_back(a.text_value());
        break;
    }
  }
  return fmt::vformat(fmt::string_view(pattern.data(), pattern.size()), store);
}

std::string shape_mismatch(long long rows, long long cols, long long state_rows,
                           long long state_cols) {
  return fmt::format("a {}x{} matrix for a {}x{} state", rows, cols, state_rows, state_cols);
}

void assert_failed(const char* file, int line, const char* condition, const char* message) {
  g_handler.load()(file, line, condition, message);
  std::abort();  // a handler that returns is treated as the default one
}
}  // namespace detail

}  // namespace ncsde

namespace ncsde::detail {
void ncsde_noise_dimension_error(std::string_view where, int k, int expected, int m) {
  throw invalid_argument(fmt::format(
      "{}: noise increment has dimension {} but the problem's noise_dimension(m = {}) is {}", where,
      k, m, expected));
}
}  // namespace ncsde::detail
