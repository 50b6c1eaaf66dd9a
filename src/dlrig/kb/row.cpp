#include "dlrig/kb/row.hpp"

#include "dlrig/core/text.hpp"

#include <cctype>
#include <charconv>
#include <cmath>

namespace dlrig::kb::detail {

// The knowledge base's rows want owned strings; the work is core/text's.
std::string trim(std::string_view s) {
  return std::string(dlrig::trim(s));
}

std::string lower(std::string_view s) {
  return dlrig::lower(s);
}

void require_columns(const CsvTable &table, std::string_view file,
                     const std::vector<std::string_view> &columns, std::string_view doc) {
  for (auto c : columns)
    if (table.column(c) < 0)
      throw RowError(std::string(file) + ":1: the header has no column '" + std::string(c) +
                     "' (see " + std::string(doc) + " for the columns of this file)");
}

void Row::fail(std::string_view column, const std::string &what) const {
  throw RowError(std::string(file_) + ":" + std::to_string(record_.line) + ": column " +
                 std::string(column) + ": " + what);
}

const std::string &Row::str(std::string_view column) const {
  int i = table_.column(column);
  if (i < 0)
    throw RowError(std::string(file_) + ": no column '" + std::string(column) + "'");
  return record_.fields[static_cast<std::size_t>(i)];
}

const std::string &Row::required(std::string_view column) const {
  const auto &s = str(column);
  if (trim(s).empty())
    fail(column, "must not be blank");
  return s;
}

namespace {
std::optional<double> to_double(std::string_view t) {
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}
} // namespace

std::optional<double> Row::number(std::string_view column) const {
  auto t = trim(str(column));
  if (t.empty())
    return std::nullopt;
  auto v = to_double(t);
  if (!v)
    fail(column, "'" + excerpt(t) + "' is not a number");
  return v;
}

std::optional<int> Row::integer(std::string_view column) const {
  auto t = trim(str(column));
  if (t.empty())
    return std::nullopt;
  int v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size())
    fail(column, "'" + excerpt(t) + "' is not a whole number");
  return v;
}

std::optional<Range> Row::range(std::string_view column) const {
  auto t = trim(str(column));
  if (t.empty())
    return std::nullopt;
  // A leading '-' would be a negative number, not a range: look for the dash after the first
  // character.
  auto dash = t.find('-', 1);
  if (dash == std::string::npos) {
    auto v = to_double(t);
    if (!v)
      fail(column, "'" + excerpt(t) + "' is not a number or a range like 300-350");
    return Range{*v, *v};
  }
  auto lo = to_double(trim(std::string_view(t).substr(0, dash)));
  auto hi = to_double(trim(std::string_view(t).substr(dash + 1)));
  if (!lo || !hi)
    fail(column, "'" + excerpt(t) + "' is not a number or a range like 300-350");
  if (*lo > *hi)
    fail(column, "range '" + excerpt(t) + "' runs backwards");
  return Range{*lo, *hi};
}

std::optional<bool> Row::yes_no(std::string_view column) const {
  auto t = trim(str(column));
  if (t.empty())
    return std::nullopt;
  if (t == "yes")
    return true;
  if (t == "no")
    return false;
  fail(column, "'" + excerpt(t) + "' is not yes, no or blank");
}

std::vector<std::string> Row::list(std::string_view column) const {
  std::vector<std::string> out;
  const auto &s = str(column);
  std::size_t start = 0;
  while (start <= s.size()) {
    auto end = s.find(';', start);
    if (end == std::string::npos)
      end = s.size();
    auto item = trim(std::string_view(s).substr(start, end - start));
    if (!item.empty())
      out.push_back(item);
    start = end + 1;
  }
  return out;
}

} // namespace dlrig::kb::detail
