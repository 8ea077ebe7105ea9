#pragma once
/// A device batch (device.hpp) on the host: the device engine's paths (path_engine.hpp) one after
/// the other on the calling thread, the form a CUDA thread runs compiled for the CPU. It is the
/// emulated device, by which the unit suite checks the device's arithmetic against the CPU engine.
#include <cstddef>
#include <vector>

#include "ncsde/device.hpp"
#include "ncsde/error.hpp"
#include "ncsde/symmetric.hpp"
#include "solvers/cuda/cuda_runtime.hpp"
#include "solvers/device/path_engine.hpp"

namespace ncsde::cuda {
/// A batch on GPU batch.device.index with `model` (batch_cuda.cuh; defined there, instantiated in
/// the .cu file of each device form's family).
template <class Model>
void run_batch_cuda(const Model& model, const device_batch& batch, device_batch_result& out);
}  // namespace ncsde::cuda

namespace ncsde::device {

/// The path_job of a batch for a model of noise dimension k (its pointers into the batch).
inline path_job make_path_job(const device_batch& b, int k) {
  path_job job;
  job.seed = b.seed;
  job.m = b.m;
  job.k = k;
  job.t0 = b.t0;
  job.t_end = b.t_end;
  job.dt = b.dt;
  job.steps = b.steps;
  job.save_steps = b.save_steps.data();
  job.saves = static_cast<int>(b.save_steps.size());
  job.blowup_threshold = b.blowup_threshold;
  job.symmetry_tolerance = ncsde::symmetry_tolerance;
  job.stop_level = b.stop_level;
  job.monitor_periods = b.monitor_periods.data();
  job.monitors = static_cast<int>(b.monitor_periods.size());
  job.monitor_level = b.monitor_level;
  return job;
}

/// Writes path p's summary into out.
inline void store_summary(const path_summary& s, std::size_t p, device_batch_result& out) {
  out.outcome[p] = s.outcome;
  out.steps[p] = s.steps;
  out.t_stop[p] = s.t_stop;
  out.saved[p] = s.saved;
}

/// Runs the batch's paths with `model` on this thread into out (sized here).
template <class Model>
void run_batch_host(const Model& model, const device_batch& b, device_batch_result& out) {
  const path_job job = make_path_job(b, model.noise_dimension(b.m));
  const std::size_t mm = static_cast<std::size_t>(b.m) * static_cast<std::size_t>(b.m);
  const std::size_t saves = b.save_steps.size();
  const std::size_t monitors = b.monitor_periods.size();
  out.resize(b.paths, b.m, saves, monitors);
  std::vector<double> scratch(static_cast<std::size_t>(path_scratch_doubles(model, b.m)));
  for (long long q = 0; q < b.paths; ++q) {
    const auto p = static_cast<std::size_t>(q);
    double* v = out.states.data() + p * mm;
    for (std::size_t c = 0; c < mm; ++c) v[c] = b.v0[c];
    const path_summary s =
        run_path(model, job, static_cast<std::uint64_t>(b.first_path + q), v,
                 out.states_saved.data() + p * saves * mm, out.passed.data() + p * monitors,
                 out.states_passed.data() + p * monitors * mm, scratch.data());
    store_summary(s, p, out);
  }
}

/// Runs `model`'s batch on the device the batch names: the emulated device (run_batch_host, on this
/// thread) or a CUDA GPU (cuda::run_batch_cuda, explicitly instantiated for each device form by
/// the .cu file of its family; in a build without the CUDA backend, the named device_error).
template <class Model>
void run_device_batch_on(const Model& model, const device_batch& batch, device_batch_result& out) {
  switch (batch.device.kind) {
    case device_kind::emulated:
      run_batch_host(model, batch, out);
      return;
    case device_kind::cuda:
#if defined(NCSDE_HAVE_CUDA)
      cuda::run_batch_cuda(model, batch, out);
#else
      ncsde::detail::throw_no_cuda_backend();
#endif
      return;
    case device_kind::cpu:
    case device_kind::automatic:
      break;
  }
  throw_invalid("run_device_batch", "the batch names no device (cuda:N or emulated)");
}

}  // namespace ncsde::device
