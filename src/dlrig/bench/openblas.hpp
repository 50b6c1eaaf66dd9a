#pragma once
// OpenBLAS's entry points, for the sources built with its header (cblas.h is on dlrig's private
// include path only); the loading and the choice of its kernels are in openblas_core.hpp/.cpp.
#include <cblas.h>

#include <string>

namespace dlrig::bench {

// OpenBLAS, loaded when a CPU GEMM first needs it rather than with dlrig: as it loads, a threaded
// OpenBLAS starts a thread per core that spins (sched_yield) for a while waiting for work, CPU
// time every other command would pay (on the 2-core CI machine `fit --max-batch --all-gpus` took
// 96 ms of CPU for 61 ms of wall time with it linked, 61 ms with OPENBLAS_NUM_THREADS=1; on a
// 128-core server that is 127 spinning threads). DLRIG_OPENBLAS_LIBRARY=PATH when set (that
// library only); else the loader's libopenblas.so.0 (Debian's libopenblas0, scripts/deps.sh),
// then the library the build found.
struct Openblas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
  decltype(&openblas_set_num_threads) set_num_threads = nullptr;
  decltype(&openblas_get_config) get_config = nullptr;
  void *sbgemm = nullptr; // cblas_sbgemm, in builds with BUILD_BFLOAT16=1
  std::string path;       // where it was loaded from
  std::string error;      // why not, when it did not load (sgemm is then null)
};
// Loaded once per process and kept until exit.
const Openblas &openblas();

} // namespace dlrig::bench
