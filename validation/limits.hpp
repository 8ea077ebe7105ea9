#pragma once
/// What one run of the `ncsde` program may ask for, checked before the run, so that an absurd count
/// fails at once with its flag, its value and the estimate named (exit code 2) instead of dying of
/// std::bad_alloc at the end or running for days without a word. No default and no documented run
/// comes within a factor of 100 of them.
///
///   memory   the run's estimated peak memory (the per-path or per-network data it keeps, the
///            literal sampler's weight matrices per thread) must not exceed the memory available to
///            the program: the physical memory (sysconf), or less when RLIMIT_AS or the cgroup's
///            memory.max says so;
///   steps    an SDE path takes at most max_steps_per_path = 1e9 steps (T/dt), and a run at most
///            max_total_steps = 1e12 steps over all paths (at the measured 1-3·10⁶ steps per second
///            and core for m = 2, 3, days of CPU time);
///   layers   an ensemble of networks runs at most max_network_layers = 1e10 network layers
///            (networks × d), and at most max_network_work = 1e14 units of work: networks × d × the
///            work of one layer, counted as the weights drawn per layer (literal sampler: n² for
///            each n×n matrix) or m²·(n + r·n) (reduced sampler, its O(m²n) layer); one unit
///            costs 5-20 ns, so 1e14 is about two CPU-weeks.
#include <cstdint>
#include <string_view>
#include <vector>

#include "models/model_flags.hpp"

namespace ncsde::cli {

inline constexpr long long max_paths = 1'000'000'000;     ///< paths of one run (--paths)
inline constexpr long long max_networks = 1'000'000'000;  ///< networks of one run (--networks)
inline constexpr int max_threads = 4096;                  ///< worker threads (--threads)
inline constexpr double max_steps_per_path = 1e9;
inline constexpr double max_total_steps = 1e12;
inline constexpr double max_network_layers = 1e10;
inline constexpr double max_network_work = 1e14;
inline constexpr int max_curve_grid = 100'000;  ///< points of a blow-up curve (--grid)

/// The names under which a caller takes the numbers the checks below name: the program's flags
/// (program_names) or the Python module's keyword arguments (python_names). One set of limits
/// serves both; only the names in the messages differ.
struct parameter_names {
  std::string_view paths = "--paths";
  std::string_view dt = "--dt";
  std::string_view t_end = "--T";
  std::string_view threads = "--threads";
  std::string_view networks = "--networks";
  std::string_view n = "--n";
  std::string_view d = "--d";
};
inline constexpr parameter_names program_names{};
inline constexpr parameter_names python_names{"paths", "dt", "T", "threads", "networks", "n", "d"};

/// Checks a number of paths against [1, max_paths] and of threads against [0, max_threads]
/// (0: all cores); throws ncsde::invalid_argument naming the parameter, the value and the limit.
void check_paths(long long paths, const parameter_names& names = program_names);
void check_threads(long long threads, const parameter_names& names = program_names);

/// The bytes an ensemble keeps per path of a state of K coordinates with `functionals` functionals:
/// the values and status (run_ensemble), the summary's sorted copies and times, and with
/// `keep_paths` the path's record and its V at t_stop; `saves` saved states per kept path. Fitted
/// to measured peak memory, with a margin (limits.cpp).
double ensemble_bytes_per_path(double K, std::size_t functionals, bool keep_paths,
                               std::size_t saves);

/// The bytes of an ensemble's summaries of states of K coordinates over `paths` paths with `saves`
/// save times: the moments of each block of paths (ncsde::automatic_block_size) and of the run (terminal, at stop, each save
/// time), a mean and either the K×K covariance (`covariance`) or K variances each
/// (ensemble_options::covariance).
double ensemble_summary_bytes(double K, double paths, std::size_t saves, bool covariance);

/// The memory available to the program in bytes: min(physical memory, RLIMIT_AS, cgroup
/// memory.max), and which of them it is ("physical memory", "RLIMIT_AS", "cgroup memory.max").
struct memory_limit {
  double bytes = 0.0;
  std::string_view source;
};
memory_limit available_memory();

/// Throws ncsde::invalid_argument "<flag> <value>: the run needs about <bytes> of memory (<what>),
/// more than the <available> available (<source>)" when `bytes` exceeds available_memory(). With
/// NCSDE_REPORT_MEMORY=1 in the environment it first prints "ncsde: memory estimate <flag>
/// <value>: <bytes> bytes (<what>)" on stderr (tests/cli/test_outputs.py compares the estimates
/// with the measured peak memory).
void check_memory(std::string_view flag, std::string_view value, double bytes,
                  std::string_view what);

/// Checks an SDE run of `paths` paths of `steps` steps each (`runs` such runs) against
/// max_steps_per_path (naming --dt and --T) and max_total_steps (naming `paths_flag`); throws
/// ncsde::invalid_argument.
void check_sde_steps(double t_end, double dt, double steps, long long paths,
                     std::string_view paths_flag, int runs = 1,
                     const parameter_names& names = program_names);

/// The work of one layer of a network of the model flags (see above; units of work).
double network_layer_work(const model_flags& model, bool literal, int m, int n, int n_k);

/// The bytes of weight matrices one thread of the literal sampler keeps (literal.cpp's buffers).
double literal_weight_bytes(const model_flags& model, int n, int n_k);

/// Checks an ensemble of `networks` networks of depth d, width n (`ensembles` such ensembles)
/// against max_network_layers and max_network_work, naming --networks and --d; throws
/// ncsde::invalid_argument.
void check_network_work(const model_flags& model, bool literal, int m, int n, int n_k,
                        long long networks, int d, int ensembles = 1,
                        const parameter_names& names = program_names);

/// Checks the memory of the literal sampler's weights on `threads` threads (0: all cores) and of
/// `networks` network records of `depths` recorded depths each (`ensembles` ensembles kept at
/// once, `extra_per_network` more bytes per network for the summary or the CSV), naming --n for
/// the weights and --networks for the records; throws ncsde::invalid_argument.
void check_network_memory(const model_flags& model, const network_flags& net, bool literal, int m,
                          std::size_t depths, int ensembles, double extra_per_network,
                          const parameter_names& names = program_names);

/// Refuses an initial state beyond the blow-up threshold (a path that would be blown up before its
/// first step), naming --V0 and the threshold (`threshold_name`: its flag, or what it is where no
/// flag sets it); throws ncsde::invalid_argument.
void check_initial_size(const matrix& v0, double blowup_threshold,
                        std::string_view threshold_name = "--blowup-threshold");

/// "1.5 GB", "512 MB", "12 kB": a byte count for a message.
std::string format_bytes(double bytes);

}  // namespace ncsde::cli
