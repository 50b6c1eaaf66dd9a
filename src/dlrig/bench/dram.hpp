#pragma once
// The DRAM's theoretical bandwidth for cpu.stream's share of peak: channels x MT/s x bytes per
// transfer, from the SMBIOS memory-device records (type 17) the kernel exposes under
// /sys/firmware/dmi/entries/17-*/raw (probe/smbios.hpp; root only on most systems). The snapshot
// carries only their memory type and slot count, so the bench reads the records itself. Channels
// are counted only when the locator strings name them ("P0 CHANNEL A", "ChannelB-DIMM0"); DIMMs
// that share a channel count once. Anything unknown leaves the peak unknown (never guessed from the
// DIMM count).
#include "dlrig/probe/smbios.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::bench {

using probe::channel_of;
using probe::Dimm;
using probe::parse_type17;
using probe::socket_of;

struct DramPeak {
  std::optional<double> bytes_per_s; // nullopt: unknown
  std::string assumption;            // how it was derived, or why it is unknown
  int channels = 0;
  std::optional<double> mts;
};
DramPeak dram_peak(const std::vector<Dimm> &dimms);

// The peak of the channels behind one NUMA node: node `node_rank` (0 = the lowest node id) of
// `nodes` is taken to be the socket of the same rank among the socket labels the records carry
// (every record, empty slots included, so a socket with no module still counts). That node =
// socket assumption is made only when `nodes` equals `sockets` (the snapshot's count) and the
// records name exactly that many sockets; the assumption says so. Otherwise, or when an
// installed module's locators name no socket, or the machine's peak is unknown, bytes_per_s is
// nullopt and `assumption` says why.
DramPeak node_dram_peak(const std::vector<Dimm> &dimms, int node_rank, int nodes,
                        std::optional<int> sockets);

// The live machine's records (probe::read_dimms on /).
std::vector<Dimm> read_dimms();

} // namespace dlrig::bench
