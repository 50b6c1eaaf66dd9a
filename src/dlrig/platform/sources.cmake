list(APPEND DLRIG_SOURCES
  platform/dynlib.cpp
  platform/deadline_fs.cpp
  platform/fs.cpp
  platform/cuda.cpp
  platform/cublaslt.cpp
  platform/vendor_library.cpp
  platform/nccl.cpp
  platform/nvml.cpp
  platform/process.cpp
  platform/tcp.cpp
  platform/snapshot_file.cpp)
