#include "dlrig/doctor/facts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace dlrig::doctor {

std::vector<int> parse_version(std::string_view v) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) {
    int n = 0;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])) && n < 100000000)
      n = n * 10 + (v[i++] - '0');
    out.push_back(n);
    if (i + 1 < v.size() && v[i] == '.' && std::isdigit(static_cast<unsigned char>(v[i + 1])))
      ++i;
    else
      break;
  }
  return out;
}

int compare_versions(std::string_view a, std::string_view b) {
  auto va = parse_version(a), vb = parse_version(b);
  for (std::size_t i = 0; i < std::max(va.size(), vb.size()); ++i) {
    int x = i < va.size() ? va[i] : 0, y = i < vb.size() ? vb[i] : 0;
    if (x != y)
      return x < y ? -1 : 1;
  }
  return 0;
}

std::string major_minor(std::string_view v) {
  auto p = parse_version(v);
  if (p.empty())
    return "";
  return fmt::format("{}.{}", p[0], p.size() > 1 ? p[1] : 0);
}

bool is_nvidia(const Gpu &g) {
  return g.vendor == std::optional<std::string>("NVIDIA") || g.vendor_id == OptStr("0x10de") ||
         g.nvml.has_value();
}

bool is_amd(const Gpu &g) {
  return g.vendor == OptStr("AMD") || g.vendor_id == OptStr("0x1002") || g.amd.has_value();
}

std::vector<const Gpu *> nvidia_gpus(const Snapshot &s) {
  std::vector<const Gpu *> out;
  for (const auto &g : s.gpus)
    if (is_nvidia(g))
      out.push_back(&g);
  return out;
}

std::vector<const Gpu *> nvml_gpus(const Snapshot &s) {
  std::vector<const Gpu *> out;
  for (const auto &g : s.gpus)
    if (g.nvml)
      out.push_back(&g);
  return out;
}

std::string gpu_name(const Gpu &g) {
  if (g.nvml && g.nvml->name)
    return *g.nvml->name;
  return g.name.value_or("unknown GPU");
}

std::string gpu_label(const Gpu &g) {
  if (g.nvml)
    return fmt::format("GPU {} ({}, {})", g.nvml->index, gpu_name(g), g.bdf);
  return fmt::format("{} ({})", gpu_name(g), g.bdf);
}

static std::string strip_0x(const OptStr &v) {
  if (!v)
    return "";
  std::string s = *v;
  if (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0)
    s = s.substr(2);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

const kb::GpuSpec *gpu_spec(const Gpu &g, const kb::KnowledgeBase &kb) {
  std::string id = strip_0x(g.vendor_id) + ":" + strip_0x(g.device_id);
  if (g.vendor_id && g.device_id)
    for (const auto &spec : kb.gpus)
      for (const auto &p : spec.pci_ids) {
        std::string lp = p;
        std::transform(lp.begin(), lp.end(), lp.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        if (lp == id)
          return &spec;
      }
  std::string name = gpu_name(g);
  for (const auto &spec : kb.gpus)
    if (spec.name == name)
      return &spec;
  return nullptr;
}

std::optional<std::string> compute_capability(const Gpu &g, const kb::KnowledgeBase &kb) {
  if (g.nvml && g.nvml->compute_capability)
    return g.nvml->compute_capability;
  if (!is_nvidia(g))
    return std::nullopt;
  if (const auto *spec = gpu_spec(g, kb); spec && !spec->compute_capability.empty())
    return spec->compute_capability;
  return std::nullopt;
}

std::optional<std::string> env_var(const Snapshot &s, std::string_view name) {
  auto it = s.software.env.find(std::string(name));
  if (it == s.software.env.end())
    return std::nullopt;
  return it->second;
}

namespace {

struct ArchEntry {
  bool ptx = false;
  int major = 0, minor = 0;
  bool specific = false; // sm_90a, sm_100f: not forward compatible
};

std::optional<ArchEntry> parse_arch(std::string_view a) {
  ArchEntry e;
  std::string_view num;
  if (a.rfind("sm_", 0) == 0) {
    num = a.substr(3);
  } else if (a.rfind("compute_", 0) == 0) {
    e.ptx = true;
    num = a.substr(8);
  } else {
    // "8.6" or "8.6+PTX" (TORCH_CUDA_ARCH_LIST form)
    auto v = parse_version(a);
    if (v.size() < 2)
      return std::nullopt;
    e.major = v[0];
    e.minor = v[1];
    e.ptx = a.find("+PTX") != std::string_view::npos;
    return e;
  }
  std::size_t i = 0;
  int n = 0;
  while (i < num.size() && std::isdigit(static_cast<unsigned char>(num[i])))
    n = n * 10 + (num[i++] - '0');
  if (i == 0)
    return std::nullopt;
  e.specific = i < num.size();
  e.major = n / 10;
  e.minor = n % 10;
  return e;
}

} // namespace

std::optional<bool> arch_covers(const std::vector<std::string> &arch_list, std::string_view cc) {
  if (arch_list.empty())
    return std::nullopt;
  auto v = parse_version(cc);
  if (v.size() < 2)
    return std::nullopt;
  int major = v[0], minor = v[1];
  for (const auto &a : arch_list) {
    auto e = parse_arch(a);
    if (!e)
      continue;
    if (e->specific) {
      if (e->major == major && e->minor == minor)
        return true;
      continue;
    }
    if (e->ptx) {
      if (e->major * 10 + e->minor <= major * 10 + minor)
        return true;
      continue;
    }
    if (e->major == major && e->minor <= minor)
      return true;
  }
  return false;
}

const kb::CudaDriverMin *min_driver_for(const kb::KnowledgeBase &kb, std::string_view cuda) {
  std::string want = major_minor(cuda);
  const kb::CudaDriverMin *best = nullptr;
  for (const auto &row : kb.cuda)
    if (major_minor(row.cuda) == want && !row.min_driver_linux.empty() &&
        (!best || compare_versions(row.min_driver_linux, best->min_driver_linux) < 0))
      best = &row;
  return best;
}

std::optional<std::string> driver_cuda(const Snapshot &s, const kb::KnowledgeBase &kb) {
  if (s.nvidia.cuda_driver_version)
    return major_minor(*s.nvidia.cuda_driver_version);
  if (!s.nvidia.driver_version)
    return std::nullopt;
  std::optional<std::string> best;
  for (const auto &row : kb.cuda)
    if (!row.min_driver_linux.empty() &&
        compare_versions(row.min_driver_linux, *s.nvidia.driver_version) <= 0 &&
        (!best || compare_versions(row.cuda, *best) > 0))
      best = major_minor(row.cuda);
  return best;
}

const kb::TorchRelease *torch_release(const kb::KnowledgeBase &kb, std::string_view version) {
  auto plus = version.find('+');
  std::string_view base = version.substr(0, plus);
  const kb::TorchRelease *by_minor = nullptr;
  for (const auto &r : kb.torch) {
    if (r.version == base)
      return &r;
    if (compare_versions(r.version, base) == 0)
      return &r;
    if (major_minor(r.version) == major_minor(base) && parse_version(r.version).size() == 2)
      by_minor = &r;
  }
  return by_minor;
}

std::string reinstall_command(const kb::TorchRelease &r, const kb::TorchVariant &v) {
  // kb's command starts "pip install "; replacing a wrong wheel needs --force-reinstall.
  return "pip install --force-reinstall " +
         kb::pip_command(r, v).substr(std::string("pip install ").size());
}

std::optional<WheelChoice> choose_wheel(const kb::KnowledgeBase &kb,
                                        const std::optional<std::string> &driver_cuda_version,
                                        const std::vector<std::string> &ccs,
                                        std::string_view prefer_version) {
  auto fits = [&](const kb::TorchVariant &v) {
    if (v.cuda.empty() || v.index_url.empty())
      return false;
    if (driver_cuda_version && compare_versions(v.cuda, *driver_cuda_version) > 0)
      return false;
    for (const auto &cc : ccs)
      if (arch_covers(v.arch_list, cc) != std::optional<bool>(true))
        return false;
    return true;
  };
  auto best_in = [&](const kb::TorchRelease &r) -> const kb::TorchVariant * {
    const kb::TorchVariant *best = nullptr;
    for (const auto &v : r.variants)
      if (fits(v) && (!best || compare_versions(v.cuda, best->cuda) > 0))
        best = &v;
    return best;
  };
  if (!prefer_version.empty())
    if (const auto *r = torch_release(kb, prefer_version))
      if (const auto *v = best_in(*r))
        return WheelChoice{r, v, reinstall_command(*r, *v)};
  const kb::TorchRelease *best_r = nullptr;
  const kb::TorchVariant *best_v = nullptr;
  for (const auto &r : kb.torch)
    if (const auto *v = best_in(r);
        v && (!best_r || compare_versions(r.version, best_r->version) > 0)) {
      best_r = &r;
      best_v = v;
    }
  if (!best_r)
    return std::nullopt;
  return WheelChoice{best_r, best_v, reinstall_command(*best_r, *best_v)};
}

std::vector<std::string> nvidia_ccs(const Snapshot &s, const kb::KnowledgeBase &kb) {
  std::vector<std::string> out;
  for (const auto *g : nvidia_gpus(s))
    if (auto cc = compute_capability(*g, kb);
        cc && std::find(out.begin(), out.end(), *cc) == out.end())
      out.push_back(*cc);
  return out;
}

std::optional<double> pcie_bytes_per_s(double gts, int width) {
  // Per-lane payload after encoding, GB/s per direction: reference/links.md §1.1 (Wikipedia
  // "PCI Express" comparison table).
  struct Row {
    double gts, gb_per_lane;
  };
  static constexpr Row kRows[] = {{2.5, 0.250},  {5.0, 0.500},  {8.0, 0.985},
                                  {16.0, 1.969}, {32.0, 3.938}, {64.0, 7.563}};
  for (const auto &r : kRows)
    if (gts > r.gts - 0.01 && gts < r.gts + 0.01)
      return r.gb_per_lane * 1e9 * width;
  return std::nullopt;
}

std::string show_opt(const OptBool &v) {
  return v ? (*v ? "yes" : "no") : "n/a";
}

std::string fmt_gib(std::uint64_t bytes) {
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string fmt_gbs(double bytes_per_s) {
  return fmt::format("{:.1f} GB/s", bytes_per_s / 1e9);
}

std::string join(const std::vector<std::string> &parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i)
      out += sep;
    out += parts[i];
  }
  return out;
}

Finding could_not_check(std::string id, std::string what) {
  Finding f;
  f.id = std::move(id);
  f.severity = Severity::info;
  f.title = "Could not check: " + what + " unknown";
  f.why = "The snapshot does not hold this reading, so this check cannot decide.";
  return f;
}

} // namespace dlrig::doctor
