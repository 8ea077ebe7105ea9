#pragma once
/// Files and child processes of the `ncsde` program: the --out file, the --plots directory and the
/// python3 + matplotlib plot scripts of validation/plots. Every helper reports its own failure on
/// stderr as "ncsde <command>: …", naming the flag or the path, so a command only returns
/// exit_failure when one returns false.
#include <filesystem>
#include <fstream>
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

/// Creates the --plots directory `dir` and its missing parents (an existing directory is fine); on
/// failure prints "ncsde <command>: --plots: cannot create <dir>: <reason>" to stderr and returns
/// false.
bool create_plot_directory(std::string_view command, const std::filesystem::path& dir);

/// Runs `python script args…` with its output sent to our stderr; when the script exits with a
/// non-zero status s (−1: it could not be started) prints "ncsde <command>: the plot script failed
/// (exit status s): python script args…" to stderr and returns false.
bool run_plot_script(std::string_view command, const std::string& script,
                     const std::vector<std::string>& args);

/// Opens `path` (the --out flag) for writing into `file`, before a run, so that an unwritable path
/// fails at once; on failure prints "ncsde <command>: --out: cannot write <path>" to stderr and
/// returns false.
bool open_output(std::string_view command, const std::string& path, std::ofstream& file);

}  // namespace ncsde::cli
