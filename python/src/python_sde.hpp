#pragma once
/// ncsde.PythonSde: an SDE whose drift b(t, X) and noise map G(t, X)ξ are Python callables, run by
/// the library's engines like a built-in model.
///
/// The callables see a batch of W states at once: drift(x, t) with x of shape (W, *state_shape)
/// returns b at every state, noise_map(x, xi, t) with xi of shape (W, k) returns G(x_l) ξ_l in row l.
/// The Euler–Maruyama ensembles step lane groups of W = lane_width = 64 paths (batched.hpp: the
/// executor's block, so a call serves a whole block; the SIMD width 8 would make 8× as many
/// interpreter calls, which is what a Python SDE costs), each lane on its own (seed, path) stream;
/// other schemes call with W = 1. With
/// batched=False the callables see one state (shape state_shape) and one ξ (shape (k,)) per call.
///
/// Threads: copies of a python_sde are made on the engine's worker threads without the GIL, so they
/// share the Python side (python_callbacks) by pointer and never touch a reference count; every
/// call takes the GIL. A set cancellation flag makes the next call throw run_cancelled.
#include <pybind11/pybind11.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "ncsde/concepts.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/lanes.hpp"
#include "ncsde/schemes.hpp"

namespace ncsde::python {

/// The Python side of a user SDE. Its Python objects are used only with the GIL held.
struct python_callbacks {
  py::object drift;
  py::object noise_map;
  int k = 1;
  bool batched = true;
  state_space space = state_space::euclidean;

  python_callbacks() = default;
  python_callbacks(const python_callbacks&) = delete;
  python_callbacks& operator=(const python_callbacks&) = delete;
  /// Drops the references with the GIL held (the last owner may be a worker thread).
  ~python_callbacks();
};

/// What a batch evaluation is for.
enum class coefficient { drift, noise_map };

/// The states' shape and the run's cancellation flag, with the evaluation helpers.
struct python_sde_base {
  std::shared_ptr<const python_callbacks> callbacks;
  std::vector<py::ssize_t> shape;  ///< the state shape: (), (d,) or (rows, cols)
  Eigen::Index rows = 1, cols = 1;
  const std::atomic<bool>* cancel = nullptr;

  /// Evaluates one coefficient on `lanes` states (lanes = 0: the per-path form, no leading axis).
  /// x(l, a, b) and xi(l, j) read the inputs; out(l, a, b) = value stores the result. Takes the GIL.
  template <class X, class Xi, class Out>
  void evaluate(coefficient which, int lanes, const X& x, const Xi& xi, const Out& out,
                double t) const;

  void check_cancelled() const {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) throw run_cancelled();
  }
};

/// A Python SDE on the state space Space, an ncsde::Sde on ncsde::matrix and ncsde::vector states
/// and a BatchedSde (lanes.hpp).
template <state_space Space>
class python_sde : public python_sde_base {
 public:
  static constexpr state_space space = Space;
  /// Paths per call of the batched form (lanes.hpp: lane_width_of).
  static constexpr int lane_width = 64;
  using block = lane_block_of<lane_width>;

  int noise_dimension(int) const { return callbacks->k; }

  void drift(const matrix& v, matrix& out, double t) const { per_path(v, nullptr, out, t); }
  void drift(const vector& v, vector& out, double t) const { per_path(v, nullptr, out, t); }
  void diffusion(const matrix& v, const vector& xi, matrix& out, double t) const {
    per_path(v, &xi, out, t);
  }
  void diffusion(const vector& v, const vector& xi, vector& out, double t) const {
    per_path(v, &xi, out, t);
  }

  /// out = b(t, V_l) in row l (coordinates in Eigen's storage order, lanes.hpp).
  void drift_lanes(const block& v, block& out, double t) const { lanes(v, nullptr, out, t); }
  /// out = G(t, V_l) ξ_l in row l.
  void diffusion_lanes(const block& v, const block& xi, block& out, double t) const {
    lanes(v, &xi, out, t);
  }

 private:
  template <class State>
  void per_path(const State& v, const vector* xi, State& out, double t) const {
    check_cancelled();
    out.resize(v.rows(), v.cols());
    evaluate(
        xi ? coefficient::noise_map : coefficient::drift, callbacks->batched ? 1 : 0,
        [&](int, Eigen::Index a, Eigen::Index b) { return v(a, b); },
        [&](int, int j) { return (*xi)(j); },
        [&](int, Eigen::Index a, Eigen::Index b, double value) { out(a, b) = value; }, t);
  }

  void lanes(const block& v, const block* xi, block& out, double t) const {
    check_cancelled();
    const Eigen::Index r = rows;
    out.resize(lane_width, v.cols());
    auto get = [&](int l, Eigen::Index a, Eigen::Index b) { return v(l, a + b * r); };
    auto put = [&](int l, Eigen::Index a, Eigen::Index b, double value) {
      out(l, a + b * r) = value;
    };
    const coefficient which = xi ? coefficient::noise_map : coefficient::drift;
    if (callbacks->batched) {
      evaluate(
          which, lane_width, get, [&](int l, int j) { return (*xi)(l, j); }, put, t);
      return;
    }
    for (int lane = 0; lane < lane_width; ++lane)
      evaluate(
          which, 0, [&](int, Eigen::Index a, Eigen::Index b) { return get(lane, a, b); },
          [&](int, int j) { return (*xi)(lane, j); },
          [&](int, Eigen::Index a, Eigen::Index b, double value) { put(lane, a, b, value); }, t);
  }
};

static_assert(Sde<python_sde<state_space::euclidean>, matrix>);
static_assert(Sde<python_sde<state_space::euclidean>, vector>);
static_assert(BatchedSde<python_sde<state_space::psd_cone>>);

/// Runs an ensemble of `sde` from v0 (a matrix, or for euclidean states a vector) with the scheme
/// named `scheme` (python_runs_*.cpp: every registry scheme, compiled once).
ensemble_result run_python_sde(const python_sde<state_space::euclidean>& sde, const matrix& v0,
                               std::string_view scheme, double t_end, const integrate_options& iopt,
                               const ensemble_options& eopt);
ensemble_result run_python_sde(const python_sde<state_space::euclidean>& sde, const vector& v0,
                               std::string_view scheme, double t_end, const integrate_options& iopt,
                               const ensemble_options& eopt);
ensemble_result run_python_sde(const python_sde<state_space::symmetric>& sde, const matrix& v0,
                               std::string_view scheme, double t_end, const integrate_options& iopt,
                               const ensemble_options& eopt);
ensemble_result run_python_sde(const python_sde<state_space::psd_cone>& sde, const matrix& v0,
                               std::string_view scheme, double t_end, const integrate_options& iopt,
                               const ensemble_options& eopt);

/// The template body of run_python_sde.
template <class S, class State>
ensemble_result run_python_sde_impl(const S& sde, const State& v0, std::string_view scheme,
                                    double t_end, const integrate_options& iopt,
                                    const ensemble_options& eopt) {
  const problem<S, State> prob{sde, v0, t_end};
  return builtin_schemes::visit(find_scheme(scheme, "simulate: scheme"),
                                [&]<class St>(std::type_identity<St>) {
                                  return ncsde::run_ensemble(St{}, prob, iopt, eopt);
                                });
}

// ---- implementation ----

/// The array returned by a callable as float64 with `expected` shape; TypeError or ValueError
/// naming the callable otherwise.
double_array checked_result(const py::object& result, coefficient which,
                            const std::vector<py::ssize_t>& expected);

template <class X, class Xi, class Out>
void python_sde_base::evaluate(coefficient which, int lanes, const X& x, const Xi& xi,
                               const Out& out, double t) const {
  gil_hold gil;
  check_cancelled();
  const int w = lanes > 0 ? lanes : 1;
  std::vector<py::ssize_t> xshape;
  xshape.reserve(shape.size() + 1);
  if (lanes > 0) xshape.push_back(lanes);
  for (py::ssize_t s : shape) xshape.push_back(s);
  // Entry (l, a, b) of the batch sits at l·rows·cols + a·cols + b (C order, any of the three
  // shapes: cols = 1 for vectors, rows = cols = 1 for scalars).
  py::array_t<double> xa(xshape);
  double* xp = xa.mutable_data();
  for (int l = 0; l < w; ++l)
    for (Eigen::Index a = 0; a < rows; ++a)
      for (Eigen::Index b = 0; b < cols; ++b) xp[(l * rows + a) * cols + b] = x(l, a, b);
  py::object result;
  if (which == coefficient::drift) {
    result = callbacks->drift(xa, t);
  } else {
    const int k = callbacks->k;
    py::array_t<double> xia = lanes > 0 ? py::array_t<double>({py::ssize_t(lanes), py::ssize_t(k)})
                                        : py::array_t<double>({py::ssize_t(k)});
    double* p = xia.mutable_data();
    for (int l = 0; l < w; ++l)
      for (int j = 0; j < k; ++j) p[l * k + j] = xi(l, j);
    result = callbacks->noise_map(xa, xia, t);
  }
  const double_array r = checked_result(result, which, xshape);
  const double* rp = r.data();
  for (int l = 0; l < w; ++l)
    for (Eigen::Index a = 0; a < rows; ++a)
      for (Eigen::Index b = 0; b < cols; ++b) out(l, a, b, rp[(l * rows + a) * cols + b]);
}

}  // namespace ncsde::python
