#pragma once
/// The host side of the models' device forms (shaped_kernels.hpp, shaped_tanh_kernels.hpp): the
/// plain coefficient structs a device thread evaluates, filled from the library's SDE objects.
#include "ncsde/models/shaped.hpp"
#include "ncsde/models/shaped_tanh.hpp"
#include "shaped_kernels.hpp"
#include "shaped_tanh_kernels.hpp"

namespace ncsde::models {

/// The drift weights, k_lin, k_att and parameters of `sde`: the device model's drift and diffusion
/// are sde's per-path drift and diffusion (on a positive-definite V), bit for bit on the host.
device::shaped_device_model device_model_of(const covariance_sde& sde);

/// The coefficients q and r of `sde`'s drift.
device::shaped_activation_device_model device_model_of(const shaped_activation_sde& sde);

}  // namespace ncsde::models
