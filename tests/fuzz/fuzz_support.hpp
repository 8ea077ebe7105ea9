#pragma once
/// What the libFuzzer targets of tests/fuzz share: a property check that prints the property and
/// the input and aborts, so that libFuzzer saves the input as a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace ncsde::fuzz {

/// Prints the violated property and the input (escaped), then aborts.
[[noreturn]] inline void fail(std::string_view property, std::string_view input,
                              std::string_view detail = {}) {
  std::string escaped;
  for (const char c : input) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      escaped += c;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      escaped += hex;
    }
  }
  std::fprintf(stderr, "\nfuzz property violated: %.*s\n  input: \"%s\"\n",
               static_cast<int>(property.size()), property.data(), escaped.c_str());
  if (!detail.empty())
    std::fprintf(stderr, "  detail: %.*s\n", static_cast<int>(detail.size()), detail.data());
  std::abort();
}

/// fail() unless `condition`.
inline void check(bool condition, std::string_view property, std::string_view input,
                  std::string_view detail = {}) {
  if (!condition) fail(property, input, detail);
}

inline bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace ncsde::fuzz
