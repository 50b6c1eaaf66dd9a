# The CUDA driver seam and the GPU families against the fake libcuda (issue 14).
list(APPEND DLRIG_TEST_SOURCES
  unit/platform/cuda_test.cpp
  unit/platform/cublaslt_test.cpp
  unit/bench/gemm_data_test.cpp
  unit/bench/gpu_test.cpp
  unit/bench/fake_cublaslt_test.cpp
  unit/bench/ranks_test.cpp
  cli/bench_nccl_ranks_cli_test.cpp
  cli/bench_gpu_cli_test.cpp)
