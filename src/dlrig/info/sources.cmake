list(APPEND DLRIG_SOURCES
  info/gpu.cpp
  info/host.cpp
  info/nvidia.cpp
  info/report.cpp
  info/software.cpp)
