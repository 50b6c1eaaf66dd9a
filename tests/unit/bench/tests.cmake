list(APPEND DLRIG_TEST_SOURCES
  unit/bench/bench_test.cpp
  unit/bench/store_test.cpp)
