#pragma once
/// Shared pieces of the Python module ncsde._core: the binders of each source, array conversions,
/// and run_interruptible, which runs a computation without the GIL while the calling thread keeps
/// watching for signals (Ctrl-C).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "ncsde/concepts.hpp"
#include "ncsde/executor.hpp"
#include "ncsde/report_field.hpp"

namespace ncsde::python {

namespace py = pybind11;

/// The float64 C-contiguous array of `object` (converted when needed, a copy then).
using double_array = py::array_t<double, py::array::c_style | py::array::forcecast>;

void bind_commands(py::module_& m);
void bind_validate(py::module_& m);  // only when the program's commands are built
void bind_convergence(py::module_& m);
void bind_models(py::module_& m);
void bind_networks(py::module_& m);
void bind_python_sde(py::module_& m);
void bind_simulate(py::module_& m);
void bind_statistics(py::module_& m);

/// Thrown inside a run when its cancellation flag is set (the caller raises the KeyboardInterrupt
/// that set it); never reaches Python.
class run_cancelled : public std::exception {
 public:
  const char* what() const noexcept override { return "ncsde: run cancelled"; }
};

/// Holds the GIL for its scope on any thread (PyGILState_Ensure / PyGILState_Release), and keeps
/// the calling thread's Python thread state until the thread ends: a thread state created and
/// destroyed per call (what a plain PyGILState_Ensure does on a thread Python did not start) costs
/// an mmap and munmap of its frame stack each time, about 90 µs of a callback's 100.
class gil_hold {
 public:
  gil_hold() : m_state(PyGILState_Ensure()) { keep_thread_state(); }
  ~gil_hold() { PyGILState_Release(m_state); }
  gil_hold(const gil_hold&) = delete;
  gil_hold& operator=(const gil_hold&) = delete;

 private:
  static void keep_thread_state();
  PyGILState_STATE m_state;
};

/// True when `object` is a complex number or holds complex values (numpy's iscomplexobj).
bool holds_complex(const py::handle& object);

/// `object` as a float64 array; TypeError naming `where` and `param` when it is not a number array,
/// ValueError when it holds complex values (never cast to their real parts).
double_array as_double_array(const py::handle& object, std::string_view where,
                             std::string_view param);

/// "(2, 3)" for a shape.
std::string shape_text(const std::vector<py::ssize_t>& shape);

/// A 2-D float array as an ncsde::matrix; ValueError naming `where` and `param` when it is not 2-D.
matrix as_matrix(const py::handle& object, std::string_view where, std::string_view param);

/// An ncsde::matrix as a new (rows, cols) float64 array.
py::array_t<double> to_array(const matrix& x);

/// A vector of numbers as a new 1-D float64 array.
py::array_t<double> doubles(const std::vector<double>& x);

/// Fields of a result (ncsde/report_field.hpp) as a dict: every field, numbers as Python numbers
/// (NaN and ±inf kept), lists of numbers as float64 arrays.
py::dict fields_dict(const std::vector<report_field>& fields);

/// Runs job() (returning R) on a new thread with the GIL released, while the calling thread
/// checks for signals every 50 ms (PyErr_CheckSignals, which runs Python's handlers: Ctrl-C raises
/// KeyboardInterrupt). When a handler raises, `cancel` is set, so that the run stops at its next
/// check (the executor's between blocks, under a cancel_scope; callbacks and stop conditions throw
/// run_cancelled between steps), and once job() has returned or
/// thrown the handler's exception is raised. Otherwise job()'s result is returned or its
/// exception rethrown (a Python exception raised in a callback keeps its traceback). Called with
/// the GIL held.
template <class R, class Job>
R run_interruptible(Job&& job, std::atomic<bool>& cancel) {
  std::optional<R> result;
  std::exception_ptr error;
  std::optional<py::error_already_set> interrupt;
  {
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    py::gil_scoped_release release;
    std::thread runner([&] {
      try {
        // The library's runs check `cancel` between blocks (executor.hpp); the callbacks and stop
        // conditions check it between steps.
        const cancel_scope scope(cancel);
        result.emplace(job());
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex);
        done = true;
      }
      finished.notify_all();
    });
    std::unique_lock lock(mutex);
    while (!finished.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) {
      lock.unlock();
      if (!interrupt) {
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) {
          interrupt.emplace();  // fetches the handler's exception
          cancel.store(true);
        }
      }
      lock.lock();
    }
    lock.unlock();
    runner.join();
  }
  if (interrupt) throw *interrupt;
  if (error) std::rethrow_exception(error);
  return std::move(*result);
}

}  // namespace ncsde::python
