#pragma once
/// The device engine's path: one path of an ensemble stepped by Euler–Maruyama on fixed steps, as
/// the CPU's per-path engine (integrate.hpp) steps it, in the same operations and order, written
/// once for the host and for a CUDA thread (host_device.hpp). A device batch runs it for each of
/// its paths: on a GPU one thread per path, in the emulated device on the CPU's threads.
///
/// Per step i, from V_i on [t_i, t_{i+1}] (t_i = t0 + i·dt, recomputed; the last t_N = T), h =
/// t_{i+1} − t_i:
///  - the increment ΔW = ξ·√h, ξ entries [0, k) of the path's block (increments, i, 0) of the
///    stream (seed, path) (random_kernels.hpp: random_stream's numbers bit for bit);
///  - b = the model's drift at V_i, G ΔW = its noise map given the Cholesky factor L_i of V_i;
///  - the trial V_i + (h·b + G ΔW), entry by entry, symmetrised and measured as the CPU's settle
///    does (step_rules.hpp): blown up (not finite, or max |V| above the threshold) ends the path
///    there, with its state and t_stop = t_i + h;
///  - the trial must factor by Cholesky (positive definite: the CPU's cone check accepts it
///    uncounted, and its factor is L_{i+1}), and then it is V_{i+1}; a V_{i+1} past the stop level
///    (step_rules::passes_stop_level) stops the path at t_{i+1}; save times are grid steps;
///  - grid monitors (the SDE side of `ncsde validate`, models/stopped_sample.hpp): at the grid
///    index g = round((t_{i+1} − t0)/dt) of the accepted V_{i+1}, each monitor w not yet passed
///    whose period divides g is passed when max_a V^{aa}_{i+1} > monitor_level, and keeps V_{i+1}
///    (stopped_sample.hpp's grid_observer, which the CPU engine calls at the same points).
/// Anything else is the CPU engine's to handle, by its rules and with its messages, so the path is
/// handed back at step i, unchanged: a drift or noise map that is not finite, an asymmetry beyond
/// round-off, a trial that is not positive definite (boundary or outside: the cone policies, their
/// counters and eigen-factors are the CPU's), a V0 without a Cholesky factor. The CPU engine
/// resumes it at step i from V_i, so every path is the CPU path bit for bit wherever the model's
/// device form is its CPU form.
///
/// A Model (the device form of an SDE on m×m states on the PSD cone) provides, host-device:
///   noise_dimension(m), workspace_doubles(m),
///   drift(v, m, out, ws):          out = b(V);
///   diffusion(v, l, xi, m, out, ws): out = G(V) ξ given V's Cholesky factor l (lower).
#include <cstdint>

#include "ncsde/host_device.hpp"
#include "ncsde/step_rules.hpp"
#include "solvers/device/dense.hpp"
#include "solvers/device/random_kernels.hpp"

namespace ncsde::device {

/// What every path of a batch shares (plain data; on a GPU its pointers are device pointers).
struct path_job {
  std::uint64_t seed = 0;
  int m = 0;  ///< states are m×m, column-major
  int k = 0;  ///< the noise dimension
  double t0 = 0.0, t_end = 0.0, dt = 0.0;
  long long steps = 0;                    ///< grid steps N
  const long long* save_steps = nullptr;  ///< grid index of each save time, ascending
  int saves = 0;
  double blowup_threshold = 0.0;
  double symmetry_tolerance = 0.0;             ///< symmetric.hpp's
  double stop_level = 1.0 / 0.0;               ///< integrate_options::stop_level (+inf: none)
  const long long* monitor_periods = nullptr;  ///< grid steps between a monitor's looks
  int monitors = 0;
  double monitor_level = 0.0;
};

/// How a device path ended.
enum path_outcome : int { completed = 0, blown_up = 1, handed_back = 2, stopped = 3 };

/// One path's result (its states are in the batch's arrays).
struct path_summary {
  int outcome = completed;
  int saved = 0;        ///< save times reached (their states written)
  long long steps = 0;  ///< steps taken; when handed back, the step at which the CPU resumes
  double t_stop = 0.0;  ///< T, or the end of the step that blew up (unset when handed back)
};

/// t_i of the grid (integrate.hpp's step_grid::time).
NCSDE_KERNEL_INLINE double grid_time(const path_job& job, long long i) {
  return i >= job.steps ? job.t_end : job.t0 + static_cast<double>(i) * job.dt;
}

/// The scratch one path needs: the factors and the trial's (3 m²), drift and noise (2 m²), the
/// increment (k) and the model's workspace.
template <class Model>
NCSDE_HOST_DEVICE inline long long path_scratch_doubles(const Model& model, int m) {
  return 5LL * m * m + model.noise_dimension(m) + model.workspace_doubles(m);
}

/// Whether the n entries of x are finite.
NCSDE_KERNEL_INLINE bool all_finite(const double* x, long long n) {
  for (long long c = 0; c < n; ++c)
    if (!(x[c] - x[c] == 0.0)) return false;
  return true;
}

/// Runs path `path` of the batch: v holds V0 and receives the state at t_stop (or, handed back,
/// V_i of the step to resume at); saved receives the states at the save times (job.saves × m²);
/// passed and at_pass (job.monitors flags and m² states; unused without monitors) whether each
/// monitor was passed and V there, up to t_stop or the step handed back; scratch holds
/// path_scratch_doubles.
template <class Model>
NCSDE_HOST_DEVICE inline path_summary run_path(const Model& model, const path_job& job,
                                               std::uint64_t path, double* v, double* saved,
                                               int* passed, double* at_pass, double* scratch) {
  const int m = job.m;
  const long long mm = static_cast<long long>(m) * m;
  double* l = scratch;
  double* l_trial = l + mm;
  double* trial = l_trial + mm;
  double* drift = trial + mm;
  double* noise = drift + mm;
  double* xi = noise + mm;
  double* ws = xi + job.k;
  path_summary r;
  int next_save = 0;
  auto save_due = [&](long long i) {
    while (next_save < job.saves && job.save_steps[next_save] == i) {
      double* to = saved + next_save * mm;
      for (long long c = 0; c < mm; ++c) to[c] = v[c];
      ++next_save;
    }
  };
  for (int w = 0; w < job.monitors; ++w) passed[w] = 0;
  auto monitor = [&](long long i) {
    const long long g = nearest_integer((grid_time(job, i) - job.t0) / job.dt);
    if (g == 0) return;
    bool over = false, looked = false;
    for (int w = 0; w < job.monitors; ++w) {
      if (passed[w] || g % job.monitor_periods[w] != 0) continue;
      if (!looked) {
        double top = v[0];
        for (int a = 1; a < m; ++a)
          if (v[a * (m + 1)] > top) top = v[a * (m + 1)];
        over = top > job.monitor_level;
        looked = true;
      }
      if (over) {
        passed[w] = 1;
        double* to = at_pass + w * mm;
        for (long long c = 0; c < mm; ++c) to[c] = v[c];
      }
    }
  };
  auto hand_back = [&](long long i) {
    r.outcome = handed_back;
    r.steps = i;
    r.saved = next_save;
    return r;
  };
  save_due(0);
  if (!cholesky(v, m, l)) return hand_back(0);
  for (long long i = 0; i < job.steps; ++i) {
    const double t = grid_time(job, i);
    const double h = grid_time(job, i + 1) - t;
    block_numbers<true>(job.seed, path, 1 /* random_domain::increments */,
                        static_cast<std::uint64_t>(i), 0, xi, job.k);
    const double root_h = sqrt_rn(h);
    for (int j = 0; j < job.k; ++j) xi[j] = xi[j] * root_h;
    model.drift(v, m, drift, ws);
    if (!all_finite(drift, mm)) return hand_back(i);
    model.diffusion(v, l, xi, m, noise, ws);
    if (!all_finite(noise, mm)) return hand_back(i);
    for (long long c = 0; c < mm; ++c) trial[c] = v[c] + (h * drift[c] + noise[c]);
    const double asymmetry = step_rules::symmetrize_measured(trial, m);
    bool finite = true;
    double size = 0.0;
    for (long long c = 0; c < mm; ++c) {
      const double a = abs_value(trial[c]);
      finite = finite && a - a == 0.0;
      if (a > size) size = a;
    }
    if (step_rules::blows_up(finite, size, job.blowup_threshold)) {
      for (long long c = 0; c < mm; ++c) v[c] = trial[c];
      r.outcome = blown_up;
      r.steps = i + 1;
      r.t_stop = t + h;
      r.saved = next_save;
      return r;
    }
    if (step_rules::beyond_round_off(asymmetry, size, job.symmetry_tolerance)) return hand_back(i);
    if (!cholesky(trial, m, l_trial)) return hand_back(i);
    for (long long c = 0; c < mm; ++c) {
      v[c] = trial[c];
      l[c] = l_trial[c];
    }
    if (step_rules::passes_stop_level(v, m, job.stop_level)) {
      r.outcome = stopped;
      r.steps = i + 1;
      r.t_stop = grid_time(job, i + 1);
      r.saved = next_save;
      return r;
    }
    save_due(i + 1);
    if (job.monitors > 0) monitor(i + 1);
  }
  r.outcome = completed;
  r.steps = job.steps;
  r.t_stop = grid_time(job, job.steps);
  r.saved = next_save;
  return r;
}

}  // namespace ncsde::device
