#include "ncsde/ensemble.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

namespace ncsde {

namespace {

void require_index(std::string_view where, std::string_view name, int index) {
  if (index < 0) throw_invalid_argument(where, name, index, ">= 0 (indices are 0-based)");
}

}  // namespace

std::string_view to_string(covariance_mode c) {
  switch (c) {
    case covariance_mode::automatic:
      return "automatic";
    case covariance_mode::full:
      return "full";
    case covariance_mode::diagonal:
      return "diagonal";
  }
  return "?";
}

covariance_mode parse_covariance_mode(std::string_view text, std::string_view param) {
  for (const covariance_mode c :
       {covariance_mode::automatic, covariance_mode::full, covariance_mode::diagonal})
    if (text == to_string(c)) return c;
  throw invalid_argument(
      fmt::format("{} must be one of automatic, full, diagonal (got '{}')", param, text));
}

functional correlation_functional(int a, int b) {
  require_index("correlation_functional", "a", a);
  require_index("correlation_functional", "b", b);
  functional f{fmt::format("rho{}{}", a + 1, b + 1), [a, b](const matrix& v) {
                 const double d = std::sqrt(std::max(v(a, a), 0.0) * std::max(v(b, b), 0.0));
                 if (!(d > 0)) return 0.0;
                 return std::clamp(v(a, b) / d, -1.0, 1.0);
               }};
  f.check_shape = [a, b](Eigen::Index rows, Eigen::Index cols) {
    const Eigen::Index n = std::min(rows, cols);
    if (std::max(a, b) >= n)
      throw invalid_argument(fmt::format(
          "correlation_functional({}, {}): the indices must be < {} for a {}×{} state (0-based; "
          "it reads the diagonal entries ({}, {}) and ({}, {}))",
          a, b, n, rows, cols, a, a, b, b));
  };
  return f;
}

functional entry_functional(int a, int b) {
  require_index("entry_functional", "a", a);
  require_index("entry_functional", "b", b);
  functional f{fmt::format("V{}{}", a + 1, b + 1), [a, b](const matrix& v) { return v(a, b); }};
  f.check_shape = [a, b](Eigen::Index rows, Eigen::Index cols) {
    if (a >= rows || b >= cols)
      throw invalid_argument(fmt::format(
          "entry_functional({}, {}): the entry is outside a {}×{} state (indices are 0-based)", a,
          b, rows, cols));
  };
  return f;
}

double ensemble_result::blown_up_stderr() const {
  if (paths == 0) return 0.0;
  const double p = blown_up_fraction();
  return std::sqrt(p * (1 - p) / static_cast<double>(paths));
}

namespace detail {

void block_result::start_whole(int K, std::size_t saves, std::size_t functionals, bool covariance) {
  whole = true;
  terminal.reset(K, covariance);
  at_stop.reset(K, covariance);
  saved.assign(saves, moments(K, covariance));
  values.assign(functionals, {});
}

void block_result::add(const ensemble_path& p, bool keep_paths) {
  for (std::size_t j = 0; j < p.saved.size(); ++j) saved[j].add(p.saved[j]);
  pd += p.pd;
  if (p.pd.violations > 0) ++with_violations;
  steps += p.steps;
  stepping += p.stepping;
  switch (p.status) {
    case path_status::completed:
      ++completed;
      terminal.add(p.packed);
      break;
    case path_status::stopped:
      ++stopped;
      at_stop.add(p.packed);
      stop_times.push_back(p.t_stop);
      break;
    case path_status::blown_up:
      ++blown_up;
      explosion_times.push_back(p.t_stop);
      break;
    case path_status::exhausted:
      ++exhausted;
      break;
  }
  statuses.push_back(p.status);
  for (std::size_t j = 0; j < values.size(); ++j) values[j].push_back(p.values[j]);
  if (keep_paths) records.push_back(path_record{p.path, p.status, p.t_stop, p.packed, p.saved});
}

void merge_block(ensemble_result& into, block_result& block) {
  into.terminal.merge(block.terminal);
  into.at_stop.merge(block.at_stop);
  for (std::size_t j = 0; j < block.saved.size(); ++j) into.saved[j].merge(block.saved[j]);
  into.explosion_times.insert(into.explosion_times.end(), block.explosion_times.begin(),
                              block.explosion_times.end());
  into.stop_times.insert(into.stop_times.end(), block.stop_times.begin(), block.stop_times.end());
  into.pd += block.pd;
  into.steps += block.steps;
  into.stepping += block.stepping;
  into.completed += block.completed;
  into.blown_up += block.blown_up;
  into.stopped += block.stopped;
  into.exhausted += block.exhausted;
  into.paths_with_violations += block.with_violations;
}

void finish_summary(ensemble_result& r, const ensemble_options& opt,
                    const std::vector<std::vector<double>>& values,
                    const std::vector<path_status>& statuses) {
  std::sort(r.explosion_times.begin(), r.explosion_times.end());
  std::sort(r.stop_times.begin(), r.stop_times.end());
  for (std::size_t j = 0; j < opt.functionals.size(); ++j) {
    functional_summary s;
    s.name = opt.functionals[j].name;
    s.levels = opt.quantile_levels;
    std::vector<double> all = values[j];
    std::vector<double> done;
    done.reserve(all.size());
    moments mean(1);
    for (std::size_t p = 0; p < all.size(); ++p)
      if (statuses[p] == path_status::completed) {
        done.push_back(all[p]);
        mean.add(vector::Constant(1, all[p]));
      }
    std::sort(all.begin(), all.end());
    std::sort(done.begin(), done.end());
    for (const double level : opt.quantile_levels) {
      s.all.push_back(quantile_sorted(all, level));
      s.completed.push_back(quantile_sorted(done, level));
    }
    s.completed_mean = mean.count() ? mean.mean()(0) : std::nan("");
    s.completed_stderr = mean.count() > 1 ? mean.standard_error()(0) : std::nan("");
    r.functionals.push_back(std::move(s));
  }
}

void validate_ensemble_options(const ensemble_options& opt) {
  if (opt.paths < 1) throw_invalid_argument("ensemble", "paths", opt.paths, ">= 1");
  if (opt.threads < 0)
    throw_invalid_argument("ensemble", "threads", opt.threads, ">= 0 (0: all cores)");
  if (opt.block_size < 0)
    throw_invalid_argument("ensemble", "block_size", opt.block_size, ">= 1 (0: automatic)");
  if (opt.max_run_steps < 1)
    throw_invalid_argument("ensemble", "max_run_steps", opt.max_run_steps, ">= 1");
  for (const double q : opt.quantile_levels)
    if (!(q >= 0 && q <= 1)) throw_invalid_argument("ensemble", "quantile level", q, "in [0, 1]");
  for (const auto& f : opt.functionals)
    if (!f.f) throw_invalid("ensemble", fmt::format("functional '{}' has no function", f.name));
}

void validate_functionals(const ensemble_options& opt, const state_layout& layout) {
  for (const auto& f : opt.functionals)
    if (f.check_shape) f.check_shape(layout.rows, layout.cols);
}

}  // namespace detail
}  // namespace ncsde
