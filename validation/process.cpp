#include "process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

extern char** environ;

namespace ncsde::cli {

int run_process(const std::vector<std::string>& args, child_output output) {
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
  if (!ec) return true;
  std::fprintf(stderr, "ncsde %.*s: --plots: cannot create %s: %s\n",
               static_cast<int>(command.size()), command.data(), dir.c_str(), ec.message().c_str());
  return false;
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

bool open_output(std::string_view command, const std::string& path, std::ofstream& file) {
  file.open(path);
  if (file) return true;
  std::fprintf(stderr, "ncsde %.*s: --out: cannot write %s\n", static_cast<int>(command.size()),
               command.data(), path.c_str());
  return false;
}

}  // namespace ncsde::cli
