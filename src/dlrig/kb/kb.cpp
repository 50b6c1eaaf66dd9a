// The knowledge-base loader: one parser per data file (text in, validated rows out) and
// builtin(), which runs them over the files embedded from data/.
#include "dlrig/kb/kb.hpp"

#include "dlrig/core/embedded.hpp"
#include "dlrig/core/exit_code.hpp"
#include "dlrig/kb/csv.hpp"
#include "dlrig/kb/row.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

namespace dlrig::kb {

using detail::Row;
using detail::RowError;

namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

OptF64 scaled(OptF64 v, double factor) {
  if (v)
    return *v * factor;
  return std::nullopt;
}

// Runs `body` over every record of `text`, turning row errors into a Result error.
template <class T, class Body>
Result<std::vector<T>> parse_rows(std::string_view text, std::string_view file,
                                  const std::vector<std::string_view> &columns, Body body) {
  auto table = parse_csv(text, file);
  if (!table)
    return table.error();
  try {
    detail::require_columns(*table, file, columns);
    std::vector<T> out;
    for (const auto &rec : table->records)
      body(Row(*table, rec, file), out);
    return out;
  } catch (const RowError &e) {
    return make_error(e.what());
  }
}

bool is_hex(std::string_view s) {
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c)))
      return false;
  return !s.empty();
}

void check_unique(std::set<std::string> &seen, const Row &row, std::string_view column,
                  const std::string &key) {
  if (!seen.insert(key).second)
    row.fail(column, "'" + key + "' appears twice (each row needs its own key)");
}

} // namespace

Result<std::vector<GpuSpec>> parse_gpus(std::string_view text, std::string_view file) {
  static const std::vector<std::string_view> cols = {"name",
                                                     "vendor",
                                                     "architecture",
                                                     "compute_capability",
                                                     "pci_ids",
                                                     "no_pci_id_reason",
                                                     "memory_gb",
                                                     "memory_type",
                                                     "memory_bandwidth_gbs",
                                                     "fp64_tflops",
                                                     "fp32_tflops",
                                                     "tf32_tflops",
                                                     "fp16_tflops",
                                                     "bf16_tflops",
                                                     "fp8_tflops",
                                                     "int8_tops",
                                                     "tdp_w",
                                                     "pcie_gen",
                                                     "pcie_lanes",
                                                     "nvlink_gbs",
                                                     "launch_year",
                                                     "launch_price_usd",
                                                     "form_factor",
                                                     "source",
                                                     "pci_source",
                                                     "notes"};
  std::set<std::string> names, ids;
  return parse_rows<GpuSpec>(text, file, cols, [&](const Row &r, std::vector<GpuSpec> &out) {
    GpuSpec g;
    g.name = r.required("name");
    check_unique(names, r, "name", detail::lower(g.name));
    g.vendor = r.required("vendor");
    if (g.vendor != "NVIDIA" && g.vendor != "AMD" && g.vendor != "Intel")
      r.fail("vendor", "'" + g.vendor + "' is not NVIDIA, AMD or Intel");
    g.architecture = r.required("architecture");
    g.compute_capability = r.required("compute_capability");
    for (auto &id : r.list("pci_ids")) {
      auto lid = detail::lower(id);
      auto colon = lid.find(':');
      if (colon != 4 || lid.size() != 9 || !is_hex(lid.substr(0, 4)) || !is_hex(lid.substr(5)))
        r.fail("pci_ids", "'" + id + "' is not vendor:device in hex, like 10de:2684");
      check_unique(ids, r, "pci_ids", lid);
      g.pci_ids.push_back(lid);
    }
    g.no_pci_id_reason = r.str("no_pci_id_reason");
    if (g.pci_ids.empty() && detail::trim(g.no_pci_id_reason).empty())
      r.fail("pci_ids", "blank: give the PCI ids, or say why there are none in no_pci_id_reason");
    g.memory_gb = r.number("memory_gb");
    if (g.memory_gb)
      g.memory_bytes = static_cast<std::uint64_t>(*g.memory_gb * kGiB);
    g.memory_type = r.str("memory_type");
    g.memory_bandwidth_bytes_per_s = scaled(r.number("memory_bandwidth_gbs"), kGiga);
    g.fp64_flops = scaled(r.number("fp64_tflops"), kTera);
    g.fp32_flops = scaled(r.number("fp32_tflops"), kTera);
    g.tf32_flops = scaled(r.number("tf32_tflops"), kTera);
    g.fp16_flops = scaled(r.number("fp16_tflops"), kTera);
    g.bf16_flops = scaled(r.number("bf16_tflops"), kTera);
    g.fp8_flops = scaled(r.number("fp8_tflops"), kTera);
    g.int8_ops = scaled(r.number("int8_tops"), kTera);
    if (auto tdp = r.range("tdp_w")) {
      g.tdp_w = tdp->high;
      g.tdp_min_w = tdp->low;
    }
    g.pcie_gen = r.integer("pcie_gen");
    g.pcie_lanes = r.integer("pcie_lanes");
    g.nvlink_bytes_per_s = scaled(r.number("nvlink_gbs"), kGiga);
    g.launch_year = r.integer("launch_year");
    g.launch_price_usd = r.number("launch_price_usd");
    g.form_factor = r.required("form_factor");
    static const std::set<std::string> forms = {"desktop", "workstation", "pcie-server", "sxm",
                                                "embedded"};
    if (!forms.count(g.form_factor))
      r.fail("form_factor",
             "'" + g.form_factor + "' is not desktop, workstation, pcie-server, sxm or embedded");
    g.source = r.required("source");
    g.pci_source = r.str("pci_source");
    if (!g.pci_ids.empty() && detail::trim(g.pci_source).empty())
      r.fail("pci_source", "blank: say where the PCI ids come from");
    g.notes = r.str("notes");
    out.push_back(std::move(g));
  });
}

Result<std::vector<ArchSpec>> parse_archs(std::string_view text, std::string_view file) {
  static const std::vector<std::string_view> cols = {"compute_capability",
                                                     "vendor",
                                                     "name",
                                                     "example_gpus",
                                                     "tensor_cores",
                                                     "tf32",
                                                     "bf16",
                                                     "fp8",
                                                     "fp4",
                                                     "min_cuda",
                                                     "last_cuda",
                                                     "source",
                                                     "notes"};
  std::set<std::string> keys;
  return parse_rows<ArchSpec>(text, file, cols, [&](const Row &r, std::vector<ArchSpec> &out) {
    ArchSpec a;
    a.compute_capability = r.required("compute_capability");
    check_unique(keys, r, "compute_capability", a.compute_capability);
    a.vendor = r.required("vendor");
    a.name = r.required("name");
    a.example_gpus = r.str("example_gpus");
    auto feature = [&](std::string_view col, bool &flag) {
      auto v = r.yes_no(col);
      if (!v)
        a.unknown.emplace_back(col);
      flag = v.value_or(false);
    };
    feature("tensor_cores", a.tensor_cores);
    feature("tf32", a.tf32);
    feature("bf16", a.bf16);
    feature("fp8", a.fp8);
    feature("fp4", a.fp4);
    a.min_cuda = r.str("min_cuda");
    a.last_cuda = r.str("last_cuda");
    a.source = r.required("source");
    a.notes = r.str("notes");
    out.push_back(std::move(a));
  });
}

Result<std::vector<CudaDriverMin>> parse_cuda_drivers(std::string_view text,
                                                      std::string_view file) {
  static const std::vector<std::string_view> cols = {"cuda",
                                                     "version",
                                                     "release",
                                                     "min_driver_linux",
                                                     "min_driver_windows",
                                                     "minor_compat_min_driver",
                                                     "source",
                                                     "notes"};
  std::set<std::string> keys;
  return parse_rows<CudaDriverMin>(
      text, file, cols, [&](const Row &r, std::vector<CudaDriverMin> &out) {
        CudaDriverMin c;
        c.cuda = r.required("cuda");
        c.version = r.required("version");
        check_unique(keys, r, "version", c.version);
        if (c.version.rfind(c.cuda + ".", 0) != 0)
          r.fail("version", "'" + c.version + "' is not a release of CUDA " + c.cuda);
        c.release = r.required("release");
        c.min_driver_linux = r.required("min_driver_linux");
        if (!std::isdigit(static_cast<unsigned char>(c.min_driver_linux[0])))
          r.fail("min_driver_linux", "'" + c.min_driver_linux + "' is not a driver version");
        c.min_driver_windows = r.str("min_driver_windows");
        if (!c.min_driver_windows.empty() &&
            !std::isdigit(static_cast<unsigned char>(c.min_driver_windows[0])))
          r.fail("min_driver_windows", "'" + c.min_driver_windows + "' is not a driver version");
        c.minor_compat_min_driver = r.str("minor_compat_min_driver");
        c.source = r.required("source");
        c.notes = r.str("notes");
        out.push_back(std::move(c));
      });
}

Result<std::vector<TorchRelease>> parse_torch(std::string_view text, std::string_view file) {
  static const std::vector<std::string_view> cols = {
      "version",      "variant",           "status", "cudnn",       "nccl",
      "arch_list",    "arch_list_partial", "python", "torchvision", "torchaudio",
      "pypi_default", "index_url",         "source", "notes"};
  std::set<std::string> keys;
  return parse_rows<TorchRelease>(
      text, file, cols, [&](const Row &r, std::vector<TorchRelease> &out) {
        std::string version = r.required("version");
        TorchVariant v;
        v.tag = r.required("variant");
        check_unique(keys, r, "variant", version + "+" + v.tag);
        if (v.tag.rfind("cu", 0) == 0 && v.tag.size() >= 5) {
          v.cuda = cuda_of_tag(v.tag);
          if (v.cuda.empty())
            r.fail("variant", "'" + v.tag + "' is not cuXYZ, cpu or rocmX.Y");
        } else if (v.tag.rfind("rocm", 0) == 0) {
          v.rocm = v.tag.substr(4);
        } else if (v.tag != "cpu") {
          r.fail("variant", "'" + v.tag + "' is not cuXYZ, cpu or rocmX.Y");
        }
        v.status = r.str("status");
        if (!v.status.empty() && v.status != "stable" && v.status != "experimental")
          r.fail("status", "'" + v.status + "' is not stable, experimental or blank");
        v.cudnn = r.str("cudnn");
        v.nccl = r.str("nccl");
        v.arch_list = r.list("arch_list");
        for (const auto &a : v.arch_list)
          if (a.rfind("sm_", 0) != 0 && a.rfind("compute_", 0) != 0)
            r.fail("arch_list", "'" + a + "' is not sm_XY or compute_XY");
        v.arch_list_partial = r.yes_no("arch_list_partial").value_or(false);
        v.index_url = r.required("index_url");
        if (v.index_url.rfind("https://", 0) != 0)
          r.fail("index_url", "'" + v.index_url + "' is not an https URL");
        auto def = detail::trim(r.str("pypi_default"));
        if (def != "" && def != "yes" && def != "unverified")
          r.fail("pypi_default", "'" + def + "' is not yes, unverified or blank");
        v.pypi_default = def == "yes";
        v.source = r.required("source");
        v.notes = r.str("notes");

        // Rows of one release sit together; the release-level columns must agree.
        auto same_companions = [&](const char *col, const std::string &first,
                                   const std::vector<std::string> &also) {
          auto all = r.list(col);
          if (all.empty())
            return first.empty();
          return all.front() == first &&
                 std::equal(all.begin() + 1, all.end(), also.begin(), also.end());
        };
        if (out.empty() || out.back().version != version) {
          for (const auto &rel : out)
            if (rel.version == version)
              r.fail("version", "rows of release " + version + " must be adjacent");
          TorchRelease rel;
          rel.version = version;
          // "3.9-3.13" -> 3.9, 3.10, ... 3.13: minor versions count up, they are not decimals.
          auto text_py = detail::trim(r.str("python"));
          auto dash = text_py.find('-');
          if (dash == std::string::npos)
            r.fail("python", "'" + text_py + "' is not a range like 3.9-3.12");
          auto lo = text_py.substr(0, dash), hi = text_py.substr(dash + 1);
          auto lo_dot = lo.find('.'), hi_dot = hi.find('.');
          if (lo_dot == std::string::npos || hi_dot == std::string::npos ||
              lo.substr(0, lo_dot) != hi.substr(0, hi_dot) ||
              lo.find_first_not_of("0123456789.") != std::string::npos ||
              hi.find_first_not_of("0123456789.") != std::string::npos || lo_dot + 1 == lo.size() ||
              hi_dot + 1 == hi.size())
            r.fail("python", "'" + text_py + "' is not a range like 3.9-3.12");
          int a = std::stoi(lo.substr(lo_dot + 1)), b = std::stoi(hi.substr(hi_dot + 1));
          for (int m = a; m <= b; ++m)
            rel.python_versions.push_back(lo.substr(0, lo_dot + 1) + std::to_string(m));
          // "0.15.1;0.15.0": the wheels' companion first, then others the source pairs too.
          auto companions = [&](const char *col, std::string &first,
                                std::vector<std::string> &also) {
            auto all = r.list(col);
            for (const auto &c : all)
              if (c.empty() || !std::isdigit(static_cast<unsigned char>(c[0])) ||
                  c.find_first_not_of("0123456789.") != std::string::npos)
                r.fail(col, "'" + c + "' is not a version");
            if (!all.empty())
              first = all.front();
            also.assign(all.begin() + (all.empty() ? 0 : 1), all.end());
          };
          companions("torchvision", rel.torchvision, rel.torchvision_also);
          companions("torchaudio", rel.torchaudio, rel.torchaudio_also);
          out.push_back(std::move(rel));
        } else if (!same_companions("torchvision", out.back().torchvision,
                                    out.back().torchvision_also) ||
                   !same_companions("torchaudio", out.back().torchaudio,
                                    out.back().torchaudio_also)) {
          r.fail("torchvision", "differs from the release's other rows");
        }
        if (def == "unverified")
          out.back().pypi_default_unverified = v.tag;
        out.back().variants.push_back(std::move(v));
      });
}

Result<std::vector<CudnnCompat>> parse_cudnn(std::string_view text, std::string_view file) {
  static const std::vector<std::string_view> cols = {
      "cudnn", "cuda_majors", "cuda_builds", "min_cc", "max_cc", "source", "notes"};
  std::set<std::string> keys;
  return parse_rows<CudnnCompat>(
      text, file, cols, [&](const Row &r, std::vector<CudnnCompat> &out) {
        CudnnCompat c;
        c.cudnn = r.required("cudnn");
        check_unique(keys, r, "cudnn", c.cudnn);
        for (const auto &m : r.list("cuda_majors")) {
          if (m.empty() || m.find_first_not_of("0123456789") != std::string::npos)
            r.fail("cuda_majors", "'" + m + "' is not a CUDA major version");
          c.cuda_majors.push_back(std::stoi(m));
        }
        if (c.cuda_majors.empty())
          r.fail("cuda_majors", "must not be blank");
        c.cuda_builds = r.str("cuda_builds");
        c.min_cc = r.str("min_cc");
        c.max_cc = r.str("max_cc");
        c.source = r.required("source");
        c.notes = r.str("notes");
        out.push_back(std::move(c));
      });
}

Result<std::vector<LinkSpec>> parse_links(std::string_view text, std::string_view file) {
  static const std::vector<std::string_view> cols = {"name",
                                                     "kind",
                                                     "generation",
                                                     "transfer_rate_gts",
                                                     "encoding",
                                                     "lanes",
                                                     "per_lane_gbs",
                                                     "raw_gbps",
                                                     "theoretical_gbs",
                                                     "bidirectional",
                                                     "measured_h2d_gbs",
                                                     "measured_d2h_gbs",
                                                     "measured_source",
                                                     "source",
                                                     "notes"};
  static const std::set<std::string> kinds = {"pcie",   "thunderbolt", "usb4",       "oculink",
                                              "nvlink", "nvswitch",    "infiniband", "ethernet"};
  std::set<std::string> names;
  return parse_rows<LinkSpec>(text, file, cols, [&](const Row &r, std::vector<LinkSpec> &out) {
    LinkSpec l;
    l.name = r.required("name");
    check_unique(names, r, "name", detail::lower(l.name));
    l.kind = r.required("kind");
    if (!kinds.count(l.kind))
      r.fail("kind", "'" + l.kind + "' is not one of pcie, thunderbolt, usb4, oculink, nvlink, " +
                         "nvswitch, infiniband, ethernet");
    l.generation = r.str("generation");
    l.transfer_rate_gts = r.number("transfer_rate_gts");
    l.encoding = r.str("encoding");
    l.lanes = r.integer("lanes");
    l.per_lane_bytes_per_s = scaled(r.number("per_lane_gbs"), kGiga);
    l.raw_bits_per_s = scaled(r.number("raw_gbps"), kGiga);
    l.theoretical_bytes_per_s = scaled(r.number("theoretical_gbs"), kGiga);
    l.bidirectional = r.yes_no("bidirectional").value_or(false);
    if (auto h2d = r.range("measured_h2d_gbs")) {
      l.measured_h2d_bytes_per_s = h2d->low * kGiga;
      l.measured_h2d_high_bytes_per_s = h2d->high * kGiga;
    }
    l.measured_d2h_bytes_per_s = scaled(r.number("measured_d2h_gbs"), kGiga);
    l.measured_source = r.str("measured_source");
    if ((l.measured_h2d_bytes_per_s || l.measured_d2h_bytes_per_s) &&
        detail::trim(l.measured_source).empty())
      r.fail("measured_source", "blank: say where the measured figure comes from");
    l.source = r.required("source");
    l.notes = r.str("notes");
    if (l.kind == "pcie" && (!l.lanes || !l.per_lane_bytes_per_s))
      r.fail("lanes", "a PCIe row needs lanes and per_lane_gbs");
    out.push_back(std::move(l));
  });
}

Result<std::vector<ArmCpuId>> parse_arm_cpus(std::string_view text, std::string_view file) {
  static const std::vector<std::string_view> cols = {"implementer", "part", "vendor", "core",
                                                     "source"};
  std::set<std::string> keys;
  auto hex = [](const Row &r, std::string_view col) -> std::optional<int> {
    auto v = r.str(col);
    if (v.empty())
      return std::nullopt;
    if (v.size() < 3 || v.size() > 5 || v.rfind("0x", 0) != 0 || !is_hex(v.substr(2)))
      r.fail(col, "'" + v + "' is not a hexadecimal code such as 0x41 or 0xd4f");
    return std::stoi(v.substr(2), nullptr, 16);
  };
  return parse_rows<ArmCpuId>(text, file, cols, [&](const Row &r, std::vector<ArmCpuId> &out) {
    ArmCpuId a;
    auto impl = hex(r, "implementer");
    if (!impl)
      r.fail("implementer", "is required");
    a.implementer = *impl;
    a.part = hex(r, "part");
    a.vendor = r.required("vendor");
    a.core = r.str("core");
    if (a.part.has_value() == a.core.empty())
      r.fail("core", "a row with a part names its core; an implementer's row has neither");
    a.source = r.required("source");
    check_unique(keys, r, "part", r.str("implementer") + "/" + r.str("part"));
    out.push_back(std::move(a));
  });
}

Result<std::vector<P2pHang>> parse_p2p_hangs(std::string_view text, std::string_view file) {
  static const std::vector<std::string_view> cols = {"gpu", "driver_from", "driver_before",
                                                     "source", "notes"};
  auto driver = [](const Row &r, std::string_view col, bool need) {
    const std::string &v = need ? r.required(col) : r.str(col);
    if (!v.empty() && !std::isdigit(static_cast<unsigned char>(v[0])))
      r.fail(col, "'" + v + "' is not a driver version such as 545 or 570.86.10");
    return v;
  };
  return parse_rows<P2pHang>(text, file, cols, [&](const Row &r, std::vector<P2pHang> &out) {
    P2pHang h;
    h.gpu = r.required("gpu");
    h.driver_from = driver(r, "driver_from", true);
    h.driver_before = driver(r, "driver_before", false);
    if (!h.driver_before.empty() && compare_versions(h.driver_before, h.driver_from) <= 0)
      r.fail("driver_before", "must be a later driver than driver_from");
    h.source = r.required("source");
    h.notes = r.str("notes");
    out.push_back(std::move(h));
  });
}

Result<std::vector<GpuFamily>> parse_gpu_families(std::string_view text, std::string_view file) {
  static const std::vector<std::string_view> cols = {"family", "gpu", "reason", "source"};
  std::set<std::string> keys;
  return parse_rows<GpuFamily>(text, file, cols, [&](const Row &r, std::vector<GpuFamily> &out) {
    GpuFamily f;
    f.family = r.required("family");
    f.gpu = r.required("gpu");
    f.reason = r.required("reason");
    f.source = r.required("source");
    check_unique(keys, r, "family", detail::lower(f.family));
    out.push_back(std::move(f));
  });
}

Result<std::vector<CloudInstance>> parse_cloud(std::string_view text, std::string_view file) {
  static const std::vector<std::string_view> cols = {
      "provider",     "instance",        "gpu_count",    "gpu_model",          "gpu",
      "gpu_memory",   "gpu_memory_unit", "host_memory",  "host_memory_unit",   "vcpus",
      "interconnect", "network",         "network_gbps", "price_usd_per_hour", "price_region",
      "price_date",   "source",          "notes"};
  std::set<std::string> names;
  return parse_rows<CloudInstance>(
      text, file, cols, [&](const Row &r, std::vector<CloudInstance> &out) {
        CloudInstance c;
        c.provider = r.required("provider");
        c.instance = r.required("instance");
        check_unique(names, r, "instance", detail::lower(c.instance));
        auto n = r.integer("gpu_count");
        if (!n || *n < 1)
          r.fail("gpu_count", "must be a whole number of GPUs, at least 1");
        c.gpu_count = *n;
        c.gpu_model = r.required("gpu_model");
        c.gpu = r.str("gpu");
        c.gpu_memory = r.number("gpu_memory");
        c.gpu_memory_unit = r.str("gpu_memory_unit");
        c.host_memory = r.number("host_memory");
        c.host_memory_unit = r.str("host_memory_unit");
        for (auto [value, unit, col] :
             {std::tuple{c.gpu_memory.has_value(), c.gpu_memory_unit, "gpu_memory_unit"},
              std::tuple{c.host_memory.has_value(), c.host_memory_unit, "host_memory_unit"}})
          if (value && unit != "GB" && unit != "GiB")
            r.fail(col, "'" + unit + "' is not GB or GiB");
        c.vcpus = r.integer("vcpus");
        c.interconnect = r.str("interconnect");
        c.network = r.str("network");
        c.network_bits_per_s = scaled(r.number("network_gbps"), kGiga);
        c.price_usd_per_hour = r.number("price_usd_per_hour");
        c.price_region = r.str("price_region");
        c.price_date = r.str("price_date");
        if (c.price_usd_per_hour && detail::trim(c.price_date).empty())
          r.fail("price_date", "blank: a price needs the date it was read");
        c.source = r.required("source");
        c.notes = r.str("notes");
        out.push_back(std::move(c));
      });
}

Result<std::vector<GemmAchieved>> parse_gemm_achieved(std::string_view text,
                                                      std::string_view file) {
  static const std::vector<std::string_view> cols = {"gpu", "precision", "achieved_tflops",
                                                     "source", "notes"};
  std::set<std::string> keys;
  return parse_rows<GemmAchieved>(
      text, file, cols, [&](const Row &r, std::vector<GemmAchieved> &out) {
        GemmAchieved g;
        g.gpu = r.required("gpu");
        g.precision = r.required("precision");
        if (g.precision != "fp32" && g.precision != "tf32" && g.precision != "fp16" &&
            g.precision != "bf16" && g.precision != "fp8")
          r.fail("precision", "'" + g.precision + "' is not fp32, tf32, fp16, bf16 or fp8");
        auto v = r.number("achieved_tflops");
        if (!v || *v <= 0)
          r.fail("achieved_tflops", "must be a positive number");
        g.flops = *v * 1e12;
        g.source = r.required("source");
        g.notes = r.str("notes");
        check_unique(keys, r, "precision", g.gpu + "/" + g.precision);
        out.push_back(std::move(g));
      });
}

Result<std::vector<AttentionAchieved>> parse_attention_achieved(std::string_view text,
                                                                std::string_view file) {
  static const std::vector<std::string_view> cols = {
      "gpu", "kernel", "pass", "head_dim", "causal", "seq", "achieved_tflops", "source", "notes"};
  std::set<std::string> keys;
  return parse_rows<AttentionAchieved>(
      text, file, cols, [&](const Row &r, std::vector<AttentionAchieved> &out) {
        AttentionAchieved a;
        a.gpu = r.required("gpu");
        a.kernel = r.required("kernel");
        if (a.kernel != "flash2" && a.kernel != "cudnn")
          r.fail("kernel", "'" + a.kernel + "' is not flash2 or cudnn");
        a.pass = r.required("pass");
        if (a.pass != "forward" && a.pass != "backward" && a.pass != "both")
          r.fail("pass", "'" + a.pass + "' is not forward, backward or both");
        auto d = r.integer("head_dim");
        if (!d || *d <= 0)
          r.fail("head_dim", "must be a positive whole number");
        a.head_dim = static_cast<int>(*d);
        auto causal = r.yes_no("causal");
        if (!causal)
          r.fail("causal", "blank: the mask must be known (yes or no)");
        a.causal = *causal;
        auto s = r.number("seq");
        if (!s || *s <= 0)
          r.fail("seq", "must be a positive number");
        a.seq = *s;
        auto v = r.number("achieved_tflops");
        if (!v || *v <= 0)
          r.fail("achieved_tflops", "must be a positive number");
        a.flops = *v * 1e12;
        a.source = r.required("source");
        a.notes = r.str("notes");
        check_unique(
            keys, r, "seq",
            fmt::format("{}/{}/{}/{}/{}/{}", a.gpu, a.kernel, a.pass, a.head_dim, a.causal, a.seq));
        out.push_back(std::move(a));
      });
}

namespace {

template <class T, class Parse> std::vector<T> load(const char *name, Parse parse) {
  std::string file = std::string("data/") + name;
  auto text = embedded_file(name);
  if (!text)
    throw Failure(ExitCode::internal,
                  file + " is not embedded in this build (list it in " + "data/files.cmake)");
  auto rows = parse(*text, file);
  if (!rows)
    throw Failure(ExitCode::internal, rows.error().message);
  return std::move(rows).value();
}

// A GPU another file names by its gpus.csv name, exactly (not find_gpu's looser match).
void require_catalog_name(const KnowledgeBase &kb, const std::string &gpu, const std::string &who) {
  if (std::none_of(kb.gpus.begin(), kb.gpus.end(), [&](const GpuSpec &g) { return g.name == gpu; }))
    throw Failure(ExitCode::internal, who + " names \"" + gpu + "\", which gpus.csv lacks");
}

KnowledgeBase load_builtin() {
  KnowledgeBase kb;
  kb.gpus = load<GpuSpec>("gpus.csv", parse_gpus);
  kb.archs = load<ArchSpec>("archs.csv", parse_archs);
  kb.cuda = load<CudaDriverMin>("cuda_drivers.csv", parse_cuda_drivers);
  kb.torch = load<TorchRelease>("torch.csv", parse_torch);
  kb.cudnn = load<CudnnCompat>("cudnn.csv", parse_cudnn);
  kb.links = load<LinkSpec>("links.csv", parse_links);
  kb.cloud = load<CloudInstance>("cloud.csv", parse_cloud);
  kb.arm_cpus = load<ArmCpuId>("arm_cpus.csv", parse_arm_cpus);
  kb.gemm_achieved = load<GemmAchieved>("gemm_achieved.csv", parse_gemm_achieved);
  kb.attention_achieved =
      load<AttentionAchieved>("attention_achieved.csv", parse_attention_achieved);
  for (const auto &a : kb.attention_achieved)
    require_catalog_name(kb, a.gpu, "data/attention_achieved.csv: a row");
  kb.p2p_hangs = load<P2pHang>("p2p_hangs.csv", parse_p2p_hangs);
  kb.gpu_families = load<GpuFamily>("gpu_families.csv", parse_gpu_families);
  for (const auto &f : kb.gpu_families)
    require_catalog_name(kb, f.gpu, "data/gpu_families.csv: family " + f.family);
  kb.models = model::load_model_catalog();
  return kb;
}

} // namespace

const KnowledgeBase &builtin() {
  static const KnowledgeBase kb = load_builtin();
  return kb;
}

} // namespace dlrig::kb
