list(APPEND DLRIG_TEST_SOURCES
  support/cli.cpp
  cli/fit_cli_test.cpp
  cli/snapshot_cli_test.cpp)
