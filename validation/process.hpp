#pragma once
/// Files and child processes of the `ncsde` program: the --out file, the --plots directory and the
/// python3 + matplotlib plot scripts of validation/plots. Every helper reports its own failure on
/// stderr as "ncsde <command>: …", naming the flag or the path, so a command only returns an exit
/// code when one returns false: exit_usage for a path found unwritable before the run,
/// exit_failure for a failure during or after it.
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace ncsde::cli {

/// The interpreter the plot scripts run under (Debian python3 with python3-matplotlib).
inline constexpr const char* python = "/usr/bin/python3";

enum class child_output { discard, to_stderr };

/// Runs args[0] with the arguments (no shell, so no quoting issues) with its stdout discarded or
/// sent to our stderr (stdout may carry JSON); returns its exit status, or −1 when it could not be
/// started or did not exit normally.
int run_process(const std::vector<std::string>& args, child_output output);

/// Checks, before a long run, that `python` imports matplotlib and that `script` exists; on failure
/// prints "ncsde <command>: --plots needs …" to stderr and returns false.
bool plotting_available(std::string_view command, const std::string& script);

/// Creates the --plots directory `dir` and its missing parents (an existing directory is fine) and
/// checks that files can be created in it; on failure prints "ncsde <command>: --plots: cannot
/// create <dir>: <reason>" (or "cannot write into <dir>: <reason>") to stderr and returns false.
/// Called before a run, so that a bad --plots fails at once.
bool create_plot_directory(std::string_view command, const std::filesystem::path& dir);

/// Runs `python script args…` with its output sent to our stderr; when the script exits with a
/// non-zero status s (−1: it could not be started) prints "ncsde <command>: the plot script failed
/// (exit status s): python script args…" to stderr and returns false.
bool run_plot_script(std::string_view command, const std::string& script,
                     const std::vector<std::string>& args);

/// Installs the program's handlers of SIGINT, SIGTERM and SIGHUP: they remove the temporaries of
/// the output files open at that moment, then end the program as the signal would have. Called by
/// main() (the Python module keeps Python's own handlers; its commands end through cancellation).
void install_temporary_cleanup();

/// An output file (--out, --partial, the --plots data) written whole or not at all. The
/// constructor, called before a run, checks that `path` can be written (an empty path cannot) and
/// creates a temporary file next to it (in the same directory, so that the final rename is
/// atomic); stream() writes to the temporary and commit() renames it onto `path`. Without commit()
/// (an error, an exception, an early return) the destructor removes the temporary, and so does
/// SIGINT, SIGTERM or SIGHUP in the program (install_temporary_cleanup): a run that fails leaves an
/// earlier file at `path` unchanged and never a truncated one. The file gets the mode a plain open
/// would give it (an existing file's mode, else 0666 minus the umask). A writable file in a
/// directory where no temporary can be created (a read-only directory) gets its temporary in the
/// temporary directory ($TMPDIR, else /tmp), which commit() copies onto it: the file is truncated
/// only once the run has succeeded (the copy itself is not atomic). A `path` that exists and is
/// not a regular file (/dev/stdout, a FIFO) is written directly: there is nothing to replace.
class output_file {
 public:
  /// On failure prints "ncsde <command>: cannot write <flag> <path>: <reason>" (strerror) to
  /// stderr, and ok() is false.
  output_file(std::string_view command, std::string_view flag, std::filesystem::path path);
  output_file(const output_file&) = delete;
  output_file& operator=(const output_file&) = delete;
  ~output_file();

  /// The file can be written (the constructor succeeded).
  bool ok() const { return m_ok; }
  /// The stream to write the contents to.
  std::ostream& stream() { return m_stream; }
  /// Closes the stream and moves the file into place. On a write or rename failure prints "ncsde
  /// <command>: cannot write <flag> <path>: <reason>", removes the temporary and returns false.
  bool commit();

 private:
  void report(int error) const;

  std::string m_command;
  std::string m_flag;
  std::filesystem::path m_path;       ///< as given (messages)
  std::filesystem::path m_target;     ///< the file the rename replaces (symbolic links followed)
  std::filesystem::path m_temporary;  ///< empty when `path` is written directly
  std::ofstream m_stream;
  int m_slot = -1;      ///< the temporary's slot for the signal handler
  bool m_copy = false;  ///< the temporary is elsewhere: commit() copies it onto the target
  bool m_ok = false;
  bool m_committed = false;
};

/// The --plots outputs of `command`, opened before its run so that a bad --plots fails at once:
/// plotting_available(script), create_plot_directory(dir), then one output_file per name in dir
/// (temporaries that replace their targets on commit), appended to `files` in the order of
/// `names`. Returns 0, or the exit code of the first failure (printed): exit_failure when plotting
/// is not available, exit_usage when dir or a file cannot be written.
int open_plot_files(std::string_view command, const std::string& script,
                    const std::filesystem::path& dir, const std::vector<std::string>& names,
                    std::vector<std::unique_ptr<output_file>>& files);

}  // namespace ncsde::cli
