#include "dlrig/kb/report.hpp"
#include "dlrig/core/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dlrig::kb {

namespace {

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

void gpus(const KbView &v, std::vector<Table> *tables, Json *items) {
  const auto &kb = *v.kb;
  if (v.gpu_detail) {
    if (tables)
      *tables = gpu_detail(kb, *v.gpus.front());
    if (items)
      items->push_back(gpu_json(kb, *v.gpus.front()));
    return;
  }
  Table t;
  t.title = "GPUs (dense tensor TFLOPS; FP16 with FP32 accumulate; memory as the vendor states it)";
  t.header = kGpuHeader;
  for (const auto *g : v.gpus) {
    if (tables)
      t.add(gpu_row(*g));
    if (items)
      items->push_back(gpu_json(kb, *g));
  }
  if (tables)
    *tables = {t};
}

// ---- archs ------------------------------------------------------------------------------------

void archs(const KbView &v, std::vector<Table> *tables, Json *items) {
  const auto &kb = *v.kb;
  Table t;
  t.title = "Architectures (torch: the newest release with kernels for it, by rule R1)";
  t.header = {"CC",   "Vendor", "Architecture", "Examples", "Tensor",      "TF32",
              "BF16", "FP8",    "FP4",          "CUDA",     "Newest torch"};
  for (const auto *ap : v.archs) {
    const auto &a = *ap;
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
    if (!items)
      continue;
    Json features = Json::object();
    for (auto [f, has] :
         {std::pair{"tensor_cores", a.tensor_cores}, std::pair{"tf32", a.tf32},
          std::pair{"bf16", a.bf16}, std::pair{"fp8", a.fp8}, std::pair{"fp4", a.fp4}})
      features[f] = a.feature_known(f) ? Json(has) : Json(nullptr);
    items->push_back(Json{{"compute_capability", a.compute_capability},
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
  if (tables)
    *tables = {t};
}

// ---- cuda -------------------------------------------------------------------------------------

void cuda(const KbView &v, std::vector<Table> *tables, Json *items, Json *doc) {
  const auto &kb = *v.kb;
  if (v.driver) {
    const auto &d = *v.driver;
    Table t;
    t.title = "Driver " + d.driver;
    t.add({"Highest CUDA it runs natively", or_na(d.max_cuda)});
    // Without a native CUDA there is no major to stretch: the minor-version row is unknown too.
    if (d.max_cuda.empty())
      t.add({"Newer CUDA it runs through minor-version compatibility", or_na("")});
    else
      t.add({"Newer CUDA " + d.max_cuda.substr(0, d.max_cuda.find('.')) +
                 ".x it runs through minor-version compatibility",
             d.minor_compat_max_cuda.empty()
                 ? "none"
                 : "up to " + d.minor_compat_max_cuda + " (limited: no JIT of newer PTX)"});
    if (tables)
      *tables = {t};
    if (items)
      items->push_back(
          Json{{"driver", d.driver},
               {"max_cuda", d.max_cuda.empty() ? Json(nullptr) : Json(d.max_cuda)},
               {"minor_compat_max_cuda",
                d.minor_compat_max_cuda.empty() ? Json(nullptr) : Json(d.minor_compat_max_cuda)}});
    return;
  }
  std::vector<Table> out;
  Table t;
  t.title = "CUDA toolkit -> minimum Linux x86_64 driver";
  t.header = {"CUDA", "Version", "Release", "Min driver", "Minor-compat min", "Notes"};
  for (const auto *cp : v.cuda) {
    const auto &c = *cp;
    t.add({c.cuda, c.version, c.release, c.min_driver_linux, or_na(c.minor_compat_min_driver),
           c.notes});
    if (items)
      items->push_back(Json{{"cuda", c.cuda},
                            {"version", c.version},
                            {"release", c.release},
                            {"min_driver_linux", c.min_driver_linux},
                            {"minor_compat_min_driver", c.minor_compat_min_driver},
                            {"source", c.source},
                            {"notes", c.notes}});
  }
  out.push_back(t);
  if (v.cuda_overview) {
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
    out.push_back(b);
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
    out.push_back(cd);
    if (doc) {
      (*doc)["branches"] = branches;
      (*doc)["cudnn"] = cudnn;
    }
  }
  if (tables)
    *tables = std::move(out);
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

void torch(const KbView &v, std::vector<Table> *tables, Json *items) {
  Table t;
  t.title = "PyTorch releases and their Linux x86_64 wheels";
  t.header = {"Torch",     "Variant", "Status", "cuDNN", "NCCL",
              "Arch list", "Python",  "vision", "audio", "PyPI default"};
  Table pip;
  pip.title = "Install";
  pip.header = {"Torch", "Variant", "Command"};
  for (const auto &[rp, vp] : v.torch) {
    const auto &r = *rp;
    const auto &var = *vp;
    auto py = r.python_versions.empty()
                  ? std::string(kUnknown)
                  : r.python_versions.front() + "-" + r.python_versions.back();
    std::string def = var.pypi_default                       ? "yes"
                      : r.pypi_default_unverified == var.tag ? "unverified"
                                                             : "";
    t.add({r.version, var.tag, or_na(var.status), or_na(var.cudnn), or_na(var.nccl), arch_text(var),
           py, or_na(r.torchvision), or_na(r.torchaudio), def});
    auto cmd = pip_command(r, var);
    pip.add({r.version, var.tag, cmd});
    if (items)
      items->push_back(Json{{"version", r.version},
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
  if (!tables)
    return;
  *tables = {t};
  if (v.torch_install)
    tables->push_back(pip);
}

// ---- links ------------------------------------------------------------------------------------

void links(const KbView &v, std::vector<Table> *tables, Json *items) {
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
  for (const auto *lp : v.links) {
    const auto &l = *lp;
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
    if (items)
      items->push_back(Json{{"name", l.name},
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
  if (tables)
    *tables = {t};
}

// ---- models -----------------------------------------------------------------------------------

std::string opt_int(std::int64_t v) {
  return v > 0 ? std::to_string(v) : std::string("-");
}

void models(const KbView &v, std::vector<Table> *tables, Json *items) {
  Table t;
  t.title = "Models (params derived from the hyperparameters)";
  t.header = {"Model", "Family", "Layers", "Hidden", "Heads/KV", "Vocab", "Params"};
  for (const auto *mp : v.models) {
    const auto &m = *mp;
    auto params = derive_params(m);
    std::string heads = m.heads > 0 ? std::to_string(m.heads) + "/" +
                                          std::to_string(m.kv_heads > 0 ? m.kv_heads : m.heads)
                                    : std::string("-");
    t.add({m.name, model_family_name(m.family), opt_int(m.layers), opt_int(m.hidden), heads,
           opt_int(m.vocab),
           params > 0 ? show_si(static_cast<double>(params)) : std::string(kUnknown)});
    if (items)
      items->push_back(Json{{"name", m.name},
                            {"display_name", m.display_name},
                            {"family", model_family_name(m.family)},
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
  if (tables)
    *tables = {t};
}

// ---- cloud ------------------------------------------------------------------------------------

void cloud(const KbView &v, std::vector<Table> *tables, Json *items) {
  Table t;
  t.title = "Cloud GPU instances (Linux on-demand USD per hour, with the date it was read)";
  t.header = {"Provider",     "Instance", "GPUs",   "GPU memory",  "vCPUs / host memory",
              "Interconnect", "Network",  "$/hour", "Region, date"};
  for (const auto *cp : v.cloud) {
    const auto &c = *cp;
    std::string mem = c.gpu_memory ? num(c.gpu_memory) + " " + c.gpu_memory_unit : kUnknown;
    std::string host =
        num(c.vcpus) + " / " +
        (c.host_memory ? num(c.host_memory) + " " + c.host_memory_unit : std::string(kUnknown));
    t.add({c.provider, c.instance, std::to_string(c.gpu_count) + " x " + c.gpu_model, mem, host,
           or_na(c.interconnect), or_na(c.network),
           c.price_usd_per_hour ? num(c.price_usd_per_hour, 1.0, 6) : std::string(kUnknown),
           c.price_region + ", " + or_na(c.price_date)});
    if (items)
      items->push_back(Json{{"provider", c.provider},
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
  if (tables)
    *tables = {t};
}

// Builds the tables, the JSON items (and the cuda overview's extra members), or both.
void build(const KbView &v, std::vector<Table> *tables, Json *doc) {
  Json items = Json::array();
  Json *it = doc ? &items : nullptr;
  const auto &topic = v.query.topic;
  if (topic == "gpus")
    gpus(v, tables, it);
  else if (topic == "archs")
    archs(v, tables, it);
  else if (topic == "cuda")
    cuda(v, tables, it, doc);
  else if (topic == "torch")
    torch(v, tables, it);
  else if (topic == "links")
    links(v, tables, it);
  else if (topic == "models")
    models(v, tables, it);
  else if (topic == "cloud")
    cloud(v, tables, it);
  if (doc)
    (*doc)["items"] = std::move(items);
}

} // namespace

std::vector<Table> kb_tables(const KbView &v) {
  std::vector<Table> tables;
  build(v, &tables, nullptr);
  return tables;
}

Json kb_json(const KbView &v) {
  Json j{{"topic", v.query.topic}, {"filter", v.query.filter}};
  build(v, nullptr, &j);
  if (v.matches == 0)
    j["suggestions"] = v.suggestions;
  return j;
}

Report kb_report(const KbView &v) {
  Report r;
  r.schema_version = kKbSchemaVersion;
  r.json = [&v] { return kb_json(v); };
  r.table = [&v](const TextStyle &s) { return render(kb_tables(v), Format::table, s.width); };
  r.markdown = [&v] { return render(kb_tables(v), Format::markdown); };
  r.csv = [&v] { return kb_tables(v); };
  return r;
}

} // namespace dlrig::kb
