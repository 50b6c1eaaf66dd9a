#include "dlrig/probe/software_parse.hpp"
#include "dlrig/core/text.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

namespace dlrig {

namespace {

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    auto nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos)
      break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

// "550.54.15", "12.4", "9": dot-separated runs of digits.
bool is_dotted_version(std::string_view s) {
  if (s.empty() || s.front() == '.' || s.back() == '.')
    return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      if (s[i + 1] == '.')
        return false;
    } else if (s[i] < '0' || s[i] > '9') {
      return false;
    }
  }
  return true;
}

bool contains_ci(std::string_view hay, std::string_view needle) {
  return lower(hay).find(lower(needle)) != std::string::npos;
}

// The quoted string (or None) on the right of `NAME... = ` in a Python assignment line.
// Handles `cuda: Optional[str] = '12.4'` and `__version__ = "2.5.1"`.
std::optional<OptStr> python_string_value(std::string_view line, std::string_view name) {
  line = trim(line);
  if (line.substr(0, name.size()) != name)
    return std::nullopt;
  auto rest = line.substr(name.size());
  if (rest.empty() || !(rest.front() == ' ' || rest.front() == ':' || rest.front() == '='))
    return std::nullopt;
  auto eq = rest.find('=');
  if (eq == std::string_view::npos)
    return std::nullopt;
  auto value = trim(rest.substr(eq + 1));
  if (value.substr(0, 4) == "None")
    return OptStr{};
  if (value.size() < 2 || (value.front() != '\'' && value.front() != '"'))
    return std::nullopt;
  auto close = value.find(value.front(), 1);
  if (close == std::string_view::npos)
    return std::nullopt;
  auto inner = value.substr(1, close - 1);
  if (inner.empty())
    return OptStr{};
  return OptStr{std::string(inner)};
}

std::optional<int> define_value(std::string_view text, std::string_view name) {
  for (auto line : lines_of(text)) {
    auto w = words_of(line);
    if (w.size() >= 3 && w[0] == "#define" && w[1] == name) {
      int v = 0;
      auto [p, ec] = std::from_chars(w[2].data(), w[2].data() + w[2].size(), v);
      if (ec == std::errc() && p == w[2].data() + w[2].size())
        return v;
    }
  }
  return std::nullopt;
}

} // namespace

std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i])))
      ++i;
    std::size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i])))
      ++i;
    if (i > start)
      words.push_back(line.substr(start, i - start));
  }
  return words;
}

std::set<std::string> parse_proc_modules(std::string_view text) {
  std::set<std::string> names;
  for (auto line : lines_of(text)) {
    auto w = words_of(line);
    if (!w.empty())
      names.emplace(w[0]);
  }
  return names;
}

std::set<std::string> parse_modprobe_blacklist(std::string_view text) {
  std::set<std::string> names;
  for (auto line : lines_of(text)) {
    auto hash = line.find('#');
    auto w = words_of(line.substr(0, hash));
    if (w.size() >= 2 && w[0] == "blacklist")
      names.emplace(w[1]);
    else if (w.size() >= 3 && w[0] == "install" &&
             (w[2] == "/bin/false" || w[2] == "/bin/true" || w[2] == "/usr/bin/false" ||
              w[2] == "/usr/bin/true"))
      names.emplace(w[1]);
  }
  return names;
}

NvidiaProcVersion parse_nvidia_proc_version(std::string_view text) {
  NvidiaProcVersion out;
  auto lines = lines_of(text);
  if (lines.empty())
    return out;
  auto first = trim(lines[0]);
  if (first.empty())
    return out;
  out.first_line = std::string(first);
  auto w = words_of(first);
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024"
  // The open module adds "for x86_64" after "Module": take the first version after it.
  bool after_module = false;
  for (auto word : w) {
    if (word == "Module")
      after_module = true;
    else if (after_module && is_dotted_version(word) && word.find('.') != std::string_view::npos) {
      out.version = std::string(word);
      break;
    }
  }
  if (first.find("NVRM") != std::string_view::npos)
    out.open = first.find("Open Kernel Module") != std::string_view::npos;
  return out;
}

OptBool taint_is_proprietary(std::string_view taint) {
  taint = trim(taint);
  if (taint.empty())
    return std::nullopt;
  return taint.find('P') != std::string_view::npos;
}

std::string parse_iommu_mode(std::string_view cmdline) {
  std::string mode = "default";
  bool pt = false;
  for (auto w : words_of(cmdline)) {
    if (w == "iommu=pt" || w == "iommu.passthrough=1")
      pt = true;
    else if (w == "iommu=off" || w == "intel_iommu=off" || w == "amd_iommu=off")
      mode = "off";
    else if ((w == "intel_iommu=on" || w == "amd_iommu=on" || w == "iommu=on" ||
              w == "iommu=force") &&
             mode != "off")
      mode = "on";
  }
  // Passthrough keeps the IOMMU on for devices assigned to VMs but maps host DMA 1:1, which is
  // what P2P between GPUs needs; "off" wins over it since nothing is translated then.
  if (pt && mode != "off")
    return "pt";
  return mode;
}

OptStr library_version_from_name(std::string_view name, std::string_view stem) {
  if (name.size() <= stem.size() + 1 || name.substr(0, stem.size()) != stem ||
      name[stem.size()] != '.')
    return std::nullopt;
  auto version = name.substr(stem.size() + 1);
  if (!is_dotted_version(version))
    return std::nullopt;
  return std::string(version);
}

std::vector<std::string> cudnn_members(const std::vector<std::string> &names) {
  std::set<std::string> out;
  for (const auto &n : names) {
    auto so = n.find(".so.");
    if (n.rfind("libcudnn_", 0) != 0 || so == std::string::npos)
      continue;
    auto stem = n.substr(0, so + 3); // "libcudnn_ops.so"
    if (auto version = library_version_from_name(n, stem))
      out.insert(stem + "." + version->substr(0, version->find('.')));
  }
  return {out.begin(), out.end()};
}

LdSoConf parse_ld_so_conf(std::string_view text) {
  LdSoConf conf;
  for (auto line : lines_of(text)) {
    auto hash = line.find('#');
    auto w = words_of(line.substr(0, hash));
    if (w.empty())
      continue;
    if (w[0] == "include") {
      for (std::size_t i = 1; i < w.size(); ++i)
        conf.includes.emplace_back(w[i]);
    } else if (w[0].front() == '/') {
      // Old ld.so.conf allows "dir=TYPE" and several dirs per line separated by spaces/colons.
      for (auto word : w)
        for (auto &d : split_path_list(word)) {
          auto eq = d.find('=');
          conf.dirs.push_back(eq == std::string::npos ? d : d.substr(0, eq));
        }
    }
  }
  return conf;
}

std::vector<std::string> split_path_list(std::string_view value) {
  std::vector<std::string> parts;
  while (true) {
    auto colon = value.find(':');
    auto part = value.substr(0, colon);
    if (!part.empty())
      parts.emplace_back(part);
    if (colon == std::string_view::npos)
      break;
    value.remove_prefix(colon + 1);
  }
  return parts;
}

OptStr parse_cuda_version_json(std::string_view text) {
  auto doc = Json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return std::nullopt;
  auto cuda = doc.find("cuda");
  if (cuda == doc.end() || !cuda->is_object())
    return std::nullopt;
  auto version = cuda->find("version");
  if (version == cuda->end() || !version->is_string())
    return std::nullopt;
  auto v = version->get<std::string>();
  if (!is_dotted_version(v))
    return std::nullopt;
  return v;
}

OptStr parse_cuda_version_txt(std::string_view text) {
  auto lines = lines_of(text);
  if (lines.empty())
    return std::nullopt;
  auto w = words_of(lines[0]);
  if (w.size() >= 3 && w[0] == "CUDA" && w[1] == "Version" && is_dotted_version(w[2]))
    return std::string(w[2]);
  return std::nullopt;
}

OptStr cuda_version_from_dirname(std::string_view name) {
  if (name.substr(0, 4) != "cuda")
    return std::nullopt;
  auto rest = name.substr(4);
  if (!rest.empty() && (rest.front() == '-' || rest.front() == '_'))
    rest.remove_prefix(1);
  if (!is_dotted_version(rest) || rest.find('.') == std::string_view::npos)
    return std::nullopt;
  return std::string(rest);
}

OptStr parse_cuda_h_version(std::string_view text) {
  auto v = define_value(text, "CUDA_VERSION");
  if (!v || *v < 1000)
    return std::nullopt;
  return std::to_string(*v / 1000) + "." + std::to_string((*v % 1000) / 10);
}

OptStr parse_version_header(std::string_view text, const std::vector<std::string_view> &macros) {
  std::string v;
  for (std::size_t i = 0; i < macros.size(); ++i) {
    auto n = define_value(text, macros[i]);
    if (!n)
      return i >= 2 ? OptStr{v} : std::nullopt;
    v += (i ? "." : "") + std::to_string(*n);
  }
  return v;
}

// nccl.h: https://github.com/NVIDIA/nccl/blob/master/src/nccl.h.in (NCCL_MAJOR/MINOR/PATCH);
// cublas_api.h: CUBLAS_VER_MAJOR/MINOR/PATCH/BUILD (the CUDA toolkit's include folder);
// cudnn_version.h: https://docs.nvidia.com/deeplearning/cudnn/ (CUDNN_MAJOR/MINOR/PATCHLEVEL).
const std::vector<LibraryHeader> kLibraryHeaders = {
    {"libcudnn.so", "cudnn_version", {"CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"}},
    {"libnccl.so", "nccl.h", {"NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"}},
    {"libcublas.so",
     "cublas_api.h",
     {"CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR", "CUBLAS_VER_PATCH", "CUBLAS_VER_BUILD"}},
};

OptStr parse_cudnn_header(std::string_view text) {
  return parse_version_header(text, kLibraryHeaders[0].macros);
}

TorchVersionPy parse_torch_version_py(std::string_view text) {
  TorchVersionPy out;
  for (auto line : lines_of(text)) {
    if (auto v = python_string_value(line, "__version__"))
      out.version = *v;
    else if (auto c = python_string_value(line, "cuda")) {
      out.cuda = *c;
      out.cuda_none = !*c;
    } else if (auto h = python_string_value(line, "hip"))
      out.hip = *h;
    else if (auto x = python_string_value(line, "xpu"))
      out.xpu = *x;
  }
  return out;
}

OptStr parse_python_version_assignment(std::string_view text) {
  for (auto line : lines_of(text))
    if (auto v = python_string_value(line, "__version__"))
      return *v;
  return std::nullopt;
}

OptStr torch_variant(std::string_view version) {
  auto plus = version.find('+');
  if (plus == std::string_view::npos || plus + 1 >= version.size())
    return std::nullopt;
  return std::string(version.substr(plus + 1));
}

OptStr parse_pyvenv_version(std::string_view text) {
  OptStr found;
  for (auto line : lines_of(text)) {
    auto eq = line.find('=');
    if (eq == std::string_view::npos)
      continue;
    auto key = trim(line.substr(0, eq));
    auto value = trim(line.substr(eq + 1));
    if (key == "version" || key == "version_info") {
      // version_info is "3.11.4.final.0": keep the numeric part.
      auto end = value.find_first_not_of("0123456789.");
      auto numeric = value.substr(0, end);
      while (!numeric.empty() && numeric.back() == '.')
        numeric.remove_suffix(1);
      if (is_dotted_version(numeric) && numeric.find('.') != std::string_view::npos) {
        found = std::string(numeric);
        if (key == "version")
          return found;
      }
    }
  }
  return found;
}

OptStr python_version_from_dirname(std::string_view name) {
  if (name.substr(0, 6) != "python")
    return std::nullopt;
  auto rest = name.substr(6);
  if (!is_dotted_version(rest) || rest.find('.') == std::string_view::npos)
    return std::nullopt;
  return std::string(rest);
}

namespace {
std::string pep503(std::string_view name) {
  std::string out;
  for (char c : name) {
    char n = (c == '_' || c == '.')
                 ? '-'
                 : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!(n == '-' && !out.empty() && out.back() == '-'))
      out += n;
  }
  return out;
}

} // namespace

std::optional<DistInfo> parse_dist_info_name(std::string_view dirname) {
  constexpr std::string_view suffix = ".dist-info";
  if (dirname.size() <= suffix.size() || dirname.substr(dirname.size() - suffix.size()) != suffix)
    return std::nullopt;
  auto stem = dirname.substr(0, dirname.size() - suffix.size());
  // Wheel rules escape '-' in names to '_', so the first '-' separates name and version.
  auto dash = stem.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 >= stem.size())
    return std::nullopt;
  DistInfo d;
  d.name = pep503(stem.substr(0, dash));
  d.version = std::string(stem.substr(dash + 1));
  if (d.version.empty() || !std::isdigit(static_cast<unsigned char>(d.version.front())))
    return std::nullopt;
  return d;
}

OptBool wheel_built_locally(std::string_view wheel_text) {
  bool any_tag = false, all_linux = true, purelib = false;
  for (auto line : lines_of(wheel_text)) {
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.rfind("Root-Is-Purelib:", 0) == 0)
      purelib = line.find("true") != std::string_view::npos;
    if (line.rfind("Tag:", 0) != 0)
      continue;
    any_tag = true;
    // Tag: cp311-cp311-linux_x86_64 (python-abi-platform; the platform may be dotted).
    auto tag = line.substr(4);
    tag.remove_prefix(std::min(tag.find_first_not_of(' '), tag.size()));
    auto dash = tag.rfind('-');
    auto platform = dash == std::string_view::npos ? tag : tag.substr(dash + 1);
    bool linux_plain = false;
    std::size_t start = 0;
    while (start <= platform.size()) {
      auto end = std::min(platform.find('.', start), platform.size());
      if (platform.substr(start, end - start).rfind("linux_", 0) == 0)
        linux_plain = true;
      start = end + 1;
    }
    all_linux = all_linux && linux_plain;
  }
  if (!any_tag)
    return std::nullopt;
  return all_linux && !purelib;
}

bool metadata_requires(std::string_view metadata, std::string_view dist) {
  const std::string want = pep503(dist);
  for (auto line : lines_of(metadata)) {
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.empty())
      break; // the headers end at the first blank line; the description follows
    if (line.rfind("Requires-Dist:", 0) != 0)
      continue;
    auto spec = line.substr(14);
    spec.remove_prefix(std::min(spec.find_first_not_of(' '), spec.size()));
    auto end = spec.find_first_of(" ;([<>=!~");
    if (pep503(spec.substr(0, end)) == want)
      return true;
  }
  return false;
}

std::optional<DistInfo> parse_conda_meta_name(std::string_view filename) {
  constexpr std::string_view suffix = ".json";
  if (filename.size() <= suffix.size() ||
      filename.substr(filename.size() - suffix.size()) != suffix)
    return std::nullopt;
  auto stem = filename.substr(0, filename.size() - suffix.size());
  auto build_dash = stem.rfind('-');
  if (build_dash == std::string_view::npos || build_dash == 0)
    return std::nullopt;
  auto version_dash = stem.rfind('-', build_dash - 1);
  if (version_dash == std::string_view::npos || version_dash == 0)
    return std::nullopt;
  DistInfo d{std::string(stem.substr(0, version_dash)),
             std::string(stem.substr(version_dash + 1, build_dash - version_dash - 1))};
  if (d.version.empty() || !std::isdigit(static_cast<unsigned char>(d.version.front())))
    return std::nullopt;
  return d;
}

std::set<int> parse_listen_ports(std::string_view text) {
  std::set<int> ports;
  for (auto line : lines_of(text)) {
    auto w = words_of(line);
    // sl local_address rem_address st ...; local_address is HEXADDR:HEXPORT.
    if (w.size() < 4 || w[3] != "0A")
      continue;
    auto colon = w[1].rfind(':');
    if (colon == std::string_view::npos)
      continue;
    auto hex = w[1].substr(colon + 1);
    int port = 0;
    auto [p, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), port, 16);
    if (ec == std::errc() && p == hex.data() + hex.size() && port > 0 && port < 65536)
      ports.insert(port);
  }
  return ports;
}

OptStr container_engine_from_cgroup(std::string_view text) {
  if (text.find("kubepods") != std::string_view::npos)
    return std::string("kubernetes");
  if (text.find("libpod") != std::string_view::npos)
    return std::string("podman");
  if (text.find("docker") != std::string_view::npos)
    return std::string("docker");
  if (text.find("/lxc") != std::string_view::npos)
    return std::string("lxc");
  return std::nullopt;
}

OptStr hypervisor_from_dmi(std::string_view sys_vendor, std::string_view product_name) {
  struct Rule {
    std::string_view needle;
    const char *name;
  };
  static constexpr Rule rules[] = {
      {"qemu", "kvm"},           {"kvm", "kvm"},       {"amazon ec2", "kvm"},
      {"google", "kvm"},         {"vmware", "vmware"}, {"virtualbox", "virtualbox"},
      {"innotek", "virtualbox"}, {"xen", "xen"},       {"parallels", "parallels"},
      {"openstack", "kvm"},      {"bochs", "kvm"},
  };
  for (auto text : {sys_vendor, product_name})
    for (const auto &r : rules)
      if (contains_ci(text, r.needle))
        return std::string(r.name);
  if (contains_ci(sys_vendor, "microsoft") && contains_ci(product_name, "virtual"))
    return std::string("hyperv");
  return std::nullopt;
}

std::optional<std::uint16_t> parse_acs_control(std::string_view config) {
  constexpr std::size_t kExtendedStart = 0x100;
  constexpr std::uint16_t kAcsId = 0x000D;
  if (config.size() < 4096)
    return std::nullopt;
  auto u8 = [&](std::size_t at) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(config[at]));
  };
  auto u32 = [&](std::size_t at) {
    return u8(at) | u8(at + 1) << 8 | u8(at + 2) << 16 | u8(at + 3) << 24;
  };
  std::size_t at = kExtendedStart;
  // Each extended capability header links to the next; a loop guard stops a malformed chain.
  for (int hops = 0; hops < 64 && at >= kExtendedStart && at + 8 <= config.size(); ++hops) {
    auto header = u32(at);
    if (header == 0 || header == 0xFFFFFFFF)
      return std::nullopt;
    if ((header & 0xFFFF) == kAcsId)
      return static_cast<std::uint16_t>(u8(at + 6) | u8(at + 7) << 8);
    at = (header >> 20) & 0xFFC;
    if (at == 0)
      break;
  }
  return std::nullopt;
}

bool acs_redirects(std::uint16_t control) {
  constexpr std::uint16_t kRequestRedirect = 1u << 2;
  constexpr std::uint16_t kCompletionRedirect = 1u << 3;
  return (control & (kRequestRedirect | kCompletionRedirect)) != 0;
}

DeepProbe parse_deep_output(std::string_view stdout_text) {
  DeepProbe out;
  out.ran = false;
  std::string_view payload;
  for (auto line : lines_of(stdout_text))
    if (line.substr(0, kDeepMarker.size()) == kDeepMarker)
      payload = line.substr(kDeepMarker.size());
  if (payload.empty()) {
    auto shown = std::string(trim(stdout_text).substr(0, 200));
    out.error = shown.empty() ? "the interpreter printed nothing"
                              : "the interpreter printed no result line: " + shown;
    return out;
  }
  auto doc = Json::parse(payload, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    out.error = "the result line is not a JSON object: " + std::string(payload.substr(0, 200));
    return out;
  }
  out.ran = true;
  if (auto it = doc.find("cuda_available"); it != doc.end() && it->is_boolean())
    out.cuda_available = it->get<bool>();
  if (auto it = doc.find("device_count"); it != doc.end() && it->is_number_integer())
    out.device_count = it->get<int>();
  if (auto it = doc.find("arch_list"); it != doc.end() && it->is_array())
    for (const auto &a : *it)
      if (a.is_string())
        out.arch_list.push_back(a.get<std::string>());
  if (auto it = doc.find("error");
      it != doc.end() && it->is_string() && !it->get<std::string>().empty())
    out.error = it->get<std::string>();
  return out;
}

} // namespace dlrig
