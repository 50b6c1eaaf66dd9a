// Fuzzes what dlrig does with the rows of a results database (`dlrig bench --db FILE`, which
// anyone can edit with sqlite3 or hand over): every row goes through the decoders Store::runs and
// Store::results use (bench/store.hpp), and the rows they accept through every reader of stored
// results — `bench history`, `show` and `compare` in every format, fit's measured rates and its
// time model on them (a CPU and a GPU), the doctor's storage check, `--cpu-vs-gpu`'s line. A row
// is refused with a message or read; a row that is read never crashes a reader.
// The input is JSON: {"runs": [[id, time, tier, environment], ...],
//                     "results": [[id, run, bench, family, config, status, reason, rate_median,
//                                  rate_best, rate_worst, rate_unit, samples, seconds_median,
//                                  cv, share_of_peak, record], ...]}
// where a column is null (NULL), a number or a string (text); anything else is its JSON text.
#include "dlrig/bench/cpu_vs_gpu.hpp"
#include "dlrig/bench/measured.hpp"
#include "dlrig/bench/report.hpp"
#include "dlrig/bench/store.hpp"
#include "dlrig/fit/fit.hpp"
#include "dlrig/fit/time.hpp"
#include "dlrig/kb/kb.hpp"
#include "dlrig/output/print.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

using dlrig::Json;
using dlrig::bench::Cell;

Cell cell(const Json &row, std::size_t i) {
  Cell c;
  if (i >= row.size() || row[i].is_null())
    return c;
  if (row[i].is_number()) {
    c.kind = Cell::Kind::number;
    c.number = row[i].get<double>();
  } else {
    c.kind = Cell::Kind::text;
    c.text = row[i].is_string() ? row[i].get<std::string>()
                                : row[i].dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return c;
}

std::int64_t integer(const Json &row, std::size_t i) {
  return i < row.size() && row[i].is_number_integer() ? row[i].get<std::int64_t>() : 0;
}

void render(const dlrig::Report &r) {
  dlrig::Envelope e;
  for (auto format :
       {dlrig::Format::table, dlrig::Format::json, dlrig::Format::markdown, dlrig::Format::csv})
    for (bool colour : {false, true})
      (void)dlrig::render_report(r, e, {format, colour});
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace dlrig::bench;
  auto doc = Json::parse(reinterpret_cast<const char *>(data),
                         reinterpret_cast<const char *>(data) + size, nullptr, false);
  if (!doc.is_object())
    return 0;
  StoredResults s;
  s.db_path = "fuzz.db";
  if (auto runs = doc.find("runs"); runs != doc.end() && runs->is_array())
    for (const Json &row : *runs) {
      if (!row.is_array())
        continue;
      RunRow r;
      r.id = integer(row, 0);
      r.time = cell(row, 1);
      r.tier = cell(row, 2);
      r.environment = cell(row, 3);
      if (auto run = decode_run(r))
        s.runs.push_back(std::move(run).value());
    }
  if (auto results = doc.find("results"); results != doc.end() && results->is_array())
    for (const Json &row : *results) {
      if (!row.is_array())
        continue;
      ResultRow r;
      r.id = integer(row, 0);
      r.run = integer(row, 1);
      std::size_t i = 2;
      for (Cell *c : {&r.bench, &r.family, &r.config, &r.status, &r.reason, &r.rate_median,
                      &r.rate_best, &r.rate_worst, &r.rate_unit, &r.samples, &r.seconds_median,
                      &r.cv, &r.share_of_peak, &r.record})
        *c = cell(row, i++);
      if (auto result = decode_result(r))
        s.results.push_back(std::move(result).value());
    }

  // bench history / show / compare.
  render(history_report(s.results));
  std::vector<Record> records;
  for (const auto &r : s.results)
    records.push_back(r.record);
  render(results_report(records, s.runs.empty() ? Json::object() : s.runs.front().environment));
  const std::int64_t a = s.runs.empty() ? 0 : s.runs.front().id;
  const std::int64_t b = s.runs.empty() ? 0 : s.runs.back().id;
  std::vector<StoredResult> ra, rb;
  for (const auto &r : s.results)
    (r.run == a ? ra : rb).push_back(r);
  render(compare_report(a, ra, b, rb));
  (void)exit_status(records);

  // fit, doctor, --cpu-vs-gpu and pick on what was read.
  const auto &kb = dlrig::kb::builtin();
  dlrig::CpuInfo cpu;
  auto cpu_rate = measured_cpu_gemm(s, std::nullopt);
  (void)measured_cpu_gemm(s, std::string("fuzz CPU"));
  for (const char *p : {"fp32", "tf32", "fp16", "bf16", "fp8", "fp8_rowwise"})
    (void)measured_gpu_gemm(s, p);
  auto gpu_rate = measured_gpu_gemm(s, "bf16");
  (void)cpu_vs_gpu_line(compare_step(1e12, cpu_rate, gpu_rate, "GPU"));
  (void)storage_feed_check(s);
  auto host = measured_host_rates(s);
  static const auto model = dlrig::fit::model_from_catalog("resnet-50", kb);
  if (!model)
    return 0;
  auto run = dlrig::fit::resolve_run(*model, dlrig::fit::Run{}, nullptr);
  if (!run)
    return 0;
  if (auto target = measured_cpu_target(s, cpu))
    (void)dlrig::fit::estimate_time_cpu(*model, *run, *target, host);
  static const auto h100 = dlrig::fit::gpu_target(*kb.find_gpu("NVIDIA H100 SXM5"));
  auto gpu = h100;
  if (!host.gpu_gemm.empty())
    gpu.name = host.gpu_gemm.front().gpu; // the measured rates apply to this GPU
  (void)dlrig::fit::estimate_time(*model, *run, gpu, host);
  return 0;
}
