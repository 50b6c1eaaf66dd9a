#pragma once
// Small text helpers, one copy for the whole library: case, whitespace, joining, file names,
// digit grouping, excerpts for messages, "did you mean" (edit distance, nearest names) and
// numbers parsed without exceptions. Byte-wise: names and ids are ASCII.
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace dlrig {

std::string lower(std::string_view s);
// Without leading and trailing whitespace (space, tab, CR, LF, VT, FF) and NUL bytes.
std::string_view trim(std::string_view s);
std::string join(const std::vector<std::string> &parts, std::string_view sep);
// The last component of a path: "/usr/lib/libcuda.so.1" -> "libcuda.so.1"; "a/b/" -> "b".
std::string basename(std::string_view path);
// 172119424 -> "172,119,424" (a comma every three digits; a leading minus kept).
std::string group_digits(long long n);
// Text from outside (a peer's line, a database cell) as a message quotes it: its first `max`
// bytes, anything unprintable as '?', "..." after a longer one.
std::string excerpt(std::string_view text, std::size_t max = 80);

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// neighbours ("4009" for "4090" is one typo). Case-sensitive; lower() both sides to ignore case.
std::size_t edit_distance(std::string_view a, std::string_view b);
// Up to `n` of `names` nearest to `query`, nearest first, case-insensitive: a name is as near as
// its closest run of words as long as the query ("rtx 4009" finds "GeForce RTX 4090"); ties go
// to the name nearest as a whole, then to the order given. Repeated names count once.
std::vector<std::string> nearest_names(const std::vector<std::string> &names,
                                       std::string_view query, std::size_t n = 3);

// Parses a number (a flag's, or digits a parser has cut out); nullopt unless the whole text is a
// finite number of type T (whole for integer T, never NaN or infinity) within [lo, hi]: never
// throws, where std::stoi and std::stod throw on "." or on digits beyond the type's range.
template <class T> std::optional<T> parse_ranged(const std::string &text, T lo, T hi) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front())))
    return std::nullopt;
  T v{};
  if constexpr (std::is_integral_v<T>) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size())
      return std::nullopt;
  } else {
    char *end = nullptr;
    errno = 0;
    double d = std::strtod(text.c_str(), &end);
    if (errno == ERANGE || end != text.c_str() + text.size() || !std::isfinite(d))
      return std::nullopt;
    v = static_cast<T>(d);
  }
  if (!(v >= lo && v <= hi))
    return std::nullopt;
  return v;
}

} // namespace dlrig
