list(APPEND DLRIG_TEST_SOURCES
  unit/output/print_test.cpp
  unit/output/table_test.cpp
  unit/output/text_test.cpp)
