#pragma once
/// The partial files of the shards of a run (`ncsde <command> … --paths-range A:B --partial FILE`,
/// joined by `ncsde merge`) and the identity of a run that they carry.
///
/// The identity of a run is every input that can change one of its output numbers, as fields
/// "name = value": the program's version, the command, every option of the command (given or at its
/// default) but the ones that change no number (--threads, --format, --out, --plots, --progress,
/// --check, --check-limit and the shard's own --paths-range and --partial), and each models
/// library by its file name and a CRC-64 of its bytes. Values are canonical, so that two spellings
/// of one number are one value and two numbers are two: a number is the shortest decimal that
/// reads back to its double's bits (fmt's "{}"; 0.5, 5e-1 and 0.50 are "0.5"), so V0 is compared
/// bit for bit, an integer beyond 15 digits (a seed) its decimal digits; the rest of the text
/// stays as written. `ncsde merge` joins only shards whose identities are equal and
/// otherwise names the fields that differ.
///
/// A partial file is, in this order:
///   "ncsde partial result v2\n"       the format line;
///   "command <name>\n"                the command that wrote it;
///   the identity                      a count, then each field's name and value (byte_codec.hpp's
///                                     strings: a 64-bit length and the bytes);
///   the payload                       its length, then the command's own binary form;
///   the checksum                      CRC-64/XZ of every byte before it, a 64-bit word.
/// Every integer is a little-endian 64-bit word. The reader refuses a file that is not a regular
/// file, whose checksum does not match, or whose lengths exceed what is left of it, before it reads
/// what those lengths announce.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace ncsde::cli {

/// The fields of a run's identity, in a fixed order: (name, canonical value).
struct run_identity {
  std::vector<std::pair<std::string, std::string>> fields;
  friend bool operator==(const run_identity&, const run_identity&) = default;
};

/// The canonical form of an option's value (see above).
std::string canonical_value(std::string_view text);

/// CRC-64/XZ of `bytes` (Boost.CRC).
std::uint64_t crc64(std::string_view bytes);

/// The identity of the run of the parsed subcommand `sub` with the models libraries `libraries`
/// loaded (their bytes are read for the checksum; an unreadable one is named by its path alone).
run_identity identity_of(const CLI::App& sub, const std::vector<std::string>& libraries);

/// The options of a command that change no output number, left out of its identity.
bool changes_no_number(std::string_view option);

/// The identity of the command that runs now (set by run_program before it runs the command).
run_identity& current_run_identity();

/// "field (a vs b), …" of the fields in which `a` and `b` differ (values cut to 40 characters), or
/// "" when they are equal.
std::string identity_differences(const run_identity& a, const run_identity& b);

/// A partial file read back.
struct partial_file {
  std::string command;
  run_identity identity;
  std::string payload;
};

/// The bytes of a partial file of `command` and `identity` holding `payload`.
std::string partial_file_bytes(const std::string& command, const run_identity& identity,
                               std::string_view payload);

/// Throws ncsde::invalid_argument "<name> is not a partial result of ncsde (<why>)": the refusal of
/// every reader of partial files and of the payloads inside them.
[[noreturn]] void refuse_partial(const std::string& name, std::string_view why);

/// Parses the bytes of a partial file; throws ncsde::invalid_argument "<name> is not a partial
/// result of ncsde (<why>)" when they are not one (wrong format line, checksum, lengths).
partial_file parse_partial_file(std::string_view bytes, const std::string& name);

/// Reads and parses a partial file. Refuses, naming the file, what is not a regular file (a
/// device, a FIFO: /dev/zero would never end). Its size is the caller's to check against memory
/// (ncsde merge: limits.hpp's check_memory over all the shards).
partial_file read_partial_file(const std::filesystem::path& path);

}  // namespace ncsde::cli
