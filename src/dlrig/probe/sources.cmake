list(APPEND DLRIG_SOURCES
  probe/amd.cpp
  probe/host.cpp
  probe/nvml.cpp
  probe/parse.cpp
  probe/pci.cpp
  probe/pci_ids.cpp
  probe/probe.cpp
  probe/software.cpp)
