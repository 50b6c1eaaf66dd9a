list(APPEND DLRIG_TEST_SOURCES
  cli/fit_cli_test.cpp
  cli/info_hw_test.cpp
  cli/info_nvml_test.cpp
  cli/snapshot_cli_test.cpp
  support/cli.cpp)
