#include "device/shaped_device.hpp"

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

void covariance_sde::run_device_batch(const device_batch& batch, device_batch_result& out) const {
  ncsde::device::run_device_batch_on(device_model_of(*this), batch, out);
}

void shaped_activation_sde::run_device_batch(const device_batch& batch,
                                             device_batch_result& out) const {
  ncsde::device::run_device_batch_on(device_model_of(*this), batch, out);
}

}  // namespace ncsde::models
