list(APPEND DLRIG_TEST_SOURCES
  unit/core/python_json_test.cpp
  unit/core/result_test.cpp
  unit/core/snapshot_test.cpp
  unit/core/text_test.cpp
  unit/core/version_test.cpp)
