// The device forms of the analytic problems (analytic.hpp): each problem's parameters as its
// device model (solvers/device/analytic_kernels.hpp), run on the device a batch names.
#include <numbers>

#include "ncsde/analytic.hpp"
#include "ncsde/error.hpp"
#include "solvers/cuda/analytic_batches.hpp"
#include "solvers/device/analytic_kernels.hpp"
#include "solvers/device/batch_host.hpp"

namespace ncsde::analytic {

static_assert(ncsde::device::analytic_sqrt2 == std::numbers::sqrt2);

namespace {

/// `model`'s batch on the device the batch names: the emulated device (the device engine on this
/// thread) or a CUDA GPU (analytic_batches.cu, built with the CUDA backend).
template <class Model>
void run_analytic_batch(const Model& model, const device_batch& batch, device_batch_result& out) {
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

void gbm::run_device_batch(const device_batch& batch, device_batch_result& out) const {
  ncsde::device::gbm_device_model d;
  d.mu = m_params.mu;
  d.sigma = m_params.sigma;
  run_analytic_batch(d, batch, out);
}

void linear_covariance::run_device_batch(const device_batch& batch,
                                         device_batch_result& out) const {
  run_analytic_batch(ncsde::device::linear_covariance_device_model{}, batch, out);
}

void wishart::run_device_batch(const device_batch& batch, device_batch_result& out) const {
  ncsde::device::wishart_device_model d;
  d.p = m_p;
  run_analytic_batch(d, batch, out);
}

}  // namespace ncsde::analytic
