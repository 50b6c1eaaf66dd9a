list(APPEND DLRIG_SOURCES
  probe/amd.cpp
  probe/host.cpp
  probe/nvml.cpp
  probe/pci.cpp
  probe/probe.cpp
  probe/software.cpp)
