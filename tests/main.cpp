#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "ncsde/error.hpp"

int main(int argc, char** argv) {
  // Failed NCSDE_ASSERTs become exceptions, so tests can check them.
  ncsde::set_assert_handler(&ncsde::throw_on_assert);
  doctest::Context context(argc, argv);
  return context.run();
}
