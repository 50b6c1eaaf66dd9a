list(APPEND DLRIG_TEST_SOURCES
  cli/bench_cli_test.cpp
  cli/bench_storage_cli_test.cpp
  cli/collect_env_cli_test.cpp
  cli/doctor_cli_test.cpp
  cli/fit_accuracy_cli_test.cpp
  cli/fit_cli_test.cpp
  cli/hostile_input_test.cpp
  cli/info_hw_test.cpp
  cli/info_nvml_test.cpp
  cli/info_software_test.cpp
  cli/kb_cli_test.cpp
  cli/output_cli_test.cpp
  cli/pick_cli_test.cpp
  cli/snapshot_cli_test.cpp
  cli/watch_cli_test.cpp
  support/cli.cpp
  support/jpeg.cpp)
