#pragma once
/// The analytic problems' device batches on a CUDA GPU (analytic_batches.cu, built with the CUDA
/// backend): the device engine's path kernel (batch_cuda.cuh) with each problem's device form
/// (solvers/device/analytic_kernels.hpp). Declarations only, no CUDA header: analytic_device.cpp
/// calls them when the backend is built (NCSDE_HAVE_CUDA).
#include "ncsde/device.hpp"
#include "solvers/device/analytic_kernels.hpp"

namespace ncsde::analytic::detail {

void run_batch_cuda(const ncsde::device::gbm_device_model& model, const device_batch& batch,
                    device_batch_result& out);
void run_batch_cuda(const ncsde::device::linear_covariance_device_model& model,
                    const device_batch& batch, device_batch_result& out);
void run_batch_cuda(const ncsde::device::wishart_device_model& model, const device_batch& batch,
                    device_batch_result& out);

}  // namespace ncsde::analytic::detail
