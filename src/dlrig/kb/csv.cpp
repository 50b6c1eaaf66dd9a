#include "dlrig/kb/csv.hpp"

namespace dlrig::kb {

int CsvTable::column(std::string_view name) const {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name)
      return static_cast<int>(i);
  return -1;
}

namespace {

std::string where(std::string_view file, std::size_t line) {
  return std::string(file) + ":" + std::to_string(line) + ": ";
}

} // namespace

Result<CsvTable> parse_csv(std::string_view text, std::string_view file) {
  std::vector<CsvRecord> all;
  std::size_t i = 0;
  std::size_t line = 1;
  const std::size_t n = text.size();
  while (i < n) {
    CsvRecord rec;
    rec.line = line;
    // Skip blank lines between records.
    if (text[i] == '\n' || text[i] == '\r') {
      if (text[i] == '\r' && i + 1 < n && text[i + 1] == '\n')
        ++i;
      ++i;
      ++line;
      continue;
    }
    bool end_of_record = false;
    while (!end_of_record) {
      std::string field;
      if (i < n && text[i] == '"') {
        ++i;
        bool closed = false;
        while (i < n) {
          char c = text[i];
          if (c == '"') {
            if (i + 1 < n && text[i + 1] == '"') {
              field += '"';
              i += 2;
              continue;
            }
            ++i;
            closed = true;
            break;
          }
          if (c == '\n')
            ++line;
          field += c;
          ++i;
        }
        if (!closed)
          return make_error(where(file, rec.line) + "a quoted field is never closed (add the " +
                            "closing '\"')");
        if (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
          return make_error(where(file, line) + "text after a closing quote (quote the whole " +
                            "field, and write \"\" for a quote inside it)");
      } else {
        while (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
          if (text[i] == '"')
            return make_error(where(file, line) + "a quote inside an unquoted field (quote " +
                              "the whole field, and write \"\" for a quote inside it)");
          field += text[i];
          ++i;
        }
      }
      rec.fields.push_back(std::move(field));
      if (i >= n) {
        end_of_record = true;
      } else if (text[i] == ',') {
        ++i;
      } else {
        if (text[i] == '\r' && i + 1 < n && text[i + 1] == '\n')
          ++i;
        ++i;
        ++line;
        end_of_record = true;
      }
    }
    all.push_back(std::move(rec));
  }
  if (all.empty())
    return make_error(std::string(file) + ": empty file (a header line is expected)");
  CsvTable table;
  table.header = std::move(all.front().fields);
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (all[r].fields.size() != table.header.size())
      return make_error(where(file, all[r].line) + std::to_string(all[r].fields.size()) +
                        " fields, the header has " + std::to_string(table.header.size()));
    table.records.push_back(std::move(all[r]));
  }
  return table;
}

} // namespace dlrig::kb
