#include "dlrig/output/table.hpp"
#include "dlrig/output/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dlrig {

namespace {

std::string pad(const std::string &s, std::size_t w) {
  return s + std::string(w - std::min(w, display_width(s)), ' ');
}

std::string md_escape(const std::string &text) {
  std::string out;
  for (char c : printable(text)) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += "<br>";
    else
      out += c;
  }
  return out.empty() ? " " : out;
}

std::string csv_escape(const std::string &text) {
  std::string s = printable(text);
  if (s.find_first_of(",\"\n") == std::string::npos)
    return s;
  std::string out = "\"";
  for (char c : s)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The table with every cell made printable, so widths count what the terminal shows.
Table printable(const Table &t) {
  Table out{dlrig::printable(t.title), {}, {}};
  out.header.reserve(t.header.size());
  for (const auto &h : t.header)
    out.header.push_back(dlrig::printable(h));
  out.rows.reserve(t.rows.size());
  for (const auto &r : t.rows) {
    std::vector<std::string> row;
    row.reserve(r.size());
    for (const auto &c : r)
      row.push_back(dlrig::printable(c));
    out.rows.push_back(std::move(row));
  }
  return out;
}

// The narrowest a column is made to fit a terminal: a key/value table's keys and a column of at
// most 10 (numbers with their unit) are kept whole; others down to their longest word, header
// included, up to 30 (a flag such as --optimizer-in-backward stays whole; longer words, URLs and
// paths, are cut), at least 4.
std::size_t floor_width(const Table &t, std::size_t col, std::size_t natural) {
  if (natural <= 10 || (t.header.empty() && col == 0))
    return natural;
  std::size_t floor = 4;
  auto words = [&](const std::string &cell) {
    for (std::size_t i = 0; i < cell.size();) {
      const auto end = std::min(cell.find_first_of(" \n", i), cell.size());
      floor = std::max(floor, std::min<std::size_t>(
                                  30, display_width(std::string_view(cell).substr(i, end - i))));
      i = end + 1;
    }
  };
  if (col < t.header.size())
    words(t.header[col]);
  for (const auto &r : t.rows)
    if (col < r.size())
      words(r[col]);
  return std::min(floor, natural);
}

// Narrows the columns so that the line (two spaces before and between the columns) fits
// `total`: each keeps its floor and a share of the room left in proportion to how much wider
// than its floor it would be. False, and `widths` as they were, when the floors alone do not fit:
// a table that cannot fit the terminal is left one line per row (for `less -S`) rather than
// wrapped and still too wide.
bool fit_columns(const Table &t, std::vector<std::size_t> &widths, std::size_t total) {
  const std::size_t n = widths.size();
  std::vector<std::size_t> floors(n);
  std::size_t line = 2 * n, narrowest = 2 * n;
  for (std::size_t i = 0; i < n; ++i) {
    floors[i] = floor_width(t, i, widths[i]);
    line += widths[i];
    narrowest += floors[i];
  }
  if (line <= total)
    return true;
  if (narrowest > total)
    return false;
  const std::size_t room = total - narrowest, excess = line - narrowest;
  const std::vector<std::size_t> natural = widths;
  std::size_t given = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t share = (natural[i] - floors[i]) * room / excess;
    widths[i] = floors[i] + share;
    given += share;
  }
  for (; given < room; ++given) { // what rounding down left: a column each to the most cut
    std::size_t most = 0;
    for (std::size_t i = 1; i < n; ++i)
      if (natural[i] - widths[i] > natural[most] - widths[most])
        most = i;
    ++widths[most];
  }
  return true;
}

} // namespace

std::string render_text(const Table &table, std::size_t width) {
  const Table t = printable(table);
  std::vector<std::size_t> widths(t.header.size(), 0);
  auto grow = [&](const std::vector<std::string> &row) {
    if (widths.size() < row.size())
      widths.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], display_width(row[i]));
  };
  grow(t.header);
  for (const auto &r : t.rows)
    grow(r);
  const bool wrap = width > 0 && fit_columns(t, widths, width);
  std::string out;
  if (!t.title.empty())
    out += wrap_after(t.title, width, 0, 2) + "\n";
  auto line = [&](const std::vector<std::string> &row) {
    // Each cell in lines of its column's width; a cell that fits is one line, as it is.
    std::vector<std::vector<std::string>> cells(row.size());
    std::size_t height = 1;
    for (std::size_t i = 0; i < row.size(); ++i) {
      cells[i] = wrap && display_width(row[i]) > widths[i]
                     ? wrap_words(row[i], widths[i], widths[i])
                     : std::vector<std::string>{row[i]};
      height = std::max(height, cells[i].size());
    }
    for (std::size_t k = 0; k < height; ++k) {
      std::string l = "  ";
      for (std::size_t i = 0; i < row.size(); ++i) {
        const std::string &c = k < cells[i].size() ? cells[i][k] : std::string();
        l += i + 1 == row.size() ? c : pad(c, widths[i]) + "  ";
      }
      while (!l.empty() && l.back() == ' ')
        l.pop_back();
      out += l + "\n";
    }
  };
  if (!t.header.empty()) {
    line(t.header);
    std::vector<std::string> rule;
    for (std::size_t i = 0; i < t.header.size(); ++i)
      rule.push_back(std::string(widths[i], '-'));
    line(rule);
  }
  for (const auto &r : t.rows)
    line(r);
  return out;
}

std::string render_markdown(const Table &t) {
  std::string out;
  if (!t.title.empty())
    out += "### " + dlrig::printable(t.title) + "\n\n";
  auto header = t.header.empty() ? std::vector<std::string>{"", ""} : t.header;
  auto line = [&](const std::vector<std::string> &row) {
    out += "|";
    for (const auto &c : row)
      out += " " + md_escape(c) + " |";
    out += "\n";
  };
  line(header);
  out += "|";
  for (std::size_t i = 0; i < header.size(); ++i)
    out += "---|";
  out += "\n";
  for (const auto &r : t.rows)
    line(r);
  return out;
}

std::string render_csv(const Table &t) {
  std::string out;
  auto line = [&](const std::vector<std::string> &row) {
    for (std::size_t i = 0; i < row.size(); ++i)
      out += (i ? "," : "") + csv_escape(row[i]);
    out += "\n";
  };
  if (!t.header.empty())
    line(t.header);
  for (const auto &r : t.rows)
    line(r);
  return out;
}

std::string render(const std::vector<Table> &tables, Format f, std::size_t width) {
  std::string out;
  for (const auto &t : tables) {
    if (!out.empty())
      out += "\n";
    out += f == Format::markdown ? render_markdown(t)
           : f == Format::csv    ? render_csv(t)
                                 : render_text(t, width);
  }
  return out;
}

std::string show(const OptStr &v) {
  return v ? *v : kUnknown;
}

std::string show(const OptBool &v, const char *yes, const char *no) {
  return v ? (*v ? yes : no) : kUnknown;
}

std::string show_int(const std::optional<int> &v) {
  return v ? std::to_string(*v) : kUnknown;
}

std::string show_count(const OptU64 &v) {
  return v ? std::to_string(*v) : kUnknown;
}

std::string show_si(double v) {
  // Two decimals from a billion, one below; zeros after the point are dropped (200M, not 200.0M).
  static const struct {
    double scale;
    const char *suffix;
    int decimals;
  } steps[] = {{1e12, "T", 2}, {1e9, "B", 2}, {1e6, "M", 1}, {1e3, "k", 1}, {1, "", 1}};
  for (const auto &s : steps)
    if (v >= s.scale || s.scale == 1) {
      std::string n = fmt::format("{:.{}f}", v / s.scale, s.decimals);
      while (n.back() == '0')
        n.pop_back();
      if (n.back() == '.')
        n.pop_back();
      return n + s.suffix;
    }
  return {};
}

namespace {
std::string scaled(double value, double base, const char *const *units, int n) {
  int i = 0;
  while (value >= base && i + 1 < n) {
    value /= base;
    ++i;
  }
  return i == 0 ? fmt::format("{:.0f} {}", value, units[i])
                : fmt::format("{:.1f} {}", value, units[i]);
}
} // namespace

std::string show_bytes(const OptU64 &v) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  return v ? scaled(static_cast<double>(*v), 1024.0, units, 6) : kUnknown;
}

std::string show_bytes_si(const OptU64 &v) {
  static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  return v ? scaled(static_cast<double>(*v), 1000.0, units, 6) : kUnknown;
}

std::string show_hz(const OptF64 &v) {
  if (!v)
    return kUnknown;
  if (*v >= 1e9)
    return fmt::format("{:.2f} GHz", *v / 1e9);
  return fmt::format("{:.0f} MHz", *v / 1e6);
}

std::string show_num(const OptF64 &v, const char *unit, int precision) {
  if (!v)
    return kUnknown;
  return fmt::format("{:.{}f}{}{}", *v, precision, *unit ? " " : "", unit);
}

std::string show_bps(const OptU64 &v) {
  static const char *const units[] = {"b/s", "kb/s", "Mb/s", "Gb/s", "Tb/s"};
  return v ? scaled(static_cast<double>(*v), 1000.0, units, 5) : kUnknown;
}

} // namespace dlrig
