#include "mpi_world.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "command.hpp"
#include "ncsde/error.hpp"

#ifdef NCSDE_HAVE_MPI
#include "ncsde/mpi.hpp"
#endif

namespace ncsde::cli {

namespace {

mpi_world the_world;

/// The rank count mpirun announced in the environment (0 when not started by mpirun), and (for
/// the message of a program built without MPI) this process's rank.
int launched_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  if (std::getenv("PMIX_RANK") != nullptr) return 1;  // PMIx without a size variable
  return 0;
}

#ifndef NCSDE_HAVE_MPI
int launched_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return 0;
}
#endif

#ifdef NCSDE_HAVE_MPI
/// Ranks other than 0 write nothing: their stdout and stderr go to /dev/null.
void silence() {
  std::fflush(stdout);
  std::fflush(stderr);
  if (std::freopen("/dev/null", "w", stdout) == nullptr) return;
  if (std::freopen("/dev/null", "w", stderr) == nullptr) return;
}
#endif

}  // namespace

const mpi_world& world() { return the_world; }

mpi_session::mpi_session(int& argc, char**& argv) {
  const int size = launched_size();
  if (size == 0) return;
#ifdef NCSDE_HAVE_MPI
  MPI_Init(&argc, &argv);
  the_world.active = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &the_world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &the_world.size);
  if (the_world.rank != 0) silence();
#else
  (void)argc;
  (void)argv;
  if (size > 1) {
    m_ok = false;
    if (launched_rank() == 0)
      std::fprintf(stderr,
                   "ncsde: error: started by mpirun with %d ranks, but this ncsde was built "
                   "without MPI (install libopenmpi-dev and rebuild, or run one process)\n",
                   size);
  }
#endif
}

mpi_session::~mpi_session() {
#ifdef NCSDE_HAVE_MPI
  if (the_world.active) {
    std::fflush(stdout);
    MPI_Finalize();
  }
#endif
}

void require_one_rank(std::string_view command) {
  if (the_world.size > 1)
    throw_invalid_argument(fmt::format("ncsde {}", command), "mpirun -np", the_world.size,
                           "1: this command runs on one process (under mpirun, simulate, "
                           "sample-network, validate, blowup and convergence split their work over "
                           "the ranks)");
}

bool on_every_rank(bool ok) {
#ifdef NCSDE_HAVE_MPI
  if (the_world.active)
    return !mpi::first_failure(MPI_COMM_WORLD,
                               ok ? std::nullopt : std::optional<std::string>("not ok"));
#endif
  return ok;
}

std::optional<ensemble_result> run_over_ranks(const models::model_instance& sde,
                                              std::string_view scheme, const matrix& v0,
                                              double t_end, const integrate_options& iopt,
                                              const ensemble_options& eopt) {
  if (!the_world.active) return sde.run_ensemble(scheme, v0, t_end, iopt, eopt);
#ifdef NCSDE_HAVE_MPI
  const path_range range =
      // Ranks split at multiples of 64 paths, a multiple of every automatic block size: no
      // block is cut between two ranks.
      mpi::rank_paths(eopt.paths, eopt.block_size > 0 ? eopt.block_size : 64, the_world.rank,
                      the_world.size);
  return mpi::run_distributed(
      MPI_COMM_WORLD, [&] { return sde.run_ensemble_range(scheme, v0, t_end, iopt, eopt, range); },
      eopt);
#else
  return std::nullopt;  // the_world.active is never true without MPI
#endif
}

std::optional<networks::network_ensemble> sample_over_ranks(
    const models::network_instance& net, const matrix& v0, int d, networks::network_options opt,
    const std::optional<std::string>& pending) {
  if (!the_world.active) {
    if (pending) throw std::runtime_error(*pending);
    return net.sample(v0, d, opt);
  }
#ifdef NCSDE_HAVE_MPI
  opt.range = mpi::rank_paths(opt.networks, 1, the_world.rank, the_world.size);
  const std::optional<std::vector<std::string>> bytes = mpi::gather_pieces(MPI_COMM_WORLD, [&] {
    if (pending) throw std::runtime_error(*pending);
    return networks::serialize(net.sample(v0, d, opt));
  });
  if (!bytes) return std::nullopt;
  std::vector<networks::network_ensemble> pieces;
  pieces.reserve(bytes->size());
  for (const std::string& b : *bytes) pieces.push_back(networks::deserialize_network_ensemble(b));
  return networks::merge_network_pieces(std::move(pieces));
#else
  return std::nullopt;  // the_world.active is never true without MPI
#endif
}

std::shared_ptr<const path_sharing> world_sharing() {
  if (!the_world.active) return nullptr;
#ifdef NCSDE_HAVE_MPI
  return std::make_shared<const path_sharing>(mpi::rank_sharing(MPI_COMM_WORLD));
#else
  return nullptr;       // the_world.active is never true without MPI
#endif
}

bool open_output_on_rank0(std::optional<output_file>& file, std::string_view command,
                          const std::string& out) {
  bool ok = true;
  if (the_world.rank == 0 && !out.empty()) {
    file.emplace(command, "--out", out);
    ok = file->ok();
  }
  return on_every_rank(ok);
}

int open_plots_on_rank0(std::string_view command, const std::string& script,
                        const std::filesystem::path& dir, const std::vector<std::string>& names,
                        std::vector<std::unique_ptr<output_file>>& files) {
  const int failed = the_world.rank == 0 ? open_plot_files(command, script, dir, names, files) : 0;
  if (on_every_rank(failed == 0)) return 0;
  return failed != 0 ? failed : exit_usage;
}

}  // namespace ncsde::cli
