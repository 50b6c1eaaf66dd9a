list(APPEND DLRIG_TEST_SOURCES
  unit/bench/decode_test.cpp
  unit/bench/storage_test.cpp)
