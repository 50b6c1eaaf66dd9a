list(APPEND DLRIG_SOURCES
  probe/amd.cpp
  probe/collect_env.cpp
  probe/cpu_names.cpp
  probe/host.cpp
  probe/nvml.cpp
  probe/parse.cpp
  probe/pci.cpp
  probe/pci_ids.cpp
  probe/probe.cpp
  probe/read.cpp
  probe/slots.cpp
  probe/software.cpp
  probe/software_cuda.cpp
  probe/software_env.cpp
  probe/software_kernel.cpp
  probe/software_parse.cpp
  probe/software_python.cpp)
