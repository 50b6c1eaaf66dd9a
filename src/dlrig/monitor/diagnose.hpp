#pragma once
// The live diagnoses of `dlrig watch` and `dlrig serve` (dlrig_finding): pure rules over a window
// of samples (oldest first, the last one is now), each with a stable id. They say what is wrong
// in words, with the readings that show it. A rule whose readings are unknown says nothing.
#include "dlrig/monitor/sample.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dlrig::monitor {

struct Finding {
  std::string id;              // stable: docs/monitoring.md lists every id
  std::string severity;        // "critical", "warning" or "info"
  std::optional<unsigned> gpu; // NVML index; nullopt for the machine
  std::string message;
};

struct Rule {
  const char *id;
  const char *severity;
  const char *when; // when it fires, in words (docs and --help)
};
const std::vector<Rule> &diagnosis_rules();

// Thresholds, with the defaults the docs give.
struct DiagnoseOptions {
  double idle_utilization = 0.10;   // a GPU below this is idle
  double idle_share = 0.50;         // ... for at least this share of the window
  std::size_t idle_min_samples = 5; // and the window holds at least this many samples
  double busy_utilization = 0.30;   // "under load" for the PCIe rule
  double memory_full = 0.95;        // share of device memory
  double cpu_saturated = 0.85;      // host CPU share that counts as saturated
};

std::vector<Finding> diagnose(const std::vector<Sample> &window, const DiagnoseOptions &o = {});

// The window the diagnoses read, kept by watch and serve alike: appends s and drops what is older
// than `seconds` before it (the newest always stays). With spacing > 0, the samples kept besides
// the newest stand at least `spacing` seconds apart: while the newest is closer than that to the
// one kept before it, s replaces it, carrying on its Xids (the "xid" rule reads them from the
// window). serve, whose scrapes come as fast as clients send them, thus holds about
// seconds / spacing + 2 samples at most.
void add_to_window(std::vector<Sample> &window, Sample s, double seconds, double spacing = 0);

// The names of the throttle reasons set in an nvmlClocksEventReasons mask (the idle bit is not a
// throttle); empty when none.
std::vector<std::string> throttle_reasons(std::uint64_t mask);
// The meaning of an Xid from NVIDIA's catalogue, or empty when dlrig does not know it.
std::string xid_meaning(std::uint64_t xid);

} // namespace dlrig::monitor
