list(APPEND DLRIG_TEST_SOURCES
  unit/model/models_test.cpp
  unit/model/kv_window_test.cpp
  unit/model/types_test.cpp
  unit/model/walk_test.cpp)
