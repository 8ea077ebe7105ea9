#include "models/shards.hpp"

#include <fmt/format.h>

#include <iostream>
#include <string_view>

#include "command.hpp"
#include "mpi_world.hpp"
#include "ncsde/ensemble_io.hpp"
#include "ncsde/error.hpp"

namespace ncsde::cli {

int write_simulate_outputs(const ensemble_result& r, const std::string& format, output_file* file) {
  if (file) {
    write_csv(r, file->stream());
    if (!file->commit()) return exit_failure;
  }
  std::cout << (format == "json" ? summary_json(r) + "\n" : summary_table(r));
  return exit_ok;
}

path_range check_shard_flags(std::string_view command, const std::string& paths_range,
                             const std::string& partial, const std::string& out, long long count) {
  const std::string where = fmt::format("ncsde {}", command);
  const bool shard = !partial.empty();
  if (shard != !paths_range.empty())
    throw_invalid_argument(where, shard ? "--partial" : "--paths-range",
                           shard ? partial : paths_range,
                           shard ? "given with --paths-range A:B" : "given with --partial FILE");
  if (!shard) return {0, count};
  if (!out.empty())
    throw_invalid_argument(where, "--out", out,
                           "not given with --partial (ncsde merge --out writes the CSV)");
  if (world().active)
    throw_invalid_argument(where, "--partial", partial,
                           "not given under mpirun (the ranks are the shards)");
  return parse_paths_range(paths_range, count);
}

path_range parse_paths_range(const std::string& text, long long paths) {
  const std::string rule = fmt::format("A:B with integers 0 <= A < B <= --paths ({})", paths);
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) throw_invalid_argument("ncsde", "--paths-range", text, rule);
  std::string a = text.substr(0, colon), b = text.substr(colon + 1);
  if (!detail::canonical_decimal(a, false) || !detail::canonical_decimal(b, false) ||
      a.size() > 18 || b.size() > 18)
    throw_invalid_argument("ncsde", "--paths-range", text, rule);
  const path_range r{std::stoll(a), std::stoll(b)};
  if (!(r.first < r.last && r.last <= paths))
    throw_invalid_argument("ncsde", "--paths-range", text, rule);
  return r;
}

ensemble_partial simulate_piece(const partial_file& file, const std::filesystem::path& path) {
  try {
    return deserialize_ensemble_partial(file.payload);
  } catch (const invalid_argument& e) {
    refuse_partial(path.string(), e.what());
  }
}

}  // namespace ncsde::cli
