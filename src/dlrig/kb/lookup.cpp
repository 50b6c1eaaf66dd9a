// Lookups over the loaded knowledge base and the compatibility rules built on it (R1 arch
// coverage, driver -> CUDA, the newest fitting torch wheel).
#include "dlrig/kb/kb.hpp"

#include "dlrig/core/text.hpp"
#include "dlrig/kb/row.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

namespace dlrig::kb {

using detail::lower;
using detail::trim;

namespace {

// Words of a name, lower-case, letters and digits only; "80 GB" joins into "80gb".
std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty())
    out.push_back(std::move(cur));
  std::vector<std::string> joined;
  for (auto &w : out) {
    if ((w == "gb" || w == "gib") && !joined.empty() &&
        joined.back().find_first_not_of("0123456789") == std::string::npos)
      joined.back() += "gb";
    else
      joined.push_back(std::move(w));
  }
  return joined;
}

// Vendor and brand words users and drivers add or leave out ("NVIDIA GeForce RTX 4090").
bool brand_word(const std::string &w) {
  static const std::set<std::string> brands = {"nvidia", "amd", "intel", "geforce", "tesla"};
  return brands.count(w) > 0;
}

std::vector<std::string> key_words(std::string_view s) {
  auto w = words(s);
  w.erase(std::remove_if(w.begin(), w.end(), brand_word), w.end());
  return w;
}

std::string memory_word(const GpuSpec &g) {
  if (!g.memory_gb)
    return {};
  double gb = *g.memory_gb;
  if (gb != static_cast<double>(static_cast<long long>(gb)))
    return {};
  return std::to_string(static_cast<long long>(gb)) + "gb";
}

std::string strip_hex_prefix(std::string_view s) {
  auto t = lower(trim(s));
  if (t.rfind("0x", 0) == 0)
    t = t.substr(2);
  return t;
}

// "550.54.14" -> 550; nullopt when it does not start with a number.
std::optional<long> leading_number(std::string_view s) {
  long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p == s.data())
    return std::nullopt;
  return v;
}

std::string major_minor(std::string_view v) {
  auto first = v.find('.');
  if (first == std::string_view::npos)
    return std::string(v);
  auto second = v.find('.', first + 1);
  return std::string(v.substr(0, second));
}

} // namespace

bool ArchSpec::feature_known(std::string_view feature) const {
  return std::find(unknown.begin(), unknown.end(), feature) == unknown.end();
}

const TorchVariant *TorchRelease::variant(std::string_view tag) const {
  for (const auto &v : variants)
    if (v.tag == tag)
      return &v;
  return nullptr;
}

std::string pip_command(const TorchRelease &release, const TorchVariant &variant) {
  // Three shapes, as the previous-versions page writes them: an index (--index-url), a
  // find-links page (-f ...torch_stable.html, before 1.11: torch and torchvision carry the
  // +variant local version, torchaudio has no CUDA build), and PyPI itself (no option).
  const std::string &url = variant.index_url;
  bool find_links = url.size() > 5 && url.compare(url.size() - 5, 5, ".html") == 0;
  bool pypi = url.rfind("https://pypi.org/", 0) == 0;
  std::string local = find_links ? "+" + variant.tag : "";
  std::string cmd = "pip install torch==" + release.version + local;
  if (!release.torchvision.empty())
    cmd += " torchvision==" + release.torchvision + local;
  if (!release.torchaudio.empty())
    cmd += " torchaudio==" + release.torchaudio;
  if (pypi)
    return cmd;
  return cmd + (find_links ? " -f " : " --index-url ") + url;
}

std::vector<const GpuSpec *> KnowledgeBase::match_gpus(std::string_view name) const {
  auto query = key_words(name);
  if (query.empty())
    return {};
  for (const auto &g : gpus)
    if (key_words(g.name) == query)
      return {&g};
  // Otherwise the GPUs whose names hold every word of the query, a word matching a name's word or
  // its start ("sxm" for "sxm5"; a size like "80gb" or a memory type like "hbm3" may match the
  // GPU's memory instead), with the fewest words left over.
  std::vector<const GpuSpec *> best;
  std::size_t best_extra = 0;
  for (const auto &g : gpus) {
    auto gw = key_words(g.name);
    auto mem = memory_word(g);
    auto types = words(g.memory_type);
    bool all = std::all_of(query.begin(), query.end(), [&](const std::string &q) {
      return std::any_of(gw.begin(), gw.end(),
                         [&](const std::string &w) { return w.starts_with(q); }) ||
             q == mem || std::find(types.begin(), types.end(), q) != types.end();
    });
    if (!all)
      continue;
    std::size_t extra = 0;
    for (const auto &w : gw)
      if (w != mem && std::find(query.begin(), query.end(), w) == query.end())
        ++extra;
    if (best.empty() || extra < best_extra) {
      best = {&g};
      best_extra = extra;
    } else if (extra == best_extra) {
      best.push_back(&g);
    }
  }
  // Nothing: once more with letters and digits glued together split apart ("rtx4090" as
  // "rtx 4090", "3090ti" as "3090 ti"); the catalog's own glued words (a100, sxm4) match first,
  // and a single letter stays on its number ("a2000" is no "a 2000", which "ada 2000" would take).
  if (best.empty()) {
    std::string split;
    std::size_t letters = 0; // the letters just before, in a row
    for (std::size_t i = 0; i < name.size(); ++i) {
      const auto c = static_cast<unsigned char>(name[i]);
      const bool digit = std::isdigit(c) != 0, alpha = std::isalpha(c) != 0;
      if (i > 0 && ((digit && letters >= 2) ||
                    (alpha && std::isdigit(static_cast<unsigned char>(name[i - 1])))))
        split += ' ';
      split += name[i];
      letters = alpha ? letters + 1 : 0;
    }
    if (split != name)
      return match_gpus(split);
  }
  return best;
}

const GpuSpec *KnowledgeBase::find_gpu(std::string_view name) const {
  // A catalog name as written (the data files cross-reference GPUs this way, and the time model
  // looks them up per estimate): no word matching needed.
  for (const auto &g : gpus)
    if (g.name == name)
      return &g;
  auto found = match_gpus(name);
  return found.size() == 1 ? found.front() : nullptr;
}

const GpuSpec *KnowledgeBase::find_gpu_by_pci(std::string_view vendor_id,
                                              std::string_view device_id) const {
  auto key = strip_hex_prefix(vendor_id) + ":" + strip_hex_prefix(device_id);
  for (const auto &g : gpus)
    for (const auto &id : g.pci_ids)
      if (id == key)
        return &g;
  return nullptr;
}

const ArmCpuId *KnowledgeBase::arm_cpu(int implementer, std::optional<int> part) const {
  for (const auto &a : arm_cpus)
    if (a.implementer == implementer && a.part == part)
      return &a;
  return nullptr;
}

const ArchSpec *KnowledgeBase::arch(std::string_view compute_capability) const {
  auto cc = trim(compute_capability);
  if (auto t = cc_of_target(cc); !t.empty())
    cc = t;
  for (const auto &a : archs)
    if (a.compute_capability == cc)
      return &a;
  return nullptr;
}

const CudaDriverMin *KnowledgeBase::cuda_min_driver(std::string_view cuda_version) const {
  auto v = trim(cuda_version);
  const CudaDriverMin *first = nullptr;
  for (const auto &c : cuda) {
    if (c.version == v)
      return &c;
    if (c.cuda == v) {
      if (c.release == "GA")
        return &c;
      if (!first)
        first = &c;
    }
  }
  // "12.4.0" for a GA the notes number differently (10.2.89): fall back to the minor's GA.
  if (!first && std::count(v.begin(), v.end(), '.') == 2)
    for (const auto &c : cuda)
      if (c.cuda == major_minor(v) && c.release == "GA" && compare_versions(c.version, v) == 0)
        return &c;
  return first;
}

TorchVersion parse_torch_version(std::string_view version) {
  TorchVersion out;
  auto v = trim(version);
  auto plus = v.find('+');
  if (plus != std::string::npos) {
    out.local = v.substr(plus + 1);
    v = v.substr(0, plus);
  }
  // The release part is the leading run of dot-separated numbers (PEP 440).
  std::size_t end = 0;
  while (end < v.size()) {
    std::size_t d = end;
    while (d < v.size() && std::isdigit(static_cast<unsigned char>(v[d])))
      ++d;
    if (d == end)
      break;
    end = d;
    if (end + 1 < v.size() && v[end] == '.' && std::isdigit(static_cast<unsigned char>(v[end + 1])))
      ++end;
    else
      break;
  }
  out.release = v.substr(0, end);
  std::string rest = v.substr(end);
  if (!rest.empty() && rest[0] == '.')
    rest.erase(0, 1);
  // Nightlies are "X.Y.Z.devYYYYMMDD": the date of the build, before the X.Y.Z release.
  if (rest.size() == 11 && rest.rfind("dev", 0) == 0 &&
      rest.find_first_not_of("0123456789", 3) == std::string::npos)
    out.nightly_date = rest.substr(3);
  else
    out.pre = rest;
  return out;
}

std::string torch_companion_family(std::string_view torch_version, std::string_view companion) {
  auto release = parse_torch_version(torch_version).release;
  auto dot = release.find('.');
  if (dot == std::string::npos)
    return "";
  auto major = leading_number(release.substr(0, dot));
  auto minor = leading_number(release.substr(dot + 1));
  if (!major || !minor || (*major != 1 && *major != 2))
    return "";
  if (companion == "torchvision")
    return "0." + std::to_string(*minor + (*major == 2 ? 15 : 1));
  if (companion == "torchaudio")
    return (*major == 2 ? "2." : "0.") + std::to_string(*minor);
  return "";
}

std::string torch_stable_abi_since(std::string_view companion) {
  return companion == "torchaudio" ? "2.10" : "";
}

TorchLookup KnowledgeBase::lookup_torch(std::string_view version) const {
  TorchLookup out;
  out.parsed = parse_torch_version(version);
  const auto &p = out.parsed;
  if (p.release.empty())
    return out;
  bool final_release = !p.nightly() && p.pre.empty();
  auto mm = major_minor(p.release);
  for (const auto &r : torch) {
    if (final_release && p.release.find('.') != p.release.rfind('.') &&
        compare_versions(r.version, p.release) == 0) {
      out.release = &r;
      out.exact = true;
      return out;
    }
    // Rows are oldest first: the last of the minor is its newest patch.
    if (major_minor(r.version) == mm)
      out.release = &r;
  }
  return out;
}

const TorchRelease *KnowledgeBase::torch_release(std::string_view version) const {
  return lookup_torch(version).release;
}

const ModelArch *KnowledgeBase::find_model(std::string_view name) const {
  auto n = lower(trim(name));
  for (const auto &m : models)
    if (lower(m.name) == n || lower(m.display_name) == n)
      return &m;
  return nullptr;
}

const ModelArch *KnowledgeBase::model_of_repo(std::string_view id) const {
  const auto repo = lower(trim(id));
  const auto slash = repo.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == repo.size() ||
      repo.find('/', slash + 1) != std::string::npos)
    return nullptr;
  const std::string want = "huggingface.co/" + repo + "/";
  for (const auto &m : models)
    if (lower(m.source).find(want) != std::string::npos)
      return &m;
  return nullptr;
}

const LinkSpec *KnowledgeBase::find_link(std::string_view name) const {
  auto q = key_words(name);
  for (const auto &l : links)
    if (key_words(l.name) == q)
      return &l;
  return nullptr;
}

const LinkSpec *KnowledgeBase::pcie(int generation) const {
  for (const auto &l : links)
    if (l.kind == "pcie" && leading_number(l.generation) == generation)
      return &l;
  return nullptr;
}

OptF64 KnowledgeBase::pcie_bytes_per_s(int generation, int lanes) const {
  const auto *l = pcie(generation);
  if (!l || !l->per_lane_bytes_per_s || lanes <= 0)
    return std::nullopt;
  return *l->per_lane_bytes_per_s * lanes;
}

const CloudInstance *KnowledgeBase::find_cloud(std::string_view instance) const {
  auto n = lower(trim(instance));
  for (const auto &c : cloud)
    if (lower(c.instance) == n)
      return &c;
  return nullptr;
}

std::string KnowledgeBase::max_cuda_for_driver(std::string_view driver) const {
  auto branch = leading_number(trim(driver));
  if (!branch)
    return {};
  std::string best;
  for (const auto &c : cuda) {
    auto row_branch = leading_number(c.min_driver_linux);
    if (row_branch && *row_branch <= *branch &&
        (best.empty() || compare_versions(c.cuda, best) > 0))
      best = c.cuda;
  }
  return best;
}

CudaSupport KnowledgeBase::driver_supports_cuda(std::string_view driver,
                                                std::string_view cuda_version) const {
  const auto *row = cuda_min_driver(major_minor(trim(cuda_version)));
  auto max = max_cuda_for_driver(driver);
  if (!row || max.empty())
    return CudaSupport::unknown;
  if (compare_versions(max, row->cuda) >= 0)
    return CudaSupport::native;
  if (!row->minor_compat_min_driver.empty() && leading_number(max) == leading_number(row->cuda) &&
      compare_versions(trim(driver), row->minor_compat_min_driver) >= 0)
    return CudaSupport::minor_compat;
  return CudaSupport::unsupported;
}

namespace {

struct Target {
  bool ptx = false;
  int major = 0, minor = 0;
  bool specific = false; // 'a' or 'f' suffix: runs on exactly this capability
};

// "sm_86", "sm_90a", "compute_120", "8.6", "8.6+PTX" -> targets; nothing for text it cannot read.
std::vector<Target> parse_target(std::string_view entry) {
  std::string e = lower(trim(entry));
  std::vector<Target> out;
  auto digits_target = [&](std::string d, bool ptx) {
    bool specific = false;
    if (!d.empty() && (d.back() == 'a' || d.back() == 'f')) {
      specific = true;
      d.pop_back();
    }
    if (d.size() < 2 || d.find_first_not_of("0123456789") != std::string::npos)
      return;
    auto major = parse_ranged(d.substr(0, d.size() - 1), 0, 999); // "sm_99999999999" is no target
    if (major)
      out.push_back(Target{ptx, *major, d.back() - '0', specific});
  };
  if (e.rfind("sm_", 0) == 0) {
    digits_target(e.substr(3), false);
  } else if (e.rfind("compute_", 0) == 0) {
    digits_target(e.substr(8), true);
  } else {
    bool ptx = false;
    auto plus = e.find("+ptx");
    if (plus != std::string::npos) {
      ptx = true;
      e = e.substr(0, plus);
    }
    auto dot = e.find('.');
    if (dot == std::string::npos)
      return out;
    digits_target(e.substr(0, dot) + e.substr(dot + 1), false);
    if (ptx && !out.empty()) {
      auto t = out.back();
      t.ptx = true;
      out.push_back(t);
    }
  }
  return out;
}

} // namespace

std::string cc_of_target(std::string_view target) {
  const auto t = lower(trim(target));
  std::string digits;
  if (t.rfind("compute_", 0) == 0)
    digits = t.substr(8);
  else if (t.rfind("sm_", 0) == 0)
    digits = t.substr(3);
  else if (t.rfind("sm", 0) == 0)
    digits = t.substr(2);
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f'))
    digits.pop_back(); // sm_90a, sm_100f: arch-specific and family targets of that capability
  if (digits.size() < 2 || digits.find_first_not_of("0123456789") != std::string::npos)
    return "";
  return digits.substr(0, digits.size() - 1) + "." + digits.substr(digits.size() - 1);
}

std::string cuda_of_tag(std::string_view tag) {
  const auto t = lower(trim(tag));
  if (t.rfind("cu", 0) != 0 || t.size() < 5 ||
      t.find_first_not_of("0123456789", 2) != std::string::npos)
    return "";
  return t.substr(2, t.size() - 3) + "." + t.substr(t.size() - 1);
}

bool arch_list_covers(const std::vector<std::string> &arch_list, std::string_view cc) {
  auto c = trim(cc);
  auto dot = c.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= c.size() ||
      c.find_first_not_of("0123456789.") != std::string::npos)
    return false;
  auto major_read = parse_ranged(std::string(c.substr(0, dot)), 0, 999);
  auto minor_read = parse_ranged(std::string(c.substr(dot + 1)), 0, 999);
  if (!major_read || !minor_read) // "99999999999.0" or "8.6.1"
    return false;
  const int major = *major_read, minor = *minor_read;
  for (const auto &entry : arch_list) {
    for (const auto &t : parse_target(entry)) {
      if (t.specific) {
        if (t.major == major && t.minor == minor)
          return true;
      } else if (t.ptx) {
        if (t.major < major || (t.major == major && t.minor <= minor))
          return true;
      } else if (t.major == major && t.minor <= minor) {
        return true;
      }
    }
  }
  return false;
}

std::optional<TorchChoice> newest_torch_for(const KnowledgeBase &kb, std::string_view driver,
                                            std::string_view cc) {
  for (auto rel = kb.torch.rbegin(); rel != kb.torch.rend(); ++rel) {
    const TorchVariant *best = nullptr;
    for (const auto &v : rel->variants) {
      if (v.cuda.empty() || v.arch_list.empty() || !arch_list_covers(v.arch_list, cc))
        continue;
      if (kb.driver_supports_cuda(driver, v.cuda) != CudaSupport::native)
        continue;
      if (!best || compare_versions(v.cuda, best->cuda) > 0)
        best = &v;
    }
    if (best)
      return TorchChoice{&*rel, best, CudaSupport::native, pip_command(*rel, *best)};
  }
  return std::nullopt;
}

} // namespace dlrig::kb
