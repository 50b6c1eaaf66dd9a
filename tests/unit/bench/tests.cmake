list(APPEND DLRIG_TEST_SOURCES
  unit/bench/bench_test.cpp)
