#include <doctest/doctest.h>

#include <string>

#include "ncsde/error.hpp"

namespace {

int g_calls = 0;

[[noreturn]] void counting_handler(const char* file, int line, const char* condition,
                                   const char* message) {
  ++g_calls;
  ncsde::throw_on_assert(file, line, condition, message);
}

}  // namespace

TEST_CASE("NCSDE_ASSERT: with the throwing handler a violated assert throws assertion_error") {
  // tests/main.cpp installs ncsde::throw_on_assert; the message names the condition and the text.
  const int k = 3;
  CHECK_NOTHROW(NCSDE_ASSERT(k == 3, "never fires"));
  CHECK_THROWS_WITH_AS(NCSDE_ASSERT(k == 4, "k must be four"),
                       doctest::Contains("assertion 'k == 4' failed: k must be four"),
                       ncsde::assertion_error);
  try {
    NCSDE_ASSERT(k < 0, "negative");
    FAIL("no assertion_error");
  } catch (const ncsde::assertion_error& e) {
    const std::string what = e.what();
    CHECK(what.find("error_test.cpp:") != std::string::npos);  // file and line come first
  }
}

TEST_CASE("set_assert_handler installs a handler and returns the previous one") {
  const ncsde::assert_handler previous = ncsde::set_assert_handler(&counting_handler);
  const bool was_throwing =
      previous == &ncsde::throw_on_assert;  // function pointers: compare outside CHECK
  CHECK(was_throwing);
  g_calls = 0;
  CHECK_THROWS_AS(NCSDE_ASSERT(false, "counted"), ncsde::assertion_error);
  CHECK(g_calls == 1);
  const bool restored_ours = ncsde::set_assert_handler(previous) == &counting_handler;
  CHECK(restored_ours);
  CHECK_THROWS_AS(NCSDE_ASSERT(false, "not counted"), ncsde::assertion_error);
  CHECK(g_calls == 1);
}

TEST_CASE(
    "throw_invalid_argument and throw_invalid format '<where>: <param> must be <rule> (got "
    "<value>)'") {
  CHECK_THROWS_WITH_AS(ncsde::throw_invalid_argument("model", "tau0", -0.5, "> 0"),
                       "model: tau0 must be > 0 (got -0.5)", ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(ncsde::throw_invalid_argument("model", "heads", 0, ">= 1"),
                       "model: heads must be >= 1 (got 0)", ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(ncsde::throw_invalid("model", "mask and m disagree"),
                       "model: mask and m disagree", ncsde::invalid_argument);
  // invalid_argument is a std::invalid_argument, so generic handlers see it.
  CHECK_THROWS_AS(ncsde::throw_invalid("x", "y"), std::invalid_argument);
}

TEST_CASE("pd_violation carries the path, step, time and smallest eigenvalue") {
  const ncsde::pd_violation e("left the cone", 4, 17, 0.35, -2e-3);
  CHECK(std::string(e.what()) == "left the cone");
  CHECK(e.path() == 4);
  CHECK(e.step() == 17);
  CHECK(e.time() == 0.35);
  CHECK(e.min_eigenvalue() == -2e-3);
}
