#include "dlrig/core/snapshot.hpp"

#include <fmt/format.h>

#include <fstream>
#include <regex>
#include <sstream>

namespace dlrig {

Json to_json(const Snapshot& s) { return Json(s); }

Result<Snapshot> snapshot_from_json(std::string_view text) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    // e.byte is the 1-based offset of the offending character.
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return make_error(fmt::format("malformed JSON at line {}, column {}: {}", line, col,
                                  std::string(e.what()).substr(std::string(e.what()).find(':') + 2)));
  }
  if (!doc.is_object())
    return make_error("expected a JSON object (a dlrig snapshot) at the top level");
  auto version = doc.find("schema_version");
  if (version == doc.end() || !version->is_number_integer())
    return make_error("field /schema_version is missing or not an integer; is this a dlrig "
                      "snapshot (made with `dlrig snapshot`)?");
  if (version->get<int>() != kSnapshotSchemaVersion)
    return make_error(fmt::format("unknown schema_version {} (this dlrig reads version {}); "
                                  "re-create the snapshot with this dlrig's `dlrig snapshot`",
                                  version->get<int>(), kSnapshotSchemaVersion));
  try {
    return doc.get<Snapshot>();
  } catch (const Json::exception& e) {
    // With JSON_DIAGNOSTICS the message carries the JSON pointer of the bad field.
    std::string what = e.what();
    auto pos = what.find("] ");
    return make_error("wrong type in field " + (pos == std::string::npos ? what : what.substr(pos + 2)));
  }
}

Result<Snapshot> load_snapshot(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return make_error(fmt::format("{}: cannot open the snapshot file (does it exist? make one with "
                                  "`dlrig snapshot > FILE`)",
                                  path));
  std::stringstream buf;
  buf << in.rdbuf();
  auto snap = snapshot_from_json(buf.str());
  if (!snap)
    return make_error(fmt::format("{}: {}", path, snap.error().message));
  return snap;
}

namespace {

// Paths under home directories name their user: /home/alice/x and /root/x become ~/x.
const std::regex& home_path() {
  static const std::regex home(R"((/home/[^/\s:]+|/root|/Users/[^/\s:]+)(?=/|$|:|\s))");
  return home;
}

void redact_strings(Json& j) {
  if (j.is_string()) {
    j = redact_home_paths(j.get<std::string>());
  } else if (j.is_structured()) {
    for (auto& child : j)
      redact_strings(child);
  }
}

} // namespace

std::string redact_home_paths(const std::string& text) {
  return std::regex_replace(text, home_path(), "~");
}

void redact(Snapshot& s) {
  s.host.hostname.reset();
  for (auto& gpu : s.gpus)
    if (gpu.nvml)
      gpu.nvml->uuid.reset();
  for (const char* var : {"USER", "LOGNAME", "HOME", "MASTER_ADDR"})
    s.software.env.erase(var);
  Json doc = s;
  redact_strings(doc);
  s = doc.get<Snapshot>();
  s.context.redacted = true;
}

} // namespace dlrig
