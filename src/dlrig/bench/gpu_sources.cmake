# The GPU families of dlrig bench (issue 14): the CUDA driver API is loaded at run time
# (platform/cuda.*); the kernels are PTX, committed beside their CUDA C source, embedded here.
list(APPEND DLRIG_SOURCES
  bench/gpu_runtime.cpp
  bench/gpu_families.cpp
  bench/gpu_gemm.cpp
  bench/gpu_nccl.cpp
  bench/ranks.cpp
  bench/gemm_data.cpp
  bench/gemm_element.cpp)
set(DLRIG_KERNELS_PTX ${CMAKE_CURRENT_LIST_DIR}/kernels/dlrig_kernels.ptx)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${DLRIG_KERNELS_PTX})
file(READ ${DLRIG_KERNELS_PTX} DLRIG_KERNELS_PTX_TEXT)
configure_file(${CMAKE_CURRENT_LIST_DIR}/kernels/kernels_ptx.cpp.in
               ${CMAKE_CURRENT_BINARY_DIR}/gpu_kernels_ptx.cpp @ONLY)
list(APPEND DLRIG_SOURCES ${CMAKE_CURRENT_BINARY_DIR}/gpu_kernels_ptx.cpp)
