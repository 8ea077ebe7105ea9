#pragma once
/// The message of a library error, for tests that check messages and not only exception types.
#include <string>

#include "ncsde/error.hpp"

namespace support {

/// The message of the ncsde::invalid_argument thrown by f ("" if f throws none).
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const ncsde::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace support
