list(APPEND DLRIG_TEST_SOURCES
  unit/probe/software_parse_test.cpp
  unit/probe/software_probe_test.cpp)
