#pragma once
/// Models in a shared library of their own, added to a running program's registry: what makes a
/// model written in C++ visible to the Python module (ncsde.models.load_library) and to the `ncsde`
/// program (--models-library), which were built without it.
///
/// The library defines one registration function with NCSDE_MODELS_LIBRARY and links ncsde::models:
///
///   #include "ncsde/models/models_library.hpp"
///   NCSDE_MODELS_LIBRARY(reg) {
///     reg.add(ncsde::models::make_entry<my_sde>({"my-model", "…", {real_parameter(…)}},
///                                                [](const parameter_values& p) { … }));
///   }
///
/// built as a module (CMake: add_library(my_models MODULE my_models.cpp), target_link_libraries(
/// my_models PRIVATE ncsde::models)). load_models_library opens it, checks that it was built against
/// the same ncsde version and the same registry layout, and runs the function on the host's registry.
/// The library keeps its own copy of ncsde's code (the static libraries), so its models run on the
/// library's own instantiations; only the registry is shared. Requirements: the same ncsde version
/// and compiler as the host (checked: the version, the sizes of the registry's types); the library
/// stays loaded until the process ends (its code is behind the registered entries).
#include <cstddef>
#include <string>
#include <vector>

#include "ncsde/models/registry.hpp"

namespace ncsde::models {

/// What a models library reports about the ncsde it was built against.
struct models_library_abi {
  const char* version;        ///< NCSDE_LIBRARY_VERSION, e.g. "0.1.0"
  std::size_t registry_size;  ///< sizeof(model_registry)
  std::size_t entry_size;     ///< sizeof(model_entry)
  std::size_t instance_size;  ///< sizeof(model_instance)
};

/// The ABI of this build (what a library built here reports).
inline models_library_abi this_models_library_abi() {
  return {NCSDE_LIBRARY_VERSION, sizeof(model_registry), sizeof(model_entry),
          sizeof(model_instance)};
}

/// Opens the shared library `path`, checks its ABI against this build's and runs its registration
/// function on `reg`. Returns the names of the models it added, in order. Throws
/// ncsde::invalid_argument naming "path" and the value when the file cannot be opened (with the
/// loader's message), defines no NCSDE_MODELS_LIBRARY function, or was built against another ncsde
/// (version or layout); the registration's own errors (a name already taken, …) propagate, and the
/// models added before the error stay registered.
std::vector<std::string> load_models_library(const std::string& path,
                                             model_registry& reg = registry());

}  // namespace ncsde::models

/// Defines the registration function of a models library: the body receives the host's registry
/// as `reg` (a model_registry&). See the comment at the top of this header.
#define NCSDE_MODELS_LIBRARY(reg)                                                       \
  static void ncsde_models_library_body(::ncsde::models::model_registry& reg);          \
  extern "C" __attribute__((visibility("default"))) ::ncsde::models::models_library_abi \
  ncsde_models_library_abi() {                                                          \
    return ::ncsde::models::this_models_library_abi();                                  \
  }                                                                                     \
  extern "C" __attribute__((visibility("default"))) void ncsde_models_library_register( \
      ::ncsde::models::model_registry* host) {                                          \
    ncsde_models_library_body(*host);                                                   \
  }                                                                                     \
  static void ncsde_models_library_body(::ncsde::models::model_registry& reg)
