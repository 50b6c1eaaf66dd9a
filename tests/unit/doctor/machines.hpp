#pragma once
// Hand-built snapshots and a small knowledge base for the doctor's rule tests. Each test starts
// from a healthy machine, breaks one thing, and asserts that exactly the matching check fires.
#include "dlrig/doctor/check.hpp"

#include <string>
#include <vector>

namespace dlrig::doctor::test {

// Rows taken from the CUDA Toolkit Release Notes, Table 3, and PyTorch's RELEASE.md (a subset;
// the full tables, with their sources, are the kb's data/cuda_drivers.csv and data/torch.csv).
kb::KnowledgeBase test_kb();

// 8x H100 SXM5 on NVSwitch, driver 550.54.15 (CUDA 12.4), torch 2.5.1+cu124, InfiniBand.
Snapshot healthy_server();
// One RTX 4090 on PCIe 4.0 x16 driving the display, torch 2.5.1+cu124 in a venv.
Snapshot healthy_desktop();
// A laptop with an internal RTX 3080 Laptop GPU (x8), torch 2.5.1+cu121.
Snapshot healthy_laptop();

// The findings one check returns.
std::vector<Finding> run_check(const std::string &id, const Snapshot &s,
                               const DoctorOptions &o = {});
std::vector<Finding> run_check(const std::string &id, const Snapshot &s,
                               const kb::KnowledgeBase &kb, const DoctorOptions &o = {});
// The worst severity the check reports (ok when it returns nothing).
Severity worst(const std::string &id, const Snapshot &s, const DoctorOptions &o = {});
// Every finding of every check at warn or above, as "id: title" lines (empty when none).
std::vector<std::string> alarms(const Snapshot &s, const DoctorOptions &o = {});

} // namespace dlrig::doctor::test
