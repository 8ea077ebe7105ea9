/// libFuzzer target: the readers of the partial files that `ncsde merge` joins
/// (validation/partial_file.hpp) and of the payloads inside them: the file form with its run
/// identity and checksum (parse_partial_file), and, since no random input carries a right checksum,
/// the payload readers on the raw input too: an ensemble piece (deserialize_ensemble_partial), a
/// network ensemble (deserialize_network_ensemble) and an SDE sample (deserialize_sde_sample). The
/// input is also wrapped as the payload of a well-formed file, so that the file reader's own
/// fields are reached past the checksum.
///
/// Properties, beyond "no crash, no leak, no undefined behaviour" and "memory in proportion to the
/// input" (-malloc_limit_mb, tests/fuzz/CMakeLists.txt):
///   - every reader refuses with ncsde::invalid_argument and nothing else;
///   - a file accepted by parse_partial_file is written back, by partial_file_bytes, byte for byte
///     as it was read, and an input wrapped by partial_file_bytes is read back unchanged;
///   - an ensemble piece that is accepted describes a run that run_ensemble could make (m >= 1,
///     finite ordered times, dt > 0, its range inside [0, paths)) and is written back by
///     serialize() byte for byte.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "ncsde/ensemble.hpp"
#include "ncsde/error.hpp"
#include "ncsde/models/stopped_sample.hpp"
#include "ncsde/networks/sample.hpp"
#include "partial_file.hpp"

namespace {

using ncsde::fuzz::check;

void file_form(std::string_view input) {
  ncsde::cli::partial_file f;
  try {
    f = ncsde::cli::parse_partial_file(input, "input");
  } catch (const ncsde::invalid_argument&) {
    return;
  }
  check(ncsde::cli::partial_file_bytes(f.command, f.identity, f.payload) == input,
        "an accepted partial file is written back byte for byte", input);
}

void wrapped(std::string_view input) {
  ncsde::cli::run_identity id;
  id.fields.emplace_back("--V0", std::string(input.substr(0, input.size() / 2)));
  const std::string bytes = ncsde::cli::partial_file_bytes("simulate", id, input);
  const ncsde::cli::partial_file f = ncsde::cli::parse_partial_file(bytes, "wrapped");
  check(f.command == "simulate" && f.identity == id && f.payload == input,
        "a wrapped payload is read back unchanged", input);
}

void ensemble_piece(std::string_view input) {
  ncsde::ensemble_partial p;
  try {
    p = ncsde::deserialize_ensemble_partial(input);
  } catch (const ncsde::invalid_argument&) {
    return;
  }
  const ncsde::ensemble_result& r = p.run;
  check(r.m >= 1 && std::isfinite(r.t0) && std::isfinite(r.t_end) && r.t_end >= r.t0 &&
            r.dt > 0.0 && std::isfinite(r.dt) && p.range.first >= 0 &&
            p.range.first <= p.range.last && p.range.last <= r.paths,
        "an accepted ensemble piece is one that a run could make", input);
  check(ncsde::serialize(p) == input, "an accepted ensemble piece is written back byte for byte",
        input);
}

template <class Read>
void refuses_cleanly(Read read) {
  try {
    read();
  } catch (const ncsde::invalid_argument&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  file_form(input);
  wrapped(input);
  ensemble_piece(input);
  refuses_cleanly([&] { (void)ncsde::networks::deserialize_network_ensemble(input); });
  refuses_cleanly([&] { (void)ncsde::models::deserialize_sde_sample(input); });
  return 0;
}
