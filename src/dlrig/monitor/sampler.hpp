#pragma once
// The one sampler behind `dlrig watch` and `dlrig serve`: AMD GPUs through sysfs (amd.hpp) after
// the NVIDIA ones, which it reads as follows. It opens NVML once (through the
// platform seam's Session and entry-point table), reads each GPU's static facts once (name, UUID,
// bus id, limits) and, per take(), one live sample per GPU (platform/nvml.hpp sample()), the Xid
// events raised since the last take, and the host's readings. Readings are converted to base
// units here and nowhere else; what NVML does not give stays nullopt.
//
// A GPU that falls off the bus is marked lost and no longer asked (its sample says lost). A
// session that does not open gives samples with nvml_ok false and no GPUs: the host is still
// read.
//
// Not thread-safe: one caller at a time (serve serialises scrapes).
#include "dlrig/monitor/amd.hpp"
#include "dlrig/monitor/host.hpp"
#include "dlrig/monitor/sample.hpp"
#include "dlrig/platform/fs.hpp"
#include "dlrig/platform/nvml.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::monitor {

struct SamplerOptions {
  std::string nvml_library = "libnvidia-ml.so.1"; // a name dlopen searches, or a path
  bool skip_nvml = false;
  std::string data_path; // --data: the training data, for its disk's throughput
  bool processes = true; // read the GPU processes (and their /proc entries)
};

// The library to load: DLRIG_NVML_LIBRARY when set and not empty, else libnvidia-ml.so.1.
std::string default_nvml_library();

// What the exporter's info metric says about the machine.
struct SystemFacts {
  std::optional<std::string> driver_version;
  std::optional<std::string> cuda_version; // "12.4"
};

class Sampler {
public:
  Sampler(const FileSystem &fs, SamplerOptions options);
  Sampler(const Sampler &) = delete;
  Sampler &operator=(const Sampler &) = delete;
  ~Sampler();

  // One sample now. time is the wall clock; rates use a monotonic clock.
  Sample take();

  bool nvml_ok() const;
  const std::string &nvml_error() const { return nvml_error_; }
  const SystemFacts &facts() const { return facts_; }

private:
  struct Gpu;
  void sample_gpu(Gpu &g, GpuSample &out, double now);

  const FileSystem &fs_;
  SamplerOptions options_;
  std::unique_ptr<nvml::Session> session_;
  std::string nvml_error_;
  SystemFacts facts_;
  std::vector<Gpu> gpus_;
  std::unique_ptr<nvml::XidEvents> events_;
  std::vector<AmdDevice> amd_; // after the NVIDIA GPUs, indexes following theirs
  HostReader host_;
};

} // namespace dlrig::monitor
