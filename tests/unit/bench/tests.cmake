list(APPEND DLRIG_TEST_SOURCES
  unit/bench/bench_test.cpp
  unit/bench/openblas_core_test.cpp
  unit/bench/store_test.cpp)
