#pragma once
/// What the ensemble commands write, and their shards. The functionals that `ncsde simulate` and
/// `ncsde sample-network` summarise, the output of simulate (also merge's output) and the shards.
///
/// Shards of a run for batch schedulers (job arrays without MPI): `ncsde simulate … --paths-range
/// A:B --partial FILE` runs the paths [A, B) of the run and writes them as a partial result;
/// `ncsde merge FILE…` joins the partials of one run into exactly the output of the run made in one
/// process (byte for byte, timing aside; ensemble.hpp: run_ensemble_range, merge_partials,
/// finish_ensemble).
///
/// A partial file (partial_file.hpp) carries the command that wrote it, the identity of its run
/// and the payload, for simulate serialize(ensemble_partial): a versioned binary format whose
/// doubles are bit-exact.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ncsde/ensemble.hpp"
#include "ncsde/models/summaries.hpp"
#include "partial_file.hpp"
#include "process.hpp"

namespace ncsde::cli {

/// The functionals `ncsde simulate` and `ncsde sample-network` summarise (the library's, shared with
/// the Python module).
using models::summary_functionals;

/// The output of `ncsde simulate` for the run r, which `ncsde merge` repeats for the merged run:
/// with `file`, write_csv(r) into it and commit it; then summary_json(r) (format "json") or
/// summary_table(r) on stdout. Returns exit_ok, or exit_failure when the file cannot be committed.
int write_simulate_outputs(const ensemble_result& r, const std::string& format, output_file* file);

/// The checks of a command's shard flags (`ncsde <command> … --paths-range A:B --partial FILE`):
/// both or neither, no --out with them, no shard under mpirun (the ranks are the shards); returns
/// the range (all of [0, count) without shard flags). Throws ncsde::invalid_argument naming the flag.
path_range check_shard_flags(std::string_view command, const std::string& paths_range,
                             const std::string& partial, const std::string& out, long long count);

/// The range "A:B" of --paths-range (decimal integers, 0 ≤ A < B ≤ paths); throws
/// ncsde::invalid_argument naming --paths-range and the text otherwise.
path_range parse_paths_range(const std::string& text, long long paths);

/// The file's piece of a simulate run; throws ncsde::invalid_argument naming the file when the
/// payload is not one.
ensemble_partial simulate_piece(const partial_file& file, const std::filesystem::path& path);

}  // namespace ncsde::cli
