#pragma once
// The DRAM's theoretical bandwidth for cpu.stream's share of peak: channels x MT/s x bytes per
// transfer, from the SMBIOS memory-device records (type 17) the kernel exposes under
// /sys/firmware/dmi/entries/17-*/raw (root only on most systems). The snapshot does not carry
// DIMM records, so the bench reads them itself. Channels are counted only when the locator
// strings name them ("P0 CHANNEL A", "ChannelB-DIMM0"); DIMMs that share a channel count once.
// Anything unknown leaves the peak unknown (never guessed from the DIMM count).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::bench {

struct Dimm {
  bool installed = false;
  std::string device_locator, bank_locator;
  std::optional<double> configured_mts; // configured memory speed, else rated speed (MT/s)
  std::optional<int> data_width_bits;
  std::optional<std::string> channel; // "p0 channel a": the locator's channel, when named
  std::optional<int> socket_label;    // the number in "P1", "CPU2", "NODE 1": see socket_of
};

// One type-17 structure as the kernel gives it (formatted area, then its strings). nullopt when
// it is not a type-17 record or is truncated. SMBIOS 3.x layout (DSP0134 §7.18): data width at
// 0x0A, size at 0x0C (0: no module installed), locators (string numbers) at 0x10 and 0x11, speed
// at 0x15, configured speed at 0x20 (0xFFFF: the 32-bit extended fields at 0x54 and 0x58).
std::optional<Dimm> parse_type17(const std::vector<std::uint8_t> &raw);

// The channel a locator pair names, lower-cased up to and including the channel's identifier;
// nullopt when neither string contains "channel".
std::optional<std::string> channel_of(const std::string &bank, const std::string &device);

// The socket a locator pair names, as the number in its label: a token "p<N>", "cpu<N>",
// "proc<N>" or "socket<N>" (also with the number as the next token: "PROC 1", "SOCKET 0"), else
// "node<N>" ("NODE 1": Intel boards' bank locators name the socket so; "P0_Node0_Channel3" keeps
// P0). Labels are 0- or 1-based depending on the vendor ("P0"/"P1" against "CPU1"/"CPU2"), so
// they are only ranked, never read as a socket index. nullopt when neither string names one.
std::optional<int> socket_of(const std::string &bank, const std::string &device);

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

// Reads every /sys/firmware/dmi/entries/17-*/raw under `root` (tests pass a fixture folder).
std::vector<Dimm> read_dimms(const std::string &root = "/sys/firmware/dmi/entries");

} // namespace dlrig::bench
