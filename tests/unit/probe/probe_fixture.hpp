#pragma once
// Runs one probe area on a fixture machine under tests/data/, with the test excerpt of pci.ids.
#include "dlrig/probe/probe.hpp"

#include <string>

namespace dlrig::test {

inline Snapshot probe_fixture(const std::string &name, void (*area)(const ProbeContext &),
                              void (*before)(const ProbeContext &) = nullptr) {
  Sysroot fs(std::string(DLRIG_TEST_DATA) + "/" + name);
  Snapshot snap;
  ProbeOptions options;
  options.sysroot = fs.root();
  ProbeContext ctx{
      fs, {{"DLRIG_PCI_IDS", std::string(DLRIG_TEST_DATA) + "/pci.ids"}}, options, snap};
  if (before)
    before(ctx);
  area(ctx);
  return snap;
}

inline bool has_note(const Snapshot &s, const std::string &field_prefix) {
  for (const auto &n : s.notes)
    if (n.field.rfind(field_prefix, 0) == 0)
      return true;
  return false;
}

} // namespace dlrig::test
