#pragma once
/// The program under mpirun. When ncsde is built with MPI (ncsde::mpi) and started by mpirun or
/// mpiexec (Open MPI's OMPI_COMM_WORLD_SIZE, PMI's PMI_SIZE or PMIx's PMIX_RANK in the
/// environment), main() starts MPI (mpi_session) and the commands that distribute their work
/// (`ncsde simulate`, `sample-network`, `validate`, `blowup`, `convergence`) split it over the ranks; rank 0 writes every output, and the other ranks'
/// stdout and stderr go to /dev/null (a failure on any rank reaches rank 0 as a message: ncsde/mpi.hpp).
/// Started any other way the program is one process, with or without MPI built in.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ncsde/ensemble.hpp"
#include "ncsde/models/registry.hpp"
#include "ncsde/networks/sample.hpp"
#include "process.hpp"

namespace ncsde::cli {

struct mpi_world {
  int rank = 0;
  int size = 1;
  bool active = false;  ///< MPI is running (started by mpirun, ncsde built with MPI)
};

/// The world of this process (one process of size 1 until mpi_session starts MPI).
const mpi_world& world();

/// Starts MPI in main() when the program was started by mpirun and MPI is built in; finalises it
/// at the end of main(). Started by mpirun with more than one rank without MPI built in, ok() is
/// false and rank 0 has said why (each rank would otherwise run the whole job).
class mpi_session {
 public:
  mpi_session(int& argc, char**& argv);
  ~mpi_session();
  mpi_session(const mpi_session&) = delete;
  mpi_session& operator=(const mpi_session&) = delete;
  bool ok() const { return m_ok; }

 private:
  bool m_ok = true;
};

/// Refuses (ncsde::invalid_argument, naming the command and the rank count) a command that runs
/// on one process only when the world has more than one rank.
void require_one_rank(std::string_view command);

/// Whether `ok` holds on every rank: collective under mpirun (every rank must call it at the same
/// point), `ok` itself otherwise.
bool on_every_rank(bool ok);

/// sde.run_ensemble(scheme, v0, t_end, iopt, eopt) split over the ranks: rank r runs its blocks
/// (mpi::rank_paths, run_ensemble_range), rank 0 gets the whole result, bit for bit the
/// one-process one (mpi::run_distributed), the other ranks nullopt. Without mpirun: the
/// one-process run.
std::optional<ensemble_result> run_over_ranks(const models::model_instance& sde,
                                              std::string_view scheme, const matrix& v0,
                                              double t_end, const integrate_options& iopt,
                                              const ensemble_options& eopt);

/// net.sample(v0, d, opt) split over the ranks: rank r samples its contiguous networks
/// (mpi::rank_paths), rank 0 gets the whole ensemble, bit for bit the one-process one (merge of
/// the pieces), the other ranks nullopt. `pending` is a failure this rank already had (rank 0's
/// runs before the networks): it becomes this rank's failure, which every rank throws as
/// mpi::rank_failure. Without mpirun: net.sample itself (and `pending` is rethrown).
std::optional<networks::network_ensemble> sample_over_ranks(
    const models::network_instance& net, const matrix& v0, int d, networks::network_options opt,
    const std::optional<std::string>& pending = std::nullopt);

/// The world's ranks as a path_sharing for the drivers that take one (convergence): null without
/// mpirun (one process runs every path), else mpi::rank_sharing(MPI_COMM_WORLD) with root 0.
std::shared_ptr<const path_sharing> world_sharing();

/// Rank 0 creates --out `out` (when given) in `file` before the run; every rank learns whether it
/// could (on_every_rank), so that none starts a run that rank 0 has left. False on every rank
/// when it could not (rank 0 has said why). Without mpirun: the one process creates it.
bool open_output_on_rank0(std::optional<output_file>& file, std::string_view command,
                          const std::string& out);

/// open_plot_files(command, script, dir, names, files) on rank 0 before the run, and every rank
/// learns whether it succeeded (on_every_rank). Returns 0, or an exit code on every rank: rank
/// 0's (printed), exit_usage on the others.
int open_plots_on_rank0(std::string_view command, const std::string& script,
                        const std::filesystem::path& dir, const std::vector<std::string>& names,
                        std::vector<std::unique_ptr<output_file>>& files);

}  // namespace ncsde::cli
