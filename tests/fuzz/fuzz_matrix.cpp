/// libFuzzer target: the matrices written on the command line (--V, --V0), i.e.
/// ncsde::cli::parse_matrix (validation/models/model_flags.cpp) and the state check the commands
/// run on its result, ncsde::validate_state (symmetric.hpp). The input is the flag's text (up to
/// its first NUL, where a command-line argument ends).
///
/// Properties, beyond "no crash, no leak, no undefined behaviour" (address and undefined-behaviour
/// sanitizers) and "memory in proportion to the input" (run with -malloc_limit_mb, see
/// tests/fuzz/CMakeLists.txt):
///   - bad text is refused with ncsde::invalid_argument "--V0: malformed matrix '<text>': …", and
///     with nothing else;
///   - accepted text is a square matrix with one row per ';'-separated piece, every entry finite
///     and equal to what strtod reads from the entry (the C library as an independent reference:
///     an entry is accepted only if it is a complete decimal number);
///   - printing the matrix back (shortest round-trip form, fmt "{}") and parsing it again gives
///     the same bits;
///   - validate_state, with or without the PSD requirement, refuses with ncsde::invalid_argument
///     "--V0: the matrix …" or returns the exactly symmetric matrix built from the upper triangle;
///     whatever passes the PSD check also passes without it.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "models/model_flags.hpp"
#include "ncsde/error.hpp"
#include "ncsde/symmetric.hpp"

namespace {

using ncsde::matrix;
using ncsde::fuzz::check;
using ncsde::fuzz::starts_with;

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> pieces;
  for (std::size_t start = 0;;) {
    const std::size_t pos = s.find(sep, start);
    pieces.push_back(
        s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) return pieces;
    start = pos + 1;
  }
}

std::string_view trim(std::string_view s) {
  const std::size_t first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

bool same_bits(const matrix& a, const matrix& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
  for (Eigen::Index i = 0; i < a.size(); ++i)
    if (std::bit_cast<std::uint64_t>(a.data()[i]) != std::bit_cast<std::uint64_t>(b.data()[i]))
      return false;
  return true;
}

std::string print(const matrix& v) {
  std::string s;
  for (Eigen::Index a = 0; a < v.rows(); ++a)
    for (Eigen::Index b = 0; b < v.cols(); ++b)
      s += fmt::format("{}{}", v(a, b), b + 1 < v.cols() ? "," : a + 1 < v.rows() ? ";" : "");
  return s;
}

void check_state(const matrix& v, std::string_view text) {
  bool general_ok = false;
  for (const bool psd : {false, true}) {
    try {
      const matrix out = ncsde::validate_state("--V0", "the matrix", v, psd);
      check(!psd || general_ok, "a matrix accepted as PSD is accepted as symmetric", text);
      general_ok = true;
      check(out.rows() == v.rows() && out.cols() == v.cols(), "validate_state keeps the size",
            text);
      for (Eigen::Index a = 0; a < v.rows(); ++a)
        for (Eigen::Index b = a; b < v.cols(); ++b)
          check(
              std::bit_cast<std::uint64_t>(out(a, b)) == std::bit_cast<std::uint64_t>(v(a, b)) &&
                  std::bit_cast<std::uint64_t>(out(b, a)) == std::bit_cast<std::uint64_t>(v(a, b)),
              "validate_state returns the upper triangle, mirrored", text);
    } catch (const ncsde::invalid_argument& e) {
      check(starts_with(e.what(), "--V0: the matrix "),
            "validate_state refuses with '--V0: the matrix …'", text, e.what());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The flag's text as the program sees it: a command-line argument ends at its first NUL.
  std::string text(reinterpret_cast<const char*>(data), size);
  text.resize(std::min(text.find('\0'), text.size()));
  matrix v;
  try {
    v = ncsde::cli::parse_matrix(text, "--V0");
  } catch (const ncsde::invalid_argument& e) {
    check(starts_with(e.what(), "--V0: malformed matrix '" + text + "': "),
          "refusals are '--V0: malformed matrix '<text>': …'", text, e.what());
    return 0;
  }  // any other exception escapes: libFuzzer reports it (std::terminate)

  const std::vector<std::string_view> rows = split(text, ';');
  const auto m = static_cast<Eigen::Index>(rows.size());
  check(v.rows() == m && v.cols() == m, "one row per ';'-separated piece, square", text);
  for (Eigen::Index a = 0; a < m; ++a) {
    const std::vector<std::string_view> entries = split(rows[static_cast<std::size_t>(a)], ',');
    check(static_cast<Eigen::Index>(entries.size()) == m, "every row has m entries", text);
    for (Eigen::Index b = 0; b < m; ++b) {
      const std::string entry(trim(entries[static_cast<std::size_t>(b)]));
      check(std::isfinite(v(a, b)), "entries are finite", text);
      // strtod skips leading blanks and reads hexadecimal, inf and nan, none of which an entry
      // may hold; on an accepted entry it must stop at the end and agree to the bit.
      char* end = nullptr;
      const double reference = std::strtod(entry.c_str(), &end);
      check(!entry.empty() && end == entry.c_str() + entry.size(),
            "an accepted entry is a complete number for strtod", text, entry);
      check(std::bit_cast<std::uint64_t>(reference) == std::bit_cast<std::uint64_t>(v(a, b)),
            "an accepted entry has the value strtod reads", text,
            fmt::format("entry '{}': parse_matrix {} vs strtod {}", entry, v(a, b), reference));
    }
  }

  const std::string printed = print(v);
  try {
    check(same_bits(ncsde::cli::parse_matrix(printed, "--V0"), v),
          "print and parse again gives the same bits", text, printed);
  } catch (const ncsde::invalid_argument& e) {
    ncsde::fuzz::fail("a printed matrix parses", text, e.what());
  }
  check_state(v, text);
  return 0;
}
