#include "dlrig/core/snapshot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

namespace dlrig {

Json to_json(const Snapshot &s) {
  return Json(s);
}

void to_json(Json &j, const CpuInfo &c) {
  j = Json{{"vendor", c.vendor},
           {"model", c.model},
           {"soc", c.soc},
           {"sockets", c.sockets},
           {"cores", c.cores},
           {"threads", c.threads},
           {"base_hz", c.base_hz},
           {"max_hz", c.max_hz},
           {"isa", c.isa_known() ? Json(c.isa) : Json(nullptr)},
           {"numa_nodes", c.numa_nodes}};
}

void from_json(const Json &j, CpuInfo &c) {
  const CpuInfo d;
  c.vendor = j.value("vendor", d.vendor);
  c.model = j.value("model", d.model);
  c.soc = j.value("soc", d.soc);
  c.sockets = j.value("sockets", d.sockets);
  c.cores = j.value("cores", d.cores);
  c.threads = j.value("threads", d.threads);
  c.base_hz = j.value("base_hz", d.base_hz);
  c.max_hz = j.value("max_hz", d.max_hz);
  c.numa_nodes = j.value("numa_nodes", d.numa_nodes);
  c.isa.clear();
  c.isa_read = false;
  if (auto it = j.find("isa"); it != j.end() && !it->is_null()) {
    c.isa = it->get<std::vector<std::string>>();
    c.isa_read = true;
  }
}

bool from_collect_env(const Snapshot &s) {
  return std::any_of(s.notes.begin(), s.notes.end(), [](const ProbeNote &n) {
    return n.field == "*" && n.source && n.source->rfind("collect_env", 0) == 0;
  });
}

bool gpus_known(const Snapshot &s) {
  if (!s.gpus.empty())
    return true;
  bool noted = std::any_of(s.notes.begin(), s.notes.end(),
                           [](const ProbeNote &n) { return n.field.rfind("gpus", 0) == 0; });
  bool probed = s.host.os.kernel_release || s.host.cpu.threads || s.host.memory.total_bytes;
  return probed && !noted && !from_collect_env(s);
}

std::vector<const Gpu *> nvml_gpus(const Snapshot &s) {
  std::vector<const Gpu *> out;
  for (const auto &g : s.gpus)
    if (g.nvml)
      out.push_back(&g);
  std::stable_sort(out.begin(), out.end(),
                   [](const Gpu *a, const Gpu *b) { return a->nvml->index < b->nvml->index; });
  return out;
}

namespace {

// "type must be number, but is string" -> "expected a number, found a string": the JSON library's
// own words never reach the user.
std::string article(std::string_view type) {
  return (type == "object" || type == "array" ? "an " : "a ") + std::string(type);
}

// The field (JSON pointer) and the library's text of an exception made with JSON_DIAGNOSTICS:
// "[json.exception.type_error.302] (/host/memory) type must be ...".
std::pair<std::string, std::string> split_diagnostic(const std::string &what) {
  std::string rest = what;
  if (auto close = rest.find("] "); close != std::string::npos)
    rest = rest.substr(close + 2);
  std::string field;
  if (rest.size() > 2 && rest[0] == '(' && rest[1] == '/') {
    auto end = rest.find(") ");
    if (end != std::string::npos) {
      field = rest.substr(1, end - 1);
      rest = rest.substr(end + 2);
    }
  }
  return {field, rest};
}

std::string describe_json_error(const Json &doc, const Json::exception &e) {
  auto [field, text] = split_diagnostic(e.what());
  std::string found;
  if (!field.empty()) {
    try {
      found = doc.at(Json::json_pointer(field)).type_name();
    } catch (const Json::exception &) {
    }
  }
  std::string where = field.empty() ? std::string("a field") : "field " + field;
  if (e.id == 406) // out of range, from check_json_number: already in dlrig's words
    return where + ": " + text;
  std::string expected;
  if (auto pos = text.find("type must be "); pos != std::string::npos) {
    auto rest = text.substr(pos + 13);
    expected = rest.substr(0, rest.find(','));
  } else if (text.find("cannot use value()") != std::string::npos ||
             text.find("cannot use operator[]") != std::string::npos) {
    expected = "object";
  }
  if (!expected.empty() && !found.empty())
    return fmt::format("{}: expected {}, found {}", where, article(expected), article(found));
  if (!found.empty())
    return fmt::format("{}: {} is not what a dlrig snapshot holds here", where, article(found));
  return where + ": wrong type";
}

// Plain int members of the snapshot (NVML index, NVLink number, pid, pair indices, NUMA node id,
// RDMA port) are read without the optional<T> range check, and the counts read as optional<int>
// (CPU sockets, cores and threads, link widths and generations, DIMMs, GPU and device counts)
// would take a negative number; these keys hold only such counts, none below 0.
bool count_key(const std::string &key) {
  static const std::set<std::string> keys = {"index",
                                             "link",
                                             "pid",
                                             "a",
                                             "b",
                                             "id",
                                             "port",
                                             "sockets",
                                             "cores",
                                             "threads",
                                             "current_width",
                                             "max_width",
                                             "narrowest_width",
                                             "pcie_gen_current",
                                             "pcie_gen_max",
                                             "pcie_width_current",
                                             "pcie_width_max",
                                             "dimm_slots",
                                             "dimms_installed",
                                             "gpu_count",
                                             "device_count"};
  return keys.count(key) > 0;
}

void check_plain_ints(const Json &j) {
  if (j.is_object()) {
    for (const auto &[key, value] : j.items()) {
      if (value.is_number() && count_key(key)) {
        bool ok = value.is_number_unsigned() && value.get<std::uint64_t>() <= INT32_MAX;
        if (!ok)
          throw nlohmann::detail::out_of_range::create(
              406,
              "the number " + value.dump() +
                  " is out of range: expected a whole number from 0 to 2147483647",
              &value);
      }
      check_plain_ints(value);
    }
  } else if (j.is_array()) {
    for (const auto &value : j)
      check_plain_ints(value);
  }
}

} // namespace

Result<Snapshot> snapshot_from_json(std::string_view text) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error &e) {
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
    std::string what = e.what();
    auto colon = what.find(": ");
    return make_error(fmt::format("malformed JSON at line {}, column {}: {}", line, col,
                                  colon == std::string::npos ? what : what.substr(colon + 2)));
  } catch (const Json::exception &e) {
    // A number beyond double's range (1e999) is not a parse error to the library.
    auto [field, what] = split_diagnostic(e.what());
    auto quote = what.find('\'');
    return make_error(
        "malformed JSON: " +
        (what.find("number overflow") != std::string::npos && quote != std::string::npos
             ? "the number " + what.substr(quote) + " is too large"
             : what));
  }
  if (!doc.is_object())
    return make_error(fmt::format("expected a JSON object (a dlrig snapshot) at the top level, "
                                  "found {}",
                                  article(doc.type_name())));
  auto version = doc.find("schema_version");
  if (version == doc.end() || !version->is_number_integer())
    return make_error("field /schema_version is missing or not an integer; is this a dlrig "
                      "snapshot (made with `dlrig snapshot`)?");
  if (!version->is_number_unsigned() ||
      version->get<std::uint64_t>() != static_cast<std::uint64_t>(kSnapshotSchemaVersion))
    return make_error(fmt::format("unknown schema_version {} (this dlrig reads version {}); "
                                  "re-create the snapshot with this dlrig's `dlrig snapshot`",
                                  version->dump(), kSnapshotSchemaVersion));
  try {
    check_plain_ints(doc);
    return doc.get<Snapshot>();
  } catch (const Json::exception &e) {
    return make_error(describe_json_error(doc, e));
  }
}

namespace {

// What ends a home path: "/home/alice" is followed by one of these or by the end of the text.
constexpr std::string_view kPathEnd = "/: \t\r\n\v\f'\"(),;[]{}<>\x1b";

// Paths under home directories name their user: /home/alice/x and /root/x become ~/x.
const std::regex &home_path() {
  static const std::regex home(
      R"((/home/[^/\s:'"(),;\[\]{}<>\x1b]+|/root|/Users/[^/\s:'"(),;\[\]{}<>\x1b]+))"
      R"((?=[/\s:'"(),;\[\]{}<>\x1b]|$))");
  return home;
}

// `part` replaced by `with` wherever a path ends after it (a slash, a colon... or the text's end).
std::string replace_path_part(const std::string &text, std::string_view part,
                              std::string_view with) {
  std::string out;
  std::size_t from = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    const std::size_t end = at + part.size();
    if (at < from || (end < text.size() && kPathEnd.find(text[end]) == std::string_view::npos))
      continue;
    out.append(text, from, at - from).append(with);
    from = end;
  }
  return out.append(text, from);
}

// Folders of the Filesystem Hierarchy Standard 3.0 (top level, /usr, /var;
// https://refspecs.linuxfoundation.org/FHS_3.0/fhs/index.html): a user named as one of them (a
// system account such as `bin` or `games`, or a user called `local`) is not written as $USER in
// paths, where /usr/local/cuda would become /$USER/local/cuda.
bool names_a_system_folder(std::string_view user) {
  static constexpr std::string_view kFolders[] = {
      "bin",   "boot", "dev", "etc",     "home",    "lib",   "lib32",   "lib64", "libx32",
      "media", "mnt",  "opt", "proc",    "root",    "run",   "sbin",    "srv",   "sys",
      "tmp",   "usr",  "var", "include", "libexec", "local", "share",   "src",   "games",
      "cache", "lock", "log", "mail",    "spool",   "crash", "account", "yp"};
  return std::find(std::begin(kFolders), std::end(kFolders), user) != std::end(kFolders);
}

} // namespace

void redact_json_strings(Json &j, const Identity &who) {
  if (j.is_string()) {
    j = redact_home_paths(j.get<std::string>(), who);
  } else if (j.is_structured()) {
    for (auto &child : j)
      redact_json_strings(child, who);
  }
}

std::string redact_home_paths(const std::string &text, const Identity &who) {
  if (text.find('/') == std::string::npos) // no path: most of a snapshot's strings
    return text;
  std::string out = text;
  for (std::string_view home : who.homes) {
    while (home.size() > 1 && home.back() == '/')
      home.remove_suffix(1);
    if (home.size() >= 2 && home.front() == '/')
      out = replace_path_part(out, home, "~");
  }
  out = std::regex_replace(out, home_path(), "~");
  for (const auto &user : who.users)
    if (user.size() >= 2 && !names_a_system_folder(user) &&
        user.find_first_of(kPathEnd) == std::string::npos)
      out = replace_path_part(out, "/" + user, "/$USER");
  return out;
}

void redact(Snapshot &s, const Identity &who) {
  s.host.hostname.reset();
  for (auto &gpu : s.gpus)
    if (gpu.nvml)
      gpu.nvml->uuid.reset();
  Identity all = who;
  for (const char *var : {"HOME", "USER", "LOGNAME"})
    if (auto it = s.software.env.find(var); it != s.software.env.end())
      (std::string_view(var) == "HOME" ? all.homes : all.users).push_back(it->second);
  for (const char *var : {"USER", "LOGNAME", "HOME", "MASTER_ADDR"})
    s.software.env.erase(var);
  Json doc = s;
  redact_json_strings(doc, all);
  s = doc.get<Snapshot>();
  s.context.redacted = true;
}

} // namespace dlrig
