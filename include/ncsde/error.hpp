#pragma once
/// Errors in three tiers (see docs/solver.md, "Errors"):
///  1. bad user input: ncsde::invalid_argument, naming the parameter, the value and the rule;
///  2. our own bugs in hot paths: NCSDE_ASSERT, overridable (tests make it throw ncsde::assertion_error);
///  3. numerical events during a run (a step leaving the positive-definite cone, a blow-up): a status
///     and counters in the run's result; ncsde::pd_violation only when the run's policy says `throw`.
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ncsde {

/// Bad input at the library's boundary. what() reads "<where>: <param> must be <rule> (got <value>)".
class invalid_argument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A coefficient (drift or noise map) returned a non-finite value at a finite state: a defect of the
/// problem, reported with the path, step and time where it happened.
class evaluation_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A run ended early because its cancellation flag was set (cancel_scope, executor.hpp): what a
/// driver throws when the caller asked it to stop (Ctrl-C in the Python module), not a failure.
class cancelled : public std::runtime_error {
 public:
  cancelled() : std::runtime_error("ncsde: the run was cancelled") {}
};

/// A step left the positive-semidefinite cone under the `throw` policy, or `refine` gave up.
/// what() names the path, the step, the time and the smallest eigenvalue.
class pd_violation : public std::runtime_error {
 public:
  pd_violation(const std::string& what, long long path, long long step, double t, double min_eig)
      : std::runtime_error(what), m_path(path), m_step(step), m_t(t), m_min_eigenvalue(min_eig) {}
  long long path() const { return m_path; }
  long long step() const { return m_step; }
  double time() const { return m_t; }
  double min_eigenvalue() const { return m_min_eigenvalue; }

 private:
  long long m_path;
  long long m_step;
  double m_t;
  double m_min_eigenvalue;
};

/// An accelerator could not run what was asked of it: this build has no such backend, the process
/// sees no device of that kind or not the one named, its driver is older than the backend needs, or
/// the device ran out of memory. what() names the device and the cause (the driver's own error text
/// where there is one). Never a silent fallback to the CPU: only device "auto" may choose the CPU,
/// and it says so (device.hpp).
class device_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Raised by the default handler of NCSDE_ASSERT when tests install ncsde::throw_on_assert.
class assertion_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {

/// One argument of format_message: the types the library's messages print.
class format_arg {
 public:
  enum class kind { signed_integer, unsigned_integer, floating, boolean, text };
  format_arg(int x) : m_kind(kind::signed_integer), m_signed(x) {}
  format_arg(long x) : m_kind(kind::signed_integer), m_signed(x) {}
  format_arg(long long x) : m_kind(kind::signed_integer), m_signed(x) {}
  format_arg(unsigned x) : m_kind(kind::unsigned_integer), m_unsigned(x) {}
  format_arg(unsigned long x) : m_kind(kind::unsigned_integer), m_unsigned(x) {}
  format_arg(unsigned long long x) : m_kind(kind::unsigned_integer), m_unsigned(x) {}
  format_arg(double x) : m_kind(kind::floating), m_floating(x) {}
  format_arg(bool x) : m_kind(kind::boolean), m_boolean(x) {}
  format_arg(std::string_view x) : m_kind(kind::text), m_text(x) {}
  format_arg(const char* x) : m_kind(kind::text), m_text(x) {}
  format_arg(const std::string& x) : m_kind(kind::text), m_text(x) {}

  kind type() const { return m_kind; }
  long long signed_value() const { return m_signed; }
  unsigned long long unsigned_value() const { return m_unsigned; }
  double floating_value() const { return m_floating; }
  bool boolean_value() const { return m_boolean; }
  std::string_view text_value() const { return m_text; }

 private:
  kind m_kind;
  long long m_signed = 0;
  unsigned long long m_unsigned = 0;
  double m_floating = 0.0;
  bool m_boolean = false;
  std::string_view m_text;
};

/// The message `pattern` with its {} fields (fmt's syntax, e.g. {:.6g}) filled from `args`, formatted
/// in the library (so that public headers do not include a formatting library).
std::string vformat_message(std::string_view pattern, std::initializer_list<format_arg> args);

template <class... Args>
std::string format_message(std::string_view pattern, const Args&... args) {
  return vformat_message(pattern, {format_arg(args)...});
}

}  // namespace detail

/// Throws ncsde::invalid_argument("<where>: <param> must be <rule> (got <value>)").
template <class Value>
[[noreturn]] void throw_invalid_argument(std::string_view where, std::string_view param,
                                         const Value& value, std::string_view rule) {
  throw invalid_argument(
      detail::format_message("{}: {} must be {} (got {})", where, param, rule, value));
}

/// Throws ncsde::invalid_argument("<where>: <message>") for rules that do not fit the one-value form.
[[noreturn]] void throw_invalid(std::string_view where, std::string_view message);

using assert_handler = void (*)(const char* file, int line, const char* condition,
                                const char* message);

/// Installs a handler for failed NCSDE_ASSERTs and returns the previous one. The default prints and
/// aborts; throw_on_assert turns a failure into ncsde::assertion_error.
assert_handler set_assert_handler(assert_handler handler);
[[noreturn]] void throw_on_assert(const char* file, int line, const char* condition,
                                  const char* message);

namespace detail {
[[noreturn]] void assert_failed(const char* file, int line, const char* condition,
                                const char* message);
}  // namespace detail

}  // namespace ncsde

#ifndef NCSDE_ASSERT
#ifdef NCSDE_DISABLE_ASSERTS
#define NCSDE_ASSERT(cond, msg) ((void)0)
#else
#define NCSDE_ASSERT(cond, msg) \
  ((cond) ? (void)0 : ::ncsde::detail::assert_failed(__FILE__, __LINE__, #cond, (msg)))
#endif
#endif
