#include "partial_file.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <boost/crc.hpp>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <system_error>

#include "../solvers/byte_codec.hpp"
#include "ncsde/error.hpp"

#ifndef NCSDE_VERSION_STRING
#define NCSDE_VERSION_STRING "unknown"
#endif

namespace ncsde::cli {

namespace {

constexpr std::string_view format_line = "ncsde partial result v2\n";
constexpr std::string_view earlier_format_line = "ncsde partial result\n";
constexpr std::string_view command_prefix = "command ";

/// CRC-64/XZ (Boost.CRC): the checksum of partial files and the fingerprint of models libraries.
using crc64_xz = boost::crc_optimal<64, 0x42F0E1EBA9EA3693ULL, ~0ULL, ~0ULL, true, true>;

/// A token of an option's value in canonical form: a number as the shortest decimal that reads
/// back to its double's bits (so 0.5, 5e-1 and 0.50 are one value and two doubles are two), an
/// integer beyond 2^53 (a seed) as its decimal digits, the rest as written.
std::string canonical_token(std::string_view t) {
  if (t.empty()) return {};
  std::string_view digits = t;
  bool negative = false;
  if (digits.front() == '+' || digits.front() == '-') {
    negative = digits.front() == '-';
    digits.remove_prefix(1);
  }
  if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos) {
    const std::size_t first = std::min(digits.find_first_not_of('0'), digits.size() - 1);
    digits.remove_prefix(first);
    if (digits.size() > 15)  // beyond what a double holds exactly: compare the digits
      return (negative ? "-" : "") + std::string(digits);
  }
  const std::string s(t);
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  if (end == s.c_str() + s.size() && !std::isspace(static_cast<unsigned char>(s[0])))
    return std::isnan(x) ? std::string(std::signbit(x) ? "-nan" : "nan") : fmt::format("{}", x);
  return s;
}

std::string file_fingerprint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string name = std::filesystem::path(path).filename().string();
  if (!in) return name + " (unreadable)";
  crc64_xz crc;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0)
    crc.process_bytes(buffer, static_cast<std::size_t>(in.gcount()));
  return fmt::format("{} (CRC-64 {:016x})", name, crc.checksum());
}

class identity_writer : public detail::byte_writer<identity_writer> {
 public:
  using byte_writer::put;
};

std::string cut(const std::string& s) { return s.size() <= 40 ? s : s.substr(0, 37) + "..."; }

}  // namespace

void refuse_partial(const std::string& name, std::string_view why) {
  throw invalid_argument(fmt::format("{} is not a partial result of ncsde ({})", name, why));
}

std::string canonical_value(std::string_view text) {
  static constexpr std::string_view separators = ",;: \t\n()[]";
  std::string out;
  std::size_t i = 0;
  while (i <= text.size()) {
    const std::size_t j = std::min(text.find_first_of(separators, i), text.size());
    out += canonical_token(text.substr(i, j - i));
    if (j == text.size()) break;
    out += text[j];
    i = j + 1;
  }
  return out;
}

std::uint64_t crc64(std::string_view bytes) {
  crc64_xz crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

bool changes_no_number(std::string_view option) {
  // --batched: the command line's SDEs (the built-in models, whose batched paths are the per-path
  // ones bit for bit; a models library's, which have no batched form) give the same numbers either
  // way.
  static constexpr std::string_view none[] = {
      "--threads", "--format",      "--out",     "--plots",       "--progress", "--check",
      "--help",    "--check-limit", "--partial", "--paths-range", "--batched"};
  for (std::string_view n : none)
    if (option == n) return true;
  return false;
}

run_identity identity_of(const CLI::App& sub, const std::vector<std::string>& libraries) {
  run_identity id;
  id.fields.emplace_back("ncsde version", NCSDE_VERSION_STRING);
  id.fields.emplace_back("command", sub.get_name());
  for (std::size_t i = 0; i < libraries.size(); ++i)
    id.fields.emplace_back(fmt::format("--models-library {}", i + 1),
                           file_fingerprint(libraries[i]));
  std::map<std::string, std::string> options;  // sorted by name: the order of the fields
  for (const CLI::Option* o : sub.get_options()) {
    const std::string name = o->get_name();
    if (name.empty() || changes_no_number(name)) continue;
    std::string value;
    if (o->count() > 0) {
      for (const std::string& r : o->results()) value += (value.empty() ? "" : "\x1f") + r;
    } else {
      value = o->get_default_str();
      if (value.empty()) value = "(default)";
    }
    options[name] = canonical_value(value);
  }
  for (auto& [name, value] : options) id.fields.emplace_back(name, std::move(value));
  return id;
}

run_identity& current_run_identity() {
  static run_identity identity;
  return identity;
}

std::string identity_differences(const run_identity& a, const run_identity& b) {
  std::map<std::string, std::pair<std::string, std::string>> all;
  for (const auto& [k, v] : a.fields) all[k].first = v;
  for (const auto& [k, v] : b.fields) all[k].second = v;
  std::string out;
  for (const auto& [k, v] : all) {
    if (v.first == v.second) continue;
    out += fmt::format("{}{} ({} vs {})", out.empty() ? "" : ", ", k,
                       v.first.empty() ? "absent" : cut(v.first),
                       v.second.empty() ? "absent" : cut(v.second));
  }
  return out;
}

std::string partial_file_bytes(const std::string& command, const run_identity& identity,
                               std::string_view payload) {
  identity_writer w;
  w.out.append(format_line);
  w.out.append(command_prefix);
  w.out.append(command);
  w.out.push_back('\n');
  w.put(static_cast<std::uint64_t>(identity.fields.size()));
  for (const auto& [k, v] : identity.fields) {
    w.put(std::string_view(k));
    w.put(std::string_view(v));
  }
  w.put(payload);
  w.put(crc64(w.out));
  return std::move(w.out);
}

partial_file parse_partial_file(std::string_view bytes, const std::string& name) {
  if (bytes.starts_with(earlier_format_line))
    refuse_partial(name,
                   "written by an earlier version of ncsde, without the run's identity and a "
                   "checksum: run the shard again");
  if (!bytes.starts_with(format_line)) refuse_partial(name, "no 'ncsde partial result v2' header");
  if (bytes.size() < format_line.size() + 8) refuse_partial(name, "truncated");
  const std::string_view body = bytes.substr(0, bytes.size() - 8);
  detail::byte_reader tail(bytes.substr(bytes.size() - 8), name);
  if (tail.u64() != crc64(body))
    refuse_partial(name, "its checksum does not match: the file is damaged or truncated");
  std::string_view rest = body.substr(format_line.size());
  if (!rest.starts_with(command_prefix)) refuse_partial(name, "no command line");
  rest.remove_prefix(command_prefix.size());
  const std::size_t end = rest.find('\n');
  if (end == std::string_view::npos || end > 64) refuse_partial(name, "no command line");
  partial_file out;
  out.command = std::string(rest.substr(0, end));
  rest.remove_prefix(end + 1);
  try {
    detail::byte_reader in(rest, fmt::format("{}: not a complete partial result", name));
    const std::size_t n = in.count(16);
    for (std::size_t i = 0; i < n; ++i) {
      std::string k = in.string();
      std::string v = in.string();
      out.identity.fields.emplace_back(std::move(k), std::move(v));
    }
    out.payload = in.string();
    if (!in.done()) in.fail("trailing data");
  } catch (const invalid_argument& e) {
    refuse_partial(name, e.what());
  }
  return out;
}

partial_file read_partial_file(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec) throw invalid_argument(fmt::format("cannot read {}: {}", path.string(), ec.message()));
  if (!fs::is_regular_file(status)) refuse_partial(path.string(), "not a regular file");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw invalid_argument(fmt::format("cannot read {}: {}", path.string(), ec.message()));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw invalid_argument(fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::uintmax_t>(in.gcount()) != size)
    throw invalid_argument(
        fmt::format("cannot read {}: it changed while it was read", path.string()));
  return parse_partial_file(bytes, path.string());
}

}  // namespace ncsde::cli
