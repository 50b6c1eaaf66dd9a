list(APPEND DLRIG_SOURCES
  output/info.cpp
  output/info_gpu.cpp
  output/info_host.cpp
  output/info_nvidia.cpp
  output/info_software.cpp
  output/table.cpp)
