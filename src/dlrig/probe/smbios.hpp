#pragma once
// The SMBIOS memory-device records (type 17) the kernel exposes under
// /sys/firmware/dmi/entries/17-*/raw (root only on most systems; VMs often have none): one per
// DIMM slot, installed or empty, with its locators, speed, width and memory type. The probe reads
// them for the snapshot's memory type and slots; `dlrig bench` for the DRAM's peak
// (bench/dram.hpp).
#include "dlrig/platform/fs.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::probe {

struct Dimm {
  bool installed = false;
  std::string device_locator, bank_locator;
  std::optional<double> configured_mts; // configured memory speed, else rated speed (MT/s)
  std::optional<int> data_width_bits;
  std::optional<std::string> memory_type; // "DDR4", "DDR5", "LPDDR5"...: nullopt when unstated
  std::optional<std::string> channel;     // "p0 channel a": the locator's channel, when named
  std::optional<int> socket_label;        // the number in "P1", "CPU2", "NODE 1": see socket_of
};

// The name of an SMBIOS Memory Type byte (DSP0134 3.x, §7.18.2: 0x1A DDR4, 0x22 DDR5, 0x23
// LPDDR5...); nullopt for "Other", "Unknown" and values the table does not name.
std::optional<std::string> memory_type_name(std::uint8_t code);

// One type-17 structure as the kernel gives it (formatted area, then its strings). nullopt when
// it is not a type-17 record or is truncated. SMBIOS 3.x layout (DSP0134 §7.18): data width at
// 0x0A, size at 0x0C (0: no module installed), locators (string numbers) at 0x10 and 0x11, memory
// type at 0x12, speed at 0x15, configured speed at 0x20 (0xFFFF: the 32-bit extended fields at
// 0x54 and 0x58).
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

// Every DIR/17-*/raw record `fs` can read (the live machine's or a fixture's). Unreadable records
// (not root) are skipped: an empty answer means unknown, never "no memory".
std::vector<Dimm> read_dimms(const FileSystem &fs,
                             const std::string &dir = "/sys/firmware/dmi/entries");

} // namespace dlrig::probe
