#pragma once
// Text from the machine or from a snapshot, made safe for where it goes: a JSON document needs
// valid UTF-8, a terminal needs no control characters. Any byte string goes in; nothing throws.
#include <string>
#include <string_view>
#include <vector>

namespace dlrig {

// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
bool is_valid_utf8(std::string_view s);

// `s` with every byte that does not belong to a well-formed UTF-8 sequence replaced by U+FFFD
// (the replacement character); well-formed text is returned unchanged. docs/snapshot.md documents
// this, and the JSON printer records where it happened.
std::string valid_utf8(std::string_view s);

// `s` ready for a terminal, a markdown file or a CSV cell: control characters (C0 but tab and
// newline, DEL, C1) and bytes that are not well-formed UTF-8 are written as the four characters
// `\xNN` (hex), so an ESC sequence in a hostname can never retitle or clear the reader's terminal.
// Printable text, backslashes included, is unchanged: printable(printable(s)) == printable(s).
std::string printable(std::string_view s);

// Columns `s` takes on a terminal: two for a wide character (CJK, Hangul, kana, fullwidth forms,
// emoji: Unicode's East Asian Width W and F), none for a combining mark or a zero-width character,
// one for any other code point or for a byte that is no UTF-8.
std::size_t display_width(std::string_view s);

// `text` broken into lines at spaces: the first at most `first` columns wide, the others at most
// `rest`; a word longer than its line is cut. A newline in `text` always ends a line. Width 0
// means no limit. Never returns no line (an empty text is one empty line).
std::vector<std::string> wrap_words(std::string_view text, std::size_t first, std::size_t rest);

// `text` printed after `lead` columns of something else on a terminal `width` columns wide: its
// lines after the first are indented by `hang` spaces; unchanged when it fits or width is 0.
std::string wrap_after(std::string_view text, std::size_t width, std::size_t lead,
                       std::size_t hang);

} // namespace dlrig
