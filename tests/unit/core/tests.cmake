list(APPEND DLRIG_TEST_SOURCES
  unit/core/snapshot_test.cpp)
