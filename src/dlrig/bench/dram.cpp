// The DRAM's theoretical bandwidth from the SMBIOS memory-device records (dram.hpp).
#include "dlrig/bench/dram.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

namespace dlrig::bench {
namespace {

// The DRAM peak of `in` (installed modules): channels x MT/s x bytes per transfer; unknown when a
// module lacks its channel, speed or width.
DramPeak peak_of(const std::vector<const Dimm *> &in) {
  DramPeak p;
  // Per channel (of its socket, where named): the slowest module's speed and its data width.
  std::map<std::pair<std::string, int>, std::pair<double, int>> channels;
  for (const Dimm *d : in) {
    if (!d->channel || !d->configured_mts || !d->data_width_bits) {
      p.assumption =
          fmt::format("DRAM peak unknown: the module at \"{}\"/\"{}\" does not state its {}",
                      d->bank_locator, d->device_locator,
                      !d->channel          ? "channel in its locators"
                      : !d->configured_mts ? "speed"
                                           : "data width");
      return p;
    }
    auto [it, fresh] = channels.try_emplace({*d->channel, d->socket_label.value_or(-1)},
                                            *d->configured_mts, *d->data_width_bits);
    if (!fresh)
      it->second.first = std::min(it->second.first, *d->configured_mts);
  }
  double total = 0, mts = 1e300;
  int width = 0;
  for (const auto &[name, c] : channels) {
    total += c.first * 1e6 * c.second / 8.0;
    mts = std::min(mts, c.first);
    width = c.second;
  }
  p.bytes_per_s = total;
  p.channels = static_cast<int>(channels.size());
  p.mts = mts;
  p.assumption = fmt::format("DRAM peak = channels x MT/s x bytes per transfer = {} x {:.0f} MT/s "
                             "x {} B = {:.1f} GB/s (SMBIOS type 17: {} modules installed)",
                             p.channels, mts, width / 8, total / 1e9, in.size());
  return p;
}

} // namespace

DramPeak dram_peak(const std::vector<Dimm> &dimms) {
  std::vector<const Dimm *> in;
  for (const auto &d : dimms)
    if (d.installed)
      in.push_back(&d);
  if (in.empty()) {
    DramPeak p;
    p.assumption = "DRAM peak unknown: no SMBIOS memory-device records readable "
                   "(/sys/firmware/dmi/entries/17-*/raw needs root, and VMs often have none)";
    return p;
  }
  return peak_of(in);
}

DramPeak node_dram_peak(const std::vector<Dimm> &dimms, int node_rank, int nodes,
                        std::optional<int> sockets) {
  DramPeak machine = dram_peak(dimms);
  auto unknown = [&](const std::string &why) {
    DramPeak p;
    p.assumption = "per node: the node's share of the DRAM peak is unknown: " + why + " (" +
                   machine.assumption + " for the machine)";
    return p;
  };
  if (!machine.bytes_per_s)
    return unknown("the machine's peak is unknown");
  if (!sockets)
    return unknown("the socket count is unknown");
  if (nodes != *sockets)
    return unknown(
        fmt::format("{} NUMA nodes on {} sockets, so a node is not a socket", nodes, *sockets));
  std::set<int> labels;
  for (const auto &d : dimms) {
    if (d.installed && !d.socket_label)
      return unknown(fmt::format("the module at \"{}\"/\"{}\" does not name its socket",
                                 d.bank_locator, d.device_locator));
    if (d.socket_label)
      labels.insert(*d.socket_label);
  }
  if (static_cast<int>(labels.size()) != *sockets)
    return unknown(
        fmt::format("the memory records name {} sockets, the CPU has {}", labels.size(), *sockets));
  if (node_rank < 0 || node_rank >= *sockets)
    return unknown("the node is not among the machine's nodes");
  const int label = *std::next(labels.begin(), node_rank);
  std::vector<const Dimm *> in;
  for (const auto &d : dimms)
    if (d.installed && d.socket_label == label)
      in.push_back(&d);
  if (in.empty())
    return unknown(fmt::format("its socket (label {}) has no module installed", label));
  DramPeak p = peak_of(in);
  if (p.bytes_per_s)
    p.assumption = fmt::format(
        "node peak = its socket's channels: {}; assumes NUMA node = socket ({} nodes, {} "
        "sockets; node rank {} = the socket labelled {} in the SMBIOS locators)",
        p.assumption, nodes, *sockets, node_rank, label);
  return p;
}

std::vector<Dimm> read_dimms() {
  return probe::read_dimms(Sysroot("/"));
}

} // namespace dlrig::bench
