#include "dlrig/kb/search.hpp"

#include "dlrig/kb/row.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <numeric>

namespace dlrig::kb {

using detail::lower;
using detail::trim;

namespace {

constexpr int kSchemaVersion = 1;

// A number in display units, without trailing zeros: 165.2, 1979, 0.354. Unknown -> "n/a".
std::string num(const OptF64 &v, double scale = 1.0, int decimals = 3) {
  if (!v)
    return kUnknown;
  auto s = fmt::format("{:.{}f}", *v / scale, decimals);
  while (!s.empty() && s.back() == '0')
    s.pop_back();
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  return s;
}

std::string num(const std::optional<int> &v) {
  return v ? std::to_string(*v) : kUnknown;
}

// "1008 GB/s"; unknown -> "n/a" without a unit.
std::string with_unit(const OptF64 &v, double scale, const char *unit) {
  return v ? num(v, scale) + " " + unit : std::string(kUnknown);
}

std::string or_na(const std::string &s) {
  return s.empty() ? std::string(kUnknown) : s;
}

std::vector<std::string> filter_words(std::string_view filter) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : filter) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty())
        out.push_back(lower(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty())
    out.push_back(lower(cur));
  return out;
}

// Words of a field for matching: split at spaces and punctuation that separates names, keeping
// the dots of versions ("8.9") and the dashes and underscores inside names.
std::vector<std::string> field_words(const std::string &field) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : lower(field)) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == ',' || c == '(' || c == ')' ||
        c == '/' || c == ';') {
      if (!cur.empty())
        out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty())
    out.push_back(cur);
  return out;
}

// Every filter word begins a word of one of the fields: "h100" finds "H100 PCIe" but not the
// "GH100" die of an H200, "sxm" finds "SXM5", "llama" finds "tiny-llama".
bool matches(const std::vector<std::string> &words, const std::vector<std::string> &fields) {
  std::vector<std::string> all;
  for (const auto &f : fields)
    for (auto &w : field_words(f)) {
      // "llama-3.1-8b" is also "llama", "3.1" and "8b".
      std::size_t start = 0;
      for (std::size_t i = 0; i <= w.size(); ++i)
        if (i == w.size() || w[i] == '-' || w[i] == '_') {
          if (start > 0 && i > start)
            all.push_back(w.substr(start, i - start));
          start = i + 1;
        }
      all.push_back(std::move(w));
    }
  return std::all_of(words.begin(), words.end(), [&](const std::string &w) {
    return std::any_of(all.begin(), all.end(),
                       [&](const std::string &f) { return f.rfind(w, 0) == 0; });
  });
}

Json context() {
  return Json{{"tool", "dlrig"}, {"tool_version", DLRIG_VERSION}};
}

KbView start(const KbQuery &q) {
  KbView v;
  v.json = Json{{"schema_version", kSchemaVersion},
                {"context", context()},
                {"topic", q.topic},
                {"filter", q.filter},
                {"items", Json::array()}};
  return v;
}

void finish(KbView &v, const std::vector<std::string> &all_names, const KbQuery &q) {
  v.matches = v.json["items"].size();
  if (v.matches == 0 && !trim(q.filter).empty())
    v.suggestions = nearest_names(all_names, q.filter);
  if (v.matches == 0)
    v.json["suggestions"] = v.suggestions;
}

// The newest torch release with a variant whose arch list covers `cc`, and those variants.
std::string newest_torch_covering(const KnowledgeBase &kb, const std::string &cc) {
  for (auto rel = kb.torch.rbegin(); rel != kb.torch.rend(); ++rel) {
    std::vector<std::string> tags;
    for (const auto &v : rel->variants)
      if (!v.arch_list.empty() && arch_list_covers(v.arch_list, cc))
        tags.push_back(v.tag);
    if (!tags.empty())
      return rel->version + " (" + join(tags, ", ") + ")";
  }
  return kUnknown;
}

// ---- gpus -------------------------------------------------------------------------------------

struct GpuColumn {
  const char *key;
  std::function<OptF64(const GpuSpec &)> value;
};

const std::vector<GpuColumn> &gpu_columns() {
  static const std::vector<GpuColumn> cols = {
      {"memory", [](const GpuSpec &g) { return g.memory_gb; }},
      {"bandwidth", [](const GpuSpec &g) { return g.memory_bandwidth_bytes_per_s; }},
      {"fp64", [](const GpuSpec &g) { return g.fp64_flops; }},
      {"fp32", [](const GpuSpec &g) { return g.fp32_flops; }},
      {"tf32", [](const GpuSpec &g) { return g.tf32_flops; }},
      {"fp16", [](const GpuSpec &g) { return g.fp16_flops; }},
      {"bf16", [](const GpuSpec &g) { return g.bf16_flops; }},
      {"fp8", [](const GpuSpec &g) { return g.fp8_flops; }},
      {"int8", [](const GpuSpec &g) { return g.int8_ops; }},
      {"tdp", [](const GpuSpec &g) { return g.tdp_w; }},
      {"year",
       [](const GpuSpec &g) -> OptF64 {
         if (g.launch_year)
           return *g.launch_year;
         return std::nullopt;
       }},
      {"price", [](const GpuSpec &g) { return g.launch_price_usd; }},
  };
  return cols;
}

Json gpu_json(const KnowledgeBase &kb, const GpuSpec &g) {
  const auto *a = kb.arch(g.compute_capability);
  return Json{{"name", g.name},
              {"vendor", g.vendor},
              {"architecture", g.architecture},
              {"compute_capability", g.compute_capability},
              {"pci_ids", g.pci_ids},
              {"no_pci_id_reason", g.no_pci_id_reason},
              {"memory_gb", g.memory_gb},
              {"memory_bytes", g.memory_bytes},
              {"memory_type", g.memory_type},
              {"memory_bandwidth_bytes_per_s", g.memory_bandwidth_bytes_per_s},
              {"fp64_flops", g.fp64_flops},
              {"fp32_flops", g.fp32_flops},
              {"tf32_flops", g.tf32_flops},
              {"fp16_flops", g.fp16_flops},
              {"bf16_flops", g.bf16_flops},
              {"fp8_flops", g.fp8_flops},
              {"int8_ops", g.int8_ops},
              {"tdp_w", g.tdp_w},
              {"tdp_min_w", g.tdp_min_w},
              {"pcie_gen", g.pcie_gen},
              {"pcie_lanes", g.pcie_lanes},
              {"nvlink_bytes_per_s", g.nvlink_bytes_per_s},
              {"launch_year", g.launch_year},
              {"launch_price_usd", g.launch_price_usd},
              {"form_factor", g.form_factor},
              {"source", g.source},
              {"pci_source", g.pci_source},
              {"arch_source", a ? Json(a->source) : Json(nullptr)},
              {"notes", g.notes}};
}

std::string tdp_text(const GpuSpec &g) {
  if (g.tdp_min_w && g.tdp_w && *g.tdp_min_w != *g.tdp_w)
    return num(g.tdp_min_w) + "-" + num(g.tdp_w);
  return num(g.tdp_w);
}

std::vector<std::string> gpu_row(const GpuSpec &g) {
  return {g.name,
          g.compute_capability,
          num(g.memory_gb),
          num(g.memory_bandwidth_bytes_per_s, 1e9),
          num(g.fp32_flops, 1e12),
          num(g.tf32_flops, 1e12),
          num(g.fp16_flops, 1e12),
          num(g.bf16_flops, 1e12),
          num(g.fp8_flops, 1e12),
          tdp_text(g),
          num(g.launch_year)};
}

const std::vector<std::string> kGpuHeader = {"GPU",         "CC",    "Mem GB", "BW GB/s",
                                             "FP32 TFLOPS", "TF32",  "FP16",   "BF16",
                                             "FP8",         "TDP W", "Year"};

// One GPU, each figure with where it comes from: [1] the row's source, [2] its PCI id source,
// [3] the archs.csv row, [4] torch.csv.
std::vector<Table> gpu_detail(const KnowledgeBase &kb, const GpuSpec &g) {
  const auto *a = kb.arch(g.compute_capability);
  Table t;
  t.title = g.name;
  t.header = {"Field", "Value", "Source"};
  auto add = [&](const char *field, std::string value, const char *src) {
    t.add({field, std::move(value), src});
  };
  add("Vendor", g.vendor, "[1]");
  add("Architecture", g.architecture, "[1]");
  add("Compute capability", g.compute_capability, "[1]");
  add("PCI ids", g.pci_ids.empty() ? "none: " + g.no_pci_id_reason : join(g.pci_ids, ", "), "[2]");
  add("Memory", g.memory_gb ? num(g.memory_gb) + " GB " + g.memory_type : kUnknown, "[1]");
  add("Memory bandwidth", with_unit(g.memory_bandwidth_bytes_per_s, 1e9, "GB/s"), "[1]");
  add("FP64", with_unit(g.fp64_flops, 1e12, "TFLOPS"), "[1]");
  add("FP32", with_unit(g.fp32_flops, 1e12, "TFLOPS"), "[1]");
  add("TF32 tensor (dense)", with_unit(g.tf32_flops, 1e12, "TFLOPS"), "[1]");
  add("FP16 tensor, FP32 accumulate (dense)", with_unit(g.fp16_flops, 1e12, "TFLOPS"), "[1]");
  add("BF16 tensor (dense)", with_unit(g.bf16_flops, 1e12, "TFLOPS"), "[1]");
  add("FP8 tensor (dense)", with_unit(g.fp8_flops, 1e12, "TFLOPS"), "[1]");
  add("INT8 tensor (dense)", with_unit(g.int8_ops, 1e12, "TOPS"), "[1]");
  add("TDP", g.tdp_w ? tdp_text(g) + " W" : kUnknown, "[1]");
  add("PCIe", g.pcie_gen ? "Gen" + num(g.pcie_gen) + " x" + num(g.pcie_lanes) : kUnknown, "[1]");
  add("NVLink (bidirectional)", with_unit(g.nvlink_bytes_per_s, 1e9, "GB/s"), "[1]");
  add("Launch year", num(g.launch_year), "[1]");
  add("Launch price", g.launch_price_usd ? "$" + num(g.launch_price_usd) : kUnknown, "[1]");
  add("Form factor", g.form_factor, "[1]");
  if (a) {
    auto feat = [&](bool has, const char *f) {
      return a->feature_known(f) ? (has ? "yes" : "no") : kUnknown;
    };
    add("Tensor cores", feat(a->tensor_cores, "tensor_cores"), "[3]");
    add("TF32 / BF16 / FP8 / FP4",
        std::string(feat(a->tf32, "tf32")) + " / " + feat(a->bf16, "bf16") + " / " +
            feat(a->fp8, "fp8") + " / " + feat(a->fp4, "fp4"),
        "[3]");
    if (a->vendor == "NVIDIA")
      add("Newest PyTorch with kernels for it", newest_torch_covering(kb, g.compute_capability),
          "[4]");
  }
  Table s;
  s.title = "Sources";
  s.header = {"", "Source"};
  s.add({"[1]", g.source});
  s.add({"[2]", or_na(g.pci_source)});
  s.add({"[3]", a ? "data/archs.csv: " + a->source : std::string(kUnknown)});
  s.add({"[4]", "data/torch.csv (rule R1 over each variant's arch list)"});
  if (!g.notes.empty())
    s.add({"Notes", g.notes});
  return {t, s};
}

Result<KbView> search_gpus(const KnowledgeBase &kb, const KbQuery &q) {
  const GpuColumn *sort = nullptr;
  if (!q.sort.empty() && q.sort != "name") {
    for (const auto &c : gpu_columns())
      if (q.sort == c.key)
        sort = &c;
    if (!sort)
      return make_error("--sort " + q.sort + ": not a GPU column; use one of " +
                        join(kb_gpu_sort_keys(), ", "));
  }
  KbView v = start(q);
  std::vector<std::string> names;
  for (const auto &g : kb.gpus)
    names.push_back(g.name);
  auto words = filter_words(q.filter);
  // A filter that names exactly one GPU shows that GPU with the source of each figure.
  if (!words.empty() && !q.min_memory_gb && q.sort.empty()) {
    if (const auto *one = kb.find_gpu(q.filter)) {
      v.tables = gpu_detail(kb, *one);
      v.json["items"].push_back(gpu_json(kb, *one));
      finish(v, names, q);
      return v;
    }
  }
  std::vector<const GpuSpec *> rows;
  for (const auto &g : kb.gpus) {
    if (!matches(words, {g.name, g.vendor, g.architecture, g.compute_capability, g.form_factor,
                         g.memory_type}))
      continue;
    if (q.min_memory_gb && (!g.memory_gb || *g.memory_gb < *q.min_memory_gb))
      continue;
    rows.push_back(&g);
  }
  if (q.sort == "name")
    std::stable_sort(rows.begin(), rows.end(), [](const GpuSpec *a, const GpuSpec *b) {
      return lower(a->name) < lower(b->name);
    });
  else if (sort)
    std::stable_sort(rows.begin(), rows.end(), [&](const GpuSpec *a, const GpuSpec *b) {
      auto x = sort->value(*a), y = sort->value(*b);
      if (x && y)
        return *x > *y;
      return x.has_value() && !y.has_value(); // unknown last
    });
  Table t;
  t.title = "GPUs (dense tensor TFLOPS; FP16 with FP32 accumulate; memory as the vendor states it)";
  t.header = kGpuHeader;
  for (const auto *g : rows) {
    t.add(gpu_row(*g));
    v.json["items"].push_back(gpu_json(kb, *g));
  }
  v.tables = {t};
  finish(v, names, q);
  return v;
}

// ---- archs ------------------------------------------------------------------------------------

Result<KbView> search_archs(const KnowledgeBase &kb, const KbQuery &q) {
  KbView v = start(q);
  auto words = filter_words(q.filter);
  std::vector<std::string> names;
  Table t;
  t.title = "Architectures (torch: the newest release with kernels for it, by rule R1)";
  t.header = {"CC",   "Vendor", "Architecture", "Examples", "Tensor",      "TF32",
              "BF16", "FP8",    "FP4",          "CUDA",     "Newest torch"};
  for (const auto &a : kb.archs) {
    names.push_back(a.compute_capability);
    names.push_back(a.name);
    if (!matches(words, {a.compute_capability, a.name, a.vendor, a.example_gpus}))
      continue;
    auto feat = [&](bool has, const char *f) -> std::string {
      return a.feature_known(f) ? (has ? "yes" : "no") : "?";
    };
    std::string cuda = a.min_cuda.empty() && a.last_cuda.empty()
                           ? (a.vendor == "NVIDIA" ? "any" : "-")
                           : (a.min_cuda.empty() ? "" : ">= " + a.min_cuda) +
                                 (a.min_cuda.empty() || a.last_cuda.empty() ? "" : ", ") +
                                 (a.last_cuda.empty() ? "" : "<= " + a.last_cuda);
    std::string torch =
        a.vendor == "NVIDIA" ? newest_torch_covering(kb, a.compute_capability) : std::string("-");
    t.add({a.compute_capability, a.vendor, a.name, a.example_gpus,
           feat(a.tensor_cores, "tensor_cores"), feat(a.tf32, "tf32"), feat(a.bf16, "bf16"),
           feat(a.fp8, "fp8"), feat(a.fp4, "fp4"), cuda, torch});
    Json features = Json::object();
    for (auto [f, has] :
         {std::pair{"tensor_cores", a.tensor_cores}, std::pair{"tf32", a.tf32},
          std::pair{"bf16", a.bf16}, std::pair{"fp8", a.fp8}, std::pair{"fp4", a.fp4}})
      features[f] = a.feature_known(f) ? Json(has) : Json(nullptr);
    v.json["items"].push_back(Json{{"compute_capability", a.compute_capability},
                                   {"vendor", a.vendor},
                                   {"name", a.name},
                                   {"example_gpus", a.example_gpus},
                                   {"features", features},
                                   {"min_cuda", a.min_cuda},
                                   {"last_cuda", a.last_cuda},
                                   {"newest_torch", torch},
                                   {"source", a.source},
                                   {"notes", a.notes}});
  }
  v.tables = {t};
  finish(v, names, q);
  return v;
}

// ---- cuda -------------------------------------------------------------------------------------

bool looks_like_driver(const std::string &w) {
  // Driver versions start with a three-digit branch (550.54.14); CUDA versions do not.
  auto dot = w.find('.');
  auto head = w.substr(0, dot);
  return head.size() == 3 && head.find_first_not_of("0123456789") == std::string::npos;
}

Result<KbView> search_cuda(const KnowledgeBase &kb, const KbQuery &q) {
  KbView v = start(q);
  auto words = filter_words(q.filter);
  std::vector<std::string> names;
  std::vector<Table> tables;
  // `dlrig kb cuda 550.54.14`: what that driver runs.
  if (words.size() == 1 && looks_like_driver(words[0])) {
    auto max = kb.max_cuda_for_driver(words[0]);
    Table d;
    d.title = "Driver " + words[0];
    d.header = {};
    d.add({"Highest CUDA it runs natively", or_na(max)});
    std::string compat;
    if (!max.empty()) {
      auto major = max.substr(0, max.find('.'));
      for (const auto &c : kb.cuda)
        if (c.cuda.rfind(major + ".", 0) == 0 &&
            kb.driver_supports_cuda(words[0], c.cuda) == CudaSupport::minor_compat &&
            (compat.empty() || compare_versions(c.cuda, compat) > 0))
          compat = c.cuda;
    }
    d.add({"Newer CUDA " + (max.empty() ? std::string("") : max.substr(0, max.find('.'))) +
               ".x it runs through minor-version compatibility",
           compat.empty() ? "none" : "up to " + compat + " (limited: no JIT of newer PTX)"});
    tables.push_back(d);
    v.json["items"].push_back(
        Json{{"driver", words[0]},
             {"max_cuda", max.empty() ? Json(nullptr) : Json(max)},
             {"minor_compat_max_cuda", compat.empty() ? Json(nullptr) : Json(compat)}});
    v.tables = tables;
    finish(v, names, q);
    return v;
  }
  Table t;
  t.title = "CUDA toolkit -> minimum Linux x86_64 driver";
  t.header = {"CUDA", "Version", "Release", "Min driver", "Minor-compat min", "Notes"};
  for (const auto &c : kb.cuda) {
    names.push_back(c.version);
    bool hit = words.empty() || std::all_of(words.begin(), words.end(), [&](const std::string &w) {
                 return c.cuda == w || c.version == w || c.version.rfind(w + ".", 0) == 0 ||
                        lower(c.release) == w;
               });
    if (!hit)
      continue;
    t.add({c.cuda, c.version, c.release, c.min_driver_linux, or_na(c.minor_compat_min_driver),
           c.notes});
    v.json["items"].push_back(Json{{"cuda", c.cuda},
                                   {"version", c.version},
                                   {"release", c.release},
                                   {"min_driver_linux", c.min_driver_linux},
                                   {"minor_compat_min_driver", c.minor_compat_min_driver},
                                   {"source", c.source},
                                   {"notes", c.notes}});
  }
  tables.push_back(t);
  if (words.empty()) {
    // Derived: a driver of branch B runs natively the newest CUDA whose minimum is on a branch
    // no newer than B.
    Table b;
    b.title = "Driver branch -> highest CUDA (derived from the table above)";
    b.header = {"Branch", "Highest CUDA"};
    std::vector<std::string> seen;
    Json branches = Json::array();
    for (const auto &c : kb.cuda) {
      auto branch = c.min_driver_linux.substr(0, c.min_driver_linux.find('.'));
      if (std::find(seen.begin(), seen.end(), branch) != seen.end())
        continue;
      seen.push_back(branch);
      auto max = kb.max_cuda_for_driver(branch);
      b.add({"R" + branch, max});
      branches.push_back(Json{{"branch", branch}, {"max_cuda", max}});
    }
    tables.push_back(b);
    v.json["branches"] = branches;
    Table cd;
    cd.title = "cuDNN -> CUDA majors";
    cd.header = {"cuDNN", "CUDA builds", "Compute capability", "Notes"};
    Json cudnn = Json::array();
    for (const auto &c : kb.cudnn) {
      cd.add({c.cudnn, c.cuda_builds,
              (c.min_cc.empty() ? "?" : c.min_cc) + " ... " + (c.max_cc.empty() ? "?" : c.max_cc),
              c.notes});
      cudnn.push_back(Json{{"cudnn", c.cudnn},
                           {"cuda_majors", c.cuda_majors},
                           {"cuda_builds", c.cuda_builds},
                           {"min_cc", c.min_cc},
                           {"max_cc", c.max_cc},
                           {"source", c.source},
                           {"notes", c.notes}});
    }
    tables.push_back(cd);
    v.json["cudnn"] = cudnn;
  }
  v.tables = tables;
  finish(v, names, q);
  return v;
}

// ---- torch ------------------------------------------------------------------------------------

// "sm_50;sm_60;...;compute_120" -> "sm_50 sm_60 ... +PTX compute_120"; unknown -> "n/a".
std::string arch_text(const TorchVariant &v) {
  if (v.cuda.empty())
    return "-";
  if (v.arch_list.empty())
    return kUnknown;
  std::string s;
  for (const auto &a : v.arch_list)
    s += (s.empty() ? "" : " ") + a;
  return v.arch_list_partial ? s + " (partial)" : s;
}

bool torch_word_matches(const TorchRelease &r, const TorchVariant &v, const std::string &w) {
  auto plus = w.find('+');
  if (plus != std::string::npos)
    return torch_word_matches(r, v, w.substr(0, plus)) &&
           torch_word_matches(r, v, w.substr(plus + 1));
  if (v.tag == w)
    return true;
  // Versions match by major.minor: "2.5", "2.5.0" and "2.5.1" are one release here.
  auto mm = [](const std::string &s) {
    auto a = s.find('.');
    return a == std::string::npos ? s : s.substr(0, s.find('.', a + 1));
  };
  return std::isdigit(static_cast<unsigned char>(w[0])) && w.find('.') != std::string::npos &&
         mm(w) == mm(r.version);
}

Result<KbView> search_torch(const KnowledgeBase &kb, const KbQuery &q) {
  KbView v = start(q);
  auto words = filter_words(q.filter);
  std::vector<std::string> names;
  Table t;
  t.title = "PyTorch releases and their Linux x86_64 wheels";
  t.header = {"Torch",     "Variant", "Status", "cuDNN", "NCCL",
              "Arch list", "Python",  "vision", "audio", "PyPI default"};
  Table pip;
  pip.title = "Install";
  pip.header = {"Torch", "Variant", "Command"};
  std::vector<const TorchRelease *> releases;
  for (const auto &r : kb.torch) {
    names.push_back(r.version);
    for (const auto &var : r.variants) {
      names.push_back(r.version + "+" + var.tag);
      bool hit = std::all_of(words.begin(), words.end(),
                             [&](const std::string &w) { return torch_word_matches(r, var, w); });
      if (!hit)
        continue;
      if (releases.empty() || releases.back() != &r)
        releases.push_back(&r);
      auto py = r.python_versions.empty()
                    ? std::string(kUnknown)
                    : r.python_versions.front() + "-" + r.python_versions.back();
      std::string def = var.pypi_default                       ? "yes"
                        : r.pypi_default_unverified == var.tag ? "unverified"
                                                               : "";
      t.add({r.version, var.tag, var.status, or_na(var.cudnn), or_na(var.nccl), arch_text(var), py,
             or_na(r.torchvision), or_na(r.torchaudio), def});
      auto cmd = pip_command(r, var);
      pip.add({r.version, var.tag, cmd});
      v.json["items"].push_back(Json{{"version", r.version},
                                     {"variant", var.tag},
                                     {"cuda", var.cuda.empty() ? Json(nullptr) : Json(var.cuda)},
                                     {"rocm", var.rocm.empty() ? Json(nullptr) : Json(var.rocm)},
                                     {"status", var.status},
                                     {"cudnn", var.cudnn},
                                     {"nccl", var.nccl},
                                     {"arch_list", var.arch_list},
                                     {"arch_list_partial", var.arch_list_partial},
                                     {"python_versions", r.python_versions},
                                     {"torchvision", r.torchvision},
                                     {"torchaudio", r.torchaudio},
                                     {"pypi_default", var.pypi_default},
                                     {"index_url", var.index_url},
                                     {"pip", cmd},
                                     {"source", var.source},
                                     {"notes", var.notes}});
    }
  }
  v.tables = {t};
  // The install commands are long: shown when the filter picked one release or one variant.
  if (!words.empty() && !pip.rows.empty() && (releases.size() == 1 || pip.rows.size() <= 8))
    v.tables.push_back(pip);
  finish(v, names, q);
  return v;
}

// ---- links ------------------------------------------------------------------------------------

Result<KbView> search_links(const KnowledgeBase &kb, const KbQuery &q) {
  KbView v = start(q);
  auto words = filter_words(q.filter);
  std::vector<std::string> names;
  Table t;
  t.title = "Links and fabrics (GB/s; per direction unless marked bidirectional)";
  t.header = {"Link",
              "Kind",
              "Rate",
              "Lanes",
              "Per lane GB/s",
              "Theoretical GB/s",
              "Measured H2D GB/s",
              "Measured D2H GB/s"};
  for (const auto &l : kb.links) {
    names.push_back(l.name);
    if (!matches(words, {l.name, l.kind, l.generation}))
      continue;
    std::string rate = l.transfer_rate_gts ? num(l.transfer_rate_gts) + " GT/s"
                       : l.raw_bits_per_s  ? with_unit(l.raw_bits_per_s, 1e9, "Gb/s")
                                           : std::string(kUnknown);
    std::string theo = num(l.theoretical_bytes_per_s, 1e9);
    if (l.bidirectional && l.theoretical_bytes_per_s)
      theo += " (bidir)";
    std::string h2d = num(l.measured_h2d_bytes_per_s, 1e9);
    if (l.measured_h2d_high_bytes_per_s && l.measured_h2d_bytes_per_s &&
        *l.measured_h2d_high_bytes_per_s != *l.measured_h2d_bytes_per_s)
      h2d += "-" + num(l.measured_h2d_high_bytes_per_s, 1e9);
    t.add({l.name, l.kind, rate, num(l.lanes), num(l.per_lane_bytes_per_s, 1e9), theo, h2d,
           num(l.measured_d2h_bytes_per_s, 1e9)});
    v.json["items"].push_back(
        Json{{"name", l.name},
             {"kind", l.kind},
             {"generation", l.generation},
             {"transfer_rate_gts", l.transfer_rate_gts},
             {"encoding", l.encoding},
             {"lanes", l.lanes},
             {"per_lane_bytes_per_s", l.per_lane_bytes_per_s},
             {"raw_bits_per_s", l.raw_bits_per_s},
             {"theoretical_bytes_per_s", l.theoretical_bytes_per_s},
             {"bidirectional", l.bidirectional},
             {"measured_h2d_bytes_per_s", l.measured_h2d_bytes_per_s},
             {"measured_h2d_high_bytes_per_s", l.measured_h2d_high_bytes_per_s},
             {"measured_d2h_bytes_per_s", l.measured_d2h_bytes_per_s},
             {"measured_source", l.measured_source},
             {"source", l.source},
             {"notes", l.notes}});
  }
  v.tables = {t};
  finish(v, names, q);
  return v;
}

// ---- models -----------------------------------------------------------------------------------

const char *family_name(ModelFamily f) {
  switch (f) {
  case ModelFamily::decoder:
    return "decoder";
  case ModelFamily::moe_decoder:
    return "moe_decoder";
  case ModelFamily::encoder:
    return "encoder";
  case ModelFamily::encoder_decoder:
    return "encoder_decoder";
  case ModelFamily::cnn:
    return "cnn";
  case ModelFamily::unet:
    return "unet";
  }
  return "unknown";
}

// 6738415616 -> "6.74B"; below a billion in millions.
std::string short_count(std::int64_t n) {
  if (n >= 1'000'000'000)
    return fmt::format("{:.2f}B", static_cast<double>(n) / 1e9);
  return fmt::format("{:.1f}M", static_cast<double>(n) / 1e6);
}

std::string opt_int(std::int64_t v) {
  return v > 0 ? std::to_string(v) : std::string("-");
}

Result<KbView> search_models(const KnowledgeBase &kb, const KbQuery &q) {
  KbView v = start(q);
  auto words = filter_words(q.filter);
  std::vector<std::string> names;
  Table t;
  t.title = "Models (params derived from the hyperparameters)";
  t.header = {"Model", "Family", "Layers", "Hidden", "Heads/KV", "Vocab", "Params"};
  for (const auto &m : kb.models) {
    names.push_back(m.name);
    if (!matches(words, {m.name, m.display_name, m.hf_model_type, family_name(m.family)}))
      continue;
    auto params = derive_params(m);
    std::string heads = m.heads > 0 ? std::to_string(m.heads) + "/" +
                                          std::to_string(m.kv_heads > 0 ? m.kv_heads : m.heads)
                                    : std::string("-");
    t.add({m.name, family_name(m.family), opt_int(m.layers), opt_int(m.hidden), heads,
           opt_int(m.vocab), params > 0 ? short_count(params) : std::string(kUnknown)});
    v.json["items"].push_back(Json{{"name", m.name},
                                   {"display_name", m.display_name},
                                   {"family", family_name(m.family)},
                                   {"hf_model_type", m.hf_model_type},
                                   {"layers", m.layers},
                                   {"hidden", m.hidden},
                                   {"heads", m.heads},
                                   {"kv_heads", m.kv_heads},
                                   {"intermediate", m.intermediate},
                                   {"vocab", m.vocab},
                                   {"experts", m.experts},
                                   {"experts_per_token", m.experts_per_token},
                                   {"params", params > 0 ? Json(params) : Json(nullptr)},
                                   {"source", m.source}});
  }
  v.tables = {t};
  finish(v, names, q);
  return v;
}

// ---- cloud ------------------------------------------------------------------------------------

Result<KbView> search_cloud(const KnowledgeBase &kb, const KbQuery &q) {
  KbView v = start(q);
  auto words = filter_words(q.filter);
  std::vector<std::string> names;
  Table t;
  t.title = "Cloud GPU instances (Linux on-demand USD per hour, with the date it was read)";
  t.header = {"Provider",     "Instance", "GPUs",   "GPU memory",  "vCPUs / host memory",
              "Interconnect", "Network",  "$/hour", "Region, date"};
  for (const auto &c : kb.cloud) {
    names.push_back(c.instance);
    if (!matches(words, {c.provider, c.instance, c.gpu_model, c.gpu, c.interconnect}))
      continue;
    std::string mem = c.gpu_memory ? num(c.gpu_memory) + " " + c.gpu_memory_unit : kUnknown;
    std::string host =
        num(c.vcpus) + " / " +
        (c.host_memory ? num(c.host_memory) + " " + c.host_memory_unit : std::string(kUnknown));
    t.add({c.provider, c.instance, std::to_string(c.gpu_count) + " x " + c.gpu_model, mem, host,
           or_na(c.interconnect), or_na(c.network),
           c.price_usd_per_hour ? num(c.price_usd_per_hour, 1.0, 6) : std::string(kUnknown),
           c.price_region + ", " + or_na(c.price_date)});
    v.json["items"].push_back(Json{{"provider", c.provider},
                                   {"instance", c.instance},
                                   {"gpu_count", c.gpu_count},
                                   {"gpu_model", c.gpu_model},
                                   {"gpu", c.gpu.empty() ? Json(nullptr) : Json(c.gpu)},
                                   {"gpu_memory", c.gpu_memory},
                                   {"gpu_memory_unit", c.gpu_memory_unit},
                                   {"host_memory", c.host_memory},
                                   {"host_memory_unit", c.host_memory_unit},
                                   {"vcpus", c.vcpus},
                                   {"interconnect", c.interconnect},
                                   {"network", c.network},
                                   {"network_bits_per_s", c.network_bits_per_s},
                                   {"price_usd_per_hour", c.price_usd_per_hour},
                                   {"price_region", c.price_region},
                                   {"price_date", c.price_date},
                                   {"source", c.source},
                                   {"notes", c.notes}});
  }
  v.tables = {t};
  finish(v, names, q);
  return v;
}

} // namespace

const std::vector<std::string> &kb_topics() {
  static const std::vector<std::string> topics = {"gpus",  "archs",  "cuda", "torch",
                                                  "links", "models", "cloud"};
  return topics;
}

const std::vector<std::string> &kb_gpu_sort_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k = {"name"};
    for (const auto &c : gpu_columns())
      k.emplace_back(c.key);
    return k;
  }();
  return keys;
}

Result<KbView> kb_search(const KnowledgeBase &kb, const KbQuery &q) {
  if (q.topic != "gpus") {
    if (q.min_memory_gb)
      return make_error("--min-memory applies to `dlrig kb gpus` only");
    if (!q.sort.empty())
      return make_error("--sort applies to `dlrig kb gpus` only");
  }
  if (q.topic == "gpus")
    return search_gpus(kb, q);
  if (q.topic == "archs")
    return search_archs(kb, q);
  if (q.topic == "cuda")
    return search_cuda(kb, q);
  if (q.topic == "torch")
    return search_torch(kb, q);
  if (q.topic == "links")
    return search_links(kb, q);
  if (q.topic == "models")
    return search_models(kb, q);
  if (q.topic == "cloud")
    return search_cloud(kb, q);
  return make_error("unknown topic '" + q.topic + "'; use one of " + join(kb_topics(), ", "));
}

Result<double> parse_size_gb(std::string_view text) {
  auto t = lower(trim(text));
  double factor = 1.0;
  auto strip = [&](std::string_view suffix) {
    if (t.size() > suffix.size() &&
        t.compare(t.size() - suffix.size(), suffix.size(), suffix) == 0) {
      t = trim(t.substr(0, t.size() - suffix.size()));
      return true;
    }
    return false;
  };
  if (strip("gib"))
    factor = 1024.0 * 1024.0 * 1024.0 / 1e9;
  else if (!strip("gb"))
    strip("g");
  double v = 0;
  std::size_t used = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (t.empty() || used != t.size() || v < 0)
    return make_error("'" + std::string(text) + "' is not a memory size; write it like 24GB");
  return v * factor;
}

} // namespace dlrig::kb
