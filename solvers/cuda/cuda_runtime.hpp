#pragma once
/// The CUDA backend's host side as the rest of the library sees it (no CUDA header): whether the
/// backend is built, and its calls into the CUDA runtime, each failing with ncsde::device_error
/// that names the device and the runtime's own text. Defined in cuda_runtime.cu when the backend is
/// built (NCSDE_HAVE_CUDA), and otherwise never called.
#include <vector>

#include "ncsde/device.hpp"

namespace ncsde::detail {

#if defined(NCSDE_HAVE_CUDA)
inline constexpr bool cuda_built = true;
#else
inline constexpr bool cuda_built = false;
#endif

/// The devices the CUDA runtime sees (none: device_error, with the runtime's text).
std::vector<cuda_device_info> cuda_query_devices();

/// Throws the device_error of device "cuda" in a build without the CUDA backend.
[[noreturn]] void throw_no_cuda_backend();

}  // namespace ncsde::detail
