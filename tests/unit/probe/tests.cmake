list(APPEND DLRIG_TEST_SOURCES
  unit/probe/nvml_test.cpp)
