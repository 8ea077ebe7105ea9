// The models' device forms on a CUDA GPU: the device engine's path kernel (solvers/cuda/
// batch_cuda.cuh) instantiated for each model family.
#include "lib/models/device/model_batches.hpp"
#include "solvers/cuda/batch_cuda.cuh"

namespace ncsde::models::detail {

void run_batch_cuda(const device::shaped_device_model& model, const device_batch& batch,
                    device_batch_result& out) {
  ncsde::cuda::run_batch_cuda(model, batch, out);
}

void run_batch_cuda(const device::shaped_activation_device_model& model, const device_batch& batch,
                    device_batch_result& out) {
  ncsde::cuda::run_batch_cuda(model, batch, out);
}

}  // namespace ncsde::models::detail
