#pragma once
// A small RFC 4180 CSV reader for the knowledge-base files: comma-separated fields, fields in
// double quotes may hold commas, quotes ("" for one) and line breaks; CRLF or LF line ends.
// The first record is the header. Empty lines are skipped.
#include "dlrig/core/result.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::kb {

struct CsvRecord {
  std::size_t line = 0; // 1-based line where the record starts
  std::vector<std::string> fields;
};

struct CsvTable {
  std::vector<std::string> header;
  std::vector<CsvRecord> records; // every record has header.size() fields

  // Index of a header column; -1 when absent.
  int column(std::string_view name) const;
};

// Errors name file:line: an unterminated quote, text after a closing quote, or a record whose
// field count differs from the header's.
Result<CsvTable> parse_csv(std::string_view text, std::string_view file);

} // namespace dlrig::kb
