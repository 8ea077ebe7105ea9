#include "models/step_flags.hpp"

#include <fmt/format.h>

#include <string_view>
#include <vector>

#include "command.hpp"
#include "limits.hpp"
#include "ncsde/error.hpp"
#include "ncsde/schemes.hpp"

namespace ncsde::cli {

void add_ensemble_flags(CLI::App& sub, ensemble_flags& flags) {
  sub.add_option("--paths", flags.paths, "Number of paths")
      ->transform(decimal_integer)
      ->check(CLI::Range(1LL, max_paths))
      ->capture_default_str();
  add_seed_flag(sub, flags.seed, "Seed of the (seed, path) random streams");
  add_threads_flag(sub, flags.threads);
  sub.add_option("--scheme", flags.scheme, "Scheme (see ncsde convergence --list-schemes)")
      ->check(CLI::IsMember(scheme_names()))
      ->capture_default_str();
  sub.add_flag("--batched,!--per-path", flags.batched,
               "Step batch_width paths at once where the run allows it (the default; --scheme em, "
               "milstein-commutative or predictor-corrector, fixed steps, a pd policy other than "
               "refine, a model with a batched form), or with --per-path one path at a time: the "
               "same numbers either way (ensemble_options::batched)");
  add_device_flag(sub, flags.device);
}

void add_device_flag(CLI::App& sub, std::string& device, std::string_view runs) {
  sub.add_option("--device", device,
                 fmt::format("Where {} run: cpu; cuda or cuda:N (a GPU, the CUDA backend: "
                             "Euler-Maruyama on fixed steps, a built-in model; the CPU paths bit "
                             "for bit where the GPU's arithmetic is the CPU's, docs/gpu.md); auto "
                             "(a GPU when there is one and the run allows it, else the CPU, and "
                             "the output says which and why); emulated (the GPU kernels on the "
                             "CPU, for checking them)",
                             runs))
      ->capture_default_str();
}

void add_step_flags(CLI::App& sub, step_flags& flags, const std::string& default_control) {
  flags.control = default_control;
  std::vector<std::string> names;
  for (const step_control_descriptor& d : step_controls()) names.emplace_back(d.name);
  sub.add_option("--step-control", flags.control,
                 "How steps are chosen inside each grid step of --dt: fixed (the grid), increment "
                 "(h*max|b(V)| <= tolerance*(1 + max|V|), and a change of V per step of at most "
                 "sqrt(tolerance)*(1 + max|V|)) or doubling (step-doubling error control); a "
                 "step's size is chosen before its Brownian increment is read, and adaptive steps "
                 "read one Brownian path whatever the tolerance")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  sub.add_option("--tolerance", flags.tolerance,
                 "Tolerance of the adaptive step controllers, in [1e-12, 1] (checked always)")
      ->capture_default_str();
  sub.add_option("--max-depth", flags.max_depth,
                 "Largest number of halvings of a grid step by an adaptive controller, 1..50")
      ->capture_default_str();
}

void apply_step_flags(const step_flags& flags, integrate_options& opt) {
  opt.control = parse_step_control(flags.control, "--step-control");
  validate_step_control("ncsde", flags.tolerance, "--tolerance", flags.max_depth, "--max-depth");
  opt.tolerance = flags.tolerance;
  opt.max_depth = flags.max_depth;
}

}  // namespace ncsde::cli
