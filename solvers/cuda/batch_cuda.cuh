#pragma once
/// A device batch (device.hpp) on a CUDA GPU: one thread per path runs the device engine's path
/// (path_engine.hpp), the same code the emulated device runs on the host. Included by the .cu file
/// of each SDE family with a device form, which instantiates run_batch_cuda for its model.
///
/// Layout: path p's state, saved states and scratch are contiguous (its own rows); the batch's
/// buffers live on the device for the batch's duration. Every runtime call is checked: an error is
/// ncsde::device_error naming the device, the call and the runtime's text (out of memory included).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ncsde/device.hpp"
#include "ncsde/error.hpp"
#include "solvers/device/batch_host.hpp"
#include "solvers/device/path_engine.hpp"

namespace ncsde::cuda {

/// ncsde::device_error for a failed runtime call.
[[noreturn]] void throw_cuda_error(int device, const char* call, cudaError_t e);

inline void check(int device, const char* call, cudaError_t e) {
  if (e != cudaSuccess) throw_cuda_error(device, call, e);
}

/// A device allocation of n elements of T, freed at the end of its scope.
template <class T>
class device_buffer {
 public:
  device_buffer(int device, std::size_t n, const char* what) : m_n(n) {
    if (n > 0) check(device, what, cudaMalloc(reinterpret_cast<void**>(&m_p), n * sizeof(T)));
  }
  ~device_buffer() {
    if (m_p != nullptr) cudaFree(m_p);
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  T* get() const { return m_p; }
  std::size_t bytes() const { return m_n * sizeof(T); }

 private:
  T* m_p = nullptr;
  std::size_t m_n;
};

template <class Model>
__global__ void run_paths_kernel(Model model, device::path_job job, long long first, long long paths,
                                 const double* v0, double* states, double* saved, double* scratch,
                                 long long scratch_per_path, int* outcome, long long* steps,
                                 double* t_stop, int* saved_count, int* passed, double* at_pass) {
  const long long q = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q >= paths) return;
  const long long mm = static_cast<long long>(job.m) * job.m;
  double* v = states + q * mm;
  for (long long c = 0; c < mm; ++c) v[c] = v0[c];
  const device::path_summary s = device::run_path(
      model, job, static_cast<std::uint64_t>(first + q), v, saved + q * job.saves * mm,
      passed + q * job.monitors, at_pass + q * job.monitors * mm, scratch + q * scratch_per_path);
  outcome[q] = s.outcome;
  steps[q] = s.steps;
  t_stop[q] = s.t_stop;
  saved_count[q] = s.saved;
}

/// Runs the batch on GPU b.device.index with `model` into out (sized here).
template <class Model>
void run_batch_cuda(const Model& model, const device_batch& b, device_batch_result& out) {
  const int dev = b.device.index;
  check(dev, "cudaSetDevice", cudaSetDevice(dev));
  const int k = model.noise_dimension(b.m);
  const std::size_t mm = static_cast<std::size_t>(b.m) * static_cast<std::size_t>(b.m);
  const std::size_t saves = b.save_steps.size();
  const std::size_t monitors = b.monitor_periods.size();
  const auto paths = static_cast<std::size_t>(b.paths);
  const auto per_path = static_cast<std::size_t>(device::path_scratch_doubles(model, b.m));
  out.resize(b.paths, b.m, saves, monitors);
  if (paths == 0) return;
  device_buffer<double> v0(dev, mm, "cudaMalloc (V0)");
  device_buffer<long long> save_steps(dev, saves, "cudaMalloc (save steps)");
  device_buffer<double> states(dev, paths * mm, "cudaMalloc (states)");
  device_buffer<double> saved(dev, paths * saves * mm, "cudaMalloc (saved states)");
  device_buffer<double> scratch(dev, paths * per_path, "cudaMalloc (scratch)");
  device_buffer<int> outcome(dev, paths, "cudaMalloc (outcomes)");
  device_buffer<long long> steps(dev, paths, "cudaMalloc (steps)");
  device_buffer<double> t_stop(dev, paths, "cudaMalloc (stop times)");
  device_buffer<int> saved_count(dev, paths, "cudaMalloc (save counts)");
  device_buffer<long long> periods(dev, monitors, "cudaMalloc (monitor periods)");
  device_buffer<int> passed(dev, paths * monitors, "cudaMalloc (monitor flags)");
  device_buffer<double> at_pass(dev, paths * monitors * mm, "cudaMalloc (monitored states)");
  check(dev, "cudaMemcpy (V0)",
        cudaMemcpy(v0.get(), b.v0.data(), v0.bytes(), cudaMemcpyHostToDevice));
  if (saves > 0)
    check(dev, "cudaMemcpy (save steps)",
          cudaMemcpy(save_steps.get(), b.save_steps.data(), save_steps.bytes(),
                     cudaMemcpyHostToDevice));
  if (monitors > 0)
    check(dev, "cudaMemcpy (monitor periods)",
          cudaMemcpy(periods.get(), b.monitor_periods.data(), periods.bytes(),
                     cudaMemcpyHostToDevice));
  device::path_job job = device::make_path_job(b, k);
  job.save_steps = save_steps.get();
  job.monitor_periods = periods.get();
  constexpr int threads = 128;
  const auto blocks = static_cast<unsigned>((paths + threads - 1) / threads);
  run_paths_kernel<Model><<<blocks, threads>>>(
      model, job, b.first_path, b.paths, v0.get(), states.get(), saved.get(), scratch.get(),
      static_cast<long long>(per_path), outcome.get(), steps.get(), t_stop.get(),
      saved_count.get(), passed.get(), at_pass.get());
  check(dev, "the path kernel's launch", cudaGetLastError());
  check(dev, "the path kernel", cudaDeviceSynchronize());
  auto back = [&](auto* to, const auto& from, const char* what) {
    check(dev, what, cudaMemcpy(to, from.get(), from.bytes(), cudaMemcpyDeviceToHost));
  };
  back(out.outcome.data(), outcome, "cudaMemcpy (outcomes)");
  back(out.steps.data(), steps, "cudaMemcpy (steps)");
  back(out.t_stop.data(), t_stop, "cudaMemcpy (stop times)");
  back(out.saved.data(), saved_count, "cudaMemcpy (save counts)");
  back(out.states.data(), states, "cudaMemcpy (states)");
  if (saves > 0) back(out.states_saved.data(), saved, "cudaMemcpy (saved states)");
  if (monitors > 0) {
    back(out.passed.data(), passed, "cudaMemcpy (monitor flags)");
    back(out.states_passed.data(), at_pass, "cudaMemcpy (monitored states)");
  }
}

}  // namespace ncsde::cuda
