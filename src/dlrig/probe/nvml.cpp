// NVIDIA GPUs in the snapshot, from NVML through the platform seam (platform/nvml.hpp): one
// session, each GPU's static readings and one live sample, turned into snapshot fields and notes.
// A call the library does not export, or that answers NOT_SUPPORTED, leaves its field null.
// Nothing NVML says stops the probe: a library that does not load or does not initialise is
// recorded in snapshot.nvidia and the GPUs keep what the PCI probe found; one that crashes or does
// not answer in time (it runs in a child process) is recorded the same way.
#include "dlrig/probe/nvml.hpp"

#include "dlrig/kb/kb.hpp"
#include "dlrig/platform/process.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstring>
#include <set>

namespace dlrig {

// --- pure translations -----------------------------------------------------------------------

std::string normalize_bus_id(std::string_view nvml_bus_id) {
  std::string id(nvml_bus_id);
  for (char &c : id)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // domain:bus:device.function; NVML pads the domain to 8 hex digits, sysfs to 4.
  auto colon = id.find(':');
  if (colon == std::string::npos || id.find(':', colon + 1) == std::string::npos)
    return id;
  std::string domain = id.substr(0, colon);
  if (domain.empty() || domain.size() > 8 ||
      domain.find_first_not_of("0123456789abcdef") != std::string::npos)
    return id;
  // sysfs prints the domain as %04x: at least four digits, more for domains above 0xffff.
  domain = fmt::format("{:04x}", std::stoul(domain, nullptr, 16));
  return domain + id.substr(colon);
}

OptStr cuda_version_text(int version) {
  if (version <= 0)
    return std::nullopt;
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

OptStr topology_level_name(int level) {
  switch (level) {
  case 0:  // INTERNAL: two GPUs on one board, joined by its on-board bridge
  case 10: // SINGLE
    return "PIX";
  case 20:
    return "PXB";
  case 30:
    return "PHB";
  case 40:
    return "NODE";
  case 50:
    return "SYS";
  default:
    return std::nullopt;
  }
}

OptStr p2p_status_name(int status) {
  static constexpr std::array<const char *, 7> names{"ok",
                                                     "chipset-not-supported",
                                                     "gpu-not-supported",
                                                     "topology-not-supported",
                                                     "disabled-by-regkey",
                                                     "not-supported",
                                                     "unknown"};
  if (status < 0 || status >= static_cast<int>(names.size()))
    return std::nullopt;
  return names[static_cast<std::size_t>(status)];
}

OptStr fabric_state_name(int state) {
  // NVML_GPU_FABRIC_STATE_NOT_SUPPORTED (0) means the GPU is on no fabric: unknown, not a state.
  static constexpr std::array<const char *, 4> names{nullptr, "not-started", "in-progress",
                                                     "completed"};
  if (state <= 0 || state >= static_cast<int>(names.size()))
    return std::nullopt;
  return names[static_cast<std::size_t>(state)];
}

OptStr compute_mode_name(int mode) {
  static constexpr std::array<const char *, 4> names{"default", "exclusive-thread", "prohibited",
                                                     "exclusive-process"};
  if (mode < 0 || mode >= static_cast<int>(names.size()))
    return std::nullopt;
  return names[static_cast<std::size_t>(mode)];
}

std::vector<std::string> clocks_event_reason_names(std::uint64_t mask) {
  // Bit values from the NVML reference, group nvmlClocksEventReasons.
  static constexpr std::array<const char *, 9> names{"gpu-idle",
                                                     "applications-clocks-setting",
                                                     "sw-power-cap",
                                                     "hw-slowdown",
                                                     "sync-boost",
                                                     "sw-thermal-slowdown",
                                                     "hw-thermal-slowdown",
                                                     "hw-power-brake-slowdown",
                                                     "display-clock-setting"};
  std::vector<std::string> out;
  for (unsigned bit = 0; bit < 64; ++bit) {
    std::uint64_t value = std::uint64_t{1} << bit;
    if (!(mask & value))
      continue;
    out.push_back(bit < names.size() ? names[bit] : fmt::format("{:#x}", value));
  }
  return out;
}

OptStr parse_nvidia_module_version(std::string_view text) {
  auto at = text.find("Kernel Module");
  if (at == std::string_view::npos)
    return std::nullopt;
  text.remove_prefix(at + 13);
  // The first token made of digits and dots, with at least one dot, is the version; the open
  // module's "for x86_64" comes before it.
  while (!text.empty()) {
    auto start = text.find_first_not_of(" \t");
    if (start == std::string_view::npos)
      break;
    text.remove_prefix(start);
    auto end = text.find_first_of(" \t\n");
    std::string_view token = text.substr(0, end);
    bool versionish = !token.empty() && std::isdigit(static_cast<unsigned char>(token[0])) &&
                      token.find('.') != std::string_view::npos &&
                      std::all_of(token.begin(), token.end(), [](char c) {
                        return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
                      });
    if (versionish)
      return std::string(token);
    if (end == std::string_view::npos || text[end] == '\n')
      break;
    text.remove_prefix(end);
  }
  return std::nullopt;
}

OptStr gpu_pair_topology(const Gpu &a, const Gpu &b, std::optional<int> pcie_level) {
  if (a.nvml && b.nvml) {
    int direct = 0;
    int a_switch = 0;
    int b_switch = 0;
    for (const auto &l : a.nvml->nvlinks) {
      if (l.active != true)
        continue;
      if (l.remote_bdf && *l.remote_bdf == b.bdf)
        ++direct;
      if (l.remote_kind == "switch")
        ++a_switch;
    }
    for (const auto &l : b.nvml->nvlinks)
      if (l.active == true && l.remote_kind == "switch")
        ++b_switch;
    if (direct > 0)
      return fmt::format("NV{}", direct);
    if (a_switch > 0 && b_switch > 0)
      return fmt::format("NV{}", std::min(a_switch, b_switch));
  }
  return pcie_level ? topology_level_name(*pcie_level) : std::nullopt;
}

// --- the probe ---------------------------------------------------------------------------------

namespace {

using nvml::Answer;
using nvml::Reading;

// More GPUs than any machine has: a misbehaving library cannot make the probe loop forever.
constexpr unsigned kMaxGpus = 1024;

// Turns NVML's answers into snapshot fields and notes: NOT_SUPPORTED means "this GPU has no such
// reading" and is silent; a function the library lacks is noted once (not once per GPU), by the
// name the table asked for; other failures become a note on the field with NVML's reason.
class Notes {
public:
  Notes(const ProbeContext &ctx, const nvml::Session &session) : ctx_(ctx), session_(session) {}

  bool accept(const Answer &a, const std::string &field) {
    if (a.status == nvml::kSuccess)
      return true;
    if (a.status == nvml::kErrorNotSupported)
      return false;
    const std::string symbol = a.symbol ? a.symbol : "NVML";
    if (a.status == nvml::kErrorFunctionNotFound) {
      if (missing_.insert(symbol).second)
        ctx_.note("nvidia", symbol,
                  fmt::format("{} does not provide {} (an older driver?): what it reports stays "
                              "unknown",
                              session_.library_path(), symbol));
      return false;
    }
    lost = lost || a.status == nvml::kErrorGpuIsLost;
    ctx_.note(field, symbol, session_.error_text(a.status));
    return false;
  }

  bool lost = false; // a call answered GPU_IS_LOST since it was last cleared

  std::string error_text(nvml::Return r) const { return session_.error_text(r); }

  // The reading's value when NVML answered, else nullopt (and a note as accept says).
  template <class T> std::optional<T> take(const Reading<T> &r, const std::string &field) {
    if (!accept(r, field))
      return std::nullopt;
    return r.value;
  }

private:
  const ProbeContext &ctx_;
  const nvml::Session &session_;
  std::set<std::string> missing_;
};

OptF64 mw_to_w(std::optional<unsigned> mw) {
  return mw ? OptF64{*mw / 1000.0} : std::nullopt;
}
OptF64 mhz_to_hz(std::optional<unsigned> mhz) {
  return mhz ? OptF64{*mhz * 1e6} : std::nullopt;
}
std::optional<int> to_int(std::optional<unsigned> v) {
  return v ? std::optional<int>{static_cast<int>(*v)} : std::nullopt;
}
template <class T> OptF64 to_f64(std::optional<T> v) {
  return v ? OptF64{static_cast<double>(*v)} : std::nullopt;
}

void fill_nvlinks(Notes &n, const nvml::StaticInfo &st, const std::string &f, NvmlGpu &g) {
  if (!n.accept(st.nvlinks, f + ".nvlinks"))
    return;
  OptU64 speed_bps;
  if (st.nvlink_speed_bytes_per_s)
    speed_bps = *st.nvlink_speed_bytes_per_s * 8;
  for (const auto &r : *st.nvlinks.value) {
    if (!n.accept(r.active, f + fmt::format(".nvlinks[{}]", r.link)))
      continue;
    NvLink l;
    l.link = static_cast<int>(r.link);
    l.active = r.active.value;
    if (*r.active.value) {
      if (auto bus = n.take(r.remote_bus_id, f + ".nvlinks.remote_bdf"))
        l.remote_bdf = normalize_bus_id(*bus);
      if (auto type = n.take(r.remote_type, f + ".nvlinks.remote_kind"))
        l.remote_kind = *type == nvml::kNvLinkDeviceGpu      ? OptStr{"gpu"}
                        : *type == nvml::kNvLinkDeviceSwitch ? OptStr{"switch"}
                        : *type == nvml::kNvLinkDeviceIbmNpu ? OptStr{"cpu"}
                                                             : OptStr{};
      l.speed_bps = speed_bps;
    }
    g.nvlinks.push_back(std::move(l));
  }
}

// The snapshot's view of one GPU, from its static readings and one live sample, field by field in
// the snapshot's order (which is also the order of the notes).
NvmlGpu fill_gpu(Notes &n, const nvml::StaticInfo &st, const nvml::LiveSample &live, int index,
                 const std::string &f) {
  NvmlGpu g;
  g.index = index;
  g.name = n.take(st.name, f + ".name");
  g.uuid = n.take(st.uuid, f + ".uuid");
  if (auto memory = n.take(live.memory, f + ".memory_total_bytes")) {
    g.memory_total_bytes = memory->total_bytes;
    g.memory_used_bytes = memory->used_bytes;
    g.memory_kind = "dedicated";
  } else if (live.memory.status == nvml::kErrorNotSupported) {
    // No framebuffer of its own: the GPU allocates from the system memory (GB10).
    g.memory_kind = "unified";
  }
  if (auto cc = n.take(st.compute_capability, f + ".compute_capability"))
    g.compute_capability = fmt::format("{}.{}", cc->first, cc->second);
  if (g.compute_capability)
    if (const kb::ArchSpec *arch = kb::builtin().arch(*g.compute_capability))
      g.architecture = arch->name;

  g.sm_clock_hz = mhz_to_hz(n.take(live.sm_clock_mhz, f + ".sm_clock_hz"));
  g.sm_clock_max_hz = mhz_to_hz(n.take(st.sm_clock_max_mhz, f + ".sm_clock_max_hz"));
  g.memory_clock_hz = mhz_to_hz(n.take(live.memory_clock_mhz, f + ".memory_clock_hz"));
  g.memory_clock_max_hz = mhz_to_hz(n.take(st.memory_clock_max_mhz, f + ".memory_clock_max_hz"));

  g.power_draw_w = mw_to_w(n.take(live.power_usage_mw, f + ".power_draw_w"));
  g.power_limit_w = mw_to_w(n.take(st.power_limit_mw, f + ".power_limit_w"));
  g.power_default_limit_w =
      mw_to_w(n.take(st.power_default_limit_mw, f + ".power_default_limit_w"));

  g.temperature_c = to_f64(n.take(live.temperature_c, f + ".temperature_c"));
  g.slowdown_temperature_c =
      to_f64(n.take(st.slowdown_temperature_c, f + ".slowdown_temperature_c"));
  g.fan_percent = to_f64(n.take(live.fan_percent, f + ".fan_percent"));

  if (auto reasons = n.take(live.clocks_event_reasons, f + ".throttle_reasons")) {
    g.throttle_reasons_mask = *reasons;
    g.throttle_reasons = clocks_event_reason_names(*reasons);
  }

  g.persistence_mode = n.take(st.persistence_mode, f + ".persistence_mode");
  if (auto mode = n.take(st.compute_mode, f + ".compute_mode"))
    g.compute_mode = compute_mode_name(*mode);
  g.mig_enabled = n.take(st.mig_enabled, f + ".mig_enabled");

  g.ecc_enabled = n.take(st.ecc_enabled, f + ".ecc_enabled");
  g.ecc_uncorrected_volatile =
      n.take(live.ecc_uncorrected_volatile, f + ".ecc_uncorrected_volatile");
  g.ecc_corrected_volatile = n.take(live.ecc_corrected_volatile, f + ".ecc_corrected_volatile");
  g.ecc_uncorrected_aggregate =
      n.take(live.ecc_uncorrected_aggregate, f + ".ecc_uncorrected_aggregate");
  g.retired_pages = n.take(live.retired_pages, f + ".retired_pages");
  g.retired_pages_pending = n.take(live.retired_pages_pending, f + ".retired_pages_pending");
  if (auto rows = n.take(live.remapped_rows, f + ".remapped_rows")) {
    g.remapped_rows.correctable = rows->correctable;
    g.remapped_rows.uncorrectable = rows->uncorrectable;
    g.remapped_rows.pending = rows->pending;
    g.remapped_rows.failure = rows->failure;
  }
  g.display_active = n.take(st.display_active, f + ".display_active");

  g.pcie_gen_current = to_int(n.take(live.pcie_gen_current, f + ".pcie_gen_current"));
  g.pcie_gen_max = to_int(n.take(st.pcie_gen_max, f + ".pcie_gen_max"));
  g.pcie_width_current = to_int(n.take(live.pcie_width_current, f + ".pcie_width_current"));
  g.pcie_width_max = to_int(n.take(st.pcie_width_max, f + ".pcie_width_max"));
  if (auto replays = n.take(live.pcie_replay_counter, f + ".pcie_replay_counter"))
    g.pcie_replay_counter = *replays;

  fill_nvlinks(n, st, f, g);
  g.c2c_enabled = n.take(st.c2c_enabled, f + ".c2c_enabled");
  if (auto fabric = n.take(st.fabric, f + ".fabric_state")) {
    g.fabric_state = fabric_state_name(fabric->state);
    if (fabric->state == nvml::kFabricStateCompleted && fabric->status != nvml::kSuccess)
      g.fabric_error = n.error_text(fabric->status);
  }
  if (auto processes = n.take(live.processes, f + ".processes"))
    for (const auto &p : *processes) {
      GpuProcess gp;
      gp.pid = p.pid;
      gp.used_memory_bytes = p.used_memory_bytes; // named from /proc by name_processes
      g.processes.push_back(std::move(gp));
    }
  return g;
}

// The snapshot entry for bdf: the PCI probe's, or a new one for a GPU it did not see.
Gpu &gpu_entry(Snapshot &snap, const std::string &bdf, const nvml::PciInfo &pci, const NvmlGpu &g) {
  for (auto &gpu : snap.gpus)
    if (gpu.bdf == bdf)
      return gpu;
  Gpu gpu;
  gpu.bdf = bdf;
  gpu.vendor = "NVIDIA";
  gpu.vendor_id = "0x10de";
  if (pci.pciDeviceId != 0)
    gpu.device_id = fmt::format("{:#06x}", pci.pciDeviceId >> 16);
  if (g.name) {
    gpu.name = g.name;
    gpu.name_source = "nvml";
  }
  auto at = std::lower_bound(snap.gpus.begin(), snap.gpus.end(), bdf,
                             [](const Gpu &a, const std::string &b) { return a.bdf < b; });
  return *snap.gpus.insert(at, std::move(gpu));
}

// The processes NVML lists on each GPU, named from /proc/PID/comm.
void name_processes(const ProbeContext &ctx) {
  for (auto &gpu : ctx.snapshot.gpus)
    if (gpu.nvml)
      for (auto &p : gpu.nvml->processes)
        p.name = read_trimmed(ctx.fs, fmt::format("/proc/{}/comm", p.pid));
}

// The child's answer: what probe_nvml_readings changed, as CBOR (RFC 8949), which carries text
// NVML gave that is not UTF-8 as it came, for the printers to repair as they do any reading.
std::vector<std::uint8_t> nvml_answer(const Snapshot &snap) {
  return Json::to_cbor(Json{{"gpus", snap.gpus}, {"nvidia", snap.nvidia}, {"notes", snap.notes}});
}

} // namespace

void probe_nvml_with(const ProbeContext &ctx, const nvml::Session &session) {
  probe_nvml_readings(ctx, session);
  name_processes(ctx);
}

void probe_nvml_readings(const ProbeContext &ctx, const nvml::Session &session) {
  auto &nv = ctx.snapshot.nvidia;
  nv.nvml_library = session.library_path();
  switch (session.state()) {
  case nvml::Session::State::not_loaded:
    nv.nvml_status = "not-found";
    nv.nvml_error = session.error();
    nv.nvml_error_code = session.error_code();
    return;
  case nvml::Session::State::not_nvml:
  case nvml::Session::State::init_failed:
    nv.nvml_status = "init-failed";
    nv.nvml_error = session.error();
    nv.nvml_error_code = session.error_code();
    return;
  case nvml::Session::State::ready:
    break;
  }
  Notes n(ctx, session);
  nv.nvml_status = "ok";
  auto sys = nvml::read_system(session);
  nv.driver_version = n.take(sys.driver_version, "nvidia.driver_version");
  nv.nvml_version = n.take(sys.nvml_version, "nvidia.nvml_version");
  if (auto cuda = n.take(sys.cuda_driver_version, "nvidia.cuda_driver_version"))
    nv.cuda_driver_version = cuda_version_text(*cuda);

  unsigned count = n.take(sys.device_count, "nvidia.gpu_count").value_or(0);
  if (sys.device_count.value)
    nv.gpu_count = static_cast<int>(std::min(count, kMaxGpus));
  if (count > kMaxGpus) {
    ctx.note("nvidia.gpu_count", sys.device_count.symbol,
             fmt::format("NVML reports {} GPUs; only the first {} are read", count, kMaxGpus));
    count = kMaxGpus;
  }

  // NVML index → its handle and snapshot entry (by bus id; entries may move as GPUs are added).
  std::vector<std::pair<nvml::Device, std::string>> seen;
  for (unsigned i = 0; i < count; ++i) {
    std::string f = fmt::format("nvidia.gpu[{}]", i);
    n.lost = false;
    auto note_if_lost = [&](OptStr bdf) {
      if (n.lost)
        nv.lost_gpus.push_back({static_cast<int>(i), std::move(bdf)});
    };
    auto handle = n.take(nvml::device_handle(session, i), f);
    if (!handle) {
      note_if_lost(std::nullopt);
      continue;
    }
    nvml::StaticInfo st = nvml::read_static(session, *handle);
    auto pci = n.take(st.pci, f + ".bdf");
    std::string bdf = pci ? normalize_bus_id(nvml::bus_id_text(*pci)) : std::string();
    if (bdf.empty()) {
      ctx.note(
          f, st.pci.symbol,
          "no PCI bus id from NVML: this GPU cannot be matched to the PCI bus and is left out");
      note_if_lost(std::nullopt);
      continue;
    }
    nvml::LiveSample live = nvml::sample(session, *handle);
    NvmlGpu g = fill_gpu(n, st, live, static_cast<int>(i), "gpus[" + bdf + "].nvml");
    Gpu &entry = gpu_entry(ctx.snapshot, bdf, *pci, g);
    entry.nvml = std::move(g);
    note_if_lost(bdf);
    seen.emplace_back(*handle, bdf);
  }

  auto find = [&](const std::string &bdf) -> const Gpu * {
    for (const auto &gpu : ctx.snapshot.gpus)
      if (gpu.bdf == bdf)
        return &gpu;
    return nullptr;
  };
  for (std::size_t a = 0; a < seen.size(); ++a) {
    for (std::size_t b = a + 1; b < seen.size(); ++b) {
      GpuPair pair;
      const Gpu *ga = find(seen[a].second);
      const Gpu *gb = find(seen[b].second);
      pair.a = ga->nvml->index;
      pair.b = gb->nvml->index;
      std::string f = fmt::format("nvidia.pairs[{},{}]", pair.a, pair.b);
      auto level = n.take(nvml::topology_common_ancestor(session, seen[a].first, seen[b].first),
                          f + ".topology");
      pair.topology = gpu_pair_topology(*ga, *gb, level);
      auto p2p = [&](int caps, const char *name) -> OptStr {
        auto status =
            n.take(nvml::p2p_status(session, seen[a].first, seen[b].first, caps), f + "." + name);
        return status ? p2p_status_name(*status) : std::nullopt;
      };
      pair.p2p_read = p2p(nvml::kP2PCapsRead, "p2p_read");
      pair.p2p_write = p2p(nvml::kP2PCapsWrite, "p2p_write");
      pair.p2p_nvlink = p2p(nvml::kP2PCapsNvlink, "p2p_nvlink");
      nv.pairs.push_back(std::move(pair));
    }
  }
}

std::string nvml_library_name(const ProbeContext &ctx) {
  if (!ctx.options.nvml_library.empty())
    return ctx.options.nvml_library;
  auto env = ctx.env.find("DLRIG_NVML_LIBRARY");
  return env != ctx.env.end() && !env->second.empty() ? env->second : "libnvidia-ml.so.1";
}

void probe_nvml(const ProbeContext &ctx) {
  // The kernel module speaks even when user-space NVML does not load or does not match it.
  if (auto text = ctx.fs.read("/proc/driver/nvidia/version", 1 << 14))
    ctx.snapshot.nvidia.kernel_module_version = parse_nvidia_module_version(*text);
  // NVML runs in a child process (ChildWorker; in this one, without a deadline, when no process
  // can be made): one that has stopped answering (a GPU fallen off the bus leaves nvidia-smi
  // stuck, often in uninterruptible sleep, which no signal ends) cannot hold the probe, nor keep
  // dlrig from exiting, and one that crashes cannot take dlrig with it.
  const std::string library = nvml_library_name(ctx);
  auto &nv = ctx.snapshot.nvidia;
  ChildWorker worker([&](const std::string &) {
    Snapshot mine = ctx.snapshot;
    ProbeContext own{ctx.fs, ctx.env, ctx.options, mine};
    auto session = nvml::Session::open(library);
    probe_nvml_readings(own, session);
    auto cbor = nvml_answer(mine);
    return std::string(cbor.begin(), cbor.end());
  }); // nvmlShutdown (the session's end) comes before the answer is sent
  auto reply = worker.ask("probe", ctx.options.nvml_timeout);
  nv.nvml_library = library;
  if (reply.outcome == ChildWorker::Outcome::timed_out) {
    nv.nvml_status = "timed-out";
    nv.nvml_error = fmt::format(
        "NVML did not answer within {:g} s (--nvml-timeout): a GPU or the driver has stopped "
        "responding, and nvidia-smi would hang too; what NVML reports is unknown",
        std::chrono::duration<double>(ctx.options.nvml_timeout).count());
    return;
  }
  if (reply.outcome == ChildWorker::Outcome::answered) {
    Snapshot back = ctx.snapshot;
    if (auto j = Json::from_cbor(reply.answer, true, false);
        !j.is_discarded() && j.contains("gpus")) {
      try {
        j.at("gpus").get_to(back.gpus);
        j.at("nvidia").get_to(back.nvidia);
        j.at("notes").get_to(back.notes);
        ctx.snapshot = std::move(back);
        name_processes(ctx);
        return;
      } catch (const std::exception &) {
      }
    }
  }
  nv.nvml_status = "init-failed";
  nv.nvml_error =
      reply.signal
          ? fmt::format("NVML's probe ended with signal {} ({}) before it answered: the library "
                        "crashed; what NVML reports is unknown",
                        *reply.signal, strsignal(*reply.signal))
          : std::string("NVML's probe ended without an answer; what NVML reports is unknown");
}

} // namespace dlrig
