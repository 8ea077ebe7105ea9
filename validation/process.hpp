#pragma once
/// Child processes of the `ncsde` program: the python3 + matplotlib plot scripts of validation/plots.
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

}  // namespace ncsde::cli
