/// The `ncsde` command-line program: `ncsde <subcommand> [options]`, one subcommand per file
/// (command.hpp). Exit codes: 0 success, 1 run failure, 2 bad command line or parameter values
/// (an --out or --plots path found unwritable before the run included). Under mpirun
/// (mpi_world.hpp) every rank exits with the same code, but for a failure to write an output,
/// which only rank 0 sees.
///
/// `ncsde --models-library PATH <subcommand> …` first adds the models of a C++ models library
/// (ncsde/models/models_library.hpp) to the registry, so that every command offers them and their
/// parameters' flags (the flag may be given several times, before the subcommand or among its flags).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "command.hpp"
#include "mpi_world.hpp"

int main(int argc, char** argv) {
  using namespace ncsde::cli;
  // Under mpirun (and built with MPI) this starts MPI; rank 0 writes, the others are silent.
  const mpi_session session(argc, argv);
  if (!session.ok()) return exit_usage;
  install_temporary_cleanup();
  const int rc = run_program(argc, argv);
  // run_program has flushed the standard output; closing it reports what only a close can (an
  // error of a file on a network file system). A failed write is a failed run.
  std::fflush(stdout);
  if (close(STDOUT_FILENO) != 0 && errno != EBADF) {
    std::fprintf(stderr, "ncsde: cannot write the standard output: %s\n", std::strerror(errno));
    return rc != exit_ok ? rc : exit_failure;
  }
  return rc;
}
