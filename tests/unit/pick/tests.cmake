list(APPEND DLRIG_TEST_SOURCES
  unit/pick/accuracy_test.cpp
  unit/pick/data_test.cpp
  unit/pick/pick_test.cpp
  unit/pick/upgrade_test.cpp)
