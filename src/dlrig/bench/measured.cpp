// Reading the latest stored results for fit, doctor and --cpu-vs-gpu (measured.hpp).
#include "dlrig/bench/measured.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <map>

namespace dlrig::bench {
namespace {

double to_flops(double rate, const std::string &unit) {
  if (unit == "TFLOP/s")
    return rate * 1e12;
  if (unit == "GFLOP/s")
    return rate * 1e9;
  return 0; // unknown unit: not a FLOP rate
}

std::string run_time(const StoredResults &s, std::int64_t run) {
  for (const auto &r : s.runs)
    if (r.id == run)
      return r.time;
  return "";
}

std::optional<std::string> run_cpu(const StoredResults &s, std::int64_t run) {
  for (const auto &r : s.runs)
    if (r.id == run && r.environment.is_object() && r.environment.contains("cpu_model") &&
        r.environment["cpu_model"].is_string())
      return r.environment["cpu_model"].get<std::string>();
  return std::nullopt;
}

// The threads a GEMM configuration used ("n=2048 threads=16" -> 16).
int threads_of(const Record &r) {
  if (const Json &t = member(r.details, "threads");
      t.is_number_integer() && t.get<long long>() > 0 && t.get<long long>() < 1 << 20)
    return t.get<int>();
  auto at = r.config.find("threads=");
  if (at == std::string::npos)
    return 0;
  long n = std::strtol(r.config.c_str() + at + 8, nullptr, 10); // saturates, never overflows
  return n > 0 && n < 1 << 20 ? static_cast<int>(n) : 0;
}

// The fastest measured configuration of `id` in the latest run that measured it: usually every
// thread at the largest size; on a busy machine one thread can be faster, and a step would run at
// that rate too. nullptr when none is stored (a rate of 0 is none: no time can be made of it).
const StoredResult *fastest_of_latest_run(const StoredResults &s, const std::string &id) {
  auto usable = [&id](const Record &r) {
    return r.id == id && r.status == Status::measured && r.rate_median && *r.rate_median > 0;
  };
  std::optional<std::int64_t> run;
  for (auto it = s.results.rbegin(); it != s.results.rend() && !run; ++it)
    if (usable(it->record))
      run = it->run;
  if (!run)
    return nullptr;
  const StoredResult *best = nullptr;
  for (const auto &r : s.results)
    if (r.run == *run && usable(r.record) &&
        (!best || *r.record.rate_median > *best->record.rate_median))
      best = &r;
  return best;
}

// A stored rate in base units: GFLOP/s and GB/s were stored as printed (1e9 units).
double base_units(const Record &r) {
  return *r.rate_median * (r.rate_unit.rfind("G", 0) == 0 ? 1e9 : 1);
}

} // namespace

StoredResults load_stored(const std::optional<std::string> &path) {
  StoredResults out;
  auto p = path ? path : default_db_path();
  if (!p)
    return out;
  out.db_path = *p;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(*p, ec))
    return out;
  // Read only: fit and doctor never create, switch or migrate the user's results database.
  auto db = Store::open_for_reading(*p);
  if (!db) {
    out.problem = db.error().message;
    return out;
  }
  auto runs = db.value()->runs();
  auto results = db.value()->results(std::nullopt);
  if (!runs || !results) {
    out.problem = !runs ? runs.error().message : results.error().message;
    return out;
  }
  out.runs = std::move(runs).value();
  out.results = std::move(results).value();
  return out;
}

std::string unread_results(const StoredResults &s) {
  return fmt::format("no `dlrig bench` result is used: {}", s.problem.value_or(""));
}

std::optional<StoredResult> latest(const StoredResults &s, const std::string &id,
                                   const std::string &config_part) {
  for (auto it = s.results.rbegin(); it != s.results.rend(); ++it)
    if (it->record.id == id && it->record.status == Status::measured && it->record.rate_median &&
        it->record.config.find(config_part) != std::string::npos)
      return *it;
  return std::nullopt;
}

std::optional<StepRate> measured_cpu_gemm(const StoredResults &s,
                                          const std::optional<std::string> &cpu_model) {
  const StoredResult *best = fastest_of_latest_run(s, "cpu.gemm.sgemm");
  if (!best)
    return std::nullopt;
  auto stored_cpu = run_cpu(s, best->run);
  if (cpu_model && stored_cpu && *cpu_model != *stored_cpu)
    return std::nullopt; // measured on another CPU
  double flops = to_flops(*best->record.rate_median, best->record.rate_unit);
  if (!(flops > 0))
    return std::nullopt;
  return StepRate{flops, fmt::format("measured cpu.gemm.sgemm {}: {:.1f} {} (dlrig bench run {}, "
                                     "{})",
                                     best->record.config, *best->record.rate_median,
                                     best->record.rate_unit, best->run, run_time(s, best->run))};
}

std::optional<StepRate> measured_gpu_gemm(const StoredResults &s, const std::string &precision) {
  // The id itself: gpu.gemm.fp8 is not gpu.gemm.fp8_rowwise.
  const std::string id = "gpu.gemm." + precision;
  std::optional<std::int64_t> run;
  for (auto it = s.results.rbegin(); it != s.results.rend() && !run; ++it)
    if (it->record.family == "gpu.gemm" && it->record.status == Status::measured &&
        it->record.id == id)
      run = it->run;
  if (!run)
    return std::nullopt;
  const StoredResult *best = nullptr;
  for (const auto &r : s.results)
    if (r.run == *run && r.record.family == "gpu.gemm" && r.record.rate_median &&
        r.record.id == id && to_flops(*r.record.rate_median, r.record.rate_unit) > 0 &&
        (!best || to_flops(*r.record.rate_median, r.record.rate_unit) >
                      to_flops(*best->record.rate_median, best->record.rate_unit)))
      best = &r;
  if (!best)
    return std::nullopt;
  return StepRate{to_flops(*best->record.rate_median, best->record.rate_unit),
                  fmt::format("measured {} {}: {:.1f} {} (dlrig bench run {})", best->record.id,
                              best->record.config, *best->record.rate_median,
                              best->record.rate_unit, best->run)};
}

std::vector<fit::MeasuredGemm> measured_gpu_gemm_rates(const StoredResults &s) {
  std::vector<fit::MeasuredGemm> out;
  for (const char *precision : {"fp32", "tf32", "fp16", "bf16", "fp8"}) {
    const std::string id = std::string("gpu.gemm.") + precision;
    // GPU name -> the latest run that measured it, then the fastest configuration of that run.
    std::map<std::string, std::int64_t> latest_run;
    auto gpu_of = [](const Record &r) -> std::optional<std::string> {
      return member_text(r.details, "name");
    };
    auto usable = [&](const StoredResult &r) {
      return r.record.id == id && r.record.status == Status::measured && r.record.rate_median &&
             to_flops(*r.record.rate_median, r.record.rate_unit) > 0 && gpu_of(r.record);
    };
    for (const auto &r : s.results)
      if (usable(r))
        latest_run[*gpu_of(r.record)] = std::max(latest_run[*gpu_of(r.record)], r.run);
    for (const auto &[gpu, run] : latest_run) {
      const StoredResult *best = nullptr;
      for (const auto &r : s.results)
        if (usable(r) && r.run == run && *gpu_of(r.record) == gpu &&
            (!best || *r.record.rate_median > *best->record.rate_median))
          best = &r;
      if (!best)
        continue;
      out.push_back({gpu, precision, to_flops(*best->record.rate_median, best->record.rate_unit),
                     fmt::format("{} {}, dlrig bench run {}", id, best->record.config, best->run)});
    }
  }
  return out;
}

fit::HostRates measured_host_rates(const StoredResults &s) {
  fit::HostRates h;
  auto rate = [&](const std::string &id) -> std::optional<double> {
    if (const auto *r = fastest_of_latest_run(s, id))
      return base_units(r->record);
    return std::nullopt;
  };
  h.cpu_gemm_flops = rate("cpu.gemm.sgemm");
  h.cpu_memory_bw = rate("cpu.stream.triad");
  h.images_per_s = rate("data.decode.jpeg");
  h.gpu_gemm = measured_gpu_gemm_rates(s);
  if (h.images_per_s)
    h.basis = fmt::format("JPEG decode {:.0f} images/s on this CPU (dlrig bench data.decode, {})",
                          *h.images_per_s, s.db_path);
  return h;
}

std::optional<fit::CpuTarget> measured_cpu_target(const StoredResults &s, const CpuInfo &cpu) {
  auto rate = measured_cpu_gemm(s, cpu.model);
  if (!rate)
    return std::nullopt;
  fit::CpuTarget t;
  t.model = cpu.model.value_or("CPU");
  t.cores = 1; // peak() = 1 x rate x 1: the measured rate itself
  t.hz = rate->flops_per_s;
  t.flops_per_cycle = 1;
  t.assumption = rate->source;
  return t;
}

const doctor::Check &storage_feed_description() {
  static const doctor::Check c{
      "bench.storage_feed",
      "bench",
      doctor::Severity::warn,
      "The disk reads slower than the CPU decodes (stored `dlrig bench` results)",
      "the results database: the latest storage.read.seq and data.decode.jpeg (all threads)",
      "sequential read rate < images/s decoded x bytes per image",
      "keep the dataset on a faster disk or in RAM (page cache, /dev/shm), or store it packed "
      "and smaller (WebDataset shards, lower JPEG quality, pre-resized images)",
      "docs/bench.md (storage.read, data.decode); guide 003 §1.2",
      nullptr};
  return c;
}

std::optional<doctor::CheckResult> storage_feed_check(const StoredResults &s) {
  if (s.problem) {
    doctor::CheckResult cr;
    cr.check = &storage_feed_description();
    cr.not_run = *s.problem;
    return cr;
  }
  auto disk = latest(s, "storage.read.seq");
  if (!disk || disk->record.rate_unit != "GB/s")
    return std::nullopt;
  // The decoders: the all-thread configuration of the latest data.decode run.
  std::optional<StoredResult> decode;
  for (auto it = s.results.rbegin(); it != s.results.rend(); ++it) {
    const Record &r = it->record;
    if (r.id != "data.decode.jpeg" || r.status != Status::measured || !r.rate_median ||
        !(member_number(r.details, "bytes_per_image").value_or(0) > 0))
      continue;
    if (!decode || (it->run == decode->run && threads_of(r) > threads_of(decode->record)))
      decode = *it;
    else if (it->run != decode->run)
      break;
  }
  if (!decode)
    return std::nullopt;
  const double per_image = *member_number(decode->record.details, "bytes_per_image");
  const double images = *decode->record.rate_median;
  const double need = images * per_image; // B/s the decoders would read
  const double have = *disk->record.rate_median * 1e9;
  doctor::CheckResult cr;
  cr.check = &storage_feed_description();
  if (have >= need)
    return cr; // passed
  doctor::Finding f;
  f.id = std::string(cr.check->id);
  f.severity = doctor::Severity::warn;
  f.title =
      fmt::format("The disk delivers {:.2f} GB/s but {} threads decode {:.0f} images/s of "
                  "{:.0f} KB: {:.2f} GB/s. Data loading will wait on the disk",
                  have / 1e9, threads_of(decode->record), images, per_image / 1e3, need / 1e9);
  f.with("storage_read_seq", doctor::bytes_per_s_of(have))
      .with("storage_path", member_text(disk->record.details, "path").value_or("?"))
      .with("storage_run", std::to_string(disk->run))
      .with("decode_images_per_s", doctor::count_of(images))
      .with("bytes_per_image", doctor::bytes_of(per_image))
      .with("decode_run", std::to_string(decode->run));
  f.why = "a training step cannot start before its batch is read; when the disk delivers fewer "
          "bytes per second than the CPU can decode, more data-loader workers do not help";
  f.fix = {"keep the dataset on a faster disk, or in RAM (page cache, /dev/shm)",
           "store it smaller: packed shards (WebDataset), pre-resized or lower-quality JPEGs",
           "measure the disk that holds the data: dlrig bench storage.read --data DATASET_DIR"};
  cr.findings.push_back(std::move(f));
  return cr;
}

} // namespace dlrig::bench
