#include "dlrig/output/print.hpp"

#include "dlrig/core/snapshot.hpp"
#include "dlrig/output/text.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <stdexcept>

namespace dlrig {

const std::vector<std::string> &color_mode_names() {
  static const std::vector<std::string> names = {"auto", "always", "never"};
  return names;
}

ColorMode parse_color_mode(std::string_view name) {
  if (name == "always")
    return ColorMode::always;
  if (name == "never")
    return ColorMode::never;
  return ColorMode::auto_detect;
}

bool colour_enabled(ColorMode mode, bool is_tty, const char *no_color) {
  switch (mode) {
  case ColorMode::always:
    return true;
  case ColorMode::never:
    return false;
  case ColorMode::auto_detect:
    break;
  }
  return is_tty && (no_color == nullptr || *no_color == '\0');
}

// TERM=dumb (an editor's shell buffer) shows escape codes as text: no colour there either, as git
// and GNU grep decide.
bool stdout_colour(ColorMode mode) {
  const char *term = std::getenv("TERM");
  const bool dumb = term && std::string_view(term) == "dumb";
  return colour_enabled(mode, isatty(STDOUT_FILENO) == 1 && !dumb, std::getenv("NO_COLOR"));
}

std::size_t text_width(bool is_tty, const char *columns, std::size_t terminal) {
  if (!is_tty)
    return 0;
  if (columns && *columns) {
    char *end = nullptr;
    errno = 0;
    const long n = std::strtol(columns, &end, 10);
    if (errno == 0 && *end == '\0' && n >= 20 && n <= 1000)
      return static_cast<std::size_t>(n);
  }
  return terminal;
}

std::size_t stdout_width() {
  winsize ws{};
  const bool tty = isatty(STDOUT_FILENO) == 1;
  const std::size_t terminal = tty && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
  return text_width(tty, std::getenv("COLUMNS"), terminal);
}

namespace {

// A JSON pointer's escaping of one key (RFC 6901: "~" is "~0", "/" is "~1"), appended to out.
void append_pointer_token(std::string &out, const std::string &key) {
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
}

void fix(Json &j, std::string &pointer, std::string &field, std::vector<Replaced> &out) {
  if (j.is_string()) {
    auto &s = j.get_ref<std::string &>();
    if (!is_valid_utf8(s)) {
      s = valid_utf8(s);
      out.push_back({pointer, field});
    }
    return;
  }
  // The child's pointer and field are appended in place (no temporaries: every value of a
  // document passes here, and pick's documents are large).
  auto descend = [&](Json &child, auto &&extend) {
    auto p = pointer.size(), f = field.size();
    extend();
    fix(child, pointer, field, out);
    pointer.resize(p);
    field.resize(f);
  };
  if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i)
      descend(j[i], [&] {
        fmt::format_to(std::back_inserter(pointer), "/{}", i);
        fmt::format_to(std::back_inserter(field), "[{}]", i);
      });
    return;
  }
  if (!j.is_object())
    return;
  bool bad_key = false;
  for (auto it = j.begin(); it != j.end() && !bad_key; ++it)
    bad_key = !is_valid_utf8(it.key());
  if (bad_key) {
    Json fixed = Json::object();
    for (auto it = j.begin(); it != j.end(); ++it) {
      auto key = valid_utf8(it.key());
      if (key != it.key()) {
        std::string at = pointer + "/";
        append_pointer_token(at, key);
        out.push_back({std::move(at), field + (field.empty() ? "" : ".") + key});
      }
      fixed[key] = std::move(it.value());
    }
    j = std::move(fixed);
  }
  for (auto it = j.begin(); it != j.end(); ++it)
    descend(it.value(), [&] {
      pointer += '/';
      append_pointer_token(pointer, it.key());
      if (!field.empty())
        field += '.';
      field += it.key();
    });
}

} // namespace

std::vector<Replaced> make_valid_utf8(Json &j) {
  std::vector<Replaced> out;
  std::string pointer, field;
  fix(j, pointer, field, out);
  return out;
}

Json document(const Report &r, const Envelope &e) {
  Json body = r.json ? r.json() : Json::object();
  Json doc = Json::object();
  doc["schema_version"] = r.schema_version;
  Json context = Json::object();
  if (auto it = body.find("context"); it != body.end() && it->is_object())
    context = std::move(*it);
  Json envelope = context_json(e);
  for (auto it = envelope.begin(); it != envelope.end(); ++it)
    context[it.key()] = std::move(it.value());
  doc["context"] = std::move(context);
  for (auto it = body.begin(); it != body.end(); ++it)
    if (it.key() != "context" && it.key() != "schema_version")
      doc[it.key()] = std::move(it.value());
  if (e.redacted) // what the report adds beside the snapshot: a model's or dataset's path
    redact_json_strings(doc, this_identity());
  auto replaced = make_valid_utf8(doc);
  if (!replaced.empty()) {
    Json pointers = Json::array();
    for (const auto &x : replaced)
      pointers.push_back(x.pointer);
    doc["context"]["invalid_utf8"] = pointers;
    if (auto notes = doc.find("notes"); notes != doc.end() && notes->is_array())
      for (const auto &x : replaced)
        notes->push_back(
            {{"field", x.field},
             {"source", nullptr},
             {"reason", "not valid UTF-8: each invalid byte was replaced with U+FFFD"}});
  }
  return doc;
}

std::string render_report(const Report &r, const Envelope &e, const PrintOptions &o) {
  std::string out;
  switch (o.format) {
  case Format::json:
    return dump_json(document(r, e)) + "\n";
  case Format::markdown:
    out = r.markdown ? r.markdown() : r.table(TextStyle{});
    break;
  case Format::csv:
    if (!r.csv)
      throw std::logic_error("this report has no CSV form");
    out = render(r.csv(), Format::csv);
    break;
  case Format::table:
    out = r.table(TextStyle{o.colour, o.width});
    break;
  }
  if (e.redacted)
    out = redact_home_paths(out, this_identity());
  // Colourless output is made printable here, whole; a colour printer did it piece by piece.
  return o.colour && o.format == Format::table ? out : printable(out);
}

} // namespace dlrig
