#pragma once
// Internal to the kb loader: typed access to one CSV record, with errors that name the file, the
// line and the column. Parsers catch RowError and return it as a Result error.
#include "dlrig/kb/csv.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::kb::detail {

struct RowError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A numeric range as the data writes it: "350" or "300-350".
struct Range {
  double low = 0, high = 0;
};

class Row {
public:
  Row(const CsvTable &table, const CsvRecord &record, std::string_view file)
      : table_(table), record_(record), file_(file) {}

  // The text of a column (header checked by require_columns, so the column exists).
  const std::string &str(std::string_view column) const;
  // Text that must not be blank.
  const std::string &required(std::string_view column) const;
  // Blank -> nullopt; anything else must be a finite decimal number.
  std::optional<double> number(std::string_view column) const;
  std::optional<int> integer(std::string_view column) const;
  std::optional<Range> range(std::string_view column) const;
  // yes | no | blank (unknown).
  std::optional<bool> yes_no(std::string_view column) const;
  // A ';'-separated list; blank -> empty.
  std::vector<std::string> list(std::string_view column) const;

  [[noreturn]] void fail(std::string_view column, const std::string &what) const;
  std::size_t line() const { return record_.line; }

private:
  const CsvTable &table_;
  const CsvRecord &record_;
  std::string_view file_;
};

// Fails (RowError) unless the header holds every column named; the message sends the reader to
// `doc`, the document that lists the file's columns.
void require_columns(const CsvTable &table, std::string_view file,
                     const std::vector<std::string_view> &columns,
                     std::string_view doc = "docs/knowledge-base.md");

std::string trim(std::string_view s);
std::string lower(std::string_view s);

} // namespace dlrig::kb::detail
