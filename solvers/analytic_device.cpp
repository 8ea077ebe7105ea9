// The device forms of the analytic problems (analytic.hpp): each problem's parameters as its
// device model (solvers/device/analytic_kernels.hpp), run on the device a batch names.
#include <numbers>

#include "ncsde/analytic.hpp"
#include "ncsde/error.hpp"
#include "solvers/cuda/analytic_batches.hpp"
#include "solvers/cuda/cuda_runtime.hpp"
#include "solvers/device/analytic_kernels.hpp"
#include "solvers/device/batch_host.hpp"

namespace ncsde::analytic {

static_assert(ncsde::device::analytic_sqrt2 == std::numbers::sqrt2);

namespace {

/// `model`'s batch on the device the batch names: the emulated device (the device engine on this
/// thread) or a CUDA GPU (analytic_batches.cu, built with the CUDA backend).
template <class Model>
void run_analytic_batch(const Model& model, const device_batch& batch, device_batch_result& out) {
  ncsde::device::run_device_batch_on(
      model, batch, out, [](const auto& m, const device_batch& b, device_batch_result& o) {
#if defined(NCSDE_HAVE_CUDA)
        detail::run_batch_cuda(m, b, o);
#else
        (void)m, (void)b, (void)o;
        ncsde::detail::throw_no_cuda_backend();
#endif
      });
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
