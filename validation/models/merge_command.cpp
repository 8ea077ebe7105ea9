/// `ncsde merge`: the partial results of the shards of one run (`ncsde simulate … --paths-range A:B
/// --partial FILE`, models/shards.hpp) joined into exactly the output of the run made in one process.
///
///   ncsde merge FILE… [--format table|json] [--out FILE.csv]
///
/// The files may be given in any order; they must be of one run (the same model, V0, T, dt, seed,
/// scheme, number of paths, …) and together cover its paths [0, paths) once: a gap, an overlap or a
/// shard of another run is refused with the files named (exit 2). The summary (--format) and the
/// CSV of the paths (--out) are those `ncsde simulate` prints and writes for the whole run, byte for
/// byte, timing aside ("seconds" is the sum of the shards' times; "threads" is the first shard's).
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "models/shards.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/error.hpp"
#include "process.hpp"

namespace ncsde::cli {
namespace {

struct merge_args {
  std::vector<std::string> files;
  std::string out;
  std::string format = "table";
};

int run_merge_command(const merge_args& a) {
  std::vector<partial_file> parts;
  parts.reserve(a.files.size());
  for (const std::string& f : a.files) {
    parts.push_back(read_partial_file(f));
    if (parts.back().command != "simulate")
      throw invalid_argument(
          fmt::format("{} is a partial result of '{}', which ncsde merge does not join (simulate)",
                      f, parts.back().command));
  }
  // Path order; the files' names for the messages.
  std::vector<std::size_t> order(parts.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
    return parts[i].partial.range.first < parts[j].partial.range.first;
  });
  std::string named;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const path_range r = parts[order[i]].partial.range;
    named += fmt::format("{}{} = {} (paths [{}, {}))", i ? ", " : "", i, a.files[order[i]], r.first,
                         r.last);
  }
  std::vector<ensemble_partial> pieces;
  pieces.reserve(parts.size());
  for (const std::size_t i : order) pieces.push_back(std::move(parts[i].partial));
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
      "Join the partial results of the shards of one run (simulate --paths-range A:B --partial "
      "FILE) into the output of the whole run";
  c.setup = [](CLI::App& sub) -> std::function<int()> {
    auto a = std::make_shared<merge_args>();
    sub.add_option("files", a->files, "The shards' partial result files, in any order")
        ->required()
        ->check(CLI::ExistingFile);
    sub.add_option("--out", a->out, "Write one CSV row per path of the whole run to this file");
    sub.add_option("--format", a->format, "Summary format")
        ->check(CLI::IsMember({"table", "json"}))
        ->capture_default_str();
    return [a]() { return run_merge_command(*a); };
  };
  return c;
}

}  // namespace ncsde::cli
