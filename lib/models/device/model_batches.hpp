#pragma once
/// The models' device batches (device.hpp): a model's device form run on the device a batch names,
/// the emulated device (the device engine on this thread, solvers/device/batch_host.hpp) or a CUDA
/// GPU (cuda/model_batches.cu, built with the CUDA backend).
#include "ncsde/device.hpp"
#include "shaped_kernels.hpp"
#include "shaped_tanh_kernels.hpp"

namespace ncsde::models::detail {

/// On a CUDA GPU (defined when the backend is built).
void run_batch_cuda(const device::shaped_device_model& model, const device_batch& batch,
                    device_batch_result& out);
void run_batch_cuda(const device::shaped_activation_device_model& model, const device_batch& batch,
                    device_batch_result& out);

}  // namespace ncsde::models::detail
