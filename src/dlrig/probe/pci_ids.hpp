#pragma once
// Names of PCI vendors and devices from a pci.ids database (the Debian package pci.ids). The file
// describes devices in general, not the probed machine, so it is read from the real filesystem
// even under --sysroot; it is loaded on the first lookup and scanned only for the ids asked for.
#include "dlrig/core/snapshot_host.hpp"
#include "dlrig/probe/probe.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace dlrig::probe {

struct PciIdNames {
  OptStr vendor; // "NVIDIA Corporation"
  OptStr device; // "AD102 [GeForce RTX 4090]"
};

// Pure lookup in the text of a pci.ids file ("VVVV  vendor" lines, "\tDDDD  device" below them).
PciIdNames pci_ids_lookup(std::string_view db, std::uint32_t vendor, std::uint32_t device);

// The marketing name inside a pci.ids device name: "AD102 [GeForce RTX 4090]" -> "GeForce RTX
// 4090"; a name without brackets is returned whole.
std::string pci_ids_short_name(std::string_view device_name);

// Path of the database: env DLRIG_PCI_IDS, else the build's DLRIG_PCI_IDS default.
std::string pci_ids_path(const Environment &env);

// A lazily loaded database with a cache of the ids asked for. Not thread-safe; one per probe run.
class PciIds {
public:
  explicit PciIds(std::string path) : path_(std::move(path)) {}
  PciIdNames lookup(std::uint32_t vendor, std::uint32_t device);
  // Why lookups give nothing (the file is missing or unreadable); empty while it loaded fine.
  const std::string &error() const { return error_; }
  const std::string &path() const { return path_; }

private:
  std::string path_;
  std::string data_;
  std::string error_;
  // Each lookup scans the file; a GPU server asks for the same few ids many times.
  std::map<std::uint64_t, PciIdNames> cache_;
  bool loaded_ = false;
};

} // namespace dlrig::probe
