#pragma once
/// Exact-in-law reduced finite-network samplers (docs/maths.md §7): the chain V_l = X_l X_lᵀ/n of
/// every literal network (networks/literal.hpp) sampled without n×n weights, from V alone.
///
/// Why it is exact. Rotation invariance: given X_l, the law of V_{l+1} depends on V_l only. Write
/// V = L Lᵀ (any factor) and X = L √n O with O ∈ ℝ^{m×n} having orthonormal rows. Then for every
/// iid N(0, 1) weight matrix W independent of X, O W is again iid N(0, 1), so X W = √n L (O W) and
/// every weight product in a layer is L times a fresh Gaussian matrix.
///
/// Read-out. A sublayer whose branch output is Y = M G (G ∈ ℝ^{m×n} iid, independent of X and M),
/// followed by the residual X' = λX + γY, has V' = X'X'ᵀ/n equal in law to
///   V' = λ²V + (λγ/√n)(L G'ᵀMᵀ + M G'Lᵀ) + (γ²/n) M (G'G'ᵀ + W_{n−m}) Mᵀ,
/// where G' = G Oᵀ ∈ ℝ^{m×m} is iid N(0, 1) and G(I − OᵀO)Gᵀ = W_{n−m} ~ Wishart(n − m, I_m) is
/// independent of G' (W = 0 when n = m). Only M Mᵀ matters, so M is any factor of the branch's
/// conditional column covariance Ṽ:
///   mlp:          V' = (c/n) σ_s(L G) σ_s(L G)ᵀ,  G ∈ ℝ^{m×n} (no residual, no read-out);
///   ReLU branch:  H = L G₁ (G₁ ∈ ℝ^{m×rn}), Ṽ = (c/(rn)) σ_s(H) σ_s(H)ᵀ, M = factor(Ṽ);
///   attention, one head, no W^O:  M = A L;
///   attention with W^O (n_h ≥ 1): Ṽ = (1/n) Σ_h A_h L W_h Lᵀ A_hᵀ, W_h ~ Wishart(n/n_h, I_m)
///                 (the Gram matrix of O W^V_h), M = factor(Ṽ);
///   attention, n_h > 1 heads without W^O: Y = (1/√n_h) Σ_h A_h L (O W^V_h) with the O W^V_h
///                 independent iid m×n matrices, so given the A_h the columns of Y are iid
///                 N(0, Ṽ), Ṽ = (1/n_h) Σ_h A_h V A_hᵀ, and Y's law is invariant under rotations
///                 of its columns, hence independent of X's row space: Y = M G, M = factor(Ṽ);
///   transformer:  the attention sublayer, then the ReLU sublayer from the new V, each with its
///                 own read-out.
/// Logits: Q = X W^Q = L (√n O W^Q) = L G_q with G_q ∈ ℝ^{m×n_k} iid N(0, 1) (W^Q ~ N(0, 1/n)),
/// likewise K = L G_k, so S = L (G_q G_kᵀ) Lᵀ/τ with the form's own τ (τ₀√(n n_k) shaped, τ₀√n_k
/// unshaped) and no other factor. G_q G_kᵀ has the law of F Z with F Fᵀ ~ Wishart(n_k, I_m) (the
/// Gram matrix of G_k) and Z iid N(0, 1) of matching size: F is the Bartlett factor (m×m) when
/// n_k ≥ m, else G_k itself (m×n_k).
/// Cost per layer: O(m³) plus O(m) χ² variates per read-out and head; O(m²·n) for the mlp and
/// O(m²·r·n) for the ReLU branch, streamed in column chunks of `chunk_columns`, so memory is O(m²)
/// plus O(m·chunk_columns) whatever n. No n×n (or m×n) matrix is ever formed.
///
/// Randomness: domain random_domain::user, i0 = layer l, i1 = reduced_tag(kind, head, part) =
/// kind + 2⁴·head + 2³⁶·part (the fields never overlap: kind < 16, head < 2³², part < 2²⁷):
///   - a Gaussian matrix of kind k, head h: normals of (l, reduced_tag(k, h)), column-major;
///   - the mlp's G and the ReLU branch's G₁ in chunks of chunk_columns columns: chunk j is the
///     normals of (l, reduced_tag(k, 0, j)), column-major;
///   - a Wishart factor (wishart_factor) of kind k, head h: its Gaussian entries from
///     (l, reduced_tag(k, h)) and its i-th diagonal χ² variate from (l, reduced_tag(k, h, 1 + i));
///   - a gamma/χ² variate at counter (l, i1) reads normals of (l, i1) and uniforms of
///     (l, i1 + 2⁶³) (see standard_gamma).
/// So a layer's numbers are a fixed function of (seed, network, l, kind, head, part), independent
/// of threads and of which other layers ran.
#include <cstdint>
#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/networks/literal.hpp"
#include "ncsde/random.hpp"

namespace ncsde::networks {

/// What a block of random numbers of the reduced sampler is for (the `kind` of reduced_tag).
enum class reduced_kind : std::uint64_t {
  mlp = 0,          ///< G ∈ ℝ^{m×n} of the plain MLP (column chunks)
  relu_hidden = 1,  ///< G₁ ∈ ℝ^{m×rn} of the ReLU branch (column chunks)
  relu_cross = 2,   ///< G' ∈ ℝ^{m×m} of the ReLU sublayer's read-out
  relu_rest = 3,    ///< Wishart factor of W_{n−m} of the ReLU sublayer's read-out
  query = 4,        ///< Z of head h's logits
  key = 5,          ///< Wishart(n_k) factor F of head h's logits
  value = 6,        ///< Wishart(n/n_h) factor of head h (with W^O)
  att_cross = 7,    ///< G' of the attention sublayer's read-out
  att_rest = 8,     ///< Wishart factor of W_{n−m} of the attention sublayer's read-out
};

/// Counter i1 = kind + 2⁴·head + 2³⁶·part of a block of the reduced sampler (head < 2³²,
/// part < 2²⁷, so bit 63 stays free for the uniforms of gamma variates).
constexpr std::uint64_t reduced_tag(reduced_kind kind, int head = 0, std::uint64_t part = 0) {
  return static_cast<std::uint64_t>(kind) + (static_cast<std::uint64_t>(head) << 4) + (part << 36);
}

/// Exact standard gamma variate with shape a > 0 (density x^{a−1}e^{−x}/Γ(a)), a fixed function of
/// (stream, domain, i0, i1) for i1 < 2⁶³.
/// Algorithm: Marsaglia–Tsang (2000) for a ≥ 1: d = a − 1/3, c = 1/√(9d); attempt j takes the
/// normal x_j and the uniform u_j, v = (1 + c x_j)³, and returns d·v on the first attempt with v >
/// 0 and (u_j < 1 − 0.0331 x_j⁴ or log u_j < x_j²/2 + d(1 − v + log v)). For a < 1: Gamma(a) =
/// Gamma(a + 1)·U^{1/a}. Counter layout: x_j is normal j of (domain, i0, i1); u_j is uniform j + 1
/// of (domain, i0, i1 + 2⁶³), whose uniform 0 is the U of a < 1. Attempts are read in blocks of 3,
/// then 24, 192, … (each block reading the counters from 0, so the numbers do not depend on the
/// block sizes); each attempt is accepted with probability ≥ 0.95, so the expected cost is O(1)
/// whatever a (two Philox calls unless all of the first 3 attempts fail). Throws
/// ncsde::invalid_argument unless a is finite and > 0.
double standard_gamma(const random_stream& stream, random_domain domain, std::uint64_t i0,
                      std::uint64_t i1, double a);

/// Exact χ² variate with `dof` > 0 degrees of freedom: 2·standard_gamma(dof/2), same counters.
/// Throws ncsde::invalid_argument unless dof is finite and > 0.
double chi_squared(const random_stream& stream, random_domain domain, std::uint64_t i0,
                   std::uint64_t i1, double dof);

/// A factor F with F Fᵀ ~ Wishart(dof, I_m) (the law of G Gᵀ, G ∈ ℝ^{m×dof} iid N(0, 1)).
/// dof ≥ m: the lower-triangular Bartlett factor (m×m), F_ii = √χ²_{dof−i} (0-based i), F_ij iid
/// N(0, 1) for i > j, F_ij = 0 for i < j; the m(m−1)/2 normals come row by row from
/// (domain, i0, i1), and χ²_{dof−i} from (domain, i0, i1 + 2³⁶·(1 + i)). Cost O(m²).
/// 0 ≤ dof < m: F = G ∈ ℝ^{m×dof} itself from the normals of (domain, i0, i1) (m×0 when dof = 0).
/// Requires i1 < 2³⁶ (part 0 of reduced_tag). Throws ncsde::invalid_argument unless m ≥ 1 and
/// dof ≥ 0.
void wishart_factor(const random_stream& stream, random_domain domain, std::uint64_t i0,
                    std::uint64_t i1, int dof, int m, matrix& f);

/// The reduced sampler of a shaped (or unshaped-attention) finite network: the same network as
/// literal_network(arch, p, m, n, n_k, form), the same law of (V_l)_l, with state V (m×m).
/// Invariant: as literal_network (one shared check, validate_network); ncsde::invalid_argument
/// naming the parameter and value otherwise. Sampler interface (shared with literal_network):
/// state = V, initial_state, step, covariance, run. Const and thread-safe: every call draws from
/// the stream it is given; each thread keeps its own O(m² + m·chunk_columns) workspace, so steps
/// at a fixed m allocate nothing after the first.
class reduced_network {
 public:
  /// The state of the sampler: V ∈ ℝ^{m×m}, symmetric PSD.
  using state = matrix;

  /// Columns per chunk of the mlp's G and the ReLU branch's G₁ (part of the counter layout).
  static constexpr int chunk_columns = 512;

  /// Builds the sampler; throws ncsde::invalid_argument on a bad parameter (messages as
  /// literal_network's, with "reduced_network" in place of "literal_network").
  reduced_network(models::architecture arch, const models::shaped_params& p, int m, int n,
                  int n_k = 1, attention_form form = attention_form::shaped);

  /// The architecture (docs/maths.md §2.2–§2.8).
  models::architecture arch() const { return m_arch; }
  /// The validated parameters.
  const models::shaped_params& params() const { return m_params; }
  /// Tokens m.
  int m() const { return m_m; }
  /// Width n of the network sampled; one layer is the time step 1/n.
  int n() const { return m_n; }
  /// Key dimension n_k.
  int n_k() const { return m_n_k; }
  /// Hidden width r·n of the ReLU branch (resnet and transformer; 0 otherwise).
  int hidden_width() const { return m_k.hidden; }
  /// c(n) = 2/(s₊² + s₋²) with s± = 1 + c±/√n.
  double c() const { return m_k.c; }
  /// Shaped or unshaped attention.
  attention_form form() const { return m_form; }

  /// V₀ itself, validated (m×m, finite, symmetric, PSD) and exactly symmetrised; the stream is not
  /// used (the reduced chain needs no X₀). Throws ncsde::invalid_argument as
  /// literal_network::initial_state.
  state initial_state(const matrix& v0, const random_stream& stream) const;

  /// One layer (one time step 1/n): v ← a draw of V_{l+1} given V_l = v, with the numbers of
  /// counters (random_domain::user, l, reduced_tag(…)). The result is exactly symmetric. Sizes are
  /// checked with NCSDE_ASSERT; throws ncsde::invalid_argument (from attention_matrix) if the
  /// logits are not finite (a V that has blown up).
  void step(state& v, std::uint64_t l, const random_stream& stream) const;

  /// V itself.
  matrix covariance(const state& v) const { return v; }

  /// As literal_network::run: V_l at each l of `depths` from V₀ = v0, running layers
  /// 0..depths.back()−1. Throws ncsde::invalid_argument unless d ≥ 1, depths is non-empty and
  /// strictly increasing within [0, d], and V₀ is valid.
  std::vector<matrix> run(const matrix& v0, int d, const std::vector<int>& depths,
                          const random_stream& stream) const;

 private:
  struct workspace;
  static workspace& local_workspace();

  /// M (M Mᵀ = Ṽ) of the ReLU branch of layer l at the factor L of ws; a reference into ws.
  const matrix& relu_factor(std::uint64_t l, const random_stream& stream, workspace& ws) const;
  /// M of the attention sublayer of layer l at the factor L of ws; a reference into ws.
  const matrix& attention_factor(std::uint64_t l, const random_stream& stream, workspace& ws) const;
  /// v ← λ²V + (λγ/√n)(L G'ᵀMᵀ + M G'Lᵀ) + (γ²/n) M (G'G'ᵀ + W_{n−m}) Mᵀ, M = mf, L of ws.
  void read_out(matrix& v, const matrix& mf, std::uint64_t l, reduced_kind cross, reduced_kind rest,
                const random_stream& stream, workspace& ws) const;

  models::architecture m_arch;
  models::shaped_params m_params;
  int m_m;
  int m_n;
  int m_n_k;
  attention_form m_form;
  network_constants m_k;
};

}  // namespace ncsde::networks
