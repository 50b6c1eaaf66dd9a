#include "dlrig/core/python_json.hpp"

namespace dlrig {

std::string python_json_to_json(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size())
        out += text[++i];
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    const std::string_view rest = text.substr(i);
    std::size_t word = 0;
    for (std::string_view w : {"-Infinity", "Infinity", "NaN"})
      if (rest.starts_with(w)) {
        word = w.size();
        break;
      }
    if (word > 0) {
      out += "null";
      i += word - 1;
      continue;
    }
    out += c;
  }
  return out;
}

} // namespace dlrig
