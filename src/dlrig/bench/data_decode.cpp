// data.decode: JPEG decoding with libjpeg-turbo (decode.*), as a family of the harness. One
// sample is one pass over the image set; the rate is images per second on 1 thread and on all.
#include "dlrig/bench/bench.hpp"
#include "dlrig/bench/decode.hpp"
#include "dlrig/fit/fit.hpp"
#include "dlrig/fit/load.hpp"
#include "dlrig/fit/targets.hpp"
#include "dlrig/fit/time.hpp"
#include "dlrig/kb/kb.hpp"

#include <fmt/format.h>

namespace dlrig::bench {

namespace {

// The user's --data images (with the files left out) or the generated set.
UserImages images_for(const Context &ctx) {
  if (ctx.data) {
    auto set = images_from(*ctx.data, ctx.small ? 8 : 256);
    if (!set)
      throw std::runtime_error(set.error().message);
    return std::move(set).value();
  }
  auto images = generated_images(ctx.small ? 1 : 4);
  if (!images)
    throw std::runtime_error(images.error().message);
  return {std::move(images).value(), {}};
}

// The images/s ResNet-50 training consumes on this machine's first GPU (fit's time model: bf16
// autocast, batch 256 per GPU as in the ImageNet references of docs/fit-accuracy.md), or on an RTX
// 4090 for reference when the machine has none the catalog knows (the guides' example card).
std::optional<DecodeConsumer> resnet50_consumer(const Snapshot *snap) {
  const auto &kb = kb::builtin();
  auto model = fit::load_model("resnet-50", std::nullopt, kb);
  if (!model)
    return std::nullopt;
  fit::Targets targets;
  bool reference = true;
  if (snap) {
    targets = fit::machine_gpus(*snap, kb);
    reference = targets.gpus.empty();
  }
  if (reference)
    targets = fit::catalog_gpu(kb, "GeForce RTX 4090");
  if (targets.gpus.empty())
    return std::nullopt;
  fit::Run run;
  run.precision = fit::Precision::bf16_amp;
  run.batch = 256;
  auto resolved = fit::resolve_run(*model, run, nullptr);
  if (!resolved)
    return std::nullopt;
  const auto &gpu = targets.gpus.front();
  auto t = fit::estimate_time(*model, *resolved, gpu);
  if (!t.samples_per_s)
    return std::nullopt;
  return DecodeConsumer{fmt::format("ResNet-50 training on {}{} (fit: bf16-amp, batch 256)",
                                    gpu.name, reference ? ", for reference: no GPU here" : ""),
                        *t.samples_per_s};
}

} // namespace

std::vector<Benchmark> data_decode_benchmarks() {
  Benchmark b;
  b.id = "data.decode.jpeg";
  b.family = "data.decode";
  b.summary = "JPEG decoding (libjpeg-turbo): images/s on 1 thread and on all";
  b.needs = "all cores; --data PATH for your own JPEGs (else generated 500x375, 224x224, 1080p)";
  b.can_run = [](const Context &) { return std::optional<std::string>{}; };
  b.configs = [](const Context &ctx) {
    std::vector<Config> out{{"threads=1", {1}}};
    if (ctx.hardware_threads > 1)
      out.push_back({fmt::format("threads={}", ctx.hardware_threads),
                     {static_cast<double>(ctx.hardware_threads)}});
    return out;
  };
  b.run = [](const Config &c, const Context &ctx, Sampler &s) {
    const auto set = images_for(ctx);
    const auto &images = set.images;
    auto threads = static_cast<unsigned>(c.params.at(0));
    Outcome o;
    o.work_unit = "image";
    o.rate_unit = "images/s";
    o.rate_scale = 1;
    auto warm = measure_decode(images, threads, 0.0, ctx.corrupt); // untimed warm-up
    if (!warm.verified)
      o.verification_error = warm.failure;
    std::vector<double> seconds;
    while (s.more()) {
      auto r = measure_decode(images, threads, 0.0, ctx.corrupt); // one pass
      if (!r.verified && !o.verification_error)
        o.verification_error = r.failure;
      seconds.push_back(r.seconds * static_cast<double>(images.size()) /
                        static_cast<double>(std::max<std::uint64_t>(r.images, 1)));
      s.add(seconds.back());
    }
    o.work = static_cast<double>(images.size());
    double jpeg_bytes = 0;
    for (const auto &im : images)
      jpeg_bytes += static_cast<double>(im.jpeg.size());
    o.details = {{"images", images.size()},
                 {"threads", threads},
                 {"library", "libjpeg-turbo"},
                 {"bytes_per_image", jpeg_bytes / static_cast<double>(images.size())}};
    if (!set.refused.empty()) {
      o.details["files_refused"] = set.refused;
      o.details["data_note"] = refused_note(set);
    }
    // The verdict at the median pass; against training only for the run on every core (what a
    // DataLoader with one worker per core gets at best).
    const auto median = summarize(seconds).median;
    if (median > 0) {
      const double rate = static_cast<double>(images.size()) / median;
      const bool all_cores = static_cast<int>(threads) == ctx.hardware_threads;
      o.details["verdict"] =
          decode_verdict(rate, threads, all_cores ? resnet50_consumer(ctx.snapshot) : std::nullopt);
    }
    return o;
  };
  return {b};
}

} // namespace dlrig::bench
