#include "dlrig/output/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

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

namespace {

struct Range {
  char32_t first, last;
};

// Code points a terminal draws in no column: combining marks (accents over the letter before),
// zero-width spaces and joiners, direction marks, variation selectors, the byte-order mark.
constexpr Range kZeroWidth[] = {
    {0x0300, 0x036F}, {0x0483, 0x0489},  {0x0591, 0x05BD}, {0x0610, 0x061A}, {0x064B, 0x065F},
    {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF},  {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2064},
    {0x20D0, 0x20FF}, {0x302A, 0x302D},  {0x3099, 0x309A}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F},
    {0xFEFF, 0xFEFF}, {0xE0100, 0xE01EF}};

// Code points a terminal draws in two columns: the Wide (W) and Fullwidth (F) blocks of
// Unicode's East Asian Width property (UAX #11, https://www.unicode.org/reports/tr11/): Hangul
// Jamo, CJK radicals, punctuation, kana, Bopomofo, CJK ideographs and their extensions, Yi,
// Hangul syllables, compatibility ideographs, vertical and small forms, fullwidth forms, Tangut,
// Nushu, and the emoji blocks.
constexpr Range kWide[] = {
    {0x1100, 0x115F},   {0x231A, 0x231B},   {0x2329, 0x232A},   {0x23E9, 0x23EC},
    {0x23F0, 0x23F0},   {0x23F3, 0x23F3},   {0x25FD, 0x25FE},   {0x2614, 0x2615},
    {0x2648, 0x2653},   {0x267F, 0x267F},   {0x2693, 0x2693},   {0x26A1, 0x26A1},
    {0x26AA, 0x26AB},   {0x26BD, 0x26BE},   {0x26C4, 0x26C5},   {0x26CE, 0x26CE},
    {0x26D4, 0x26D4},   {0x26EA, 0x26EA},   {0x26F2, 0x26F3},   {0x26F5, 0x26F5},
    {0x26FA, 0x26FA},   {0x26FD, 0x26FD},   {0x2705, 0x2705},   {0x270A, 0x270B},
    {0x2728, 0x2728},   {0x274C, 0x274C},   {0x274E, 0x274E},   {0x2753, 0x2755},
    {0x2757, 0x2757},   {0x2795, 0x2797},   {0x27B0, 0x27B0},   {0x27BF, 0x27BF},
    {0x2B1B, 0x2B1C},   {0x2B50, 0x2B50},   {0x2B55, 0x2B55},   {0x2E80, 0x3029},
    {0x302E, 0x303E},   {0x3041, 0x3098},   {0x309B, 0x33FF},   {0x3400, 0x4DBF},
    {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},   {0xA960, 0xA97F},   {0xAC00, 0xD7A3},
    {0xF900, 0xFAFF},   {0xFE10, 0xFE19},   {0xFE30, 0xFE6F},   {0xFF00, 0xFF60},
    {0xFFE0, 0xFFE6},   {0x16FE0, 0x16FE4}, {0x17000, 0x18CFF}, {0x1B000, 0x1B2FF},
    {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF}, {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A},
    {0x1F200, 0x1F202}, {0x1F210, 0x1F23B}, {0x1F240, 0x1F248}, {0x1F250, 0x1F251},
    {0x1F260, 0x1F265}, {0x1F300, 0x1F320}, {0x1F32D, 0x1F335}, {0x1F337, 0x1F37C},
    {0x1F37E, 0x1F393}, {0x1F3A0, 0x1F3CA}, {0x1F3CF, 0x1F3D3}, {0x1F3E0, 0x1F3F0},
    {0x1F3F4, 0x1F3F4}, {0x1F3F8, 0x1F43E}, {0x1F440, 0x1F440}, {0x1F442, 0x1F4FC},
    {0x1F4FF, 0x1F53D}, {0x1F54B, 0x1F54E}, {0x1F550, 0x1F567}, {0x1F57A, 0x1F57A},
    {0x1F595, 0x1F596}, {0x1F5A4, 0x1F5A4}, {0x1F5FB, 0x1F64F}, {0x1F680, 0x1F6C5},
    {0x1F6CC, 0x1F6CC}, {0x1F6D0, 0x1F6D2}, {0x1F6D5, 0x1F6D7}, {0x1F6DC, 0x1F6DF},
    {0x1F6EB, 0x1F6EC}, {0x1F6F4, 0x1F6FC}, {0x1F7E0, 0x1F7EB}, {0x1F7F0, 0x1F7F0},
    {0x1F90C, 0x1F93A}, {0x1F93C, 0x1F945}, {0x1F947, 0x1F9FF}, {0x1FA70, 0x1FAFF},
    {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD}};

bool in(const Range *begin, const Range *end, char32_t cp) {
  const auto *r = std::upper_bound(begin, end, cp, [](char32_t c, const Range &x) {
    return c < x.first;
  }); // the first range starting after cp: the one before may hold it
  return r != begin && cp <= (r - 1)->last;
}

// Columns of the code point or byte at s[i], and the bytes it takes.
std::size_t columns_at(std::string_view s, std::size_t i, std::size_t &bytes) {
  char32_t cp = 0;
  bytes = sequence_at(s, i, cp);
  if (bytes == 0) { // a byte that is no UTF-8: one column (printable() writes it as \xNN)
    bytes = 1;
    return 1;
  }
  if (cp < 0x300)
    return 1;
  if (in(std::begin(kZeroWidth), std::end(kZeroWidth), cp))
    return 0;
  return in(std::begin(kWide), std::end(kWide), cp) ? 2 : 1;
}

} // namespace

std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0, bytes = 0; i < s.size(); i += bytes)
    n += columns_at(s, i, bytes);
  return n;
}

namespace {

// The longest start of s that fits in `cols` columns, as bytes; at least one code point, so a
// wide character on a one-column line still moves the text on.
std::size_t prefix_bytes(std::string_view s, std::size_t cols) {
  std::size_t i = 0, used = 0;
  while (i < s.size()) {
    std::size_t bytes = 0;
    const std::size_t w = columns_at(s, i, bytes);
    if (i > 0 && used + w > cols)
      break;
    used += w;
    i += bytes;
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
        if (cut >= word.size()) { // one wide character on a narrower line: it starts the line
          line = std::string(word);
          any = true;
          break;
        }
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
