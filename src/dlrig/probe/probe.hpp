#pragma once
// Probing: reads the machine through its seams (a FileSystem, the environment handed in, NVML
// loaded at run time) and fills the snapshot. Each area has its own function and file; a reading
// that fails leaves its field null and adds a ProbeNote with the reason. Never throws for what
// the machine says.
#include "dlrig/core/snapshot.hpp"
#include "dlrig/platform/fs.hpp"

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace dlrig {

using Environment = std::map<std::string, std::string>;

struct ProbeOptions {
  std::string sysroot = "/";
  // Where NVML is loaded from; empty = DLRIG_NVML_LIBRARY from env, else libnvidia-ml.so.1.
  std::string nvml_library;
  bool skip_nvml = false;
  bool host_only = false; // the host (CPU, memory) only: no GPUs, no software (fit --gpu NAME)
  bool deep = false;      // run each Python interpreter once (software probe)
  std::chrono::milliseconds deep_timeout{10000};
  std::vector<std::string> pythons; // --python PATH, repeatable
  std::string data_path;            // --data PATH for the dataset storage check
  // Deadlines for file reads (platform/deadline_fs.hpp): a read that blocks longer than
  // file_timeout is abandoned and its field left unknown with a note; once reads have waited
  // read_budget in all, the rest are skipped.
  std::chrono::milliseconds file_timeout{500};
  std::chrono::milliseconds read_budget{5000};
  // How long the probe waits for NVML (its session and every reading, in a child process): past
  // it nvidia.nvml_status is "timed-out" and the child is killed, not waited for. nvidia-smi takes
  // seconds to start GPUs without persistence mode; one that has stopped responding never answers.
  std::chrono::milliseconds nvml_timeout{30000};
};

struct ProbeContext {
  const FileSystem &fs;
  Environment env; // the environment of the probed process
  ProbeOptions options;
  Snapshot &snapshot;

  void note(std::string field, std::optional<std::string> source, std::string reason) const {
    snapshot.notes.push_back(ProbeNote{std::move(field), std::move(source), std::move(reason)});
  }
};

Environment current_environment();

// The whole machine: host, PCI GPUs, NVML, AMD, software, in that order.
Snapshot probe_machine(const FileSystem &fs, const Environment &env, const ProbeOptions &options);

// Areas, each in its own file.
void probe_host(const ProbeContext &ctx);      // host.cpp
void probe_pci_gpus(const ProbeContext &ctx);  // pci.cpp: fills snapshot.gpus from /sys/bus/pci
void probe_pci_slots(const ProbeContext &ctx); // slots.cpp: host.pci_slots, /sys/bus/pci/slots
void probe_nvml(const ProbeContext &ctx);      // nvml.cpp: snapshot.nvidia and gpus[].nvml
void probe_amd(const ProbeContext &ctx);       // amd.cpp: gpus[].amd
void probe_software(const ProbeContext &ctx);  // software.cpp: snapshot.software

} // namespace dlrig
