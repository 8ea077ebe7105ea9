#pragma once
/// Literal finite-width shaped networks (docs/maths.md §2): every layer draws its n×n weight
/// matrices explicitly, so these samplers are the ground truth that the covariance SDEs
/// (models/shaped.hpp) are the limit of. One layer is one time step 1/n; X ∈ ℝ^{m×n} (m tokens,
/// width n) and V = X Xᵀ/n. Tokens are 0-indexed in code (row a has a + 1 keys under the causal
/// mask).
///
///   mlp:          X' = √(c/n) σ_s(X W),  W ∈ ℝ^{n×n}
///   resnet:       X' = λX + γ √(c/(rn)) σ_s(X W^pre/√n) W^post,
///                 W^pre ∈ ℝ^{n×rn}, W^post ∈ ℝ^{rn×n}
///   attention:    X' = λX + γ Y, where for heads h = 1..n_h
///                 S_h = (X W^Q_h)(X W^K_h)ᵀ/τ,  τ = τ₀√(n n_k),
///                 W^Q_h, W^K_h ∈ ℝ^{n×n_k} iid N(0, 1/n),
///                 A_h = I + Softmax(S_h) − C,
///                 C = 11ᵀ/m, or C^{aν} = 1[ν≤a]/(a+1) when causal;
///                 with output_projection (§2.5):
///                 Y = [A_1 X W^V_1, …, A_{n_h} X W^V_{n_h}] W^O/n,  W^V_h ∈ ℝ^{n×(n/n_h)};
///                 without it: Y = (1/√n_h) Σ_h A_h X W^V_h/√n,  W^V_h ∈ ℝ^{n×n}
///                 (§2.4 for n_h = 1, the averaged full-width-heads variant of §2.6 for n_h > 1)
///   transformer:  Z = attention(X), then X' = resnet(Z); same λ, γ in both sublayers (§2.8)
///
/// Attention comes in two forms (attention_form): `shaped` is the form above (docs/maths.md §2.4);
/// `unshaped` is standard softmax attention, A_h = Softmax(S_h) (Softmax_c when causal) with no
/// identity and no centring, and temperature τ = τ₀√n_k, so that with τ₀ = 1 the logits are the
/// usual QKᵀ/√n_k with W^Q, W^K ~ N(0, 1/n). The residual λX + γY, the heads and W^O are the same
/// in both forms. Unshaped attention has no covariance-SDE limit: its A is O(1) away from I, and
/// products of row-stochastic A drive the tokens to rank collapse (ρ → 1) within O(1) layers.
///
/// with σ_s(x) = s₊ max(x, 0) + s₋ min(x, 0), s± = 1 + c±/√n, c = 2/(s₊² + s₋²), λ² = 1 − γ²,
/// and every other weight iid N(0, 1).
///
/// Randomness: a network is a ncsde::random_stream keyed by (seed, network index). The weights of
/// layer l (0-based) are the normals of the counter (random_domain::user, l, tag), one tag per
/// weight matrix and head (see weight_tag), so a layer's weights are a fixed function of
/// (seed, network, l, tag): reproducible, independent of threads and of which other layers ran. The
/// initial O uses (random_domain::initial, 0, 0).
#include <cstdint>
#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/random.hpp"

namespace ncsde::networks {

/// Which weight matrix a block of normals is for; tag = kind + 8·h for head h (0-based).
enum class weight_kind : std::uint64_t {
  mlp = 0,     ///< W of the plain MLP
  pre = 1,     ///< W^pre of the ReLU branch (resnet and the transformer's MLP sublayer)
  post = 2,    ///< W^post of the ReLU branch
  query = 3,   ///< W^Q_h
  key = 4,     ///< W^K_h
  value = 5,   ///< W^V_h
  output = 6,  ///< W^O
};

/// Counter i1 of the weights of `kind` for head h: kind + 8·h.
constexpr std::uint64_t weight_tag(weight_kind kind, int head = 0) {
  return static_cast<std::uint64_t>(kind) + 8u * static_cast<std::uint64_t>(head);
}

/// The attention matrix of a head: shaped (docs/maths.md §2.4, A = I + Softmax(S) − C) or unshaped
/// (standard softmax attention, A = Softmax(S), temperature τ₀√n_k instead of τ₀√(n n_k)).
enum class attention_form { shaped, unshaped };

/// The attention matrix of one head from m×m logits S: the row softmax is evaluated stably as
/// exp(S^{aν} − max_μ S^{aμ}) normalised by its row sum (over ν ≤ a when causal).
/// Shaped (docs/maths.md §2.4, §2.7): A = I + Softmax(S) − C. Full: C = 11ᵀ/m, rows of A sum to 1.
/// Causal: C^{aν} = 1[ν≤a]/(a+1), A^{aν} = 0 for ν > a, and row 0 is e₀ᵀ exactly (its softmax is
/// the single entry 1). Unshaped: A = Softmax(S) (Softmax_c when causal), a row-stochastic matrix
/// (rows sum to 1, entries in [0, 1]); causal row 0 is again e₀ᵀ. Throws ncsde::invalid_argument
/// if S is not square or has a non-finite entry.
void attention_matrix(const matrix& s, bool causal, matrix& a,
                      attention_form form = attention_form::shaped);

/// The constants of a validated finite network (shared by literal_network and reduced_network).
struct network_constants {
  int hidden = 0;        ///< r·n, hidden width of the ReLU branch (0 without one)
  double s_plus = 1.0;   ///< s₊ = 1 + c₊/√n
  double s_minus = 1.0;  ///< s₋ = 1 + c₋/√n
  double c = 1.0;        ///< c(n) = 2/(s₊² + s₋²) (1 for attention when s₊ = s₋ = 0)
  double lambda = 0.0;   ///< λ = √(1 − γ²) (0 for mlp, which has no residual)
  double gamma = 1.0;    ///< γ (1 for mlp)
  double tau = 1.0;      ///< logit temperature τ: τ₀√(n n_k) shaped, τ₀√n_k unshaped
};

/// Validates the parameters of a finite network of `arch` with m tokens, width n, key dimension
/// n_k and attention form `form`, and returns its constants. Rules: m ≥ 1; n ≥ 2 and n ≥ m (X₀
/// has m orthonormal rows); n_k ≥ 1; models::validate_params (c± finite, 0 ≤ γ² ≤ 1, r finite
/// and > 0, τ₀ finite and > 0, n_h ≥ 1, attention options at their defaults for mlp and resnet);
/// n_h divides n; form is shaped for mlp and resnet; with a ReLU branch r·n is a positive integer
/// (within 1e-9·r·n) of at most 2³¹ − 1 (the hidden width); with a ReLU layer s₊² + s₋² > 0. The temperature τ is the form's. Throws
/// ncsde::invalid_argument("<where>: <param> must be <rule> (got <value>)") on the first rule
/// broken.
network_constants validate_network(const char* where, models::architecture arch,
                                   const models::shaped_params& p, int m, int n, int n_k,
                                   attention_form form);

/// Validates a network's initial covariance: an m×m finite, symmetric, positive-semidefinite
/// matrix (ncsde::validate_state). Returns it exactly symmetrised; throws ncsde::invalid_argument
/// ("<where>: V0 ...") otherwise.
matrix validate_initial_covariance(const char* where, const matrix& v0, int m);

namespace detail {

/// Checks the arguments of a network's run(): d ≥ 1, depths non-empty, strictly increasing, in
/// [0, d]. Throws ncsde::invalid_argument("<where>: ...") naming the offending entry.
void validate_depths(const char* where, int d, const std::vector<int>& depths);

/// The shared body of run() for a finite-network sampler `net` (literal or reduced): validates
/// (d, depths), starts from net.initial_state(v0, stream), runs layers 0..depths.back()−1 and
/// returns net.covariance(state) at each depth of `depths`.
template <class Network>
std::vector<matrix> run_network(const Network& net, const char* where, const matrix& v0, int d,
                                const std::vector<int>& depths, const random_stream& stream) {
  validate_depths(where, d, depths);
  typename Network::state s = net.initial_state(v0, stream);
  std::vector<matrix> out;
  out.reserve(depths.size());
  std::size_t next = 0;
  const int last = depths.back();
  for (int l = 0; l <= last; ++l) {
    if (l == depths[next]) {
      out.push_back(net.covariance(s));
      ++next;
    }
    if (l < last) net.step(s, static_cast<std::uint64_t>(l), stream);
  }
  return out;
}

}  // namespace detail

/// A literal shaped network of one architecture (docs/maths.md §2), m tokens, width n, key
/// dimension n_k. Invariant (checked once, in the constructor by validate_network;
/// ncsde::invalid_argument naming the parameter and value otherwise): m ≥ 1; n ≥ 2 and n ≥ m (X₀
/// needs m orthonormal rows of length n); n_k ≥ 1; c₊, c₋ finite; 0 ≤ γ² ≤ 1; r finite, > 0 and r·n
/// an integer (within 1e-9·r·n); τ₀ finite and > 0; n_h ≥ 1 and n_h divides n; for mlp and resnet
/// the attention options and the form keep their defaults; with a ReLU layer, s₊² + s₋² > 0 (else
/// σ_s ≡ 0 and no c normalises it).
/// Sampler interface (shared with reduced_network): state = X (m×n), initial_state, step,
/// covariance, run. Const and thread-safe: every call draws from the stream it is given.
class literal_network {
 public:
  /// The state of the sampler: X ∈ ℝ^{m×n}.
  using state = matrix;

  /// Builds the network; throws ncsde::invalid_argument on a bad parameter.
  literal_network(models::architecture arch, const models::shaped_params& p, int m, int n,
                  int n_k = 1, attention_form form = attention_form::shaped);

  /// The architecture (docs/maths.md §2.2–§2.8).
  models::architecture arch() const { return m_arch; }
  /// The validated parameters.
  const models::shaped_params& params() const { return m_params; }
  /// Tokens m (rows of X).
  int m() const { return m_m; }
  /// Width n (columns of X); one layer is the time step 1/n.
  int n() const { return m_n; }
  /// Key dimension n_k of W^Q, W^K.
  int n_k() const { return m_n_k; }
  /// Hidden width r·n of the ReLU branch (resnet and transformer).
  int hidden_width() const { return m_hidden; }
  /// c(n) = 2/(s₊² + s₋²) with s± = 1 + c±/√n.
  double c() const { return m_c; }
  /// Shaped or unshaped attention (attention and transformer).
  attention_form form() const { return m_form; }

  /// X₀ = L₀ O √n with L₀L₀ᵀ = V₀ (Cholesky, or the clipped eigen-factor of a singular V₀) and O
  /// (m×n) with orthonormal rows, O = Qᵀ from the thin QR of an n×m Gaussian matrix drawn from
  /// `stream`; hence X₀X₀ᵀ/n = V₀ up to round-off. Throws ncsde::invalid_argument if V₀ is not an
  /// m×m finite, symmetric, positive-semidefinite matrix.
  state initial_state(const matrix& v0, const random_stream& stream) const;

  /// One layer (one time step 1/n): x ← layer l of the network applied to x (m×n), with the weights
  /// of counter (random_domain::user, l, tag). Sizes are checked with NCSDE_ASSERT.
  void step(state& x, std::uint64_t l, const random_stream& stream) const;

  /// V = X Xᵀ/n, exactly symmetrised ((V + Vᵀ)/2).
  matrix covariance(const state& x) const;

  /// A depth-d network from X₀ = initial_state(v0, stream): returns V_l = covariance(X_l) at each
  /// l of `depths` (in that order), running layers 0..depths.back()−1 only (the rest cannot change
  /// them). Throws ncsde::invalid_argument unless d ≥ 1, depths is non-empty and strictly
  /// increasing with 0 ≤ depths.front() and depths.back() ≤ d, and V₀ is valid.
  std::vector<matrix> run(const matrix& v0, int d, const std::vector<int>& depths,
                          const random_stream& stream) const;

 private:
  /// y = √(c/(rn)) σ_s(X W^pre/√n) W^post, the ReLU branch of layer l.
  void relu_branch(const matrix& x, std::uint64_t l, const random_stream& stream, matrix& y) const;
  /// y = Y of the attention sublayer of layer l (all heads, with or without W^O).
  void attention_branch(const matrix& x, std::uint64_t l, const random_stream& stream,
                        matrix& y) const;
  double sigma(double x) const { return x > 0.0 ? m_s_plus * x : m_s_minus * x; }

  models::architecture m_arch;
  models::shaped_params m_params;
  int m_m;
  int m_n;
  int m_n_k;
  attention_form m_form;
  int m_hidden = 0;
  double m_s_plus = 1.0;
  double m_s_minus = 1.0;
  double m_c = 1.0;
  double m_lambda = 0.0;
  double m_gamma = 1.0;
  double m_tau = 1.0;
};

}  // namespace ncsde::networks
