#pragma once
/// The Python object behind ncsde.models.CovarianceSde: a registry model's SDE and the values of
/// its parameters.
#include <pybind11/pybind11.h>

#include <string>
#include <utility>
#include <vector>

#include "ncsde/models/registry.hpp"

namespace ncsde::python {

struct model_handle {
  models::model_instance sde;
  /// Every parameter (defaults filled in), by its Python name, in the registry's order.
  std::vector<std::pair<std::string, models::parameter_value>> params;
  /// The registry entry and the complete values (for the model's finite networks).
  const models::model_entry* entry = nullptr;
  models::parameter_values values;
};

/// The model `name` with keyword parameters; ValueError naming the parameter and the value.
model_handle make_model_handle(const std::string& name, const pybind11::dict& kwargs);

}  // namespace ncsde::python
