#include <doctest/doctest.h>

#include <Eigen/Core>
#include <cmath>
#include <limits>

#include "ncsde/psd.hpp"
#include "ncsde/symmetric.hpp"
#include "support/random_matrices.hpp"

namespace {

using ncsde::matrix;
using ncsde::psd_checker;
using ncsde::psd_status;
using ncsde::vector;

constexpr double eps = std::numeric_limits<double>::epsilon();
constexpr double nan_value = std::numeric_limits<double>::quiet_NaN();
constexpr double inf_value = std::numeric_limits<double>::infinity();

matrix diag2(double a, double b) {
  matrix v = matrix::Zero(2, 2);
  v(0, 0) = a;
  v(1, 1) = b;
  return v;
}

}  // namespace

TEST_CASE_TEMPLATE("project_psd leaves a positive-definite V unchanged", M, Eigen::Matrix4d,
                   Eigen::MatrixXd) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const M v = support::random_spd<M>(4, seed);
    // A symmetric eigensolver reconstructs V to O(m ε |V|); 8 is headroom, m = 4.
    const double tol = 8 * 4 * eps * v.norm();
    CHECK((ncsde::project_psd(v) - v).norm() <= tol);  // written so that a NaN fails
  }
}

TEST_CASE_TEMPLATE("psd_checker: positive definite, boundary and outside", M, Eigen::Matrix3d,
                   Eigen::MatrixXd) {
  psd_checker checker;
  // Positive definite: Cholesky succeeds; the eigenvalue is not computed.
  const M spd = support::random_spd<M>(3, 21);
  ncsde::psd_result r = checker.check(spd);
  CHECK(r.status == psd_status::positive_definite);
  CHECK(std::isnan(r.min_eigenvalue));
  // Indefinite: a clearly negative eigenvalue (far beyond 16·m·ε·max|V|).
  vector lambda(3);
  lambda << 2.0, 1.0, -0.25;
  const M indefinite = support::with_eigenvalues(lambda, 4);
  r = checker.check(indefinite);
  CHECK(r.status == psd_status::outside);
  // The eigensolver's error is O(m ε |V|): 8·3·ε·2 with headroom.
  CHECK(std::abs(r.min_eigenvalue + 0.25) <= 8 * 3 * eps * 2.0 * 4);
}

TEST_CASE("psd_checker: singular PSD states are on the boundary, not violations") {
  psd_checker checker;
  // Exactly singular: the Cholesky pivot is exactly 0, the eigenvalue 0 up to round-off.
  matrix ones(2, 2);
  ones << 1, 1, 1, 1;
  ncsde::psd_result r = checker.check(ones);
  CHECK(r.status == psd_status::boundary);
  CHECK(std::abs(r.min_eigenvalue) <= ncsde::psd_round_off(ones));
  r = checker.check(diag2(1.0, 0.0));
  CHECK(r.status == psd_status::boundary);
  CHECK(r.min_eigenvalue == 0.0);
  r = checker.check(matrix::Zero(3, 3));
  CHECK(r.status == psd_status::boundary);
  // The round-off threshold is 16·m·ε·max|V| and the boundary/outside split sits exactly there.
  const matrix d = diag2(4.0, 0.0);
  const double tol = ncsde::psd_round_off(d);
  CHECK(tol == 16.0 * 2 * eps * 4.0);
  CHECK(checker.check(diag2(4.0, -0.5 * tol)).status == psd_status::boundary);
  CHECK(checker.check(diag2(4.0, -2.0 * tol)).status == psd_status::outside);
  CHECK(checker.check(diag2(4.0, -2.0 * tol)).min_eigenvalue == -2.0 * tol);
  // A low-rank Gram matrix (rank 2 in 4 dimensions) is accepted (positive definite up to round-off
  // or boundary), never `outside`.
  const matrix b = support::random_gaussian(4, 2, 3);
  CHECK(checker.check(b * b.transpose()).status != psd_status::outside);
}

TEST_CASE("psd_checker: non-finite states are outside") {
  psd_checker checker;
  matrix v = diag2(1.0, 1.0);
  v(0, 1) = v(1, 0) = nan_value;
  CHECK(checker.check(v).status == psd_status::outside);
  CHECK(std::isnan(checker.check(v).min_eigenvalue));
  CHECK(checker.check(diag2(nan_value, 1.0)).status == psd_status::outside);
  CHECK(checker.check(diag2(inf_value, 1.0)).status == psd_status::outside);
  CHECK(checker.check(diag2(1.0, -inf_value)).status == psd_status::outside);
}

TEST_CASE("psd_round_off and min_eigenvalue") {
  matrix v(3, 3);
  v << 2, -7, 0, -7, 1, 0, 0, 0, 3;
  CHECK(ncsde::psd_round_off(v) == 16.0 * 3 * eps * 7.0);
  CHECK(ncsde::psd_round_off(matrix()) == 0.0);
  // Eigenvalues of [[2, −7], [−7, 1]]: (3 ± √197)/2; and 3.
  const double exact = (3.0 - std::sqrt(197.0)) / 2.0;
  CHECK(std::abs(ncsde::min_eigenvalue(v) - exact) <= 8 * 3 * eps * 7.0);
}

TEST_CASE_TEMPLATE("project_psd is the nearest PSD matrix (Frobenius), with an optional floor", M,
                   Eigen::Matrix4d, Eigen::MatrixXd) {
  // P is the projection of a symmetric A onto the (self-dual, convex) PSD cone iff
  //   P ⪰ 0,  P − A ⪰ 0,  ⟨P, P − A⟩ = tr(P (P − A)) = 0
  // (the cone's KKT conditions). Each holds to the eigensolver's O(m ε |A|) accuracy: tolerances
  // 64·m·ε·|A|_F (|A|² for the inner product).
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    CAPTURE(seed);
    const M a = support::random_symmetric<M>(4, seed);
    const M p = ncsde::project_psd(a);
    const double scale = 64 * 4 * eps * a.norm();
    CHECK(ncsde::min_eigenvalue(p) >= -scale);
    CHECK(ncsde::min_eigenvalue(p - a) >= -scale);
    CHECK(std::abs((p * (p - a)).trace()) <= scale * a.norm());
    CHECK(ncsde::asymmetry(p) == 0.0);  // exactly symmetric
    // Nearest: no PSD matrix from a family of candidates is closer to A.
    for (std::uint64_t c = 0; c < 20; ++c) {
      const matrix q = support::random_spd(4, 1000 + c, 0.0) * (0.1 * static_cast<double>(c));
      CHECK((p - a).norm() <= (q - a).norm() + scale);
    }
    CHECK((p - a).norm() <= (ncsde::matrix::Zero(4, 4) - a).norm() + scale);
    // The floor: eigenvalues below `floor` become `floor`, the others are kept.
    const M pf = ncsde::project_psd(a, 0.3);
    CHECK(ncsde::min_eigenvalue(pf) >= 0.3 - scale);
    const Eigen::SelfAdjointEigenSolver<matrix> ea{matrix(a)}, ef{matrix(pf)};
    for (int i = 0; i < 4; ++i)
      CHECK(std::abs(ef.eigenvalues()(i) - std::max(ea.eigenvalues()(i), 0.3)) <= scale);
  }
}

TEST_CASE("psd_checker::project returns the smallest eigenvalue before projection") {
  psd_checker checker;
  vector lambda(3);
  lambda << 1.5, -0.5, 0.25;
  const matrix a = support::with_eigenvalues(lambda, 8);
  matrix v = a;
  const double before = checker.project(v, 0.0);
  CHECK(std::abs(before + 0.5) <= 64 * 3 * eps * 1.5);
  // The projection keeps the eigenvectors: it removes exactly the −0.5 component, |P − A|_F = 0.5.
  CHECK(std::abs((v - a).norm() - 0.5) <= 64 * 3 * eps * 1.5);
  CHECK(checker.check(v).status != psd_status::outside);
}

TEST_CASE_TEMPLATE(
    "small_cholesky: L Lᵀ = V to round-off, as Eigen's LLT; refuses indefinite and NaN V", M,
    Eigen::Matrix2d, Eigen::Matrix4d, ncsde::square_matrix<8>) {
  constexpr int m = M::RowsAtCompileTime;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const M v = support::random_spd<M>(m, seed);
    M l;
    REQUIRE(ncsde::detail::small_cholesky(v, l));
    // Backward error of Cholesky: |L Lᵀ − V| ≤ c m ε |V| (c = 4 headroom); the factor itself is the
    // unique one with positive diagonal, so it equals Eigen's to the same order (times cond(V) ≤ 10³).
    CHECK((l * l.transpose() - v).norm() <= 4 * m * eps * v.norm());
    CHECK(l.template triangularView<Eigen::StrictlyUpper>().toDenseMatrix().isZero(0.0));
    const Eigen::LLT<M> llt(v);
    CHECK((l - M(llt.matrixL())).norm() <= 1e3 * 4 * m * eps * l.norm());
    // The checker classifies by the same factorisation and hands out this factor.
    ncsde::basic_psd_checker<M> checker;
    REQUIRE(checker.check(v).status == psd_status::positive_definite);
    CHECK(checker.cholesky_factor() == l);
  }
  M indefinite = M::Identity();
  indefinite(m - 1, m - 1) = -1e-3;
  M l;
  CHECK_FALSE(ncsde::detail::small_cholesky(indefinite, l));
  M singular = M::Zero();
  CHECK_FALSE(ncsde::detail::small_cholesky(singular, l));
  M with_nan = M::Identity();
  with_nan(m - 1, 0) = nan_value;
  with_nan(0, m - 1) = nan_value;
  CHECK_FALSE(ncsde::detail::small_cholesky(with_nan, l));
}
