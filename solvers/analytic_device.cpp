// The device forms of the analytic problems (analytic.hpp): each problem's parameters as its
// device model (solvers/device/analytic_kernels.hpp), run on the device a batch names.
#include <numbers>

#include "ncsde/analytic.hpp"
#include "ncsde/error.hpp"
#include "solvers/device/analytic_kernels.hpp"
#include "solvers/device/batch_host.hpp"

namespace ncsde::analytic {

static_assert(ncsde::device::analytic_sqrt2 == std::numbers::sqrt2);

void gbm::run_device_batch(const device_batch& batch, device_batch_result& out) const {
  ncsde::device::gbm_device_model d;
  d.mu = m_params.mu;
  d.sigma = m_params.sigma;
  ncsde::device::run_device_batch_on(d, batch, out);
}

void linear_covariance::run_device_batch(const device_batch& batch,
                                         device_batch_result& out) const {
  ncsde::device::run_device_batch_on(ncsde::device::linear_covariance_device_model{}, batch, out);
}

void wishart::run_device_batch(const device_batch& batch, device_batch_result& out) const {
  ncsde::device::wishart_device_model d;
  d.p = m_p;
  ncsde::device::run_device_batch_on(d, batch, out);
}

}  // namespace ncsde::analytic
