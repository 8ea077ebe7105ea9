#pragma once
/// Lanes: the states of several paths side by side, for SDEs that can evaluate their drift and noise
/// map on a whole group of paths at once (the batched engine, batched.hpp).
///
/// A lane group holds batch_width paths. Its states are a lane_block: one row per lane (path), one
/// column per coordinate, stored column-major, so that the batch_width values of one coordinate are
/// contiguous and one SIMD instruction advances several paths (in a user's batched form Eigen's
/// packet math, whichever instruction set the translation unit is compiled for; in the library's
/// own lane arithmetic below, Google Highway's vectors, the widest the CPU runs, chosen at run
/// time). The coordinates of a state are its entries in Eigen's storage order: entry (a, b) of an
/// m×m matrix is column a + b·m, entry i of a vector column i. An increment block holds the noise ξ of every lane the same way
/// (batch_width × k).
///
/// BatchedSde. An SDE offers its batched form with two members,
///   s.drift_lanes(v, out, t):          out = b(t, V_l) in row l, for every lane l;
///   s.diffusion_lanes(v, xi, out, t):  out = G(t, V_l) ξ_l in row l;
/// out is sized by the caller (batch_width × coordinates). They compute the same maths as drift()
/// and diffusion(), lane by lane; a lane's result must depend on that lane's row only (no reduction
/// across lanes), so that a path's numbers do not depend on which paths share its group. An SDE
/// without them runs path by path, unchanged.
#include <Eigen/Core>

#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ncsde/error.hpp"

namespace ncsde {

/// Paths per lane group: 8 doubles, one AVX-512 register or two AVX registers per coordinate.
inline constexpr int batch_width = 8;

/// States (or increments) of a lane group of W paths: W rows (lanes) × coordinates.
template <int W>
using lane_block_of = Eigen::Array<double, W, Eigen::Dynamic>;
/// One value per lane.
template <int W>
using lane_column_of = Eigen::Array<double, W, 1>;
/// One flag per lane.
template <int W>
using lane_mask_of = Eigen::Array<bool, W, 1>;

/// The lane group of batch_width paths, the SIMD width: what the library's SDEs take.
using lane_block = lane_block_of<batch_width>;
using lane_column = lane_column_of<batch_width>;
using lane_mask = lane_mask_of<batch_width>;

/// The lane count of S's batched form: S::lane_width when S declares one (a multiple of
/// batch_width, at most 64, the executor's default block: a group never spans two blocks), else
/// batch_width. A wider group serves SDEs whose cost is per call rather than per lane (a Python
/// SDE makes one interpreter call per group and step); lanes never interact, so a path's numbers do
/// not depend on the width.
template <class S>
inline constexpr int lane_width_of = batch_width;
template <class S>
  requires requires { S::lane_width; }
inline constexpr int lane_width_of<S> = S::lane_width;

template <class S>
concept BatchedSde = lane_width_of<S> % batch_width == 0 && lane_width_of<S> <= 64 &&
                     requires(const S& s, const lane_block_of<lane_width_of<S>>& v,
                              const lane_block_of<lane_width_of<S>>& xi,
                              lane_block_of<lane_width_of<S>>& out, double t) {
                       s.drift_lanes(v, out, t);
                       s.diffusion_lanes(v, xi, out, t);
                     };

/// m of the m×m states of a lane block (m² coordinates per lane).
inline int lane_matrix_size(const lane_block& v) {
  const int m = static_cast<int>(std::lround(std::sqrt(static_cast<double>(v.cols()))));
  NCSDE_ASSERT(static_cast<Eigen::Index>(m) * m == v.cols(), "lane block: not an m×m state");
  return m;
}

namespace detail {
/// lane_cholesky on raw columns: `lanes` lanes (a multiple of batch_width), column stride `lanes`.
void lane_cholesky_columns(const double* v, int lanes, int m, double* l, bool* ok);

/// One term of a lane combination: scale·x (scaled) or x itself, x a block of lanes stored as
/// lane_combination_args says.
struct lane_term {
  const double* x = nullptr;
  double scale = 1.0;
  bool scaled = false;
};

/// The most terms a lane combination sums.
inline constexpr int max_lane_terms = 4;

/// The operands of lane_combine_columns: `lanes` lanes (a multiple of batch_width) of k coordinates,
/// every block's column c at its pointer + c·lanes.
struct lane_combination_args {
  const double* v = nullptr;  ///< added on the left of the sum, or nullptr: none
  std::array<lane_term, max_lane_terms> terms{};
  int count = 0;  ///< terms[0, count) are summed, 1 ≤ count ≤ max_lane_terms
  int lanes = 0;
  Eigen::Index k = 0;
  int m = 0;  ///< > 0: m×m states on a symmetric space (k = m²), symmetrised; 0: none
  double* out = nullptr;
  double* asymmetry = nullptr;  ///< per lane (0 when m = 0)
  double* nonfinite = nullptr;  ///< per lane
  double* size = nullptr;       ///< per lane
};

/// The batched engine's step arithmetic, which a scheme's lane form (batched.hpp, LaneScheme)
/// calls with its own terms in its own order: coordinate by coordinate
///   out = v + (((t_0 + t_1) + t_2) + …),  t_i = scale_i·x_i (scaled) or x_i,
/// (without the leading v + when v is nullptr), the sums from the left as the per-path scheme's
/// Eigen expression evaluates them; for m > 0 then symmetrised as symmetrize_measured
/// (state_space.hpp) lane by lane, asymmetry = its measure (a NaN gap is kept until a later gap
/// replaces it, as there); per lane nonfinite = Σ (x − x) over the coordinates (0 exactly when the
/// lane's result is finite) and size = max |x| (exact when finite).
void lane_combine_columns(const lane_combination_args& a);

/// The operands of lane_trial_columns: `lanes` lanes (a multiple of batch_width) of k coordinates,
/// every block's column c at its pointer + c·lanes.
struct lane_trial_args {
  const double* v;
  const double* drift;
  const double* noise;
  const double* term;  ///< a third term (the commutative Milstein correction M), or nullptr
  double h;
  int lanes;
  Eigen::Index k;
  int m;  ///< > 0: m×m states on a symmetric space (k = m²), symmetrised; 0: none
  double* trial;
  double* asymmetry;  ///< per lane (0 when m = 0)
  double* nonfinite;  ///< per lane
  double* size;       ///< per lane
};

/// lane_combine_columns with the terms h·drift, noise [, term]: trial = v + (h·drift + noise), or
/// v + ((h·drift + noise) + term), symmetrised and measured as there.
void lane_trial_columns(const lane_trial_args& a);
}  // namespace detail

/// Cholesky factors of the m×m states of a lane group, lane by lane: l (W × m², lower
/// triangle, upper set to 0) gets L_l with L_l L_lᵀ = V_l in row l, by the left-looking column
/// algorithm of detail::small_cholesky (psd.hpp) in the same order of operations, so a lane's factor
/// is bit-identical to small_cholesky's on the same matrix. ok(l) is false when a pivot of lane l
/// is not > 0 (or is NaN): V_l is then not numerically positive definite and row l of l is
/// unspecified. Reads only the lower triangle of v.
template <int W>
inline void lane_cholesky(const lane_block_of<W>& v, int m, lane_block_of<W>& l,
                          lane_mask_of<W>& ok) {
  NCSDE_ASSERT(v.cols() == static_cast<Eigen::Index>(m) * m,
               "lane_cholesky: V must be m×m per lane");
  l.resize(W, static_cast<Eigen::Index>(m) * m);
  detail::lane_cholesky_columns(v.data(), W, m, l.data(), ok.data());
}

/// Whether the batched engine should step S's states of `coordinates` coordinates (rows × cols) in
/// lane groups: an SDE whose batched and per-path forms give the same numbers, but not at the same
/// speed at every size, may say so with a member `bool prefers_lanes(Eigen::Index coordinates)
/// const` (the built-in models: lanes up to m = 63, one path at a time beyond, where a path's
/// vectorised products outrun eight paths' lanes); without one, lanes whenever the run allows.
template <class S>
bool prefers_lanes(const S& s, Eigen::Index coordinates) {
  if constexpr (requires {
                  { s.prefers_lanes(coordinates) } -> std::convertible_to<bool>;
                })
    return s.prefers_lanes(coordinates);
  else
    return true;
}

/// S factorises its lanes' states itself and accepts the batched engine's factors (the batched
/// SdeWithCholeskyHint, concepts.hpp):
///   s.use_cholesky_lanes(v, l, ok): (l, ok) is lane_cholesky(v, m, l, ok) of exactly the block v,
///   the group's state the next step starts from, as the engine's cone check computed it.
/// S may keep it instead of factorising v again (lane_cholesky_cache: keyed on v's bits, so that
/// results do not change). The batched engine calls it after each step whose new states passed the
/// check by lane_cholesky in every lane.
template <class S>
concept BatchedSdeWithCholeskyHint =
    BatchedSde<S> &&
    requires(const S& s, const lane_block_of<lane_width_of<S>>& v,
             const lane_mask_of<lane_width_of<S>>& ok) { s.use_cholesky_lanes(v, v, ok); };

/// The lane_cholesky factors of one block, handed over by the batched engine
/// (BatchedSdeWithCholeskyHint): factor() returns them for exactly that block (the same bits, every
/// value compared as stored, so ±0 and NaN payloads count) and computes lane_cholesky otherwise.
template <int W>
class lane_cholesky_cache {
 public:
  /// Keeps (l, ok) = lane_cholesky(v, ·) of v.
  void adopt(const lane_block_of<W>& v, const lane_block_of<W>& l, const lane_mask_of<W>& ok) {
    m_v = v;
    m_l = l;
    m_ok = ok;
    m_valid = true;
  }
  /// lane_cholesky(v, m, l, ok), from the kept factors when v is the adopted block bit for bit.
  void factor(const lane_block_of<W>& v, int m, lane_block_of<W>& l, lane_mask_of<W>& ok) const {
    if (m_valid && m_v.cols() == v.cols() && m_l.cols() == v.cols() &&
        std::memcmp(m_v.data(), v.data(), sizeof(double) * static_cast<std::size_t>(v.size())) ==
            0) {
      l = m_l;
      ok = m_ok;
      return;
    }
    lane_cholesky(v, m, l, ok);
  }

 private:
  lane_block_of<W> m_v, m_l;
  lane_mask_of<W> m_ok = lane_mask_of<W>::Constant(false);
  bool m_valid = false;
};

/// out = L X for the m×m matrices of a lane group, lane by lane (entry (a, b) in column a + b·m):
/// out(a, d) = Σ_c L(a, c) X(c, d), summed in increasing c from 0. With `lower` (L lower triangular
/// in every lane) the sums stop at c = a. out must not be l or x.
void lane_product(const lane_block& l, const Eigen::Ref<const lane_block>& x, int m, bool lower,
                  lane_block& out);

/// out = X Lᵀ lane by lane: out(a, b) = Σ_d X(a, d) L(b, d), summed in increasing d from 0; with
/// `lower` the sums stop at d = b. out must not be l or x.
void lane_product_transposed(const Eigen::Ref<const lane_block>& x, const lane_block& l, int m,
                             bool lower, lane_block& out);

namespace detail {

/// The instruction sets the lane-group arithmetic (lane_cholesky, lane_product and the models' lane
/// kernels) is compiled for and this CPU runs, by Highway's names ("AVX3", "AVX2", "SSE4",
/// "SCALAR", …), best first. Every one gives the same bits.
std::vector<std::string> lane_targets();

/// Highway's number of the instruction set the calling thread's lane arithmetic runs on.
std::int64_t lane_target();

/// Runs the calling thread's lane arithmetic on `target` (one of lane_targets()) until the scope
/// ends, for tests that compare the instruction sets; ncsde::invalid_argument naming the target
/// otherwise. Other threads keep the widest.
class lane_target_scope {
 public:
  explicit lane_target_scope(const std::string& target);
  ~lane_target_scope();
  lane_target_scope(const lane_target_scope&) = delete;
  lane_target_scope& operator=(const lane_target_scope&) = delete;

 private:
  const void* m_previous;
};

}  // namespace detail

}  // namespace ncsde
