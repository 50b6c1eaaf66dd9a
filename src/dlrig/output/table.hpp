#pragma once
// One result model, many printers: a Table is what every human view is made of; render_text
// aligns it for a terminal, render_markdown makes a GitHub table of it, render_csv a CSV file.
// Every cell and title goes through printable() (output/text.hpp): control characters from the
// machine reach no terminal raw.
#include "dlrig/core/snapshot_host.hpp"

#include <string>
#include <vector>

namespace dlrig {

// The output formats of every command (output/print.hpp prints a report in one of them).
enum class Format { table, json, markdown, csv };

struct Table {
  std::string title;               // printed above the table; may be empty
  std::vector<std::string> header; // empty = a two-column key/value table
  std::vector<std::vector<std::string>> rows;
  void add(std::vector<std::string> row) { rows.push_back(std::move(row)); }
};

// Aligned columns. `width` > 0 is the terminal's: when the line is wider, the columns are
// narrowed in proportion to their width and their cells (headers too) wrapped at spaces, a
// key/value table's keys and columns of at most 10 kept whole, the others not below their longest
// word (words over 30 are cut); a table that cannot fit so is printed unwrapped. 0 leaves every
// cell on one line (files, pipes).
std::string render_text(const Table &t, std::size_t width = 0);
std::string render_markdown(const Table &t);
std::string render_csv(const Table &t);
// `width` is render_text's; the other formats never wrap.
std::string render(const std::vector<Table> &tables, Format f, std::size_t width = 0);

// Value formatting for printers. Unknown values print as "n/a".
inline constexpr const char *kUnknown = "n/a";
std::string show(const OptStr &v);
std::string show(const OptBool &v, const char *yes = "yes", const char *no = "no");
std::string show_int(const std::optional<int> &v);
std::string show_count(const OptU64 &v);
std::string show_si(double v);              // counts as people say them: 13.5k, 200M, 8.03B, 15T
std::string show_bytes(const OptU64 &v);    // binary units: 79.6 GiB
std::string show_bytes_si(const OptU64 &v); // decimal units: 85.5 GB
std::string show_hz(const OptF64 &v);       // 1.98 GHz, 2619 MHz
std::string show_num(const OptF64 &v, const char *unit, int precision = 1); // "350.0 W"
std::string show_bps(const OptU64 &v);                                      // link speeds: 100 Gb/s

} // namespace dlrig
