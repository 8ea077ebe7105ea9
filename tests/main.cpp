#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ncsde/error.hpp"

// A sanitizer build (-fsanitize=address or thread: GCC defines __SANITIZE_*__, Clang answers
// __has_feature) skips the test suite `statistical`: the large Monte Carlo studies (measured
// convergence orders, laws of finite networks at n = 16–32), 30–40× slower under the sanitizers,
// whose code the other test cases run at small sizes. The Release run runs them; NCSDE_TEST_ALL=1
// runs them under a sanitizer too.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitizer_build = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool sanitizer_build = true;
#else
constexpr bool sanitizer_build = false;
#endif
#else
constexpr bool sanitizer_build = false;
#endif

int main(int argc, char** argv) {
  // Failed NCSDE_ASSERTs become exceptions, so tests can check them.
  ncsde::set_assert_handler(&ncsde::throw_on_assert);
  doctest::Context context;
  const char* all = std::getenv("NCSDE_TEST_ALL");
  if (sanitizer_build && !(all != nullptr && std::strcmp(all, "1") == 0)) {
    context.addFilter("test-suite-exclude", "statistical");
    std::fprintf(stderr,
                 "sanitizer build: the test suite 'statistical' is skipped (the Release run runs "
                 "it; NCSDE_TEST_ALL=1 runs it here)\n");
  }
  context.applyCommandLine(argc, argv);
  return context.run();
}
