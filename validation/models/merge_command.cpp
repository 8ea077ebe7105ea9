/// `ncsde merge`: the partial results of the shards of one run (`ncsde simulate|sample-network …
/// --paths-range A:B --partial FILE`, models/shards.hpp) joined into exactly the output of the run
/// made in one process.
///
///   ncsde merge FILE… [--format table|json] [--out FILE.csv] [--plots DIR]
///
/// The files may be given in any order; they must be of one run (the same identity,
/// partial_file.hpp: every option that changes a number, V0 bit for bit, the models libraries'
/// bytes, the program's version) and together cover its paths [0, paths) once: a gap, an overlap
/// or a shard of another run is refused with the files and the fields that differ named (exit 2),
/// and so is an --out that names one of the shards. The summary (--format) and the
/// CSV of the paths (--out) are those `ncsde simulate` prints and writes for the whole run, byte for
/// byte, timing aside ("seconds" is the sum of the shards' times; "threads" is the first shard's).
/// Shards of `ncsde sample-network` likewise give its summary and CSV for the whole run, and shards
/// of `ncsde validate` its report (and, with --plots, its data and plots: fidelity/validate_shards.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "command.hpp"
#include "fidelity/validate_shards.hpp"
#include "limits.hpp"
#include "models/shards.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/error.hpp"
#include "ncsde/networks/sample.hpp"
#include "networks/network_outputs.hpp"
#include "process.hpp"

namespace ncsde::cli {
namespace {

struct merge_args {
  std::vector<std::string> files;
  std::string out;
  std::string format = "table";
  std::string plots;  ///< validate shards: the run's plot directory
};

/// The shards in the order of their ranges, and their names for the messages ("0 = FILE (paths
/// [a, b)), 1 = …").
struct shard_order {
  std::vector<std::size_t> order;
  std::string named;
};
shard_order in_order(const std::vector<std::string>& files, const std::vector<path_range>& ranges,
                     std::string_view unit) {
  shard_order out;
  out.order.resize(ranges.size());
  std::iota(out.order.begin(), out.order.end(), std::size_t{0});
  std::stable_sort(out.order.begin(), out.order.end(),
                   [&](std::size_t i, std::size_t j) { return ranges[i].first < ranges[j].first; });
  for (std::size_t i = 0; i < out.order.size(); ++i) {
    const path_range r = ranges[out.order[i]];
    out.named += fmt::format("{}{} = {} ({} [{}, {}))", i ? ", " : "", i, files[out.order[i]], unit,
                             r.first, r.last);
  }
  return out;
}

/// The shards of a sample-network run joined into its output.
int merge_network_shards(const merge_args& a, const std::vector<partial_file>& files) {
  std::vector<network_piece> parts;
  parts.reserve(files.size());
  for (std::size_t i = 0; i < files.size(); ++i)
    parts.push_back(read_network_piece(files[i].payload, a.files[i]));
  std::vector<path_range> ranges;
  for (const network_piece& p : parts)
    ranges.push_back(
        {p.ensemble.first, p.ensemble.first + static_cast<long long>(p.ensemble.records.size())});
  const auto [order, named] = in_order(a.files, ranges, "networks");
  const run_description d = parts[order[0]].description;
  std::vector<networks::network_ensemble> pieces;
  pieces.reserve(parts.size());
  for (const std::size_t i : order) {
    if (!(parts[i].description == d))
      throw invalid_argument(fmt::format(
          "{} is a shard from another run (model, sampler or attention differs; pieces in "
          "network order: {})",
          a.files[i], named));
    pieces.push_back(std::move(parts[i].ensemble));
  }
  networks::network_ensemble whole;
  try {
    whole = networks::merge_network_pieces(std::move(pieces));
  } catch (const invalid_argument& e) {
    throw invalid_argument(fmt::format("{} (pieces in network order: {})", e.what(), named));
  }
  const long long end = whole.first + static_cast<long long>(whole.records.size());
  if (whole.first != 0 || end != whole.networks)
    throw invalid_argument(fmt::format(
        "missing shards: the pieces cover networks [{}, {}) of [0, {}) (pieces in network order: "
        "{})",
        whole.first, end, whole.networks, named));
  std::optional<output_file> file;
  if (!a.out.empty()) {
    file.emplace("merge", "--out", a.out);
    if (!file->ok()) return exit_usage;
  }
  return write_network_outputs(whole, d, a.format, file ? &*file : nullptr);
}

/// The bytes of memory a merge needs per byte of its partial files: the file's bytes, its
/// payload, the pieces read from it and the merged run (measured: tests/cli/test_outputs.py).
constexpr double merge_bytes_per_file_byte = 4.0;

/// Refuses an --out that names one of the shards: the merge would replace its own input.
void refuse_out_onto_a_shard(const merge_args& a) {
  if (a.out.empty()) return;
  for (const std::string& f : a.files) {
    std::error_code ec;
    if (a.out == f || std::filesystem::equivalent(a.out, f, ec))
      throw_invalid_argument("ncsde merge", "--out", a.out,
                             "a file other than the shards being merged");
  }
}

/// Reads the shards after checking that merge has the memory for them (limits.hpp).
std::vector<partial_file> read_shards(const merge_args& a) {
  double total = 0.0;
  for (const std::string& f : a.files) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(f, ec))
      total += static_cast<double>(std::filesystem::file_size(f, ec));
  }
  check_memory("files", fmt::format("({} shards)", a.files.size()),
               merge_bytes_per_file_byte * total,
               fmt::format("{:.0f} bytes of partial files", total));
  std::vector<partial_file> files;
  files.reserve(a.files.size());
  for (const std::string& f : a.files) files.push_back(read_partial_file(f));
  return files;
}

/// Refuses shards of different runs, naming the fields in which their identities differ.
void require_one_run(const merge_args& a, const std::vector<partial_file>& files) {
  for (std::size_t i = 1; i < files.size(); ++i) {
    if (files[i].command != files.front().command)
      throw invalid_argument(fmt::format("{} is a shard of '{}' but {} is one of '{}'", a.files[i],
                                         files[i].command, a.files.front(), files.front().command));
    const std::string differ = identity_differences(files.front().identity, files[i].identity);
    if (!differ.empty())
      throw invalid_argument(
          fmt::format("{} is a shard from another run than {}; the fields that differ: {}",
                      a.files[i], a.files.front(), differ));
  }
}

/// Refuses shards that ran with a models library this merge has not loaded (the same file, by its
/// checksum), naming the library and the flag: their models are not in the registry without it.
void require_their_libraries(const partial_file& shard) {
  auto libraries = [](const run_identity& id) {
    std::vector<std::string> out;
    for (const auto& [field, value] : id.fields)
      if (field.rfind("--models-library ", 0) == 0) out.push_back(value);
    return out;
  };
  const std::vector<std::string> loaded = libraries(current_run_identity());
  for (const std::string& needed : libraries(shard.identity))
    if (std::find(loaded.begin(), loaded.end(), needed) == loaded.end())
      throw invalid_argument(fmt::format(
          "the shards ran with the models library {}, which this merge has not loaded: give "
          "ncsde merge --models-library PATH (the same file)",
          needed));
}

int run_merge_command(const merge_args& a) {
  refuse_out_onto_a_shard(a);
  const std::vector<partial_file> files = read_shards(a);
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string& command = files[i].command;
    if (command != "simulate" && command != "sample-network" && command != "validate")
      throw invalid_argument(
          fmt::format("{} is a partial result of '{}', which ncsde merge does not join (simulate, "
                      "sample-network, validate)",
                      a.files[i], command));
  }
  require_one_run(a, files);
  require_their_libraries(files.front());
  if (!a.plots.empty() && files.front().command != "validate")
    throw_invalid_argument("ncsde merge", "--plots", a.plots,
                           "given only for shards of ncsde validate");
  if (files.front().command == "validate") {
    if (!a.out.empty())
      throw_invalid_argument("ncsde merge", "--out", a.out,
                             "not given for shards of ncsde validate (its data go to --plots)");
    return merge_validate_shards(a.files, files, a.format, a.plots);
  }
  if (files.front().command == "sample-network") return merge_network_shards(a, files);

  std::vector<ensemble_partial> parts;
  parts.reserve(files.size());
  for (std::size_t i = 0; i < files.size(); ++i)
    parts.push_back(simulate_piece(files[i], a.files[i]));
  std::vector<path_range> ranges;
  for (const ensemble_partial& p : parts) ranges.push_back(p.range);
  const auto [order, named] = in_order(a.files, ranges, "paths");
  std::vector<ensemble_partial> pieces;
  pieces.reserve(parts.size());
  for (const std::size_t i : order) pieces.push_back(std::move(parts[i]));
  ensemble_partial whole;
  try {
    whole = merge_partials(std::move(pieces));
  } catch (const invalid_argument& e) {
    throw invalid_argument(fmt::format("{} (pieces in path order: {})", e.what(), named));
  }

  // The ensemble options of the run, as `ncsde simulate` set them.
  ensemble_options eopt;
  eopt.paths = whole.run.paths;
  eopt.seed = whole.run.seed;
  eopt.threads = whole.run.threads;
  eopt.keep_paths = whole.keep_paths;
  eopt.block_size = static_cast<int>(whole.block_size);
  eopt.covariance = whole.covariance ? covariance_mode::full : covariance_mode::diagonal;
  eopt.functionals = summary_functionals(static_cast<int>(whole.run.layout.rows));
  if (!a.out.empty() && !whole.keep_paths)
    throw_invalid_argument("ncsde merge", "--out", a.out,
                           "given only for shards that kept their paths");
  ensemble_result r;
  try {
    r = finish_ensemble(std::move(whole), eopt);
  } catch (const invalid_argument& e) {
    throw invalid_argument(
        fmt::format("missing shards: {} (pieces in path order: {})", e.what(), named));
  }
  if (a.out.empty()) r.records.clear();  // the summary does not read them
  std::optional<output_file> file;
  if (!a.out.empty()) {
    file.emplace("merge", "--out", a.out);
    if (!file->ok()) return exit_usage;
  }
  return write_simulate_outputs(r, a.format, file ? &*file : nullptr);
}

}  // namespace

command merge_command() {
  command c;
  c.name = "merge";
  c.description =
      "Join the partial results of the shards of one run (simulate, sample-network or validate "
      "--paths-range A:B --partial FILE) into the output of the whole run";
  c.setup = [](CLI::App& sub) -> std::function<int()> {
    auto a = std::make_shared<merge_args>();
    sub.add_option("files", a->files, "The shards' partial result files, in any order")
        ->required()
        ->check(CLI::ExistingFile);
    sub.add_option("--out", a->out, "Write one CSV row per path of the whole run to this file");
    add_format_flag(sub, a->format, "Summary format");
    add_plots_flag(sub, a->plots,
                   "Shards of validate: write the run's data, report and plots to this directory");
    return [a]() { return run_merge_command(*a); };
  };
  return c;
}

}  // namespace ncsde::cli
