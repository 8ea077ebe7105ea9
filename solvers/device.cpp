#include "ncsde/device.hpp"

#include <algorithm>
#include <charconv>
#include <string>

#include "ncsde/ensemble.hpp"

#include "ncsde/error.hpp"
#include "solvers/cuda/cuda_runtime.hpp"

namespace ncsde {

std::string to_string(const device_spec& d) {
  switch (d.kind) {
    case device_kind::cpu:
      return "cpu";
    case device_kind::cuda:
      return "cuda:" + std::to_string(d.index);
    case device_kind::automatic:
      return "auto";
    case device_kind::emulated:
      return "emulated";
  }
  return "cpu";
}

device_spec parse_device(std::string_view text, std::string_view param) {
  if (text == "cpu") return {device_kind::cpu, 0};
  if (text == "auto") return {device_kind::automatic, 0};
  if (text == "emulated") return {device_kind::emulated, 0};
  if (text == "cuda") return {device_kind::cuda, 0};
  if (text.starts_with("cuda:")) {
    const std::string_view n = text.substr(5);
    int index = -1;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), index);
    if (ec == std::errc() && end == n.data() + n.size() && !n.empty() && index >= 0)
      return {device_kind::cuda, index};
  }
  throw_invalid_argument("device", param, std::string(text),
                         "cpu, cuda, cuda:N (N >= 0, a GPU's index), auto or emulated");
}

bool cuda_backend_built() { return detail::cuda_built; }

namespace detail {

void throw_no_cuda_backend() {
  throw device_error(
      "device cuda: this build of ncsde has no CUDA backend (CMake found no CUDA compiler when "
      "it was configured; configure with nvcc on PATH or -DCMAKE_CUDA_COMPILER=..., "
      "docs/gpu.md)");
}

}  // namespace detail

std::vector<cuda_device_info> cuda_devices() {
#if defined(NCSDE_HAVE_CUDA)
  return detail::cuda_query_devices();
#else
  detail::throw_no_cuda_backend();
#endif
}

namespace detail {

run_device resolve_run_device(const device_spec& device, const std::string& refusal) {
  run_device out;
  switch (device.kind) {
    case device_kind::cpu:
      return out;
    case device_kind::emulated:
    case device_kind::cuda: {
      if (!refusal.empty())
        throw_invalid("run_ensemble", format_message("device '{}' does not run {}; run it with "
                                                     "device 'cpu' (or 'auto')",
                                                     to_string(device), refusal));
      out.on_device = true;
      out.spec = device;
      out.report.device = to_string(device);
      if (device.kind == device_kind::emulated) {
        out.report.note = "the device engine's kernels on the CPU";
        return out;
      }
      const std::vector<cuda_device_info> gpus = cuda_devices();
      if (device.index >= static_cast<int>(gpus.size()))
        throw device_error(format_message(
            "device {}: this process sees {} CUDA device{} (cuda:0 to cuda:{})", to_string(device),
            gpus.size(), gpus.size() == 1 ? "" : "s", gpus.size() - 1));
      const cuda_device_info& g = gpus[static_cast<std::size_t>(device.index)];
      out.report.note = format_message("{}, compute capability {}.{}, {:.0f} GiB", g.name,
                                       g.compute_major, g.compute_minor, g.memory_gib);
      return out;
    }
    case device_kind::automatic: {
      auto on_cpu = [&](const std::string& why) {
        out.report.device = "cpu";
        out.report.note = "auto: the CPU, since " + why;
        return out;
      };
      if (!refusal.empty()) return on_cpu("the device engine does not run " + refusal);
      if (!cuda_backend_built()) return on_cpu("this build of ncsde has no CUDA backend");
      try {
        const std::vector<cuda_device_info> gpus = cuda_devices();
        out.on_device = true;
        out.spec = {device_kind::cuda, 0};
        out.report.device = "cuda:0";
        out.report.note = format_message("auto: {}, compute capability {}.{}", gpus.front().name,
                                         gpus.front().compute_major, gpus.front().compute_minor);
        return out;
      } catch (const device_error& e) {
        return on_cpu(e.what());
      }
    }
  }
  return out;
}

long long device_claim_blocks(const device_spec& device, long long block_size,
                              double bytes_per_path) {
  if (device.kind != device_kind::cuda) return 1;
  constexpr double budget_bytes = 4.0 * 1024 * 1024 * 1024;
  constexpr double max_paths = 65536.0;
  const double paths = std::min(max_paths, budget_bytes / std::max(bytes_per_path, 1.0));
  return std::max<long long>(1, static_cast<long long>(paths) / std::max<long long>(block_size, 1));
}

}  // namespace detail
}  // namespace ncsde
