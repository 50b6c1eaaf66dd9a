list(APPEND DLRIG_TEST_SOURCES
  unit/kb/csv_test.cpp
  unit/kb/data_test.cpp
  unit/kb/kb_test.cpp
  unit/kb/lookup_test.cpp
  unit/kb/search_test.cpp
  unit/kb/torch_test.cpp)
