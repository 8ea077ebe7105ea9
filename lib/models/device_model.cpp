#include "device/shaped_device.hpp"

#include "device/model_batches.hpp"
#include "ncsde/error.hpp"
#include "solvers/device/batch_host.hpp"

namespace ncsde::models {

device::shaped_device_model device_model_of(const covariance_sde& sde) {
  const shaped_params& p = sde.params();
  device::shaped_device_model d;
  d.att_weight = sde.att_weight();
  d.relu_weight = sde.relu_weight();
  d.k_lin = sde.k_lin();
  d.k_att = sde.k_att();
  d.tau0 = p.tau0;
  d.c_plus = p.c_plus;
  d.c_minus = p.c_minus;
  d.causal = p.causal;
  d.has_attention = sde.has_attention();
  return d;
}

device::shaped_activation_device_model device_model_of(const shaped_activation_sde& sde) {
  device::shaped_activation_device_model d;
  d.q = sde.quadratic_coefficient();
  d.r = sde.cubic_coefficient();
  return d;
}

namespace {

/// `model`'s batch on the device the batch names.
template <class Model>
void run_model_batch(const Model& model, const device_batch& batch, device_batch_result& out) {
  switch (batch.device.kind) {
    case device_kind::emulated:
      ncsde::device::run_batch_host(model, batch, out);
      return;
    case device_kind::cuda:
#if defined(NCSDE_HAVE_CUDA)
      detail::run_batch_cuda(model, batch, out);
      return;
#else
      throw device_error(
          "device cuda: this build of ncsde has no CUDA backend (CMake found no CUDA compiler when "
          "it was configured; docs/gpu.md)");
#endif
    case device_kind::cpu:
    case device_kind::automatic:
      break;
  }
  throw_invalid("run_device_batch", "the batch names no device (cuda:N or emulated)");
}

}  // namespace

void covariance_sde::run_device_batch(const device_batch& batch, device_batch_result& out) const {
  run_model_batch(device_model_of(*this), batch, out);
}

void shaped_activation_sde::run_device_batch(const device_batch& batch,
                                             device_batch_result& out) const {
  run_model_batch(device_model_of(*this), batch, out);
}

}  // namespace ncsde::models
