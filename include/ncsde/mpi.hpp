#pragma once
/// Ensembles over MPI ranks: the optional target ncsde::mpi (built when CMake finds MPI; everything
/// else builds and runs without it).
///
/// A run of P paths in blocks of B is cut into contiguous ranges of whole blocks, one per rank
/// (rank_paths); each rank runs its range as a piece (run_ensemble_range), the pieces travel to the
/// root as serialize() bytes in rank order, which is path order, and the root merges them
/// (merge_partials) and finishes the run (finish_ensemble). A block is folded on one rank in the
/// same order as in one process, and blocks are joined in block order, so the root's result is
/// run_ensemble's bit for bit (timing aside) for any number of ranks. Every function here is
/// collective over its communicator.
///
/// A failure on a rank (an exception from its piece) does not leave the others waiting: all ranks
/// agree on it (first_failure) and each throws rank_failure with the message of the lowest failing
/// rank.
#include <mpi.h>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ncsde/ensemble.hpp"

namespace ncsde::mpi {

/// The paths rank `rank` of `size` runs: blocks [⌊rank·N/size⌋, ⌊(rank+1)·N/size⌋) of the N =
/// ⌈paths/block_size⌉ blocks, as paths (the last block may be short; a rank may get none when
/// size > N). Throws ncsde::invalid_argument naming the parameter for paths < 0, block_size < 1 or
/// rank outside [0, size).
path_range rank_paths(long long paths, long long block_size, int rank, int size);

/// A failure on a rank: what every rank throws once the ranks have agreed on it.
class rank_failure : public std::runtime_error {
 public:
  rank_failure(int rank, int size, const std::string& message);
  int rank() const { return m_rank; }

 private:
  int m_rank;
};

/// The lowest rank whose `mine` holds a message, with that message, or nullopt when no rank failed.
/// Collective: every rank gets the same answer.
struct failure {
  int rank = 0;
  std::string message;
};
std::optional<failure> first_failure(MPI_Comm comm, const std::optional<std::string>& mine);

/// Runs `piece` on every rank (an exception becomes its rank's failure: first_failure, then
/// rank_failure on every rank) and gathers the bytes it returns to `root`: there the pieces of all
/// ranks in rank order, nullopt on the other ranks. Any size (sent in chunks of at most 1 GiB).
std::optional<std::vector<std::string>> gather_pieces(MPI_Comm comm,
                                                      const std::function<std::string()>& piece,
                                                      int root = 0);

/// gather_pieces of the serialised ensemble pieces (serialize(ensemble_partial)), then on `root`
/// the finished run (merge_partials, finish_ensemble with `opt`); nullopt on the other ranks.
std::optional<ensemble_result> run_distributed(MPI_Comm comm,
                                               const std::function<ensemble_partial()>& piece,
                                               const ensemble_options& opt, int root = 0);

/// The ranks of `comm` as a path_sharing (executor.hpp) for the drivers that take one
/// (convergence_options::sharing, adaptive_convergence_options::sharing): rank r runs rank_paths'
/// range, the pieces go to `root` by gather_pieces. The communicator must outlive the sharing.
path_sharing rank_sharing(MPI_Comm comm, int root = 0);

/// run_ensemble(stepper, prob, iopt, opt) over the ranks of `comm`: the result on `root`, bit for
/// bit the one-process result (timing aside), nullopt on the other ranks.
template <class Stepper, class S, class State>
  requires Sde<S, State>
std::optional<ensemble_result> run_ensemble(MPI_Comm comm, const Stepper& stepper,
                                            const problem<S, State>& prob,
                                            const integrate_options& iopt,
                                            const ensemble_options& opt, int root = 0) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const path_range range = rank_paths(opt.paths, opt.block_size, rank, size);
  return run_distributed(
      comm, [&] { return run_ensemble_range(stepper, prob, iopt, opt, range); }, opt, root);
}

}  // namespace ncsde::mpi
