list(APPEND DLRIG_SOURCES
  bench/cpu_gemm.cpp
  bench/report.cpp
  bench/cpu_stream.cpp
  bench/runner.cpp
  bench/host_load.cpp
  bench/store.cpp
  bench/stats.cpp
  bench/openblas_core.cpp)
