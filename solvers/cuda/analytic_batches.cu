// The analytic problems' device forms on a CUDA GPU: the device engine's path kernel
// (batch_cuda.cuh) instantiated for each of gbm, linear_covariance and wishart.
#include "solvers/cuda/batch_cuda.cuh"
#include "solvers/device/analytic_kernels.hpp"

namespace ncsde::cuda {

template void run_batch_cuda(const device::gbm_device_model&, const device_batch&,
                             device_batch_result&);
template void run_batch_cuda(const device::linear_covariance_device_model&, const device_batch&,
                             device_batch_result&);
template void run_batch_cuda(const device::wishart_device_model&, const device_batch&,
                             device_batch_result&);

}  // namespace ncsde::cuda
