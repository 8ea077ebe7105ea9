#pragma once
/// Internals shared by the binary forms of the library's partial results (ensemble_partial.cpp,
/// networks/sample.cpp; not installed): every number a little-endian 64-bit word (doubles by their
/// bits, so they come back exact; counts, signed integers and enums as 64-bit integers), a string or
/// a vector as its length and then its items, a matrix as rows, columns and its entries row by row.
/// The reader checks every count against the bytes left and names what it read in its errors.
#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ncsde/error.hpp"
#include "ncsde/symmetric.hpp"

namespace ncsde::detail {

/// The writer; Derived adds put() for its own types (and `using byte_writer::put`), which the
/// vector form finds through Derived.
template <class Derived>
class byte_writer {
 public:
  template <class T>
    requires std::is_arithmetic_v<T> || std::is_enum_v<T>
  void put(T x) {
    if constexpr (std::is_enum_v<T>) {
      put(static_cast<std::int64_t>(x));
    } else if constexpr (std::is_same_v<T, bool>) {
      put(static_cast<std::int64_t>(x ? 1 : 0));
    } else if constexpr (std::is_floating_point_v<T>) {
      put(std::bit_cast<std::uint64_t>(static_cast<double>(x)));
    } else {
      const auto u = static_cast<std::uint64_t>(x);
      for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
    }
  }
  void put(std::string_view s) {
    put(static_cast<std::uint64_t>(s.size()));
    out.append(s);
  }
  void put(const vector& v) {
    put(static_cast<std::uint64_t>(v.size()));
    for (Eigen::Index i = 0; i < v.size(); ++i) put(v(i));
  }
  void put(const matrix& a) {
    put(static_cast<std::uint64_t>(a.rows()));
    put(static_cast<std::uint64_t>(a.cols()));
    for (Eigen::Index i = 0; i < a.rows(); ++i)
      for (Eigen::Index j = 0; j < a.cols(); ++j) put(a(i, j));
  }
  template <class T>
  void put(const std::vector<T>& v) {
    put(static_cast<std::uint64_t>(v.size()));
    for (const T& x : v) static_cast<Derived&>(*this).put(x);
  }

  std::string out;
};

/// The reader; `what` prefixes its errors ("<what> (<problem> at byte i of n)").
class byte_reader {
 public:
  byte_reader(std::string_view in, std::string what) : m_in(in), m_what(std::move(what)) {}

  [[noreturn]] void fail(std::string_view problem) const {
    throw invalid_argument(
        fmt::format("{} ({} at byte {} of {})", m_what, problem, m_at, m_in.size()));
  }
  std::uint64_t u64() {
    if (m_in.size() - m_at < 8) fail("truncated");
    std::uint64_t u = 0;
    for (int i = 0; i < 8; ++i)
      u |= static_cast<std::uint64_t>(static_cast<unsigned char>(m_in[m_at + i])) << (8 * i);
    m_at += 8;
    return u;
  }
  long long i64() { return static_cast<long long>(u64()); }
  double f64() { return std::bit_cast<double>(u64()); }
  bool boolean() {
    const std::uint64_t u = u64();
    if (u > 1) fail("a flag that is neither 0 nor 1");
    return u == 1;
  }
  /// An enum stored as its value, which must lie in [0, last].
  template <class E>
  E enumeration(E last, std::string_view name) {
    const long long v = i64();
    if (v < 0 || v > static_cast<long long>(last)) fail(fmt::format("an unknown {}", name));
    return static_cast<E>(v);
  }
  /// A count of items of at least `min_bytes` each, checked against the bytes left.
  std::size_t count(std::size_t min_bytes) {
    const std::uint64_t n = u64();
    if (min_bytes > 0 && n > (m_in.size() - m_at) / min_bytes) fail("a count larger than the data");
    return static_cast<std::size_t>(n);
  }
  std::string string() {
    const std::size_t n = count(1);
    std::string s(m_in.substr(m_at, n));
    m_at += n;
    return s;
  }
  vector vec() {
    vector v(static_cast<Eigen::Index>(count(8)));
    for (Eigen::Index i = 0; i < v.size(); ++i) v(i) = f64();
    return v;
  }
  matrix mat() {
    const std::size_t r = count(0), c = count(0);
    // Each side a valid Eigen::Index (an empty matrix too), the entries within the bytes left.
    if (r > (std::size_t{1} << 31) || c > (std::size_t{1} << 31))
      fail("a matrix shape out of range");
    if (r > 0 && c > (m_in.size() - m_at) / 8 / r) fail("a matrix larger than the data");
    matrix a(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c));
    for (Eigen::Index i = 0; i < a.rows(); ++i)
      for (Eigen::Index j = 0; j < a.cols(); ++j) a(i, j) = f64();
    return a;
  }
  std::vector<double> doubles() {
    std::vector<double> v(count(8));
    for (double& x : v) x = f64();
    return v;
  }
  std::vector<vector> vecs() {
    std::vector<vector> v(count(8));
    for (vector& x : v) x = vec();
    return v;
  }
  bool done() const { return m_at == m_in.size(); }
  std::size_t at() const { return m_at; }

 private:
  std::string_view m_in;
  std::size_t m_at = 0;
  std::string m_what;
};

}  // namespace ncsde::detail
