#pragma once
// Small text helpers, one copy for the whole library: case, whitespace, joining, file names,
// digit grouping, excerpts for messages and "did you mean" (edit distance, nearest names).
// Byte-wise: names and ids are ASCII.
#include <cstddef>
#include <string>
#include <string_view>
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

} // namespace dlrig
