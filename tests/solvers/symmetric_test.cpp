#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "ncsde/error.hpp"
#include "ncsde/symmetric.hpp"
#include "support/random_matrices.hpp"

namespace {

using ncsde::matrix;
using ncsde::vector;

}  // namespace

TEST_CASE("packed_size and packed_index enumerate the upper triangle row by row") {
  static_assert(ncsde::packed_size(1) == 1);
  static_assert(ncsde::packed_size(3) == 6);
  static_assert(ncsde::packed_index(0, 0, 3) == 0);
  static_assert(ncsde::packed_index(0, 2, 3) == 2);
  static_assert(ncsde::packed_index(1, 1, 3) == 3);
  static_assert(ncsde::packed_index(1, 2, 3) == 4);
  static_assert(ncsde::packed_index(2, 2, 3) == 5);
  for (int m = 1; m <= 9; ++m) {
    CHECK(ncsde::packed_size(m) == m * (m + 1) / 2);
    int k = 0;
    bool in_order = true;
    for (int a = 0; a < m; ++a)
      for (int b = a; b < m; ++b) in_order = in_order && ncsde::packed_index(a, b, m) == k++;
    CHECK(in_order);
    CHECK(k == ncsde::packed_size(m));
  }
}

TEST_CASE("pack_upper / unpack_upper round-trip") {
  for (int m = 1; m <= 6; ++m) {
    const matrix v = support::random_symmetric(m, static_cast<std::uint64_t>(m));
    vector packed(ncsde::packed_size(m));
    ncsde::pack_upper(v, packed);
    for (int a = 0; a < m; ++a)
      for (int b = a; b < m; ++b) CHECK(packed(ncsde::packed_index(a, b, m)) == v(a, b));
    matrix back;
    ncsde::unpack_upper(packed, back);
    CHECK(back == v);
  }
  // unpack mirrors the upper triangle: a packed vector always gives a symmetric matrix.
  vector p(3);
  p << 1.0, 2.0, 3.0;
  matrix out;
  ncsde::unpack_upper(p, out);
  matrix expected(2, 2);
  expected << 1, 2, 2, 3;
  CHECK(out == expected);
  // Sizes that are not m(m+1)/2 are caught by NCSDE_ASSERT (tests install the throwing handler).
  const vector bad = vector::Zero(4);
  CHECK_THROWS_WITH_AS(ncsde::unpack_upper(bad, out),
                       doctest::Contains("packed size is not m(m+1)/2"), ncsde::assertion_error);
  vector wrong(5);
  CHECK_THROWS_WITH_AS(ncsde::pack_upper(expected, wrong),
                       doctest::Contains("output has the wrong size"), ncsde::assertion_error);
}

TEST_CASE("asymmetry is the largest |V − Vᵀ|") {
  matrix v(3, 3);
  v << 1, 2, 3, 2.5, 1, 4, 3, 3.75, 1;
  CHECK(ncsde::asymmetry(v) == 0.5);  // max(|2 − 2.5|, |3 − 3|, |4 − 3.75|)
  CHECK(ncsde::asymmetry(matrix::Identity(4, 4)) == 0.0);
  CHECK(ncsde::asymmetry(matrix(2, 3)) == 0.0);  // not square: no symmetric part to compare
}

TEST_CASE("validate_state accepts valid states and returns them exactly symmetric") {
  const matrix v = support::random_spd(4, 5);
  CHECK(ncsde::validate_state("f", "V", v) == v);
  // Asymmetry within symmetry_tolerance·max(1, max|V|) is accepted and removed (upper → lower).
  matrix w = v;
  w(2, 0) += 0.5 * ncsde::symmetry_tolerance;
  const matrix out = ncsde::validate_state("f", "V", w);
  CHECK(ncsde::asymmetry(out) == 0.0);
  CHECK(out(2, 0) == v(0, 2));
  // Boundary states (PSD up to round-off) pass; require_psd = false skips the cone check.
  matrix ones(2, 2);
  ones << 1, 1, 1, 1;
  CHECK(ncsde::validate_state("f", "V", ones) == ones);
  matrix indefinite(2, 2);
  indefinite << 1, 0, 0, -1;
  CHECK(ncsde::validate_state("f", "V", indefinite, false) == indefinite);
}

TEST_CASE("validate_state rejects bad states naming the parameter and the value") {
  using ncsde::validate_state;
  CHECK_THROWS_WITH_AS(
      validate_state("integrate", "V0", matrix()),
      doctest::Contains("integrate: V0 must be a non-empty m×m matrix with m ≥ 1 (got 0×0)"),
      ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(validate_state("integrate", "V0", matrix::Zero(2, 3)),
                       doctest::Contains("integrate: V0 must be square (got 2×3)"),
                       ncsde::invalid_argument);
  CHECK_THROWS_WITH_AS(validate_state("integrate", "V0", matrix::Zero(0, 3)),
                       doctest::Contains("V0 must be a non-empty m×m matrix with m ≥ 1 (got 0×3)"),
                       ncsde::invalid_argument);
  matrix v = matrix::Identity(2, 2);
  v(1, 0) = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH_AS(validate_state("integrate", "V0", v),
                       doctest::Contains("integrate: V0 must be finite (got nan at entry (2, 1))"),
                       ncsde::invalid_argument);
  v = matrix::Identity(2, 2);
  v(1, 1) = -std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH_AS(validate_state("run", "v_start", v),
                       doctest::Contains("run: v_start must be finite (got -inf at entry (2, 2))"),
                       ncsde::invalid_argument);
  v = matrix::Identity(2, 2);
  v(0, 1) = 0.03;
  CHECK_THROWS_WITH_AS(validate_state("integrate", "V0", v),
                       doctest::Contains("integrate: V0 is not symmetric (max |V - V^T| = 0.03)"),
                       ncsde::invalid_argument);
  // The symmetry tolerance is relative to max(1, max|V|): 1e-9 on entries of size 1e6 passes.
  matrix big = 1e6 * matrix::Identity(2, 2);
  big(0, 1) = 1.0;
  big(1, 0) = 1.0 + 1e-9;
  CHECK_NOTHROW(validate_state("integrate", "V0", big));
  v = matrix::Identity(2, 2);
  v(1, 1) = -1.0;
  CHECK_THROWS_WITH_AS(
      validate_state("integrate", "V0", v),
      doctest::Contains("integrate: V0 is not positive semidefinite (smallest eigenvalue -1)"),
      ncsde::invalid_argument);
}
