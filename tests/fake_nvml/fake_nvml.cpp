// Filled in by the NVML work: see docs/testing.md.
extern "C" int nvmlInit_v2() { return 9; /* NVML_ERROR_DRIVER_NOT_LOADED */ }
