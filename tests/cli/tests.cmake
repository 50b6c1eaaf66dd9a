list(APPEND DLRIG_TEST_SOURCES
  support/cli.cpp
  cli/fit_cli_test.cpp
  cli/info_nvml_test.cpp
  cli/snapshot_cli_test.cpp)
list(APPEND DLRIG_TEST_SOURCES
  cli/info_hw_test.cpp)
