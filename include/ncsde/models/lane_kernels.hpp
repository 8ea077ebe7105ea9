#pragma once
/// The building blocks of models/coefficients.hpp on lane groups (lanes.hpp): the drifts and the
/// structured noise of the neural covariance SDEs for batch_width paths at once, one SIMD
/// instruction per coordinate advancing every lane. The maths and the order of the sums are those
/// of the per-path kernels, written out index by index (docs/maths.md §3.2, §4.1); the per-path
/// kernels (models/coefficients.hpp) run the same operations in the same order, their products and
/// factorisations through dense_kernels.hpp, so every lane's result is its path's bit for bit
/// (tests/models/batched_model_test.cpp).
///
/// States are m×m matrices stored lane-wise: entry (a, b) of lane l is v(l, a + b·m). Outputs are
/// resized by the kernels; an output must not be an input or a member of the workspace given.
/// Inputs are not validated (hot paths): sizes are checked with NCSDE_ASSERT only.
///
/// The kernels run on Google Highway's vectors, compiled for each instruction set
/// (AVX-512, AVX2, SSE4, NEON, …, and a portable fallback) and chosen at run time: the widest the CPU
/// runs (ncsde::detail::lane_target, lanes.hpp). Their numbers are the same bits on every instruction
/// set (the same correctly rounded operations per lane, in the same order, no fused multiply-add).
#include <Eigen/Core>

#include "ncsde/lanes.hpp"

namespace ncsde::models {

/// Scratch storage of the lane kernels (lane blocks of m² or m columns).
struct lane_coefficient_workspace {
  lane_block m0, m1, m2, m3, m4, m5;
  lane_block c0, c1, c2;
};

/// b_relu (coefficients.hpp) lane by lane, in the same operations: bit-identical.
void b_relu_lanes(const lane_block& v, int m, double c_plus, double c_minus, lane_block& out);

/// b_att lane by lane.
void b_att_lanes(const lane_block& v, int m, double tau0, lane_block& out,
                 lane_coefficient_workspace& ws);

/// b_causal lane by lane.
void b_causal_lanes(const lane_block& v, int m, double tau0, lane_block& out,
                    lane_coefficient_workspace& ws);

/// noise_lin lane by lane: out = (M + Mᵀ)/√2 with M = L G Lᵀ, G the m² columns of g; `lower`: every
/// lane's L is lower triangular (the sums skip its upper triangle).
void noise_lin_lanes(const lane_block& l, bool lower, const Eigen::Ref<const lane_block>& g, int m,
                     lane_block& out, lane_coefficient_workspace& ws);

/// noise_att lane by lane: out = Y + Yᵀ, Y = ζ (P V)/(m τ₀), ζ = L Z Lᵀ.
void noise_att_lanes(const lane_block& l, bool lower, const lane_block& v,
                     const Eigen::Ref<const lane_block>& z, int m, double tau0, lane_block& out,
                     lane_coefficient_workspace& ws);

/// noise_causal lane by lane: out = Y + Yᵀ, Y = N V/τ₀, row a of N the centred, scaled prefix of
/// row a of ζ = L Z Lᵀ.
void noise_causal_lanes(const lane_block& l, bool lower, const lane_block& v,
                        const Eigen::Ref<const lane_block>& z, int m, double tau0, lane_block& out,
                        lane_coefficient_workspace& ws);

}  // namespace ncsde::models
