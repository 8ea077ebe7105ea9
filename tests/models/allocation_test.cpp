// A step allocates nothing: integrate() is run with every heap allocation of the process counted,
// and the count of a 1000-step path must equal that of a 100-step path (everything allocated once
// per path — the result, the stream, the stepper's and the SDE's workspaces — is the same for both).
// Eigen allocates with std::malloc, not operator new, so on glibc the malloc family itself is
// replaced (forwarding to glibc's __libc_* entry points); operator new reaches it through malloc.
// Elsewhere only operator new is counted (Eigen's own allocations are then not seen).
// A dedicated executable: replacing the allocator affects every test linked with it.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <string>
#include <utility>

#include "ncsde/integrate.hpp"
#include "ncsde/models/shaped.hpp"
#include "ncsde/steppers/euler_maruyama.hpp"
#include "ncsde/steppers/milstein.hpp"
#include "support/model_wrappers.hpp"

namespace {
std::atomic<long long> g_allocations{0};
void count_allocation() { g_allocations.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

#if defined(__GLIBC__)
extern "C" {
void* __libc_malloc(std::size_t size) noexcept;
void* __libc_calloc(std::size_t count, std::size_t size) noexcept;
void* __libc_realloc(void* p, std::size_t size) noexcept;
void* __libc_memalign(std::size_t alignment, std::size_t size) noexcept;
void __libc_free(void* p) noexcept;

void* malloc(std::size_t size) noexcept {
  count_allocation();
  return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) noexcept {
  count_allocation();
  return __libc_calloc(count, size);
}
void* realloc(void* p, std::size_t size) noexcept {
  count_allocation();
  return __libc_realloc(p, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  count_allocation();
  return __libc_memalign(alignment, size);
}
void* memalign(std::size_t alignment, std::size_t size) noexcept {
  count_allocation();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
  count_allocation();
  void* p = __libc_memalign(alignment, size);
  if (!p) return 12;  // ENOMEM
  *out = p;
  return 0;
}
void free(void* p) noexcept { __libc_free(p); }
}
#else
void* operator new(std::size_t size) {
  count_allocation();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return ::operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace {

using ncsde::matrix;
using ncsde::vector;
namespace models = ncsde::models;

using support::dynamic_only;

struct model_case {
  const char* name;
  models::architecture arch;
  bool causal;
};

constexpr model_case model_cases[] = {
    {"mlp", models::architecture::mlp, false},
    {"attention", models::architecture::attention, false},
    {"causal attention", models::architecture::attention, true},
    {"transformer", models::architecture::transformer, false},
};

/// V0 = 0.6 I + 0.4 11ᵀ: positive definite, unit diagonal, correlation 0.4.
matrix initial_state(int m) { return 0.6 * matrix::Identity(m, m) + 0.4 * matrix::Ones(m, m); }

struct counted_run {
  long long allocations = 0;
  ncsde::path_result result;
};

template <class Stepper, class S>
counted_run run_counted(const S& sde, int m, long long steps, double dt) {
  // T = 1000 dt ≤ 1 keeps every model well before its blow-up time at m ≤ 8 (checked below).
  const ncsde::problem<S> prob{sde, initial_state(m), dt * static_cast<double>(steps), 0.0};
  ncsde::integrate_options opt;
  opt.dt = dt;
  Stepper stepper;
  counted_run out;
  const long long before = g_allocations.load();
  out.result = ncsde::integrate(stepper, prob, opt, /*seed=*/17, /*path_index=*/3);
  out.allocations = g_allocations.load() - before;
  return out;
}

/// Checks that 1000 steps allocate as often as 100; returns (allocations per path, projections).
template <class Stepper, class S>
std::pair<long long, long long> check_steps_allocate_nothing(const S& sde, int m,
                                                             const std::string& label,
                                                             double dt = 1e-3) {
  const counted_run short_run = run_counted<Stepper, S>(sde, m, 100, dt);
  const counted_run long_run = run_counted<Stepper, S>(sde, m, 1000, dt);
  INFO(label, ", m = ", m, ": ", short_run.allocations, " allocations for 100 steps, ",
       long_run.allocations, " for 1000");
  // Both paths ran to the end, so the long one took 900 more steps.
  CHECK(short_run.result.status == ncsde::path_status::completed);
  CHECK(long_run.result.status == ncsde::path_status::completed);
  CHECK(long_run.result.steps == 1000);
  CHECK(long_run.allocations == short_run.allocations);
  return {long_run.allocations, long_run.result.pd.projected};
}

/// Accumulates the largest per-path count and the projections seen, for the summary message.
struct tally {
  long long most = 0, projections = 0;
  void add(std::pair<long long, long long> r) {
    most = std::max(most, r.first);
    projections += r.second;
  }
};

}  // namespace

TEST_CASE("integrate: no heap allocation inside a step (fixed-size path, m = 3 and 8)") {
  // pd_policy::project (the default): on fixed-size states a projection and the eigen-factor of a
  // state off the cone allocate nothing either; the Milstein runs at m = 8 do project (the count
  // is in the message).
  tally t;
  for (const model_case& c : model_cases) {
    models::shaped_params p;
    p.causal = c.causal;
    const models::covariance_sde sde(c.arch, p);
    for (const int m : {3, 8}) {
      t.add(check_steps_allocate_nothing<ncsde::euler_maruyama<>>(sde, m,
                                                                  std::string(c.name) + ", EM"));
      t.add(check_steps_allocate_nothing<ncsde::milstein<>>(sde, m,
                                                            std::string(c.name) + ", Milstein"));
    }
  }
  MESSAGE("fixed-size path: at most ", t.most, " allocations per path, whatever its length (",
          t.projections, " projections included)");
}

TEST_CASE("integrate: no heap allocation inside a step (dynamic path: m = 5, dynamic-only SDEs)") {
  // On ncsde::matrix, Eigen's eigensolver allocates work vectors when it computes eigenvectors:
  // in a projection and in the eigen-factor of a state (or Milstein support point) off the cone,
  // rare events at small dt. dt = 2.5e-4 keeps these paths inside the cone (no projection, checked).
  const double dt = 2.5e-4;
  tally t;
  for (const model_case& c : model_cases) {
    models::shaped_params p;
    p.causal = c.causal;
    const models::covariance_sde sde(c.arch, p);
    // m = 5 has no fixed-size path; the wrapper forces the dynamic one at m = 3 and 8.
    const std::string name(c.name);
    t.add(check_steps_allocate_nothing<ncsde::euler_maruyama<>>(sde, 5, name + ", EM", dt));
    t.add(check_steps_allocate_nothing<ncsde::milstein<>>(sde, 5, name + ", Milstein", dt));
    for (const int m : {3, 8}) {
      t.add(check_steps_allocate_nothing<ncsde::euler_maruyama<>>(
          dynamic_only{sde}, m, name + " (dynamic only), EM", dt));
      t.add(check_steps_allocate_nothing<ncsde::milstein<>>(
          dynamic_only{sde}, m, name + " (dynamic only), Milstein", dt));
    }
  }
  CHECK(t.projections == 0);
  MESSAGE("dynamic path: at most ", t.most, " allocations per path, whatever its length");
}
