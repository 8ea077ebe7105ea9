#pragma once
/// The shards of `ncsde validate` (job arrays without MPI): `ncsde validate … --paths-range A:B
/// --partial FILE` samples the networks [A, B) ∩ [0, networks) of every width and the paths
/// [A, B) ∩ [0, paths) of every SDE run (the right SDE, the noise floor, the wrong SDEs) and writes
/// them, with its command line, as a partial result; `ncsde merge FILE…` joins the shards of one
/// run and makes its report from the joined samples: exactly the output of the run made in one
/// process (byte for byte, timing aside). Every sample depends only on its index (the streams
/// (seed, path) and (seed, network)), so the cut changes nothing.
#include <string>
#include <string_view>
#include <vector>

#include "models/shards.hpp"
#include "ncsde/executor.hpp"
#include "ncsde/models/stopped_sample.hpp"
#include "ncsde/networks/sample.hpp"

namespace ncsde::cli {

/// The samples of a validate run, or of a shard of one.
struct validate_pieces {
  models::sde_sample reference, floor;           ///< the right SDE on every grid; the second run
  std::vector<models::sde_sample> wrong;         ///< one per wrong SDE, in --variants order
  std::vector<networks::network_ensemble> nets;  ///< one per width
};

/// A shard's payload (inside partial_file_bytes("validate", …)): the command line that identifies
/// the run, the range of samples [A, B) of [0, total), and the samples.
std::string serialize_validate_shard(const std::vector<std::string>& run_key, path_range range,
                                     long long total, const validate_pieces& pieces);

/// `ncsde merge` of validate shards (`files` the partial files read, `names` their paths): checks
/// that they are of one run (the same command line) and cover [0, total) once (a gap, an overlap or
/// another run's shard is refused, naming the files: ncsde::invalid_argument), joins the samples,
/// and writes the run's report with `format` (and `plots`, when given) as `ncsde validate` would.
/// Returns the exit code.
int merge_validate_shards(const std::vector<std::string>& names,
                          const std::vector<partial_file>& files, const std::string& format,
                          const std::string& plots);

}  // namespace ncsde::cli
