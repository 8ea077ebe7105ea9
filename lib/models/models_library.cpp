#include "ncsde/models/models_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstring>

#include "ncsde/error.hpp"

namespace ncsde::models {

namespace {

using abi_function = models_library_abi (*)();
using register_function = void (*)(model_registry*);

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw invalid_argument(fmt::format("load_models_library: path {} {}", path, why));
}

/// refuse() for a library already opened: it is closed again, since none of its code is registered.
[[noreturn]] void refuse_loaded(void* handle, const std::string& path, const std::string& why) {
  dlclose(handle);
  refuse(path, why);
}

}  // namespace

std::vector<std::string> load_models_library(const std::string& path, model_registry& reg) {
  if (path.empty()) refuse("''", "is empty");
  // RTLD_LOCAL: the library's copy of ncsde stays its own; only the registry is shared.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* message = dlerror();
    refuse(path, fmt::format("cannot be loaded ({})", message != nullptr ? message : "unknown"));
  }
  const auto abi = reinterpret_cast<abi_function>(dlsym(handle, "ncsde_models_library_abi"));
  const auto add =
      reinterpret_cast<register_function>(dlsym(handle, "ncsde_models_library_register"));
  if (abi == nullptr || add == nullptr)
    refuse_loaded(handle, path,
                  "defines no models (no NCSDE_MODELS_LIBRARY function: see "
                  "ncsde/models/models_library.hpp)");
  const models_library_abi theirs = abi();
  const models_library_abi ours = this_models_library_abi();
  if (theirs.version == nullptr || std::strcmp(theirs.version, ours.version) != 0)
    refuse_loaded(handle, path,
                  fmt::format("was built against ncsde {}, this is ncsde {}",
                              theirs.version != nullptr ? theirs.version : "(none)", ours.version));
  if (theirs.registry_size != ours.registry_size || theirs.entry_size != ours.entry_size ||
      theirs.instance_size != ours.instance_size)
    refuse_loaded(handle, path,
                  fmt::format("was built with another layout of the registry (sizes {}/{}/{} "
                              "against {}/{}/{}: another compiler or standard library?)",
                              theirs.registry_size, theirs.entry_size, theirs.instance_size,
                              ours.registry_size, ours.entry_size, ours.instance_size));
  const std::size_t before = reg.entries().size();
  add(&reg);  // the library stays loaded: the entries hold its code
  std::vector<std::string> added;
  for (std::size_t i = before; i < reg.entries().size(); ++i)
    added.push_back(reg.entries()[i].name());
  return added;
}

}  // namespace ncsde::models
