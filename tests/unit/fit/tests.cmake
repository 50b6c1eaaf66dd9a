list(APPEND DLRIG_TEST_SOURCES
  unit/fit/fit_test.cpp
  unit/fit/memory_test.cpp
  unit/fit/quant_test.cpp
  unit/fit/safetensors_test.cpp
  unit/fit/sdpa_test.cpp
  unit/fit/targets_test.cpp
  unit/fit/time_test.cpp)
