// The CUDA backend's runtime calls (cuda_runtime.hpp, batch_cuda.cuh): device queries and the
// errors every call reports.
#include <cuda_runtime.h>

#include "ncsde/error.hpp"
#include "solvers/cuda/batch_cuda.cuh"
#include "solvers/cuda/cuda_runtime.hpp"

namespace ncsde {

namespace cuda {

void throw_cuda_error(int device, const char* call, cudaError_t e) {
  throw device_error(ncsde::detail::format_message("device cuda:{}: {} failed: {} ({})", device, call,
                                 cudaGetErrorString(e), cudaGetErrorName(e)));
}

}  // namespace cuda

namespace detail {

std::vector<cuda_device_info> cuda_query_devices() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    throw device_error(detail::format_message("device cuda: the CUDA runtime sees no device: {} ({})",
                                   cudaGetErrorString(e), cudaGetErrorName(e)));
  if (count == 0) throw device_error("device cuda: the CUDA runtime sees no device");
  std::vector<cuda_device_info> out;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    cuda::check(i, "cudaGetDeviceProperties", cudaGetDeviceProperties(&p, i));
    cuda_device_info d;
    d.index = i;
    d.name = p.name;
    d.compute_major = p.major;
    d.compute_minor = p.minor;
    d.memory_gib = static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
    out.push_back(d);
  }
  return out;
}

}  // namespace detail
}  // namespace ncsde
