#pragma once
// The printer layer: every command hands its result over as a Report and prints it with one call,
// render_report(), in the format the user chose. The JSON document gets the run's envelope
// (output/envelope.hpp) and is valid UTF-8 whatever the machine said; the human formats get no
// control character from the machine (output/text.hpp); colour is decided in one place.
#include "dlrig/core/json.hpp"
#include "dlrig/output/envelope.hpp"
#include "dlrig/output/table.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig {

// --color: auto (the default) colours a terminal unless NO_COLOR is set to a non-empty value
// (no-color.org); always and never are what they say, whatever NO_COLOR holds.
enum class ColorMode { auto_detect, always, never };
const std::vector<std::string> &color_mode_names(); // "auto", "always", "never"
ColorMode parse_color_mode(std::string_view name);  // one of color_mode_names(); else auto
// The policy, pure: `no_color` is NO_COLOR's value (nullptr when unset).
bool colour_enabled(ColorMode mode, bool is_tty, const char *no_color);
// The policy applied to this process's stdout and environment.
bool stdout_colour(ColorMode mode);

// The width human tables and text are wrapped to, pure: 0 (no wrapping) when stdout is no
// terminal (a file or a pipe keeps every row on one line); else COLUMNS when it holds a number
// from 20 to 1000 (`columns`: its value, nullptr when unset), else the terminal's own width
// (`terminal`, TIOCGWINSZ; 0 when unknown).
std::size_t text_width(bool is_tty, const char *columns, std::size_t terminal);
// The policy applied to this process's stdout and environment.
std::size_t stdout_width();

// How human text is printed: colour, and the width to wrap to (0: none).
struct TextStyle {
  bool colour = false;
  std::size_t width = 0;
};

// One command's result in every format. Each member is called only for the format printed, so a
// 5,000-GPU snapshot is not rendered four times.
struct Report {
  int schema_version = 1;
  // The document's members besides schema_version and context. A "context" object in it (the
  // snapshot's capture details) is kept, with the envelope's members written over it.
  std::function<Json()> json;
  // Human text. With colour on, the function itself must pass every text from the machine
  // through printable(); with colour off the printer does it over the whole output.
  std::function<std::string(const TextStyle &)> table;
  std::function<std::string()> markdown;
  std::function<std::vector<Table>()> csv; // empty: this report has no CSV form
};

struct PrintOptions {
  Format format = Format::table;
  bool colour = false;
  std::size_t width = 0; // Format::table: the terminal's width to wrap to (stdout_width), 0: none
};

// The JSON document {schema_version, context, ...}. Every string and key is made valid UTF-8
// (valid_utf8: bad bytes become U+FFFD); when anything was replaced, context.invalid_utf8 lists
// the JSON pointers and a document with a `notes` array (a snapshot) gets one note per string.
Json document(const Report &r, const Envelope &e);

// The report in the chosen format, ready for stdout.
std::string render_report(const Report &r, const Envelope &e, const PrintOptions &o);

// Replaces invalid UTF-8 in every string and object key of `j`; returns the JSON pointers of
// what it changed (pointer and the snapshot's dotted field name, "/gpus/0/name", "gpus[0].name").
struct Replaced {
  std::string pointer;
  std::string field;
};
std::vector<Replaced> make_valid_utf8(Json &j);

} // namespace dlrig
