#pragma once
/// Where an ensemble's paths run: the CPU engines (per path and in lane groups, ensemble.hpp), or
/// the device engine, which steps each path of a batch as one thread of an accelerator.
///
/// The device engine is a worker of the path executor (executor.hpp) that claims many blocks at once
/// and runs them as one batch; its results go to the same reducer in block order, so an ensemble's
/// outputs are built exactly as on the CPU. A device path runs the CPU engine's step in the same
/// operations and order (the shared kernels of solvers/device/: the (seed, path) Philox streams,
/// the SDE's device form, the symmetrisation and measurements of the step, the blow-up rule) and
/// hands every exceptional step back to the CPU engine, which resumes the path there: a state that
/// is not positive definite, a coefficient that is not finite, an asymmetry beyond round-off. So the
/// cone policies, their counters and the errors are the CPU's, and a path is the CPU path bit for
/// bit wherever the device's arithmetic is (docs/gpu.md says where it is not).
///
/// What it runs: SDEs with a device form (the built-in neural covariance SDEs; the analytic
/// problems gbm, linear_covariance and wishart, analytic.hpp), schemes with one
/// (Euler–Maruyama), fixed steps, the default (seed, path) streams, a stop level but no stop
/// condition (a function of the state the device cannot call); every other
/// run is refused with ncsde::invalid_argument naming what the device engine does not take (device
/// "auto" runs it on the CPU instead, and says so).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace ncsde {

/// The kinds of device: the CPU engines (the default); a CUDA GPU; "automatic": a CUDA GPU when this
/// build has the CUDA backend, the process sees a device and the run is one the device engine
/// takes, the CPU otherwise (the result says which, and why); "emulated": the device engine's
/// kernels on the CPU's threads, path after path (the host form of what a GPU thread runs: for
/// checking the backend's arithmetic against the CPU engine, not for speed).
enum class device_kind { cpu, cuda, automatic, emulated };

/// A device: its kind and, for CUDA, the index of the GPU (cuda:N; 0 by default).
struct device_spec {
  device_kind kind = device_kind::cpu;
  int index = 0;
  bool operator==(const device_spec&) const = default;
};

/// "cpu", "cuda:N", "auto" or "emulated".
std::string to_string(const device_spec& d);

/// Parses "cpu", "cuda", "cuda:N" (N ≥ 0), "auto" or "emulated"; ncsde::invalid_argument naming
/// `param` and the text otherwise.
device_spec parse_device(std::string_view text, std::string_view param = "device");

/// The schemes with a device form: what a stepper declares as `static constexpr device_scheme
/// device_form` (none when it declares nothing).
enum class device_scheme { none, euler_maruyama };

template <class Stepper>
inline constexpr device_scheme device_form_of = device_scheme::none;
template <class Stepper>
  requires requires { Stepper::device_form; }
inline constexpr device_scheme device_form_of<Stepper> = Stepper::device_form;

/// Whether this build of the library has the CUDA backend (CMake found a CUDA compiler).
bool cuda_backend_built();

/// A CUDA device as the driver describes it.
struct cuda_device_info {
  int index = 0;
  std::string name;
  int compute_major = 0, compute_minor = 0;
  double memory_gib = 0.0;  ///< global memory
};

/// The CUDA devices this process sees. ncsde::device_error when this build has no CUDA backend, or
/// the driver reports an error (no driver, a driver older than the backend's runtime, no device),
/// with the driver's text; an empty list never.
std::vector<cuda_device_info> cuda_devices();

/// What an ensemble ran on: `device` as to_string(device_spec) of the device used ("cpu" when
/// "auto" chose the CPU) and `note`, empty unless "auto" chose the CPU or the device is named more
/// fully ("cuda:0, NVIDIA H200, compute 9.0"; "auto: the CPU, since this build has no CUDA
/// backend").
struct device_report {
  std::string device = "cpu";
  std::string note;
  long long handed_back = 0;  ///< device paths the CPU engine resumed (exceptional steps)

  /// Whether the outputs show it: a run asked for a device (a plain CPU run's outputs are what they
  /// always were).
  bool shown() const { return device != "cpu" || !note.empty(); }
};

/// A batch of paths for an SDE's device form (DeviceSde): paths [first_path, first_path + paths)
/// of a run from V0 on the fixed grid (integrate.hpp's step_grid), each on its (seed, path) stream.
struct device_batch {
  device_spec device;  ///< cuda (index) or emulated
  std::uint64_t seed = 0;
  long long first_path = 0, paths = 0;
  int m = 0;               ///< states m×m
  std::vector<double> v0;  ///< V0, column-major
  double t0 = 0.0, t_end = 0.0, dt = 0.0;
  long long steps = 0;
  std::vector<long long> save_steps;  ///< grid index of each save time
  double blowup_threshold = 0.0;
  double stop_level = std::numeric_limits<double>::infinity();  ///< integrate_options::stop_level
  /// Grid monitors (models/stopped_sample.hpp): monitor w looks every monitor_periods[w] grid
  /// steps and is passed at its first look with max_a V^{aa} > monitor_level (none: empty).
  std::vector<long long> monitor_periods;
  double monitor_level = std::numeric_limits<double>::infinity();
};

/// What a batch returns, path by path (index p − first_path): how it ended (device_outcome), the
/// steps it took (completed, blown up, stopped) or the step at which the CPU engine resumes it (handed
/// back), t_stop, its state then (m² doubles, column-major) and the states at the save times it
/// reached (saved[p] of them, at states_saved[(p·saves + j)·m²]), and per monitor w whether it was
/// passed (passed[p·monitors + w]; up to the step handed back) and V there (at
/// states_passed[(p·monitors + w)·m²]).
enum class device_outcome : int { completed = 0, blown_up = 1, handed_back = 2, stopped = 3 };
struct device_batch_result {
  std::vector<int> outcome;
  std::vector<long long> steps;
  std::vector<double> t_stop;
  std::vector<int> saved;
  std::vector<double> states;
  std::vector<double> states_saved;
  std::vector<int> passed;
  std::vector<double> states_passed;

  void resize(long long paths, int m, std::size_t saves, std::size_t monitors = 0) {
    const auto n = static_cast<std::size_t>(paths);
    const auto mm = static_cast<std::size_t>(m) * static_cast<std::size_t>(m);
    outcome.assign(n, 0);
    steps.assign(n, 0);
    t_stop.assign(n, 0.0);
    saved.assign(n, 0);
    states.assign(n * mm, 0.0);
    states_saved.assign(n * saves * mm, 0.0);
    passed.assign(n * monitors, 0);
    states_passed.assign(n * monitors * mm, 0.0);
  }
};

/// A bound on the device memory one path of a batch takes, in bytes: its state and the states at
/// the save times and the monitors' passages (m² doubles each), the device engine's scratch (the
/// factors, the trial, drift and noise: 5 m²; the increment: k) and a model's workspace (at most
/// 6 m² + m for the built-in models), and its summary and monitor flags. The device engine sizes
/// its batches by it (4 GiB at most).
inline double device_batch_bytes_per_path(int m, int k, std::size_t saves,
                                          std::size_t monitors = 0) {
  const double mm = static_cast<double>(m) * static_cast<double>(m);
  const double states = static_cast<double>(saves) + static_cast<double>(monitors) + 12.0;
  return 8.0 * (mm * states + static_cast<double>(k) + m) + 32.0 +
         4.0 * static_cast<double>(monitors);
}

/// S has a device form: s.run_device_batch(batch, out) runs the batch on batch.device (the model
/// layer's SDEs and the analytic problems gbm, linear_covariance and wishart: their device kernels,
/// docs/gpu.md), filling out (sized by the caller), and throws ncsde::device_error when the device
/// cannot run it.
template <class S>
concept DeviceSde = requires(const S& s, const device_batch& b, device_batch_result& out) {
  s.run_device_batch(b, out);
};

}  // namespace ncsde
