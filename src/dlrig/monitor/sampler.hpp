#pragma once
// The one sampler behind `dlrig watch` and `dlrig serve`: AMD GPUs through sysfs (amd.hpp) after
// the NVIDIA ones, which it reads as follows. NVML is opened once, in a child process of its own
// (platform/process.hpp ChildWorker), which reads each GPU's static facts once (name, UUID, bus
// id, limits) and, per take(), one live sample per GPU (platform/nvml.hpp sample()) and the Xid
// events raised since the last take; the host's readings and the processes' users and commands
// are read here. Readings are converted to base units and nowhere else; what NVML does not give
// stays nullopt.
//
// A GPU that falls off the bus is marked lost and no longer asked (its sample says lost). A
// session that does not open gives samples with nvml_ok false and no NVIDIA GPUs: the host is
// still read. NVML that does not answer in time (a GPU or the driver has stopped responding:
// NVML then sleeps in the driver, where no signal reaches it) is the same from then on, with the
// reason in nvml_error: the child is killed and left behind. With nvml_helper set (watch and
// serve: dlrig's own binary), NVML is tried again after nvml_retry, then twice as long each time
// it fails (at most 15 minutes), in a new child that runs `dlrig __nvml-helper` (exec'd, so it is
// safe from serve's threads), and only once every earlier child has ended (one still asleep in
// the driver means the driver has not let go); without it, NVML is not asked again.
//
// Not thread-safe: one caller at a time (serve serialises scrapes). Construct it while the
// process has one thread (the child is forked then).
#include "dlrig/monitor/amd.hpp"
#include "dlrig/monitor/host.hpp"
#include "dlrig/monitor/sample.hpp"
#include "dlrig/platform/fs.hpp"
#include "dlrig/platform/process.hpp"

#include <chrono>
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
  // How long NVML may take to open (the first time without persistence mode takes seconds on a
  // machine of many GPUs) and to answer each sample (--nvml-timeout sets both).
  std::chrono::milliseconds nvml_open_timeout{30000};
  std::chrono::milliseconds nvml_sample_timeout{10000};
  // dlrig's binary (/proc/self/exe), run as `__nvml-helper` to ask NVML again after it stopped
  // answering or crashed; empty (a caller that is not dlrig): never again.
  std::string nvml_helper;
  std::chrono::milliseconds nvml_retry{60000}; // the first wait before asking again; 0: never
};

// The NVML helper's main (`dlrig __nvml-helper LIBRARY PROCESSES`): answers the sampler's
// requests on descriptor 3 until it closes, then exits.
[[noreturn]] void run_nvml_helper(const std::string &library, bool processes);

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
  void stopped(const ChildWorker::Reply &reply, std::chrono::milliseconds waited, const char *when);
  // Asks the worker in nvml_ to open NVML; sets nvml_ok_, nvml_error_ and the facts.
  void open_nvml();
  // After a stop, when the wait is over: NVML again in a new helper process.
  void retry_nvml();

  const FileSystem &fs_;
  SamplerOptions options_;
  std::unique_ptr<ChildWorker> nvml_; // null with --no-nvml
  bool nvml_ok_ = false;
  std::string nvml_error_;
  std::optional<double> retry_at_; // monotonic seconds; none: not to be asked again
  std::chrono::milliseconds retry_wait_{0};
  SystemFacts facts_;
  std::vector<AmdDevice> amd_; // after the NVIDIA GPUs, indexes following theirs
  HostReader host_;
};

} // namespace dlrig::monitor
