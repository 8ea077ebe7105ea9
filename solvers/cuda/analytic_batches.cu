// The analytic problems' device forms on a CUDA GPU: the device engine's path kernel
// (batch_cuda.cuh) instantiated for each of gbm, linear_covariance and wishart.
#include "solvers/cuda/analytic_batches.hpp"
#include "solvers/cuda/batch_cuda.cuh"

namespace ncsde::analytic::detail {

void run_batch_cuda(const ncsde::device::gbm_device_model& model, const device_batch& batch,
                    device_batch_result& out) {
  ncsde::cuda::run_batch_cuda(model, batch, out);
}

void run_batch_cuda(const ncsde::device::linear_covariance_device_model& model,
                    const device_batch& batch, device_batch_result& out) {
  ncsde::cuda::run_batch_cuda(model, batch, out);
}

void run_batch_cuda(const ncsde::device::wishart_device_model& model, const device_batch& batch,
                    device_batch_result& out) {
  ncsde::cuda::run_batch_cuda(model, batch, out);
}

}  // namespace ncsde::analytic::detail
