list(APPEND DLRIG_TEST_SOURCES
  unit/kb/models_test.cpp)
