#include "dlrig/probe/collect_env.hpp"

#include "dlrig/core/text.hpp"
#include "dlrig/platform/snapshot_file.hpp"
#include "dlrig/probe/parse.hpp"
#include "dlrig/probe/software_parse.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace dlrig::probe {
namespace {

// The labels torch.utils.collect_env prints, with the layout that introduced them (1, 2, 3: see
// CollectEnvReport::format) and what follows them on the next lines.
enum class More { none, gpus, cudnn, xpu, list, cpu, packages };
struct Label {
  std::string_view text;
  int format;
  More more;
};
constexpr std::array<Label, 28> kLabels = {{
    {"PyTorch version", 1, More::none},
    {"Is debug build", 1, More::none},
    {"CUDA used to build PyTorch", 1, More::none},
    {"ROCM used to build PyTorch", 2, More::none},
    {"OS", 1, More::none},
    {"GCC version", 1, More::none},
    {"Clang version", 1, More::none},
    {"CMake version", 1, More::none},
    {"Libc version", 2, More::none},
    {"Python version", 1, More::none},
    {"Python platform", 2, More::none},
    {"Is CUDA available", 1, More::none},
    {"CUDA runtime version", 1, More::none},
    {"CUDA_MODULE_LOADING set to", 3, More::none},
    {"GPU models and configuration", 1, More::gpus},
    {"Nvidia driver version", 1, More::none},
    {"cuDNN version", 1, More::cudnn},
    {"Is XPU available", 3, More::xpu},
    {"XPU used to build PyTorch", 3, More::none},
    {"Intel GPU driver version", 3, More::list},
    {"Intel GPU models onboard", 3, More::list},
    {"Intel GPU models detected", 3, More::list},
    {"HIP runtime version", 2, More::none},
    {"MIOpen runtime version", 2, More::none},
    {"Is XNNPACK available", 3, More::none},
    {"Caching allocator config", 2, More::none},
    {"CPU", 3, More::cpu},
    {"Versions of relevant libraries", 1, More::packages},
}};

const Label *known(std::string_view label) {
  for (const auto &l : kLabels)
    if (l.text == label)
      return &l;
  return nullptr;
}

bool says_nothing(std::string_view v) {
  return v.empty() || v == "Could not collect" || v == "N/A" || v == "No CUDA" || v == "None";
}

bool starts_with_digit(std::string_view v) {
  return !v.empty() && std::isdigit(static_cast<unsigned char>(v.front()));
}

// "Label: value" or "Label:" at the start of a line (no leading blank). Labels hold no colon.
std::optional<std::pair<std::string, std::string>> split_label(std::string_view line) {
  if (line.empty() || !std::isalpha(static_cast<unsigned char>(line.front())))
    return std::nullopt;
  auto colon = line.find(':');
  if (colon == std::string_view::npos || colon > 80)
    return std::nullopt;
  if (colon + 1 < line.size() && line[colon + 1] != ' ' && line[colon + 1] != '\t')
    return std::nullopt; // "C:\..." or a URL, not a label
  return std::make_pair(std::string(trim(line.substr(0, colon))),
                        std::string(trim(line.substr(colon + 1))));
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos)
      end = text.size();
    auto line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    out.push_back(line);
    if (end == text.size())
      break;
    start = end + 1;
  }
  return out;
}

std::vector<std::string> words(std::string_view s) {
  auto w = words_of(s);
  return {w.begin(), w.end()};
}

Error at(int line, std::string what) {
  return make_error(ErrorKind::bad_input, fmt::format("line {}: {}", line, what));
}

std::string quoted(std::string_view s) {
  return "\"" + std::string(s.substr(0, 80)) + (s.size() > 80 ? "...\"" : "\"");
}

// The values each field may hold; anything else is an error naming the line.
std::optional<Error> check_value(std::string_view label, std::string_view v, int line) {
  auto one_of = [&](std::initializer_list<std::string_view> allowed) {
    return std::find(allowed.begin(), allowed.end(), v) != allowed.end();
  };
  auto bad = [&](const char *expected) {
    return at(line, fmt::format("{} {} is not {}", label, quoted(v), expected));
  };
  if (label == "PyTorch version")
    return starts_with_digit(v) || v == "N/A" ? std::nullopt
                                              : std::optional(bad("a version (\"2.5.1+cu124\")"));
  if (label == "Is debug build" || label == "Is CUDA available" ||
      label == "Is XNNPACK available" || label == "Is XPU available")
    return one_of({"True", "False", "Yes", "No", "N/A", "Could not collect"})
               ? std::nullopt
               : std::optional(bad("True, False, Yes, No or N/A"));
  if (label == "CUDA used to build PyTorch" || label == "ROCM used to build PyTorch" ||
      label == "CUDA runtime version" || label == "Nvidia driver version" ||
      label == "HIP runtime version" || label == "MIOpen runtime version")
    return starts_with_digit(v) || says_nothing(v)
               ? std::nullopt
               : std::optional(bad("a version, \"None\", \"N/A\", \"No CUDA\" or \"Could not "
                                   "collect\""));
  return std::nullopt;
}

// "[pip3] torch==2.5.1+cu124", "[pip3] torch @ file:///...", "[conda] pytorch 2.5.1
// py3.11_cuda12.4_cudnn9.1.0_0 pytorch"; nullopt for "No relevant packages" / "Could not collect".
Result<std::optional<CollectEnvPackage>> parse_package(std::string_view line, int n) {
  auto close = line.find(']');
  if (line.empty() || line.front() != '[' || close == std::string_view::npos)
    return at(n, fmt::format("{} is not a package line (\"[pip3] name==version\" or \"[conda] "
                             "name version build channel\")",
                             quoted(line)));
  CollectEnvPackage p;
  p.manager = std::string(line.substr(1, close - 1));
  p.line = n;
  auto rest = trim(line.substr(close + 1));
  if (p.manager != "pip" && p.manager != "pip3" && p.manager != "conda")
    return at(n, fmt::format("{}: the list is [pip], [pip3] or [conda], not [{}]", quoted(line),
                             p.manager));
  if (rest == "No relevant packages" || rest == "Could not collect" || rest.empty())
    return std::optional<CollectEnvPackage>();
  auto w = words(rest);
  if (p.manager == "conda") {
    if (w.size() < 2 || !starts_with_digit(w[1]))
      return at(n, fmt::format("{} is not a conda package line (\"[conda] name version build "
                               "channel\")",
                               quoted(line)));
    p.name = w[0];
    p.version = w[1];
    if (w.size() > 2)
      p.build = w[2];
    if (w.size() > 3)
      p.channel = w[3];
    return std::optional(p);
  }
  if (rest.rfind("-e ", 0) == 0) { // an editable install: "-e git+https://...#egg=name"
    auto egg = rest.find("#egg=");
    p.name = egg == std::string_view::npos ? std::string(rest) : std::string(rest.substr(egg + 5));
    return std::optional(p);
  }
  if (auto eq = rest.find("=="); eq != std::string_view::npos) {
    p.name = std::string(trim(rest.substr(0, eq)));
    p.version = std::string(trim(rest.substr(eq + 2)));
  } else if (auto atsign = rest.find(" @ "); atsign != std::string_view::npos) {
    p.name = std::string(trim(rest.substr(0, atsign)));
  }
  if (p.name.empty() || (p.version && p.version->empty()) || p.name.find(' ') != std::string::npos)
    return at(n,
              fmt::format("{} is not a pip package line (\"[pip3] name==version\")", quoted(line)));
  return std::optional(p);
}

// "GPU 0: NVIDIA A100-SXM4-80GB" (nvidia-smi -L without its UUID), or one device name as torch
// gives it on ROCm ("AMD Instinct MI300X (gfx942:sramecc+:xnack-)") and macOS.
Result<CollectEnvGpu> parse_gpu(std::string_view text, int n) {
  CollectEnvGpu g;
  g.line = n;
  if (text.rfind("GPU ", 0) == 0) {
    auto colon = text.find(':');
    char *end = nullptr;
    std::string num(text.substr(4, colon == std::string_view::npos ? 0 : colon - 4));
    long idx = std::strtol(num.c_str(), &end, 10);
    if (colon == std::string_view::npos || num.empty() || *end != '\0' || idx < 0 || idx > 4096)
      return at(n, fmt::format("{} is not a GPU line (\"GPU 0: NVIDIA ...\")", quoted(text)));
    g.index = static_cast<int>(idx);
    g.name = std::string(trim(text.substr(colon + 1)));
  } else {
    g.name = std::string(trim(text));
  }
  // ROCm: "AMD Instinct MI300X (gfx942:sramecc+:xnack-)".
  if (auto open = g.name.rfind(" (gfx"); open != std::string::npos && g.name.back() == ')') {
    g.gfx = g.name.substr(open + 2, g.name.size() - open - 3);
    g.name.resize(open);
  }
  if (g.name.empty())
    return at(n, fmt::format("{} names no GPU", quoted(text)));
  return g;
}

bool is_path_line(std::string_view s) {
  return !s.empty() && (s.front() == '/' || (s.size() > 2 && s[1] == ':' && s[2] == '\\'));
}

} // namespace

const CollectEnvField *CollectEnvReport::field(std::string_view label) const {
  for (const auto &[l, f] : fields)
    if (l == label)
      return &f;
  return nullptr;
}

OptStr CollectEnvReport::value(std::string_view label) const {
  const auto *f = field(label);
  if (!f || says_nothing(f->value))
    return std::nullopt;
  return f->value;
}

OptBool CollectEnvReport::flag(std::string_view label) const {
  const auto *f = field(label);
  if (!f)
    return std::nullopt;
  if (f->value == "True" || f->value == "Yes")
    return true;
  if (f->value == "False" || f->value == "No")
    return false;
  return std::nullopt;
}

namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
constexpr std::string_view kFirstLabel = "PyTorch version:";

std::string_view without_bom(std::string_view text) {
  return text.rfind(kUtf8Bom, 0) == 0 ? text.substr(kUtf8Bom.size()) : text;
}

// The prefix of the "PyTorch version:" line when it is a paste's indent or quote ("    ",
// "> "); "" when the line starts the text's line or has anything else before it.
std::string_view paste_prefix(std::string_view text) {
  for (auto full : split_lines(text)) {
    const auto line = without_bom(full);
    auto at = line.find(kFirstLabel);
    if (at == std::string_view::npos)
      continue;
    auto prefix = line.substr(0, at);
    if (prefix.find_first_not_of(" \t>") == std::string_view::npos)
      return prefix;
  }
  return {};
}

void append_utf8(std::string &out, std::uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

} // namespace

std::string unwrap_pasted_report(std::string_view text) {
  text = without_bom(text);
  const auto prefix = paste_prefix(text);
  if (prefix.empty())
    return std::string(text);
  // An empty quoted line is ">" without its space; an empty indented one has no spaces at all.
  auto bare = prefix.substr(0, prefix.find_last_not_of(" \t") + 1);
  std::string out;
  out.reserve(text.size());
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    auto line = text.substr(start, end == std::string_view::npos ? end : end - start);
    if (line.rfind(prefix, 0) == 0)
      line.remove_prefix(prefix.size());
    else if (!bare.empty() && line.rfind(bare, 0) == 0 &&
             line.substr(bare.size()).find_first_not_of(" \t\r") == std::string_view::npos)
      line.remove_prefix(bare.size());
    out += line;
    if (end == std::string_view::npos)
      break;
    out += '\n';
    start = end + 1;
  }
  return out;
}

std::optional<std::string> utf8_from_utf16(std::string_view bytes) {
  if (bytes.size() < 2)
    return std::nullopt;
  const auto b0 = static_cast<unsigned char>(bytes[0]), b1 = static_cast<unsigned char>(bytes[1]);
  bool little = b0 == 0xFF && b1 == 0xFE;
  if (!little && !(b0 == 0xFE && b1 == 0xFF))
    return std::nullopt;
  auto unit = [&](std::size_t i) -> std::uint32_t {
    auto lo = static_cast<unsigned char>(bytes[i]), hi = static_cast<unsigned char>(bytes[i + 1]);
    return little ? (hi << 8 | lo) : (lo << 8 | hi);
  };
  std::string out;
  out.reserve(bytes.size() / 2);
  for (std::size_t i = 2; i + 1 < bytes.size(); i += 2) {
    std::uint32_t c = unit(i);
    if (c >= 0xD800 && c <= 0xDBFF && i + 3 < bytes.size()) {
      std::uint32_t low = unit(i + 2);
      if (low >= 0xDC00 && low <= 0xDFFF) {
        append_utf8(out, 0x10000 + ((c - 0xD800) << 10) + (low - 0xDC00));
        i += 2;
        continue;
      }
    }
    append_utf8(out, c >= 0xD800 && c <= 0xDFFF ? 0xFFFD : c);
  }
  if (bytes.size() % 2)
    append_utf8(out, 0xFFFD); // a last half unit
  return out;
}

bool looks_like_collect_env(std::string_view text) {
  auto body = trim(text);
  if (!body.empty() && (body.front() == '{' || body.front() == '['))
    return false;
  for (auto line : split_lines(text))
    if (without_bom(line).rfind(kFirstLabel, 0) == 0)
      return true;
  return !paste_prefix(text).empty();
}

Result<CollectEnvReport> parse_collect_env(std::string_view pasted) {
  CollectEnvReport r;
  const std::string text = unwrap_pasted_report(pasted);
  const auto lines = split_lines(text);
  std::size_t i = 0;
  while (i < lines.size() && lines[i].rfind("PyTorch version:", 0) != 0)
    ++i;
  if (i == lines.size())
    return make_error(ErrorKind::bad_input,
                      "no \"PyTorch version:\" line: not the output of `python -m "
                      "torch.utils.collect_env`");
  r.first_line = static_cast<int>(i + 1);
  More more = More::none;
  CollectEnvField *current = nullptr;
  bool in_packages = false;
  for (; i < lines.size(); ++i) {
    const int n = static_cast<int>(i + 1);
    const std::string_view raw = lines[i];
    const std::string_view line = trim(raw);
    if (line.rfind("```", 0) == 0 || line.rfind("</details>", 0) == 0)
      break; // the end of a pasted block
    if (in_packages) {
      if (line.empty() || line.front() != '[')
        break; // the report ends; what follows is the issue's own text
      DLRIG_TRY(auto p, parse_package(line, n));
      if (p)
        r.packages.push_back(std::move(*p));
      continue;
    }
    if (more == More::cpu) {
      if (line.empty()) {
        more = More::none;
        continue;
      }
      if (line.rfind("Versions of relevant libraries:", 0) != 0) {
        r.cpu.emplace_back(raw);
        continue;
      }
      more = More::none;
    }
    if (line.empty()) {
      if (more == More::gpus && current && current->value.empty() && r.gpus.empty())
        continue; // the blank line before a multi-line GPU list
      more = More::none;
      continue;
    }
    // Continuations of the field above.
    if (more == More::gpus && current && current->value.empty() &&
        (line.rfind("GPU ", 0) == 0 || line.rfind("MIG ", 0) == 0)) {
      current->more.emplace_back(line);
      if (line.rfind("GPU ", 0) == 0) {
        DLRIG_TRY(auto g, parse_gpu(line, n));
        r.gpus.push_back(std::move(g));
      }
      continue;
    }
    if (more == More::cudnn && is_path_line(line)) {
      current->more.emplace_back(line);
      r.cudnn_files.emplace_back(line);
      continue;
    }
    if ((more == More::list || more == More::xpu) && line.front() == '*') {
      if (current)
        current->more.emplace_back(line);
      continue;
    }
    auto lv = split_label(raw);
    if (!lv)
      return at(n, fmt::format("{} is neither a collect_env field (\"Label: value\") nor part of "
                               "the field above it; paste the report as collect_env printed it",
                               quoted(line)));
    auto &[label, value] = *lv;
    const Label *k = known(label);
    if (!k) {
      r.unknown_labels.emplace_back(label, n);
      more = More::list; // a newer field may have "* ..." lines under it
      current = nullptr;
      continue;
    }
    if (const auto *first = r.field(label))
      return at(n, fmt::format("a second \"{}:\" line (the first is line {}): one report per "
                               "file",
                               label, first->line));
    if (auto e = check_value(label, value, n))
      return *e;
    r.format = std::max(r.format, k->format);
    r.fields.emplace_back(label, CollectEnvField{value, {}, n});
    current = &r.fields.back().second;
    more = k->more;
    if (more == More::packages) {
      in_packages = true;
    } else if (more == More::gpus && !value.empty()) {
      if (value != "Could not collect" && value != "No CUDA" && value != "N/A") {
        DLRIG_TRY(auto g, parse_gpu(value, n));
        r.gpus.push_back(std::move(g));
      }
    } else if (more == More::cudnn && is_path_line(value)) {
      r.cudnn_files.push_back(value);
    } else if (more == More::cudnn && value != "Probably one of the following:") {
      more = More::none;
    }
  }
  // The CUDA_MODULE_LOADING field is the 2.x layout even when it is the only new one.
  return r;
}

// --- the partial snapshot
// ------------------------------------------------------------------------------

namespace {

std::string source_of(const CollectEnvReport &r, std::string_view label) {
  const auto *f = r.field(label);
  return f ? fmt::format("collect_env line {} ({})", f->line, label)
           : fmt::format("collect_env ({})", label);
}

void note(Snapshot &s, const CollectEnvReport &r, std::string field, std::string_view label,
          std::string reason) {
  s.notes.push_back({std::move(field), source_of(r, label), std::move(reason)});
}

// "Linux-5.15.0-91-generic-x86_64-with-glibc2.35" -> {"5.15.0-91-generic", "x86_64"}.
std::pair<OptStr, OptStr> kernel_and_arch(std::string_view platform) {
  if (platform.rfind("Linux-", 0) != 0)
    return {};
  auto rest = platform.substr(6);
  if (auto with = rest.find("-with"); with != std::string_view::npos)
    rest = rest.substr(0, with);
  auto dash = rest.rfind('-');
  if (dash == std::string_view::npos || dash == 0)
    return {};
  return {std::string(rest.substr(0, dash)), std::string(rest.substr(dash + 1))};
}

bool is_arch(std::string_view a) {
  for (auto known : {"x86_64", "aarch64", "arm64", "ppc64le", "s390x", "AMD64", "i686", "armv7l"})
    if (a == known)
      return true;
  return false;
}

// lscpu's "Key:   value" lines (indented in newer util-linux); on Windows "Key: value" (current,
// PowerShell) or "Key=Value" (older, wmic); a line without a key continues the one above (a
// wrapped flag list).
std::vector<std::pair<std::string, std::string>> cpu_pairs(const std::vector<std::string> &lines) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto &raw : lines) {
    auto line = trim(raw);
    auto eq = line.find('=');
    if (eq != std::string_view::npos && eq > 0 && line.find(':') == std::string_view::npos &&
        std::all_of(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(eq),
                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)); })) {
      out.emplace_back(std::string(line.substr(0, eq)), std::string(trim(line.substr(eq + 1))));
      continue;
    }
    auto colon = line.find(':');
    if (colon != std::string_view::npos && colon + 1 <= line.size() &&
        (colon + 1 == line.size() || line[colon + 1] == ' ' || line[colon + 1] == '\t')) {
      out.emplace_back(std::string(trim(line.substr(0, colon))),
                       std::string(trim(line.substr(colon + 1))));
    } else if (!out.empty()) {
      out.back().second += " " + std::string(line);
    } else {
      out.emplace_back("", std::string(line)); // macOS: the brand string alone
    }
  }
  return out;
}

std::optional<int> to_int(std::string_view v) {
  if (!starts_with_digit(v))
    return std::nullopt;
  char *end = nullptr;
  std::string s(v);
  long n = std::strtol(s.c_str(), &end, 10);
  if (*end != '\0' || n < 0 || n > 1'000'000)
    return std::nullopt;
  return static_cast<int>(n);
}

OptF64 to_double(std::string_view v) {
  if (!starts_with_digit(v))
    return std::nullopt;
  std::string s(v);
  char *end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (*end != '\0' || !std::isfinite(d))
    return std::nullopt;
  return d;
}

void fill_cpu(Snapshot &s, const CollectEnvReport &r) {
  auto &cpu = s.host.cpu;
  std::optional<int> per_socket;
  bool flags = false;
  for (const auto &[key, value] : cpu_pairs(r.cpu)) {
    if (key == "Architecture" && is_arch(value))
      s.host.os.arch = value;
    else if (key == "CPU(s)")
      cpu.threads = to_int(value);
    else if (key == "Vendor ID" || key == "Manufacturer")
      cpu.vendor = value;
    else if (key == "Model name" || key == "Name" || (key.empty() && !value.empty()))
      cpu.model = value;
    else if (key == "Socket(s)")
      cpu.sockets = to_int(value);
    else if (key == "Core(s) per socket")
      per_socket = to_int(value);
    else if (key == "CPU max MHz" || key == "MaxClockSpeed") {
      if (auto mhz = to_double(value))
        cpu.max_hz = *mhz * 1e6;
    } else if (key == "Flags" && !value.empty()) {
      cpu.isa = pytorch_isa(words(value));
      cpu.isa_read = true;
      flags = true;
    } else if (key.rfind("NUMA node", 0) == 0 && key.size() > 16 &&
               key.compare(key.size() - 6, 6, "CPU(s)") == 0) {
      if (auto id = to_int(trim(std::string_view(key).substr(9, key.size() - 9 - 6))))
        cpu.numa_nodes.push_back({*id, value, std::nullopt});
    }
  }
  if (per_socket && cpu.sockets)
    cpu.cores = *per_socket * *cpu.sockets;
  if (!flags)
    s.notes.push_back({"host.cpu.isa", std::string("collect_env"),
                       "the report prints no CPU flags (Windows, macOS or a report before 1.8)"});
}

// The version in a library file name: ".../libcudnn.so.8.9.2" -> "8.9.2",
// "...\\cudnn64_8.dll" -> "8".
OptStr cudnn_file_version(std::string_view path) {
  auto slash = path.find_last_of("/\\");
  auto name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (auto so = name.find(".so."); so != std::string_view::npos) {
    auto stem = name.substr(0, so + 3);
    return library_version_from_name(name, stem);
  }
  if (auto us = name.rfind('_');
      us != std::string_view::npos && name.size() > 4 && name.substr(name.size() - 4) == ".dll") {
    auto v = name.substr(us + 1, name.size() - us - 5);
    if (starts_with_digit(v))
      return std::string(v);
  }
  return std::nullopt;
}

std::string library_origin(std::string_view path) {
  if (path.find("site-packages") != std::string_view::npos ||
      path.find("dist-packages") != std::string_view::npos)
    return "pip";
  if (path.find("conda") != std::string_view::npos || path.find("/envs/") != std::string_view::npos)
    return "conda";
  if (path.find("/cuda") != std::string_view::npos || path.find("CUDA") != std::string_view::npos)
    return "toolkit";
  return "system";
}

std::string normalise(std::string name) {
  name = lower(name);
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

// "{'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:True'}" (a dict, current layout) or the
// value of PYTORCH_CUDA_ALLOC_CONF alone (older).
void fill_alloc_conf(Snapshot &s, std::string_view v) {
  if (says_nothing(v))
    return;
  if (v.front() != '{') {
    s.software.env["PYTORCH_CUDA_ALLOC_CONF"] = std::string(v);
    return;
  }
  std::size_t i = 0;
  auto next_quoted = [&](std::string &out) {
    auto a = v.find('\'', i);
    if (a == std::string_view::npos)
      return false;
    auto b = v.find('\'', a + 1);
    if (b == std::string_view::npos)
      return false;
    out = std::string(v.substr(a + 1, b - a - 1));
    i = b + 1;
    return true;
  };
  std::string key, value;
  while (next_quoted(key) && next_quoted(value))
    s.software.env[key] = value;
}

// The conda build string of pytorch: "py3.10_cuda12.1_cudnn8.9.2_0" -> cuDNN "8.9.2".
OptStr cudnn_from_conda_build(std::string_view build) {
  auto p = build.find("cudnn");
  if (p == std::string_view::npos)
    return std::nullopt;
  auto v = build.substr(p + 5);
  auto end = v.find('_');
  v = v.substr(0, end);
  return starts_with_digit(v) ? OptStr(std::string(v)) : std::nullopt;
}

void fill_python(Snapshot &s, const CollectEnvReport &r) {
  auto torch_version = r.value("PyTorch version");
  const auto *py = r.field("Python version");
  if (!py && !torch_version)
    return;
  PythonEnv env;
  env.interpreter = "collect_env's python";
  if (py)
    if (auto w = words(py->value); !w.empty() && starts_with_digit(w[0]))
      env.python_version = w[0];
  auto package = [&](std::initializer_list<std::string_view> names) -> const CollectEnvPackage * {
    // pip's line first (it names the wheel's local version), then conda's.
    for (const char *manager : {"pip3", "pip", "conda"})
      for (const auto &p : r.packages)
        if (p.manager == manager && p.version &&
            std::find(names.begin(), names.end(), normalise(p.name)) != names.end())
          return &p;
    return nullptr;
  };
  for (const auto &p : r.packages)
    if (p.version && p.manager != "conda" && normalise(p.name).rfind("nvidia-", 0) == 0)
      env.nvidia_wheels[normalise(p.name)] = *p.version;
  if (const auto *p = package({"torchvision"}))
    env.torchvision = p->version;
  if (const auto *p = package({"torchaudio"}))
    env.torchaudio = p->version;
  // Listed only where the report's package filter keeps it (PyTorch's keeps names with torch,
  // numpy...; vLLM's collect_env, built on it, adds transformers) or a user pasted the line.
  if (const auto *p = package({"transformers"}))
    env.transformers = p->version;
  if (torch_version) {
    TorchInstall t;
    t.version = torch_version;
    t.variant = torch_variant(*torch_version);
    const auto cuda = r.field("CUDA used to build PyTorch");
    const auto rocm = r.field("ROCM used to build PyTorch");
    if (cuda && starts_with_digit(cuda->value))
      t.cuda = cuda->value;
    if (rocm && starts_with_digit(rocm->value))
      t.hip = rocm->value;
    const bool xpu = r.flag("Is XPU available") == OptBool(true) ||
                     (t.variant && t.variant->rfind("xpu", 0) == 0);
    const bool rocm_suffix = t.variant && t.variant->rfind("rocm", 0) == 0;
    // torch was imported, so a CUDA field of None/Could not collect is torch.version.cuda = None.
    if (cuda && !t.cuda && !t.hip && !xpu && !rocm_suffix &&
        (cuda->value == "None" || cuda->value == "Could not collect") &&
        (!rocm || says_nothing(rocm->value)))
      t.cpu_only = true;
    else if (t.cuda || t.hip || xpu)
      t.cpu_only = false;
    if (const auto *w = package({"nvidia-cudnn-cu11", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13"}))
      t.cudnn = w->version;
    for (const auto &p : r.packages)
      if (!t.cudnn && p.manager == "conda" && p.name == "pytorch" && p.build)
        t.cudnn = cudnn_from_conda_build(*p.build);
    if (!t.cudnn)
      if (const auto *c = package({"cudnn"}))
        t.cudnn = c->version;
    if (const auto *w = package({"nvidia-nccl-cu11", "nvidia-nccl-cu12", "nvidia-nccl-cu13"}))
      t.nccl = w->version;
    t.debug_build = r.flag("Is debug build");
    t.xnnpack = r.flag("Is XNNPACK available");
    env.torch = t;
    if (auto available = r.flag("Is CUDA available")) {
      DeepProbe d;
      d.ran = true; // collect_env imported torch and asked torch.cuda.is_available()
      d.cuda_available = available;
      d.xpu_available = r.flag("Is XPU available");
      env.deep = d;
    }
  }
  s.software.python_envs.push_back(std::move(env));
  s.software.python_search = {"the Python that ran collect_env"};
}

// The compute capability of a GPU named by nvidia-smi: the kb's row for the name, else the one
// capability every kb row matching its model number shares ("NVIDIA A100-SXM-64GB": no kb row,
// but the kb's four A100s are all 8.0). nullopt when they differ or none matches.
OptStr capability_by_name(std::string_view name, const kb::KnowledgeBase &kb) {
  if (const kb::GpuSpec *spec = kb.find_gpu(name))
    return spec->vendor == "NVIDIA" && !spec->compute_capability.empty()
               ? OptStr(spec->compute_capability)
               : std::nullopt;
  std::string spaced(name);
  std::replace(spaced.begin(), spaced.end(), '-', ' ');
  for (auto word : words_of(spaced)) {
    if (std::none_of(word.begin(), word.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
        word.size() < 3 || word.find("GB") != std::string_view::npos)
      continue;
    OptStr cc;
    bool agree = true;
    for (const auto *g : kb.match_gpus(word)) {
      if (g->vendor != "NVIDIA" || (cc && *cc != g->compute_capability))
        agree = false;
      cc = g->compute_capability;
    }
    if (cc && agree && !cc->empty())
      return cc;
  }
  return std::nullopt;
}

void fill_gpus(Snapshot &s, const CollectEnvReport &r, const kb::KnowledgeBase &kb) {
  int nvidia = 0;
  for (const auto &g : r.gpus) {
    Gpu gpu;
    std::string low = lower(g.name);
    bool amd = g.gfx || low.find("amd") != std::string::npos ||
               low.find("radeon") != std::string::npos || low.find("instinct") != std::string::npos;
    if (amd)
      gpu.vendor = "AMD";
    else if (g.index || low.find("nvidia") != std::string::npos ||
             low.find("geforce") != std::string::npos || low.find("tesla") != std::string::npos ||
             low.find("quadro") != std::string::npos)
      gpu.vendor = "NVIDIA";
    gpu.vendor_id = gpu.vendor == OptStr("NVIDIA") ? OptStr("0x10de")
                    : amd                          ? OptStr("0x1002")
                                                   : std::nullopt;
    gpu.name = g.name;
    if (amd && r.flag("Is CUDA available") == OptBool(true))
      gpu.driver = "amdgpu"; // torch named the device through ROCm: amdgpu owns it
    if (g.index) {
      // nvidia-smi -L listed it: the nvidia driver owns it and NVML answered, with this index
      // and name.
      gpu.driver = "nvidia";
      NvmlGpu n;
      n.index = *g.index;
      n.name = g.name;
      gpu.name_source = "nvml";
      n.compute_capability = capability_by_name(g.name, kb);
      if (n.compute_capability)
        if (const auto *arch = kb.arch(*n.compute_capability))
          n.architecture = arch->name;
      gpu.nvml = n;
      ++nvidia;
    }
    s.gpus.push_back(std::move(gpu));
  }
  if (nvidia > 0) {
    s.nvidia.nvml_status = "ok";
    s.nvidia.gpu_count = nvidia;
  }
  if (r.gpus.empty())
    note(
        s, r, "gpus", "GPU models and configuration",
        r.field("GPU models and configuration")
            ? "the report lists no GPU (nvidia-smi -L failed or is missing, or torch saw no CUDA): "
              "whether the machine has one is unknown"
            : "the report has no GPU line");
}

} // namespace

Snapshot collect_env_snapshot(const CollectEnvReport &r, const kb::KnowledgeBase &kb) {
  Snapshot s;
  // The mark the doctor reads (doctor/check.hpp, from_collect_env): every reading not set below
  // is unknown because the report does not print it.
  s.notes.push_back({"*", std::string("collect_env"),
                     "a `python -m torch.utils.collect_env` report: only what it prints is "
                     "known"});
  // What a reader of `dlrig info --from report.txt` would otherwise take for "none found".
  for (const char *field : {"host.memory", "host.limits", "software.kernel",
                            "software.device_nodes", "software.driver_libraries", "gpus.nvml"})
    s.notes.push_back({field, std::string("collect_env"), "not in a collect_env report"});
  // Host and OS.
  if (auto os = r.value("OS")) {
    std::string name = *os;
    if (auto open = name.rfind(" ("); open != std::string::npos && name.back() == ')') {
      auto arch = name.substr(open + 2, name.size() - open - 3);
      if (is_arch(arch)) {
        s.host.os.arch = arch;
        name.resize(open);
      }
    }
    s.host.os.distro_name = name;
  }
  if (auto platform = r.value("Python platform")) {
    auto [kernel, arch] = kernel_and_arch(*platform);
    s.host.os.kernel_release = kernel;
    if (arch && is_arch(*arch) && !s.host.os.arch)
      s.host.os.arch = arch;
    if (kernel && lower(*kernel).find("microsoft-standard-wsl2") != std::string::npos)
      s.software.runtime.kind = "wsl2";
  }
  fill_cpu(s, r);
  if (auto gcc = r.value("GCC version")) {
    auto w = words(*gcc);
    if (!w.empty() && starts_with_digit(w.back()))
      s.software.host_compiler_version = w.back().substr(0, w.back().find('.'));
  }
  // The other tools it names: the version word of "version 4.4.3", "Ubuntu clang version
  // 18.1.3 (1ubuntu1)", and the libc as printed ("glibc-2.39").
  auto version_word = [&](const char *label) -> OptStr {
    auto v = r.value(label);
    if (!v)
      return std::nullopt;
    for (const auto &w : words(*v))
      if (starts_with_digit(w))
        return w;
    return std::nullopt;
  };
  s.software.clang_version = version_word("Clang version");
  s.software.cmake_version = version_word("CMake version");
  s.software.libc_version = r.value("Libc version");
  if (auto hip = r.value("HIP runtime version"); hip && starts_with_digit(*hip))
    s.software.hip_runtime_version = hip;
  if (auto miopen = r.value("MIOpen runtime version"); miopen && starts_with_digit(*miopen))
    s.software.miopen_runtime_version = miopen;
  // NVIDIA driver and GPUs.
  if (auto d = r.value("Nvidia driver version"))
    s.nvidia.driver_version = d;
  else
    note(s, r, "nvidia.driver_version", "Nvidia driver version",
         r.field("Nvidia driver version")
             ? "the report says \"" + r.field("Nvidia driver version")->value + "\""
             : "the report has no driver line");
  fill_gpus(s, r, kb);
  // The toolkit: collect_env runs the nvcc on PATH.
  if (auto nvcc = r.value("CUDA runtime version")) {
    CudaToolkit t;
    t.root = "nvcc on PATH";
    t.version = nvcc;
    t.nvcc = "nvcc";
    t.found_by = {"path"};
    s.software.cuda_toolkits.push_back(t);
    s.software.cuda_selection.by_path = t.root;
  }
  for (const auto &path : r.cudnn_files) {
    FoundLibrary lib;
    lib.path = path;
    lib.version = cudnn_file_version(path);
    lib.origin = library_origin(path);
    s.software.libraries.cudnn.push_back(std::move(lib));
  }
  // The two variables the report states.
  if (auto loading = r.value("CUDA_MODULE_LOADING set to"))
    s.software.env["CUDA_MODULE_LOADING"] = *loading;
  if (const auto *alloc = r.field("Caching allocator config"))
    fill_alloc_conf(s, alloc->value);
  fill_python(s, r);
  for (const auto &[label, line] : r.unknown_labels)
    s.notes.push_back({"collect_env", fmt::format("collect_env line {}", line),
                       "field \"" + label + "\" is not one dlrig reads (a newer layout?)"});
  return s;
}

Result<Snapshot> load_snapshot_or_report(const std::string &path, const kb::KnowledgeBase &kb) {
  auto read = read_snapshot_text(path);
  if (!read)
    return read.error();
  std::optional<std::string> text = utf8_from_utf16(*read);
  if (!text)
    text = std::move(*read);
  if (!looks_like_collect_env(*text)) {
    const auto body = without_bom(trim(*text));
    // Neither form: say both, rather than a JSON parser's complaint about the first character.
    if (body.empty() || (body.front() != '{' && body.front() != '[')) {
      // UTF-16 of mostly ASCII text: every other byte of the start is NUL, the rest are not.
      std::size_t pairs = std::min<std::size_t>(text->size() / 2, 256), nul[2] = {0, 0};
      for (std::size_t i = 0; i < 2 * pairs; ++i)
        nul[i % 2] += (*text)[i] == '\0';
      bool utf16 = pairs >= 8 && ((nul[0] * 10 >= pairs * 8 && nul[1] * 10 < pairs) ||
                                  (nul[1] * 10 >= pairs * 8 && nul[0] * 10 < pairs));
      return make_error(
          ErrorKind::bad_input,
          utf16 ? path + ": UTF-16 text without a byte-order mark; save it as UTF-8 (PowerShell: "
                         "`python -m torch.utils.collect_env | Out-File -Encoding utf8 "
                         "report.txt`) and give that file"
                : path + ": neither a dlrig snapshot (JSON from `dlrig snapshot`, starting with "
                         "'{') nor the text of `python -m torch.utils.collect_env` (a line "
                         "starting \"PyTorch version:\")");
    }
    auto snap = snapshot_from_json(*text);
    if (!snap)
      return prefixed(path + ": ", snap.error());
    return snap;
  }
  auto report = parse_collect_env(*text);
  if (!report) {
    // "line 12: ..." becomes "FILE:12: ..." (the form compilers use, which editors jump to).
    Error e = report.error();
    if (e.message.rfind("line ", 0) == 0)
      e.message = path + ":" + e.message.substr(5);
    else
      e.message = path + ": " + e.message;
    e.message += " (a `python -m torch.utils.collect_env` report, as it printed it)";
    return e;
  }
  return collect_env_snapshot(*report, kb);
}

} // namespace dlrig::probe
