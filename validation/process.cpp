#include "process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <system_error>
#include <utility>

#include "command.hpp"

extern char** environ;

namespace ncsde::cli {

int run_process(const std::vector<std::string>& args, child_output output) {
  // What this process has written so far goes out first: otherwise a child's line lands inside a
  // buffered table row when both streams reach one terminal or pipe.
  std::cout.flush();
  std::fflush(stdout);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (output == child_output::discard) {
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  } else {
    posix_spawn_file_actions_adddup2(&actions, 2, 1);
  }
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

bool plotting_available(std::string_view command, const std::string& script) {
  if (run_process({python, "-c", "import matplotlib"}, child_output::discard) != 0) {
    std::fprintf(stderr,
                 "ncsde %.*s: --plots needs %s with matplotlib (Debian: apt-get install "
                 "python3-matplotlib); it is missing or fails to import\n",
                 static_cast<int>(command.size()), command.data(), python);
    return false;
  }
  if (!std::filesystem::is_regular_file(script)) {
    std::fprintf(stderr, "ncsde %.*s: --plots: the plot script %s does not exist\n",
                 static_cast<int>(command.size()), command.data(), script.c_str());
    return false;
  }
  return true;
}

bool create_plot_directory(std::string_view command, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "ncsde %.*s: --plots: cannot create %s: %s\n",
                 static_cast<int>(command.size()), command.data(), dir.c_str(),
                 ec.message().c_str());
    return false;
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    std::fprintf(stderr, "ncsde %.*s: --plots: cannot write into %s: %s\n",
                 static_cast<int>(command.size()), command.data(), dir.c_str(),
                 std::strerror(errno));
    return false;
  }
  return true;
}

bool run_plot_script(std::string_view command, const std::string& script,
                     const std::vector<std::string>& args) {
  std::vector<std::string> call{python, script};
  call.insert(call.end(), args.begin(), args.end());
  const int rc = run_process(call, child_output::to_stderr);
  if (rc == 0) return true;
  // The command line as one would type it in a shell: arguments with blanks (titles) quoted.
  std::string line;
  for (const std::string& a : call) {
    if (!line.empty()) line += ' ';
    line += a.empty() || a.find_first_of(" \t") != std::string::npos ? "'" + a + "'" : a;
  }
  std::fprintf(stderr, "ncsde %.*s: the plot script failed (exit status %d): %s\n",
               static_cast<int>(command.size()), command.data(), rc, line.c_str());
  return false;
}

namespace {

/// The temporaries of the output files of this process, for the signal handler: fixed slots of
/// paths (no allocation, no lock), each free (0), being written (1) or holding a live temporary (2).
constexpr int temporary_slots = 64;
struct temporary_slot {
  std::atomic<int> state{0};
  char path[PATH_MAX] = {};
};
temporary_slot temporaries[temporary_slots];

/// Records a temporary for removal on SIGINT/SIGTERM/SIGHUP; returns its slot, or −1 when every
/// slot is taken (the temporary is then only removed by its output_file).
int register_temporary(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < temporary_slots; ++i) {
    int free = 0;
    if (!temporaries[i].state.compare_exchange_strong(free, 1)) continue;
    std::memcpy(temporaries[i].path, path.c_str(), path.size() + 1);
    temporaries[i].state.store(2);
    return i;
  }
  return -1;
}

void unregister_temporary(int slot) {
  if (slot >= 0) temporaries[slot].state.store(0);
}

extern "C" void remove_temporaries_and_stop(int signal) {
  for (temporary_slot& t : temporaries)
    if (t.state.load() == 2) unlink(t.path);  // async-signal-safe
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

/// Writes all of `bytes` to `fd`; false (errno set) on an error.
bool write_all(int fd, const char* bytes, std::size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, bytes, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

/// Copies the file `from` onto the existing file `to` (truncated only now); 0 or an errno.
int copy_onto(const std::filesystem::path& from, const std::filesystem::path& to) {
  const int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return errno;
  const int out = open(to.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (out < 0) {
    const int error = errno;
    close(in);
    return error;
  }
  char buffer[1 << 16];
  int error = 0;
  for (;;) {
    const ssize_t got = read(in, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      error = errno;
      break;
    }
    if (got == 0) break;
    if (!write_all(out, buffer, static_cast<std::size_t>(got))) {
      error = errno;
      break;
    }
  }
  if (close(out) != 0 && error == 0) error = errno;
  close(in);
  return error;
}

}  // namespace

void install_temporary_cleanup() {
  for (const int s : {SIGINT, SIGTERM, SIGHUP}) std::signal(s, remove_temporaries_and_stop);
}

output_file::output_file(std::string_view command, std::string_view flag,
                         std::filesystem::path path)
    : m_command(command), m_flag(flag), m_path(std::move(path)), m_target(m_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (m_path.empty()) {
    report(ENOENT);
    return;
  }
  const fs::file_status status = fs::status(m_path, ec);  // follows symbolic links
  mode_t mode = 0;
  const bool exists = fs::exists(status);
  if (exists) {
    if (fs::is_directory(status)) {
      report(EISDIR);
      return;
    }
    if (!fs::is_regular_file(status)) {
      m_stream.open(m_path);
      if (!m_stream) {
        report(errno);
        return;
      }
      m_ok = true;
      return;
    }
    // Replacing the file must need what writing it needs.
    if (access(m_path.c_str(), W_OK) != 0) {
      report(errno);
      return;
    }
    struct stat st {};
    if (stat(m_path.c_str(), &st) == 0) mode = st.st_mode & 07777;
    m_target = fs::canonical(m_path, ec);
    if (ec) m_target = m_path;
  } else {
    const mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  // A hidden name next to the target: ".<name>.XXXXXX"; in a directory where no file can be
  // created but the target can be written, the temporary goes to the temporary directory instead
  // and commit() copies it onto the target: the target is touched only once the run succeeded.
  std::string hidden(".");
  hidden += m_target.filename().string();
  hidden += ".XXXXXX";
  std::string name = (m_target.parent_path() / hidden).string();
  int fd = mkstemp(name.data());
  if (fd < 0) {
    const int error = errno;
    if (!exists) {
      report(error);
      return;
    }
    name = (fs::temp_directory_path(ec) / ("ncsde-" + hidden.substr(1))).string();
    fd = ec ? -1 : mkstemp(name.data());
    if (fd < 0) {
      report(error);
      return;
    }
    m_copy = true;
  }
  fchmod(fd, mode);  // mkstemp creates the file 0600
  close(fd);
  m_temporary = name;
  m_slot = register_temporary(name);
  m_stream.open(m_temporary, std::ios::out | std::ios::trunc);
  if (!m_stream) {
    const int error = errno;
    fs::remove(m_temporary, ec);
    unregister_temporary(m_slot);
    m_temporary.clear();
    report(error);
    return;
  }
  m_ok = true;
}

output_file::~output_file() {
  unregister_temporary(m_slot);
  if (m_committed || m_temporary.empty()) return;
  m_stream.close();
  std::error_code ec;
  std::filesystem::remove(m_temporary, ec);
}

bool output_file::commit() {
  if (!m_ok) return false;
  errno = 0;
  m_stream.close();
  if (!m_stream) {
    report(errno != 0 ? errno : EIO);
    return false;  // the destructor removes the temporary
  }
  if (m_copy) {
    const int error = copy_onto(m_temporary, m_target);
    if (error != 0) {
      report(error);
      return false;
    }
    return true;  // the destructor removes the temporary
  }
  if (!m_temporary.empty() && std::rename(m_temporary.c_str(), m_target.c_str()) != 0) {
    report(errno);
    return false;
  }
  m_committed = true;
  return true;
}

void output_file::report(int error) const {
  std::fprintf(stderr, "ncsde %s: cannot write %s %s: %s\n", m_command.c_str(), m_flag.c_str(),
               m_path.c_str(), std::strerror(error));
}

int open_plot_files(std::string_view command, const std::string& script,
                    const std::filesystem::path& dir, const std::vector<std::string>& names,
                    std::vector<std::unique_ptr<output_file>>& files) {
  if (!plotting_available(command, script)) return exit_failure;
  if (!create_plot_directory(command, dir)) return exit_usage;
  for (const std::string& name : names) {
    files.push_back(std::make_unique<output_file>(command, "--plots", dir / name));
    if (!files.back()->ok()) return exit_usage;
  }
  return 0;
}

}  // namespace ncsde::cli
