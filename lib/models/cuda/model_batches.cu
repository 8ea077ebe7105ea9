// The models' device forms on a CUDA GPU: the device engine's path kernel (solvers/cuda/
// batch_cuda.cuh) instantiated for each model family's device form.
#include "lib/models/device/shaped_kernels.hpp"
#include "lib/models/device/shaped_tanh_kernels.hpp"
#include "solvers/cuda/batch_cuda.cuh"

namespace ncsde::cuda {

template void run_batch_cuda(const models::device::shaped_device_model&, const device_batch&,
                             device_batch_result&);
template void run_batch_cuda(const models::device::shaped_activation_device_model&,
                             const device_batch&, device_batch_result&);

}  // namespace ncsde::cuda
