list(APPEND DLRIG_TEST_SOURCES
  support/cli.cpp
  cli/doctor_cli_test.cpp
  cli/snapshot_cli_test.cpp)
