list(APPEND DLRIG_TEST_SOURCES
  unit/monitor/diagnose_test.cpp
  unit/monitor/exporter_test.cpp
  unit/monitor/host_test.cpp
  unit/monitor/sample_test.cpp
  unit/monitor/sampler_test.cpp
  unit/monitor/view_test.cpp)
