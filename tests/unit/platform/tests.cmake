list(APPEND DLRIG_TEST_SOURCES
  unit/platform/deadline_fs_test.cpp
  unit/platform/fs_test.cpp
  unit/platform/nvml_test.cpp
  unit/platform/process_test.cpp)
