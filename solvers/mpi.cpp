#include "ncsde/mpi.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <string_view>
#include <vector>

#include "ncsde/error.hpp"

namespace ncsde::mpi {

namespace {

int rank_of(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

int size_of(MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  return size;
}

/// Bytes travel in chunks of at most 1 GiB (MPI counts are int).
constexpr long long chunk_bytes = 1LL << 30;

void send_bytes(MPI_Comm comm, std::string_view bytes, int to, int tag) {
  long long length = static_cast<long long>(bytes.size());
  MPI_Send(&length, 1, MPI_LONG_LONG, to, tag, comm);
  for (long long at = 0; at < length; at += chunk_bytes) {
    const int n = static_cast<int>(std::min(chunk_bytes, length - at));
    MPI_Send(bytes.data() + at, n, MPI_BYTE, to, tag, comm);
  }
}

std::string receive_bytes(MPI_Comm comm, int from, int tag) {
  long long length = 0;
  MPI_Recv(&length, 1, MPI_LONG_LONG, from, tag, comm, MPI_STATUS_IGNORE);
  std::string bytes(static_cast<std::size_t>(length), '\0');
  for (long long at = 0; at < length; at += chunk_bytes) {
    const int n = static_cast<int>(std::min(chunk_bytes, length - at));
    MPI_Recv(bytes.data() + at, n, MPI_BYTE, from, tag, comm, MPI_STATUS_IGNORE);
  }
  return bytes;
}

constexpr int piece_tag = 7301;

}  // namespace

path_range rank_paths(long long paths, long long block_size, int rank, int size) {
  if (paths < 0) throw_invalid_argument("mpi::rank_paths", "paths", paths, ">= 0");
  if (block_size < 1) throw_invalid_argument("mpi::rank_paths", "block_size", block_size, ">= 1");
  if (size < 1) throw_invalid_argument("mpi::rank_paths", "size", size, ">= 1");
  if (rank < 0 || rank >= size)
    throw_invalid_argument("mpi::rank_paths", "rank", rank, fmt::format("in [0, {})", size));
  const long long blocks = (paths + block_size - 1) / block_size;
  // rank·blocks fits: blocks ≤ paths < 2^63 / size for any run that fits in memory.
  const long long first = blocks * rank / size;
  const long long last = blocks * (rank + 1) / size;
  return {std::min(paths, first * block_size), std::min(paths, last * block_size)};
}

rank_failure::rank_failure(int rank, int size, const std::string& message)
    : std::runtime_error(fmt::format("rank {} of {}: {}", rank, size, message)), m_rank(rank) {}

std::optional<failure> first_failure(MPI_Comm comm, const std::optional<std::string>& mine) {
  const int size = size_of(comm);
  const int failed = mine ? 1 : 0;
  std::vector<int> flags(static_cast<std::size_t>(size));
  MPI_Allgather(&failed, 1, MPI_INT, flags.data(), 1, MPI_INT, comm);
  const auto it = std::find(flags.begin(), flags.end(), 1);
  if (it == flags.end()) return std::nullopt;
  failure f;
  f.rank = static_cast<int>(it - flags.begin());
  long long length = rank_of(comm) == f.rank ? static_cast<long long>(mine->size()) : 0;
  MPI_Bcast(&length, 1, MPI_LONG_LONG, f.rank, comm);
  f.message = rank_of(comm) == f.rank ? *mine : std::string(static_cast<std::size_t>(length), '\0');
  if (length > 0) MPI_Bcast(f.message.data(), static_cast<int>(length), MPI_CHAR, f.rank, comm);
  return f;
}

std::optional<std::vector<std::string>> gather_pieces(MPI_Comm comm,
                                                      const std::function<std::string()>& piece,
                                                      int root) {
  const int rank = rank_of(comm), size = size_of(comm);
  if (root < 0 || root >= size)
    throw_invalid_argument("mpi::gather_pieces", "root", root, fmt::format("in [0, {})", size));
  std::string mine;
  std::optional<std::string> error;
  try {
    mine = piece();
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception";
  }
  if (const std::optional<failure> f = first_failure(comm, error))
    throw rank_failure(f->rank, size, f->message);
  if (rank != root) {
    send_bytes(comm, mine, root, piece_tag);
    return std::nullopt;
  }
  std::vector<std::string> pieces(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r)
    pieces[static_cast<std::size_t>(r)] =
        r == root ? std::move(mine) : receive_bytes(comm, r, piece_tag);
  return pieces;
}

path_sharing rank_sharing(MPI_Comm comm, int root) {
  path_sharing s;
  s.mine = [comm](long long paths, long long block_size) {
    return rank_paths(paths, block_size, rank_of(comm), size_of(comm));
  };
  s.gather = [comm, root](const std::function<std::string()>& piece) {
    return gather_pieces(comm, piece, root);
  };
  return s;
}

std::optional<ensemble_result> run_distributed(MPI_Comm comm,
                                               const std::function<ensemble_partial()>& piece,
                                               const ensemble_options& opt, int root) {
  const std::optional<std::vector<std::string>> bytes = gather_pieces(
      comm, [&] { return serialize(piece()); }, root);
  if (!bytes) return std::nullopt;
  std::vector<ensemble_partial> pieces;
  pieces.reserve(bytes->size());
  for (std::size_t r = 0; r < bytes->size(); ++r) {
    try {
      pieces.push_back(deserialize_ensemble_partial((*bytes)[r]));
    } catch (const std::exception& e) {
      throw rank_failure(root, static_cast<int>(bytes->size()),
                         fmt::format("the piece of rank {}: {}", r, e.what()));
    }
  }
  return finish_ensemble(merge_partials(std::move(pieces)), opt);
}

}  // namespace ncsde::mpi
