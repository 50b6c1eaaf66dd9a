// Runs storage.read and data.decode from the library with the figures on stdout, one `key value`
// line each, for perf/bench_side_by_side.sh (dlrig against fio on the same file).
// Usage: build/dlrig_perf_io storage PATH [QUEUE_DEPTH] [PASSES] [FILE_MIB]
//        build/dlrig_perf_io decode [THREADS] [SECONDS]
#include "dlrig/bench/decode.hpp"
#include "dlrig/bench/storage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

int main(int argc, char **argv) {
  using namespace dlrig::bench;
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "storage" && argc > 2) {
    StorageOptions o;
    o.data = {argv[2]};
    o.queue_depth = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 32;
    o.passes = argc > 4 ? static_cast<unsigned>(std::atoi(argv[4])) : 3;
    if (argc > 5)
      o.file_bytes = std::stoull(argv[5]) << 20;
    o.random_reads = 1u << 30;
    o.random_seconds = 5;
    install_storage_signal_cleanup();
    auto r = run_storage(o);
    if (!r) {
      fmt::print(stderr, "{}\n", r.error().message);
      return 1;
    }
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? 0.0 : v[v.size() / 2];
    };
    fmt::print("seq_bytes_per_s {:.0f}\nrand_iops {:.0f}\ndirect {}\nverified {}\n",
               med(r->seq_bytes_per_s), med(r->rand_iops), r->direct ? 1 : 0,
               r->verified ? (*r->verified ? "1" : "0") : "n/a");
    fmt::print("verdict {}\n", storage_verdict(*r));
    return 0;
  }
  if (what == "decode") {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const unsigned threads = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : hw;
    const double seconds = argc > 3 ? std::atof(argv[3]) : 3.0;
    auto set = generated_images(4);
    if (!set) {
      fmt::print(stderr, "{}\n", set.error().message);
      return 1;
    }
    // The ImageNet-like images alone: the verdict's figure.
    std::vector<JpegImage> imagenet;
    for (const auto &i : *set)
      if (i.width == 500)
        imagenet.push_back(i);
    const auto one = measure_decode(imagenet, 1, seconds);
    const auto all = measure_decode(imagenet, threads, seconds);
    fmt::print("images_per_s_1 {:.1f}\nimages_per_s_all {:.1f}\nthreads {}\nverified {}\n",
               one.images_per_s, all.images_per_s, all.threads,
               one.verified && all.verified ? 1 : 0);
    fmt::print("verdict {} (500x375 JPEG q90 4:2:0); {}\n",
               decode_verdict(one.images_per_s, 1, std::nullopt),
               decode_verdict(all.images_per_s, all.threads, std::nullopt));
    return 0;
  }
  fmt::print(stderr, "usage: dlrig_perf_io storage PATH [QD] [PASSES] [FILE_MIB] | decode "
                     "[THREADS] [SECONDS]\n");
  return 64;
}
