#include "models/shards.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string_view>

#include "command.hpp"
#include "mpi_world.hpp"
#include "ncsde/ensemble_io.hpp"
#include "ncsde/error.hpp"

namespace ncsde::cli {

namespace {

constexpr std::string_view partial_magic = "ncsde partial result\n";
constexpr std::string_view command_prefix = "command ";

}  // namespace

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

std::string partial_file_bytes(const std::string& command, std::string_view payload) {
  std::string out(partial_magic);
  out += command_prefix;
  out += command;
  out += '\n';
  out += payload;
  return out;
}

namespace {

[[noreturn]] void refuse_file(const std::filesystem::path& path, std::string_view why) {
  throw invalid_argument(
      fmt::format("{} is not a partial result of ncsde ({})", path.string(), why));
}

}  // namespace

partial_file read_partial_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw invalid_argument(fmt::format("cannot read {}", path.string()));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string_view rest = bytes;
  if (!rest.starts_with(partial_magic)) refuse_file(path, "no 'ncsde partial result' header");
  rest.remove_prefix(partial_magic.size());
  if (!rest.starts_with(command_prefix)) refuse_file(path, "no command line");
  rest.remove_prefix(command_prefix.size());
  const std::size_t end = rest.find('\n');
  if (end == std::string_view::npos) refuse_file(path, "no command line");
  partial_file out;
  out.command = std::string(rest.substr(0, end));
  rest.remove_prefix(end + 1);
  out.payload = std::string(rest);
  return out;
}

ensemble_partial simulate_piece(const partial_file& file, const std::filesystem::path& path) {
  try {
    return deserialize_ensemble_partial(file.payload);
  } catch (const invalid_argument& e) {
    refuse_file(path, e.what());
  }
}

}  // namespace ncsde::cli
