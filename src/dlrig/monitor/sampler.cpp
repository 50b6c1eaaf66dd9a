#include "dlrig/monitor/sampler.hpp"

#include "dlrig/platform/nvml.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace dlrig::monitor {

namespace {

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double seconds(std::chrono::milliseconds ms) {
  return std::chrono::duration<double>(ms).count();
}

template <class T> std::optional<double> scaled(const nvml::Reading<T> &r, double factor) {
  if (!r.value)
    return std::nullopt;
  return static_cast<double>(*r.value) * factor;
}

// Division rather than a multiplication by 1e-3: 299400 mW is 299.4 W exactly as printed.
template <class T> std::optional<double> divided(const nvml::Reading<T> &r, double divisor) {
  if (!r.value)
    return std::nullopt;
  return static_cast<double>(*r.value) / divisor;
}

// The NVIDIA side, which lives in the sampler's child process: NVML's session, each GPU's static
// facts (read once), the Xid event set, and one sample of every GPU per request.
class NvidiaSide {
public:
  NvidiaSide(const std::string &library, bool processes);
  // {"ok", "error", "driver_version", "cuda_version"}
  Json opened() const;
  // {"gpus": [...]}, as to_json(Sample) writes them; processes not yet described from /proc.
  Json sample();

private:
  struct Gpu {
    unsigned index = 0;
    nvml::Device device = nullptr;
    std::string uuid, name, bus_id;
    std::optional<double> sm_clock_max_hertz, power_limit_watts, slowdown_celsius, gen_max,
        width_max;
    bool lost = false;
    double xid_count = 0;
    std::optional<double> last_xid;
    std::vector<std::uint64_t> pending_xids;
  };
  void sample_gpu(Gpu &g, GpuSample &out);

  bool processes_;
  nvml::Session session_;
  SystemFacts facts_;
  std::vector<Gpu> gpus_;
  std::unique_ptr<nvml::XidEvents> events_;
};

NvidiaSide::NvidiaSide(const std::string &library, bool processes)
    : processes_(processes), session_(nvml::Session::open(library)) {
  if (!session_.ready())
    return;
  nvml::SystemInfo sys = nvml::read_system(session_);
  facts_.driver_version = sys.driver_version.value;
  if (sys.cuda_driver_version.value) {
    int v = *sys.cuda_driver_version.value;
    facts_.cuda_version = fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
  }
  unsigned count = sys.device_count.value.value_or(0);
  std::vector<nvml::Device> devices;
  for (unsigned i = 0; i < count && i < 1024; ++i) {
    Gpu g;
    g.index = i;
    auto handle = nvml::device_handle(session_, i);
    if (!handle.value) {
      g.lost = handle.status == nvml::kErrorGpuIsLost;
      gpus_.push_back(std::move(g));
      continue;
    }
    g.device = *handle.value;
    devices.push_back(g.device);
    nvml::StaticInfo st = nvml::read_static(session_, g.device);
    g.uuid = st.uuid.value.value_or("");
    g.name = st.name.value.value_or("");
    if (st.pci.value)
      g.bus_id = nvml::bus_id_text(*st.pci.value);
    g.sm_clock_max_hertz = scaled(st.sm_clock_max_mhz, 1e6);
    g.power_limit_watts = divided(st.power_limit_mw, 1000);
    g.slowdown_celsius = scaled(st.slowdown_temperature_c, 1);
    g.gen_max = scaled(st.pcie_gen_max, 1);
    g.width_max = scaled(st.pcie_width_max, 1);
    gpus_.push_back(std::move(g));
  }
  events_ = std::make_unique<nvml::XidEvents>(session_, devices);
}

Json NvidiaSide::opened() const {
  Json j{{"ok", session_.ready()}, {"error", session_.error()}};
  j["driver_version"] = facts_.driver_version ? Json(*facts_.driver_version) : Json(nullptr);
  j["cuda_version"] = facts_.cuda_version ? Json(*facts_.cuda_version) : Json(nullptr);
  return j;
}

Json NvidiaSide::sample() {
  Sample s;
  if (events_)
    for (const auto &e : events_->poll())
      for (auto &g : gpus_)
        if (g.device == e.device) {
          g.pending_xids.push_back(e.xid);
          g.xid_count += 1;
          g.last_xid = static_cast<double>(e.xid);
        }
  for (auto &g : gpus_) {
    GpuSample out;
    sample_gpu(g, out);
    s.gpus.push_back(std::move(out));
  }
  return Json{{"gpus", to_json(s).at("gpus")}};
}

void NvidiaSide::sample_gpu(Gpu &g, GpuSample &out) {
  out.index = g.index;
  out.uuid = g.uuid;
  out.name = g.name;
  out.bus_id = g.bus_id;
  out.sm_clock_max_hertz = g.sm_clock_max_hertz;
  out.slowdown_temperature_celsius = g.slowdown_celsius;
  out.pcie_link_generation_max = g.gen_max;
  out.pcie_link_width_max = g.width_max;
  out.xids = std::move(g.pending_xids);
  g.pending_xids.clear();
  if (events_ && events_->ok())
    out.xid_events = g.xid_count;
  out.last_xid = g.last_xid;
  if (g.lost) {
    out.lost = true;
    return;
  }
  if (!g.device) // NVML gave no handle (and did not say the GPU is lost): nothing is known
    return;
  nvml::LiveSample s = nvml::sample(session_, g.device);
  if (s.gpu_lost()) {
    g.lost = true;
    out.lost = true;
    return;
  }
  auto count = [&](const char *reading, const nvml::Answer &a) {
    if (a.status == nvml::kSuccess || a.status == nvml::kErrorNotSupported ||
        a.status == nvml::kErrorFunctionNotFound)
      return;
    ++out.failed_reads;
    out.read_errors.push_back(fmt::format("{} ({}): {}", reading, a.symbol ? a.symbol : "NVML",
                                          session_.error_text(a.status)));
  };
  const std::pair<const char *, const nvml::Answer *> answers[] = {
      {"utilization", &s.utilization_percent},
      {"memory", &s.memory},
      {"sm_clock", &s.sm_clock_mhz},
      {"memory_clock", &s.memory_clock_mhz},
      {"power", &s.power_usage_mw},
      {"temperature", &s.temperature_c},
      {"fan", &s.fan_percent},
      {"clocks_event_reasons", &s.clocks_event_reasons},
      {"ecc_uncorrected_volatile", &s.ecc_uncorrected_volatile},
      {"ecc_corrected_volatile", &s.ecc_corrected_volatile},
      {"ecc_uncorrected_aggregate", &s.ecc_uncorrected_aggregate},
      {"remapped_rows", &s.remapped_rows},
      {"pcie_generation", &s.pcie_gen_current},
      {"pcie_width", &s.pcie_width_current},
      {"pcie_replays", &s.pcie_replay_counter},
      {"processes", &s.processes},
      {"energy", &s.energy_mj},
      {"pcie_tx", &s.pcie_tx_kilobytes_per_s},
      {"pcie_rx", &s.pcie_rx_kilobytes_per_s},
      {"memory_temperature", &s.memory_temperature_c},
      {"nvlink_tx", &s.nvlink_tx_kib},
      {"nvlink_rx", &s.nvlink_rx_kib},
      {"process_utilization", &s.process_utilization}};
  for (const auto &[reading, a] : answers)
    count(reading, *a);
  if (s.utilization_percent.value) {
    out.utilization_ratio = s.utilization_percent.value->gpu / 100.0;
    out.memory_utilization_ratio = s.utilization_percent.value->memory / 100.0;
  }
  if (s.memory.value) {
    const auto &m = *s.memory.value;
    out.memory_total_bytes = static_cast<double>(m.total_bytes);
    out.memory_used_bytes = static_cast<double>(m.used_bytes);
    out.memory_free_bytes = static_cast<double>(m.free_bytes);
    if (m.reserved_bytes)
      out.memory_reserved_bytes = static_cast<double>(*m.reserved_bytes);
  }
  out.sm_clock_hertz = scaled(s.sm_clock_mhz, 1e6);
  out.memory_clock_hertz = scaled(s.memory_clock_mhz, 1e6);
  out.power_watts = divided(s.power_usage_mw, 1000);
  out.power_limit_watts = g.power_limit_watts;
  out.energy_joules = divided(s.energy_mj, 1000);
  out.temperature_celsius = scaled(s.temperature_c, 1);
  out.memory_temperature_celsius = scaled(s.memory_temperature_c, 1);
  out.fan_ratio = divided(s.fan_percent, 100);
  out.clocks_event_reasons = scaled(s.clocks_event_reasons, 1);
  out.pcie_link_generation = scaled(s.pcie_gen_current, 1);
  out.pcie_link_width = scaled(s.pcie_width_current, 1);
  out.pcie_tx_bytes_per_second = scaled(s.pcie_tx_kilobytes_per_s, 1000);
  out.pcie_rx_bytes_per_second = scaled(s.pcie_rx_kilobytes_per_s, 1000);
  out.pcie_replays = scaled(s.pcie_replay_counter, 1);
  out.nvlink_tx_bytes = scaled(s.nvlink_tx_kib, 1024);
  out.nvlink_rx_bytes = scaled(s.nvlink_rx_kib, 1024);
  out.ecc_corrected_volatile = scaled(s.ecc_corrected_volatile, 1);
  out.ecc_uncorrected_volatile = scaled(s.ecc_uncorrected_volatile, 1);
  out.ecc_uncorrected_aggregate = scaled(s.ecc_uncorrected_aggregate, 1);
  if (s.remapped_rows.value) {
    const auto &r = *s.remapped_rows.value;
    out.remapped_rows_correctable = r.correctable;
    out.remapped_rows_uncorrectable = r.uncorrectable;
    out.remapped_rows_pending = r.pending ? 1 : 0;
    out.remapped_rows_failure = r.failure ? 1 : 0;
  }
  if (processes_ && s.processes.value) {
    out.processes.emplace();
    for (const auto &p : *s.processes.value) {
      ProcessSample ps;
      ps.pid = p.pid;
      if (p.used_memory_bytes)
        ps.gpu_memory_bytes = static_cast<double>(*p.used_memory_bytes);
      if (s.process_utilization.value)
        for (const auto &u : *s.process_utilization.value)
          if (u.pid == p.pid)
            ps.sm_ratio = u.sm_percent / 100.0;
      out.processes->push_back(std::move(ps));
    }
  }
}

// What the child that holds NVML answers: "open" (opened()) or a sample, as CBOR. The side is
// made on the first request, in the child.
ChildWorker::Handler nvml_handler(const std::string &library, bool processes) {
  auto side = std::make_shared<std::unique_ptr<NvidiaSide>>();
  return [side, library, processes](const std::string &request) {
    if (!*side)
      *side = std::make_unique<NvidiaSide>(library, processes);
    auto cbor = Json::to_cbor(request == "open" ? (*side)->opened() : (*side)->sample());
    return std::string(cbor.begin(), cbor.end());
  };
}

} // namespace

void run_nvml_helper(const std::string &library, bool processes) {
  serve_child_requests(3, nvml_handler(library, processes));
}

std::string default_nvml_library() {
  const char *env = std::getenv("DLRIG_NVML_LIBRARY");
  return env && *env ? env : "libnvidia-ml.so.1";
}

Sampler::Sampler(const FileSystem &fs, SamplerOptions options)
    : fs_(fs), options_(std::move(options)), host_(fs, options_.data_path) {
  // No first reading of the host's counters here: the first take() would have rates over the
  // moment between construction and take (no sector moved in 5 ms: a disk "at 0 B/s"). The
  // first sample's rates are unknown; the next ones cover the interval.
  amd_ = find_amd_gpus(fs_);
  if (options_.skip_nvml) {
    nvml_error_ = "NVML not loaded (--no-nvml)";
    return;
  }
  retry_wait_ = options_.nvml_retry;
  // The side is made in the child, on the first request: NVML is never opened in this process
  // (unless no child could be started).
  nvml_ = std::make_unique<ChildWorker>(nvml_handler(options_.nvml_library, options_.processes));
  open_nvml();
}

Sampler::~Sampler() = default;

void Sampler::open_nvml() {
  auto reply = nvml_->ask("open", options_.nvml_open_timeout);
  if (reply.outcome != ChildWorker::Outcome::answered) {
    stopped(reply, options_.nvml_open_timeout, "while it was being opened");
    return;
  }
  Json j = Json::from_cbor(reply.answer, true, false);
  if (j.is_discarded() || !j.is_object()) {
    nvml_error_ = "NVML's process answered what dlrig cannot read";
    return;
  }
  nvml_ok_ = j.value("ok", false);
  nvml_error_ = j.value("error", std::string());
  if (!nvml_ok_)
    nvml_.reset(); // its process ends now rather than idle for the run
  if (j.contains("driver_version") && j.at("driver_version").is_string())
    facts_.driver_version = j.at("driver_version").get<std::string>();
  if (j.contains("cuda_version") && j.at("cuda_version").is_string())
    facts_.cuda_version = j.at("cuda_version").get<std::string>();
}

void Sampler::retry_nvml() {
  const std::string before = nvml_error_.substr(0, nvml_error_.find(" NVIDIA GPUs are not read"));
  if (children_left_behind() > 0) { // the last helper still sleeps in the driver
    retry_at_ = monotonic_seconds() + seconds(retry_wait_);
    nvml_error_ = fmt::format("{} NVIDIA GPUs are not read: NVML's last process is still asleep "
                              "in the driver; dlrig looks again in {:g} s (--nvml-retry)",
                              before, seconds(retry_wait_));
    return;
  }
  retry_at_.reset();
  nvml_ = std::make_unique<ChildWorker>(ChildWorker::Helper{
      options_.nvml_helper,
      {"dlrig", "__nvml-helper", options_.nvml_library, options_.processes ? "1" : "0"}});
  retry_wait_ = std::min<std::chrono::milliseconds>(2 * retry_wait_, std::chrono::minutes(15));
  open_nvml();
  if (nvml_ok_) {
    retry_wait_ = options_.nvml_retry; // answering again: a later stop waits the first wait
  } else if (!retry_at_) {             // opened but not ready (the driver reloading): later again
    retry_at_ = monotonic_seconds() + seconds(retry_wait_);
    nvml_error_ += fmt::format("; dlrig asks again in {:g} s (--nvml-retry)", seconds(retry_wait_));
  }
}

void Sampler::stopped(const ChildWorker::Reply &reply, std::chrono::milliseconds waited,
                      const char *when) {
  nvml_ok_ = false;
  const bool again = !options_.nvml_helper.empty() && options_.nvml_retry.count() > 0;
  if (again)
    retry_at_ = monotonic_seconds() + seconds(retry_wait_);
  const std::string after =
      again ? fmt::format(" NVIDIA GPUs are not read until it answers again: dlrig asks it again "
                          "in {:g} s (--nvml-retry)",
                          seconds(retry_wait_))
            : " NVIDIA GPUs are not read from now on; restart dlrig once NVML answers";
  if (reply.outcome == ChildWorker::Outcome::timed_out)
    nvml_error_ = fmt::format(
        "NVML did not answer within {:g} s (--nvml-timeout) {}: a GPU or the driver has stopped "
        "responding, and nvidia-smi would hang too.{}",
        seconds(waited), when, after);
  else if (reply.signal)
    nvml_error_ = fmt::format("NVML's process ended with signal {} ({}) {}: the library crashed.{}",
                              *reply.signal, strsignal(*reply.signal), when, after);
  else
    nvml_error_ = fmt::format("NVML's process ended without an answer {}.{}", when, after);
}

bool Sampler::nvml_ok() const {
  return nvml_ok_;
}

Sample Sampler::take() {
  if (!nvml_ok_ && retry_at_ && monotonic_seconds() >= *retry_at_)
    retry_nvml();
  Sample s;
  s.time = wall_seconds();
  double now = monotonic_seconds();
  if (nvml_ok_) {
    auto reply = nvml_->ask("sample", options_.nvml_sample_timeout);
    if (reply.outcome != ChildWorker::Outcome::answered) {
      stopped(reply, options_.nvml_sample_timeout, "for a sample");
    } else {
      Json j = Json::from_cbor(reply.answer, true, false);
      try {
        Json whole{{"time", s.time}, {"gpus", j.at("gpus")}};
        s.gpus = sample_from_json(whole).gpus;
      } catch (const std::exception &) {
        nvml_ok_ = false;
        nvml_error_ = "NVML's process answered a sample dlrig cannot read; NVIDIA GPUs are not "
                      "read from now on";
      }
      if (options_.processes)
        for (auto &g : s.gpus)
          if (g.processes)
            for (auto &p : *g.processes)
              host_.describe(p);
    }
  }
  s.nvml_ok = nvml_ok_;
  s.nvml_error = nvml_error_;
  for (const auto &d : amd_) {
    GpuSample out;
    out.index = static_cast<unsigned>(s.gpus.size());
    sample_amd(fs_, d, out);
    s.gpus.push_back(std::move(out));
  }
  s.host = host_.read(now);
  return s;
}

} // namespace dlrig::monitor
