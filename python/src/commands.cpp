// ncsde._core.run_command: the `ncsde` program's commands run in this process (run_program of
// validation/program.cpp), for ncsde.validate: the program's own code, so the same numbers as the
// program for the same flags.
#include <pybind11/stl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.hpp"
#include "command.hpp"

namespace ncsde::python {

namespace {

/// While alive, the file descriptor `fd` (1 or 2) writes into a temporary file; finish() restores
/// it and returns what was written.
class captured_fd {
 public:
  explicit captured_fd(int fd) : m_fd(fd), m_file(std::tmpfile()) {
    if (m_file == nullptr) throw std::runtime_error("run_command: cannot create a temporary file");
    m_saved = dup(fd);
    if (m_saved < 0 || dup2(fileno(m_file), fd) < 0) {
      std::fclose(m_file);
      throw std::runtime_error("run_command: cannot redirect the output");
    }
  }
  captured_fd(const captured_fd&) = delete;
  captured_fd& operator=(const captured_fd&) = delete;
  ~captured_fd() { restore(); }

  std::string finish() {
    restore();
    std::string text;
    std::rewind(m_file);
    char buffer[4096];
    for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, m_file)) > 0;)
      text.append(buffer, got);
    std::fclose(m_file);
    m_file = nullptr;
    return text;
  }

 private:
  void restore() {
    if (m_saved < 0) return;
    dup2(m_saved, m_fd);
    close(m_saved);
    m_saved = -1;
  }
  int m_fd;
  std::FILE* m_file;
  int m_saved = -1;
};

void flush_all() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
}

}  // namespace

void bind_commands(py::module_& m) {
  m.def(
      "run_command",
      [](const std::vector<std::string>& args) {
        using result_type = std::tuple<int, std::string, std::string>;
        std::atomic<bool> cancel{false};
        return run_interruptible<result_type>(
            [&] {
              // The output descriptors are the process's: one command at a time.
              static std::mutex one_at_a_time;
              const std::lock_guard lock(one_at_a_time);
              std::vector<std::string> words{"ncsde"};
              words.insert(words.end(), args.begin(), args.end());
              std::vector<char*> argv;
              for (std::string& w : words) argv.push_back(w.data());
              argv.push_back(nullptr);
              flush_all();
              captured_fd out(1), err(2);
              const int rc = cli::run_program(static_cast<int>(words.size()), argv.data());
              flush_all();
              std::string out_text = out.finish();
              return result_type{rc, std::move(out_text), err.finish()};
            },
            cancel);
      },
      py::arg("args"), R"doc(
Runs `ncsde <args...>` in this process (the program's own code, without MPI) and returns
(exit code, stdout, stderr). The GIL is released; the output of the process is captured while the
command runs, and one command runs at a time. Ctrl-C raises KeyboardInterrupt once the command's
current block of paths or networks is done (the library's executor checks between blocks).
ncsde.validate is built on it.)doc");
}

}  // namespace ncsde::python
