#pragma once
/// What `ncsde sample-network` writes, shared with `ncsde merge` (which repeats it for the shards
/// of a run) and with the ranks of an mpirun: the run's description, the output of an ensemble of
/// networks, and the payload of its partial files.
///
/// A sample-network partial file (models/shards.hpp) holds, after its header, the lines
/// "model <name>", "sampler <name>", "attention <form>", "n_k <n>" and then the bytes of
/// networks::serialize(network_ensemble) for the networks [A, B) of the run.
#include <filesystem>
#include <string>
#include <string_view>

#include "ncsde/networks/sample.hpp"
#include "process.hpp"

namespace ncsde::cli {

/// The run's parameters as the summary reports them.
struct run_description {
  std::string model, sampler, attention;
  int n_k = 0;
  friend bool operator==(const run_description&, const run_description&) = default;
};

/// The output of `ncsde sample-network` for the ensemble e (all networks of the run): with `file`,
/// write_csv of one row per network into it and commit it; then the summary (format "json" or
/// "table") on stdout. Returns exit_ok, or exit_failure when the file cannot be committed.
int write_network_outputs(const networks::network_ensemble& e, const run_description& d,
                          const std::string& format, output_file* file);

/// The payload of a partial file for the piece e of a run described by d, and back (throws
/// ncsde::invalid_argument naming `path` when it is not one).
std::string network_partial_payload(const run_description& d, const networks::network_ensemble& e);
struct network_piece {
  run_description description;
  networks::network_ensemble ensemble;
};
network_piece read_network_piece(std::string_view payload, const std::filesystem::path& path);

}  // namespace ncsde::cli
