#include "dlrig/output/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dlrig {

namespace {

// Length of the well-formed UTF-8 sequence at s[i] and its code point; 0 when it is not one.
std::size_t sequence_at(std::string_view s, std::size_t i, char32_t &cp) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  unsigned char c = b(0);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  std::size_t n = 0;
  char32_t min = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
    min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
    min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
    min = 0x10000;
  } else {
    return 0;
  }
  for (std::size_t k = 1; k < n; ++k) {
    if (!cont(k))
      return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

} // namespace

bool is_valid_utf8(std::string_view s) {
  char32_t cp = 0;
  for (std::size_t i = 0; i < s.size();) {
    auto n = sequence_at(s, i, cp);
    if (n == 0)
      return false;
    i += n;
  }
  return true;
}

std::string valid_utf8(std::string_view s) {
  if (is_valid_utf8(s))
    return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  char32_t cp = 0;
  for (std::size_t i = 0; i < s.size();) {
    auto n = sequence_at(s, i, cp);
    if (n == 0) {
      out += "\xEF\xBF\xBD"; // U+FFFD
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char32_t cp = 0;
  for (std::size_t i = 0; i < s.size();) {
    auto n = sequence_at(s, i, cp);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    bool control =
        (cp < 0x20 && cp != '\n' && cp != '\t') || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F);
    if (control)
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(cp));
    else
      out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (char c : s)
    n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

namespace {

// The first `cols` code points of s, as bytes.
std::size_t prefix_bytes(std::string_view s, std::size_t cols) {
  std::size_t i = 0;
  for (std::size_t seen = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80)
      continue;
    if (seen++ == cols)
      break;
  }
  return i;
}

} // namespace

std::vector<std::string> wrap_words(std::string_view text, std::size_t first, std::size_t rest) {
  std::vector<std::string> lines;
  auto limit = [&] { return lines.empty() ? first : rest; };
  std::size_t start = 0;
  while (true) { // one paragraph (a line of `text`) a turn
    const auto end = std::min(text.find('\n', start), text.size());
    std::string_view para = text.substr(start, end - start);
    std::string line;
    bool any = false;
    std::size_t i = 0;
    while (i < para.size()) {
      const auto sp = std::min(para.find(' ', i), para.size());
      std::string_view word = para.substr(i, sp - i);
      i = sp + 1;
      if (word.empty()) // runs of spaces: one where the line goes on, none where it breaks
        continue;
      while (true) {
        const std::size_t w = limit();
        const std::size_t have = display_width(line);
        const std::size_t need = display_width(word) + (any ? 1 : 0);
        if (w == 0 || have + need <= w) {
          line += (any ? " " : "") + std::string(word);
          any = true;
          break;
        }
        if (any) { // the word goes to the next line
          lines.push_back(std::move(line));
          line.clear();
          any = false;
          continue;
        }
        const auto cut = prefix_bytes(word, w); // alone and still too long: cut it
        lines.push_back(std::string(word.substr(0, cut)));
        word = word.substr(cut);
        if (word.empty())
          break;
      }
    }
    lines.push_back(std::move(line));
    if (end >= text.size())
      break;
    start = end + 1;
  }
  return lines;
}

std::string wrap_after(std::string_view text, std::size_t width, std::size_t lead,
                       std::size_t hang) {
  if (width == 0 || lead + display_width(text) <= width || width <= hang + 10 || width <= lead)
    return std::string(text);
  const auto lines = wrap_words(text, width - lead, width - hang);
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i)
    out += (i ? "\n" + std::string(hang, ' ') : std::string()) + lines[i];
  return out;
}

} // namespace dlrig
