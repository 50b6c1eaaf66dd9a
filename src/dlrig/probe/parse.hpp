#pragma once
// Pure parsers of the procfs and sysfs texts the hardware probes read. Each takes the file's bytes
// and returns values in base units (bytes, hertz, bits per second, GT/s per lane). They never read
// the machine and never throw: empty, garbage or truncated input gives an Error whose message is
// the reason the probe records in a ProbeNote. Thread-safe (no state).
#include "dlrig/core/pcie.hpp"
#include "dlrig/core/result.hpp"
#include "dlrig/core/snapshot_host.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::probe {

// --- numbers
// ---------------------------------------------------------------------------------------

// A whole decimal number, surrounding blanks allowed ("  42\n"). Errors on sign, junk or overflow.
Result<std::uint64_t> parse_u64(std::string_view text);
// A signed decimal number ("-1").
Result<std::int64_t> parse_i64(std::string_view text);
// The text without surrounding blanks (a one-line attribute: hostname, osrelease). Error when
// nothing is left ("empty").
Result<std::string> parse_trimmed(std::string_view text);
// "0x10de" or "10de" -> 0x10de.
Result<std::uint32_t> parse_hex_u32(std::string_view text);
// A sysfs id attribute normalised to lower-case "0x" + hex digits ("0x10DE\n" -> "0x10de").
Result<std::string> parse_hex_id(std::string_view text);

// --- /proc/meminfo and /sys/devices/system/node/nodeN/meminfo
// -------------------------------------

// Values in bytes (the files say kB, which the kernel means as KiB). A field the file lacks stays
// nullopt. Lines prefixed "Node N " (the per-node file) are read the same way.
struct Meminfo {
  OptU64 total_bytes;
  OptU64 available_bytes;
  OptU64 free_bytes;
  OptU64 swap_total_bytes;
  OptU64 swap_free_bytes;
};
// Error when no "Key: value kB" line can be read at all.
Result<Meminfo> parse_meminfo(std::string_view text);

// --- /proc/cpuinfo
// ---------------------------------------------------------------------------------

struct Cpuinfo {
  OptStr vendor;                  // vendor_id (x86); "CPU implementer" code on arm ("0x41")
  OptStr model;                   // model name
  std::optional<int> logical;     // processor entries
  std::optional<int> sockets;     // distinct "physical id"; nullopt when the file has none
  std::optional<int> cores;       // distinct (physical id, core id) pairs; nullopt when absent
  std::vector<std::string> flags; // "flags" (x86) or "Features" (arm) of the first processor
  // arm: each distinct "CPU part" code with its number of processors, in order of appearance
  // (a big.LITTLE SoC such as GB10 has two: 0xd85 Cortex-X925 and 0xd87 Cortex-A725).
  std::vector<std::pair<std::string, int>> parts;
};
// Error when the text holds no "processor" entry.
Result<Cpuinfo> parse_cpuinfo(std::string_view text);

// The flags that matter to PyTorch's CPU kernels, in a fixed order, named as the kernel names them
// except arm's "asimd", reported as "neon".
std::vector<std::string> pytorch_isa(const std::vector<std::string> &flags);

// A kernel cpu list ("0-55,112-167") -> the number of CPUs in it. Error on garbage.
Result<int> parse_cpulist_count(std::string_view text);

// --- /proc/mounts
// ----------------------------------------------------------------------------------

struct MountEntry {
  std::string device;
  std::string mountpoint; // octal escapes (\040 for a blank) decoded
  std::string fstype;
  std::string options;
};
// Lines with fewer than four fields (a truncated last line) are skipped. Error when no line can be
// read.
Result<std::vector<MountEntry>> parse_mounts(std::string_view text);
// The "size=" option of a tmpfs ("size=65536k" -> 67108864). nullopt when there is none, when it
// is a percentage of RAM, or when it cannot be read.
OptU64 tmpfs_size_option(std::string_view options);
// Filesystems that hold no user data (proc, sysfs, cgroup, ...): not listed as storage.
bool is_pseudo_fstype(std::string_view fstype);
// nfs, cifs, lustre, ... : storage reached over the network.
bool is_network_fstype(std::string_view fstype);

// --- /proc/self/limits
// -----------------------------------------------------------------------------

struct ProcessLimits {
  std::optional<Limit> memlock; // "Max locked memory", bytes
  std::optional<Limit> open_files;
};
// Error when the header or both rows are missing.
Result<ProcessLimits> parse_limits(std::string_view text);

// --- PCI
// -------------------------------------------------------------------------------------------

// current_link_speed / max_link_speed: "16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s" -> GT/s per lane.
// "Unknown speed" and garbage are errors.
Result<double> parse_link_speed(std::string_view text);
// A PCI slot's max_bus_speed / cur_bus_speed (drivers/pci/slot.c, pci_speed_string()): "16.0 GT/s
// PCIe" (or "16.0 GT/s" before Linux 5.7) -> 16; "Unknown" and a conventional PCI or PCI-X bus
// ("33 MHz PCI", "133 MHz PCI-X") -> nullopt (no PCIe rate); anything else is an error.
Result<std::optional<double>> parse_slot_speed(std::string_view text);
// A PCI slot's address: "0000:0c:00" (domain:bus:device) or, where the kernel does not know the
// device number, "0000:0c" -> the prefix of the bus ids of the functions in the slot, with a
// trailing '.' or ':' ("0000:0c:00.", "0000:0c:"). Error when it is not hexadecimal in that shape.
Result<std::string> parse_slot_address(std::string_view text);
// current_link_width / max_link_width: "16" -> 16; 0 and values above 32 are errors.
Result<int> parse_link_width(std::string_view text);
// numa_node: "-1" means the platform gives no NUMA affinity (nullopt, not an error).
Result<std::optional<int>> parse_numa_node(std::string_view text);
using dlrig::pcie_link_gbps; // core/pcie.hpp

// --- /etc/os-release
// -------------------------------------------------------------------------------

// KEY=value lines, values unquoted ("..." or '...', with \" escapes). Comments and blank lines
// skipped. Error when no line can be read.
Result<std::map<std::string, std::string>> parse_os_release(std::string_view text);

// --- network and RDMA
// ------------------------------------------------------------------------------

// /sys/class/net/IF/speed in Mb/s -> bits per second. "-1" (no link) and garbage are errors.
Result<std::uint64_t> parse_net_speed(std::string_view text);
// /sys/class/infiniband/DEV/ports/N/rate: "400 Gb/sec (4X NDR)" -> bits per second.
Result<std::uint64_t> parse_ib_rate(std::string_view text);
// /sys/class/infiniband/DEV/ports/N/state: "4: ACTIVE" -> "ACTIVE".
Result<std::string> parse_ib_state(std::string_view text);

// --- cpufreq, amdgpu
// -------------------------------------------------------------------------------

// A cpufreq value in kHz ("2800000") -> hertz.
Result<double> parse_khz(std::string_view text);

// amdgpu pp_dpm_sclk / pp_dpm_mclk: "0: 500Mhz\n1: 2100Mhz *\n". Levels in hertz; current is the
// level marked '*' (nullopt when none is marked).
struct DpmLevels {
  std::vector<double> hz;
  std::optional<double> current_hz;
  double max_hz() const;
};
// Error when no level can be read.
Result<DpmLevels> parse_dpm(std::string_view text);

} // namespace dlrig::probe
