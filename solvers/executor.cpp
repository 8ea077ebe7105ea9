#include "ncsde/executor.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>

#include "ncsde/error.hpp"

namespace ncsde::detail {

void validate_execution(const char* where, path_range range, const executor_options& opt) {
  if (opt.threads < 0) throw_invalid_argument(where, "threads", opt.threads, ">= 0 (0: all cores)");
  if (opt.block_size < 1) throw_invalid_argument(where, "block_size", opt.block_size, ">= 1");
  if (range.first < 0) throw_invalid_argument(where, "range.first", range.first, ">= 0");
  if (range.last < range.first)
    throw_invalid_argument(where, "range.last", range.last,
                           fmt::format(">= range.first = {}", range.first));
}

int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

progress_bar::progress_bar(progress_mode mode, long long total, std::string label)
    : m_enabled(mode != progress_mode::off),
      m_terminal(isatty(STDERR_FILENO) != 0),
      m_total(total),
      m_label(std::move(label)),
      m_start(std::chrono::steady_clock::now()) {}

void progress_bar::update(long long done) {
  if (!m_enabled || m_total <= 0) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
  const double frac = std::min(1.0, static_cast<double>(done) / static_cast<double>(m_total));
  std::lock_guard lock(m_mutex);
  if (!m_terminal) {
    constexpr double period = 30.0;
    const long long current = static_cast<long long>(elapsed / period);
    if (current < 1 || current <= m_printed_period) return;
    m_printed_period = current;
    std::fprintf(stderr, "ncsde: %s %d%% (%lld/%lld paths, %.0f s)\n", m_label.c_str(),
                 static_cast<int>(100 * frac), done, m_total, elapsed);
    std::fflush(stderr);
    return;
  }
  const int width = 30;
  const int filled = static_cast<int>(frac * width);
  std::fprintf(stderr, "\r%s [%.*s%*s] %3d%% %lld/%lld paths %.1fs", m_label.c_str(), filled,
               "##############################", width - filled, "", static_cast<int>(100 * frac),
               done, m_total, elapsed);
  std::fflush(stderr);
}

void progress_bar::finish() {
  if (!m_enabled) return;
  if (!m_terminal) {
    // The closing line only after a run long enough to have reported progress.
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    if (m_total > 0 && elapsed >= 30.0)
      std::fprintf(stderr, "ncsde: %s 100%% (%lld/%lld paths, %.0f s)\n", m_label.c_str(), m_total,
                   m_total, elapsed);
    return;
  }
  update(m_total);
  std::fputc('\n', stderr);
}

}  // namespace ncsde::detail
