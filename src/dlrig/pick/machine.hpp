#pragma once
// The whole machine around a purchase option: platform and PCIe lanes, CPU cores, RAM, storage,
// PSU and connectors, cooling, an eGPU's link. Each rule is a constant of data/sizing.csv or a row
// of data/platforms.csv and is printed with its source. Pure.
#include "dlrig/kb/kb.hpp"
#include "dlrig/pick/data.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dlrig::pick {

struct MachineRule {
  std::string id; // platform | cpu | ram | storage | psu | connectors | circuit | cooling | egpu
  std::string advice;   // what to get, in words, with the numbers
  std::string source;   // where the rule comes from
  bool warning = false; // a limit the option runs into (a slot at x4, a 15 A circuit, cooling)
};

// The same workload timed by fit::estimate_time with the card behind one host link: what an eGPU's
// Thunderbolt or OCuLink link costs it against the card in an internal slot.
struct LinkCost {
  std::string link;                  // "Thunderbolt 4 (2.4 GB/s measured)"
  std::optional<double> bytes_per_s; // host-to-device rate fit charged
  std::string speed;                 // fit's time in words ("the job in 12.3 h")
  std::optional<double> seconds;     // per unit of the goal (job, token or sample); lower is faster
  std::optional<double> slower;      // against the slot: 0.12 = 12 % slower; nullopt for the slot
  std::optional<double> load_s;      // serving: the weights over this link, once at load
};

struct MachinePlan {
  std::vector<MachineRule> rules;
  std::string platform;                   // empty: no platform of the data holds this many GPUs
  int cpu_cores = 0;                      // at least
  double ram_bytes = 0;                   // at least
  double psu_w = 0;                       // at least
  std::optional<double> read_bytes_per_s; // storage must deliver (when the input is known)
  std::vector<LinkCost> egpu_links;       // an eGPU: the internal slot first, then each dock link
};

struct MachineInput {
  const kb::GpuSpec *gpu = nullptr;
  int count = 1;
  bool egpu = false;                      // one card in a Thunderbolt dock on a laptop
  bool images = false;                    // an image model: JPEG decode on the CPU
  std::optional<double> samples_per_s;    // the predicted training rate, all GPUs
  std::optional<double> bytes_per_sample; // read from storage per sample
  std::optional<double> dataset_bytes;    // to keep in the page cache
  std::vector<LinkCost> egpu_links;       // egpu: fit's time per link, the internal slot first
};

MachinePlan plan_machine(const MachineInput &in, const Sizing &sizing);

// The PSU rating, rounded up to 50 W, that `count` cards of `tdp_w` board power need with the CPU
// and the rest of the machine: the sustained sum, or the GPUs' 100 us excursions within what an
// ATX 3.x PSU carries for that long, whichever is larger (data/sizing.csv's psu_* rules).
struct PsuNeed {
  double watts = 0, sustained = 0, cpu_w = 0, rest_w = 0;
};
PsuNeed psu_need(double tdp_w, int count, const Sizing &sizing);

} // namespace dlrig::pick
