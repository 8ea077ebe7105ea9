#include "limits.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "ncsde/ensemble.hpp"
#include "ncsde/error.hpp"

namespace ncsde::cli {
namespace {

bool relu_branch(models::architecture arch) {
  return arch == models::architecture::resnet || arch == models::architecture::transformer;
}

bool attention(models::architecture arch) {
  return arch == models::architecture::attention || arch == models::architecture::transformer;
}

/// Weights of one layer of the literal sampler, per role: {W^Q, W^K, W^V, W^O, W (or W^pre),
/// W^post} entries of one head, and the number of heads (literal.cpp draws W^Q, W^K, W^V per head).
struct layer_weights {
  double per_head = 0.0;  ///< W^Q, W^K, W^V of one head
  double shared = 0.0;    ///< W^O, the MLP's W or the ReLU branch's W^pre and W^post
  int heads = 1;
};

layer_weights literal_weights(const model_flags& model, int n, int n_k) {
  const double nn = static_cast<double>(n);
  layer_weights w;
  const std::optional<models::architecture> builtin = builtin_architecture(model.model);
  if (!builtin) {
    // A registered model outside the four architectures (shaped-tanh): one n×n weight matrix per
    // layer, as a plain MLP's literal network draws.
    w.shared = nn * nn;
    return w;
  }
  const models::architecture arch = *builtin;
  const models::shaped_params p = model.params();
  if (arch == models::architecture::mlp) w.shared += nn * nn;
  if (relu_branch(arch)) w.shared += 2.0 * nn * std::max(1.0, std::round(p.hidden_ratio * nn));
  if (attention(arch)) {
    const int heads = std::max(1, p.heads);
    const double value_width = p.output_projection ? nn / heads : nn;
    w.per_head = 2.0 * nn * std::max(1, n_k) + nn * value_width;
    if (p.output_projection) w.shared += nn * nn;
    w.heads = heads;
  }
  return w;
}

int resolved_threads(int threads) { return ncsde::detail::resolve_threads(threads); }

}  // namespace

std::string format_bytes(double bytes) {
  constexpr const char* units[] = {"bytes", "kB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (bytes >= 1000.0 && u < 6) {
    bytes /= 1000.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} {}", bytes, units[u])
                : fmt::format("{:.3g} {}", bytes, units[u]);
}

memory_limit available_memory() {
  memory_limit limit{0.0, "physical memory"};
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  limit.bytes = pages > 0 && page_size > 0
                    ? static_cast<double>(pages) * static_cast<double>(page_size)
                    : 1e300;
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      static_cast<double>(rl.rlim_cur) < limit.bytes)
    limit = {static_cast<double>(rl.rlim_cur), "RLIMIT_AS"};
  // cgroup v2: "max" or a byte count.
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  double cgroup_bytes = 0.0;
  if (cgroup >> cgroup_bytes && cgroup_bytes > 0.0 && cgroup_bytes < limit.bytes)
    limit = {cgroup_bytes, "cgroup memory.max"};
  return limit;
}

void check_memory(std::string_view flag, std::string_view value, double bytes,
                  std::string_view what) {
  if (const char* report = std::getenv("NCSDE_REPORT_MEMORY"); report && report[0] == '1')
    std::fprintf(stderr, "ncsde: memory estimate %.*s %.*s: %.0f bytes (%.*s)\n",
                 static_cast<int>(flag.size()), flag.data(), static_cast<int>(value.size()),
                 value.data(), bytes, static_cast<int>(what.size()), what.data());
  const memory_limit limit = available_memory();
  if (bytes > limit.bytes)
    throw invalid_argument(fmt::format(
        "{} {}: the run needs about {} of memory ({}), more than the {} available ({})", flag,
        value, format_bytes(bytes), what, format_bytes(limit.bytes), limit.source));
}

void check_paths(long long paths, const parameter_names& names) {
  if (paths < 1 || paths > max_paths)
    throw invalid_argument(
        fmt::format("{} must be in [1, {}] (got {})", names.paths, max_paths, paths));
}

void check_threads(long long threads, const parameter_names& names) {
  if (threads < 0 || threads > max_threads)
    throw invalid_argument(fmt::format("{} must be in [0, {}] (0: all cores; got {})",
                                       names.threads, max_threads, threads));
}

double ensemble_bytes_per_path(double K, std::size_t functionals, bool keep_paths,
                               std::size_t saves) {
  // Fitted to the peak resident memory of `ncsde simulate` (m = 1, 2, 4, 8; 10⁵ and 5·10⁵ paths,
  // glibc malloc; tests/cli/test_outputs.py checks the estimate against the measurement), above
  // it by 5-30%: each functional's value three times (the blocks', the run's, the summary's sorted
  // copy), the status and times (4 bytes a coordinate for the statistics' work, 40 a path); a kept
  // path's record (its shell in the block and in the run, V's heap block: 144 + 9 bytes a
  // coordinate) and its saved states.
  double per_path = 24.0 * static_cast<double>(functionals) + 4.0 * K + 40.0;
  if (keep_paths) per_path += 144.0 + 9.0 * K + static_cast<double>(saves) * (8.0 * K + 48.0);
  return per_path;
}

double ensemble_summary_bytes(double K, double paths, std::size_t saves, bool covariance) {
  const double blocks =
      std::ceil(paths / automatic_block_size(static_cast<int>(K), static_cast<long long>(paths))) +
      1.0;  // and the run's own
  const double per_moments = 8.0 * (K + (covariance ? K * K : K)) + 128.0;
  return blocks * (2.0 + static_cast<double>(saves)) * per_moments;
}

void check_initial_size(const matrix& v0, double blowup_threshold,
                        std::string_view threshold_name) {
  const double size = v0.size() > 0 ? v0.cwiseAbs().maxCoeff() : 0.0;
  if (!(size <= blowup_threshold))
    throw invalid_argument(fmt::format(
        "--V0: max |V0^ab| = {:.6g} exceeds {} {:.6g} (every path would start blown up)", size,
        threshold_name, blowup_threshold));
}

void check_sde_steps(double t_end, double dt, double steps, long long paths,
                     std::string_view paths_flag, int runs, const parameter_names& names) {
  if (steps > max_steps_per_path)
    throw invalid_argument(fmt::format(
        "{} {:g} with {} {:g}: {:.3g} steps per path, more than the limit of {:g} steps per "
        "path",
        names.dt, dt, names.t_end, t_end, steps, max_steps_per_path));
  const double total = steps * static_cast<double>(paths) * runs;
  if (total > max_total_steps)
    throw invalid_argument(fmt::format(
        "{} {}: {:.3g} steps in all ({} path{} × {:.3g} steps ({}/{}){}), more than "
        "the limit of "
        "{:g} steps per run",
        paths_flag, paths, total, paths, paths == 1 ? "" : "s", steps, names.t_end, names.dt,
        runs > 1 ? fmt::format(" × {} SDE runs", runs) : "", max_total_steps));
}

double network_layer_work(const model_flags& model, bool literal, int m, int n, int n_k) {
  if (literal) {
    const layer_weights w = literal_weights(model, n, n_k);
    return w.per_head * w.heads + w.shared;
  }
  const std::optional<models::architecture> arch = builtin_architecture(model.model);
  const double nn = static_cast<double>(n);
  const double hidden =
      arch && relu_branch(*arch) ? std::round(model.params().hidden_ratio * nn) : 0.0;
  return static_cast<double>(m) * m * (nn + hidden);
}

double literal_weight_bytes(const model_flags& model, int n, int n_k) {
  // One buffer per role, reused across heads and layers.
  const layer_weights w = literal_weights(model, n, n_k);
  return 8.0 * (w.per_head + w.shared);
}

void check_network_work(const model_flags& model, bool literal, int m, int n, int n_k,
                        long long networks, int d, int ensembles, const parameter_names& names) {
  const double layers = static_cast<double>(networks) * d * ensembles;
  const std::string count =
      ensembles > 1 ? fmt::format(" × {} ensembles", ensembles) : std::string();
  if (layers > max_network_layers)
    throw invalid_argument(fmt::format(
        "{} {} with {} {}: {:.3g} network layers ({} × {}{}), more than the limit of {:g} "
        "per run",
        names.networks, networks, names.d, d, layers, networks, d, count, max_network_layers));
  const double per_layer = network_layer_work(model, literal, m, n, n_k);
  const double work = layers * per_layer;
  if (work > max_network_work)
    throw invalid_argument(fmt::format(
        "{} {} with {} {} and {} {}: about {:.3g} units of work ({:.3g} network layers × "
        "{:.3g} {} per layer, {} sampler), more than the limit of {:g} per run",
        names.networks, networks, names.d, d, names.n, n, work, layers, per_layer,
        literal ? "weights drawn" : "m²·(n + r·n)", literal ? "literal" : "reduced",
        max_network_work));
}

void check_network_memory(const model_flags& model, const network_flags& net, bool literal, int m,
                          std::size_t depths, int ensembles, double extra_per_network,
                          const parameter_names& names) {
  if (literal) {
    // Every worker thread that runs a network keeps its own weight buffers.
    const double threads =
        static_cast<double>(std::min<long long>(resolved_threads(net.threads), net.networks));
    const double per_thread = literal_weight_bytes(model, net.n, net.key_dimension());
    // The layer's activations (X, X W, the hidden layer): a few m×n and m×r·n matrices.
    const double activations =
        8.0 * m * net.n * (6.0 + 2.0 * std::max(1.0, model.params().hidden_ratio));
    check_memory(names.n, std::to_string(net.n), threads * (per_thread + activations),
                 fmt::format("the literal sampler's weight matrices, {} per thread × {:g} thread{}",
                             format_bytes(per_thread), threads, threads == 1 ? "" : "s"));
  }
  const double K = static_cast<double>(m) * (m + 1) / 2;
  const double vector_bytes = sizeof(vector) + 8.0 * K + 16.0;  // a heap block's overhead: 16
  const double per_network =
      ensembles * (sizeof(networks::network_record) + static_cast<double>(depths) * vector_bytes +
                   vector_bytes) +
      extra_per_network;
  check_memory(names.networks, std::to_string(net.networks),
               per_network * static_cast<double>(net.networks),
               fmt::format("{:.0f} bytes per network: V at {} recorded depth{}{}", per_network,
                           depths, depths == 1 ? "" : "s",
                           ensembles > 1 ? fmt::format(", {} ensembles", ensembles) : ""));
}

}  // namespace ncsde::cli
