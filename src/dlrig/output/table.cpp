#include "dlrig/output/table.hpp"
#include "dlrig/output/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dlrig {

namespace {

// Display width of UTF-8 text: counts code points, which is right for the text dlrig prints.
std::size_t width(const std::string &s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string pad(const std::string &s, std::size_t w) {
  return s + std::string(w - std::min(w, width(s)), ' ');
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

} // namespace

std::string render_text(const Table &table) {
  const Table t = printable(table);
  std::vector<std::size_t> widths(t.header.size(), 0);
  auto grow = [&](const std::vector<std::string> &row) {
    if (widths.size() < row.size())
      widths.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], width(row[i]));
  };
  grow(t.header);
  for (const auto &r : t.rows)
    grow(r);
  std::string out;
  if (!t.title.empty())
    out += t.title + "\n";
  auto line = [&](const std::vector<std::string> &row) {
    std::string l = "  ";
    for (std::size_t i = 0; i < row.size(); ++i)
      l += i + 1 == row.size() ? row[i] : pad(row[i], widths[i]) + "  ";
    while (!l.empty() && l.back() == ' ')
      l.pop_back();
    out += l + "\n";
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

std::string render(const std::vector<Table> &tables, Format f) {
  std::string out;
  for (const auto &t : tables) {
    if (!out.empty())
      out += "\n";
    out += f == Format::markdown ? render_markdown(t)
           : f == Format::csv    ? render_csv(t)
                                 : render_text(t);
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
