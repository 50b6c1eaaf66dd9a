// The printers' view of benchmark results (report.hpp).
#include "dlrig/bench/report.hpp"

#include "dlrig/bench/openblas_core.hpp"

#include <fmt/format.h>

#include <fstream>

namespace dlrig::bench {

std::optional<std::string> read_governor() {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  std::string g;
  if (in && std::getline(in, g) && !g.empty())
    return g;
  return std::nullopt;
}

Json environment(const Snapshot &snap, int threads, const std::optional<std::string> &governor) {
  const auto &cpu = snap.host.cpu;
  Json j;
  j["cpu_model"] = cpu.model ? Json(*cpu.model) : Json(nullptr);
  j["cores"] = cpu.cores ? Json(*cpu.cores) : Json(nullptr);
  j["logical_cpus"] = cpu.threads ? Json(*cpu.threads) : Json(nullptr);
  j["smt"] = cpu.cores && cpu.threads ? Json(*cpu.threads > *cpu.cores) : Json(nullptr);
  j["numa_nodes"] = cpu.numa_nodes.empty() ? Json(nullptr) : Json(cpu.numa_nodes.size());
  j["max_hz"] = cpu.max_hz ? Json(*cpu.max_hz) : Json(nullptr);
  j["governor"] = governor ? Json(*governor) : Json(nullptr);
  j["kernel"] = snap.host.os.kernel_release ? Json(*snap.host.os.kernel_release) : Json(nullptr);
  j["threads"] = threads;
  const std::string cfg = openblas_config();
  j["blas"] = {{"library", "OpenBLAS"}, {"config", cfg.empty() ? Json(nullptr) : Json(cfg)}};
  return j;
}

int exit_status(const std::vector<Record> &records) {
  int worst = 0;
  for (auto &r : records) {
    if (r.status == Status::wrong)
      return 2;
    if (r.below_expectation.value_or(false))
      worst = 1;
  }
  return worst;
}

namespace {
std::string num(const std::optional<double> &v, const char *f = "{:.1f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : "n/a";
}

// "3 of 7" when a GPU's NVML readings (gpu_state_samples) saw it lower its clocks; else "".
// Stored records are read as they come (a database edited by hand): a member of another type is
// absent.
std::string throttled_passes(const Json &holder) {
  const Json &samples = member(holder, "gpu_state_samples");
  const Json &n = member(samples, "throttled_readings");
  if (!n.is_number_integer() || n.get<long long>() <= 0)
    return "";
  const Json &of = member(samples, "readings");
  return fmt::format("{} of {}", n.get<long long>(),
                     of.is_number_integer() ? std::to_string(of.get<long long>()) : "?");
}

// "throttled in 3 of 7 passes" when NVML saw the GPU lower its clocks for heat or a hardware
// slowdown during a GPU benchmark (details.gpu_state_samples, details.throttled); "GPU 1
// throttled in 3 of 7 passes" for each GPU of a collective (details.gpus[]); else "".
std::string throttle_note(const Json &details) {
  if (auto passes = throttled_passes(details); !passes.empty())
    return "throttled in " + passes + " passes";
  std::string per_gpu;
  if (const Json &gpus = member(details, "gpus"); gpus.is_array())
    for (const Json &g : gpus)
      if (auto passes = throttled_passes(g); !passes.empty()) {
        auto gpu = member_number(g, "gpu");
        per_gpu += fmt::format("{}GPU {} throttled in {} passes", per_gpu.empty() ? "" : ", ",
                               gpu ? fmt::format("{:g}", *gpu) : "?", passes);
      }
  if (!per_gpu.empty())
    return per_gpu;
  const Json &flag = member(details, "throttled");
  return flag.is_boolean() && flag.get<bool>() ? "throttled" : "";
}

Table results_table(const std::vector<Record> &records) {
  Table t;
  t.header = {"benchmark", "config", "status",  "median",    "min..max",
              "unit",      "CV %",   "samples", "% of peak", "note"};
  for (auto &r : records) {
    if (r.status != Status::measured) {
      t.add({r.id, r.config, status_name(r.status), "", "", "", "", "", "", r.reason.value_or("")});
      continue;
    }
    const bool below = r.below_expectation.value_or(false);
    // "peak unknown" only where a peak applies (the family tried to derive one).
    std::string note = r.peak || !r.peak_assumption ? "" : "peak unknown";
    if (below)
      note = fmt::format("below the expected {:.3g} {}: {}", r.expectation->min_rate, r.rate_unit,
                         r.expectation->basis);
    if (auto th = throttle_note(r.details); !th.empty())
      note = note.empty() ? th : note + "; " + th;
    // The algorithm and protocol NCCL_ALGO / NCCL_PROTO requested for a collective (nccl.*).
    for (const char *key : {"nccl_algorithm", "nccl_protocol"})
      if (const Json &nccl = member(r.details, key);
          auto requested = member_text(nccl, "requested")) {
        auto text = fmt::format("{} {}", member_text(nccl, "variable").value_or(key), *requested);
        note = note.empty() ? text : note + "; " + text;
      }
    for (const char *key : {"library_core_selected", "library_note", "data_note", "interrupted"})
      if (auto lib = member_text(r.details, key))
        note = note.empty() ? *lib : note + "; " + *lib;
    if (auto load = member_text(member(r.details, "host_load"), "note"))
      note = (note.empty() ? "" : note + "; ") + *load;
    t.add({r.id, r.config, below ? "BELOW" : "measured", num(r.rate_median),
           num(r.rate_worst) + ".." + num(r.rate_best), r.rate_unit,
           fmt::format("{:.2f}", 100 * r.seconds.rsd()), std::to_string(r.seconds.n),
           r.share_of_peak ? fmt::format("{:.0f}", 100 * *r.share_of_peak) : "n/a", note});
  }
  return t;
}

// The families' verdicts in plain words (details.verdict: storage class, link ceiling, decoding
// against training), one row per configuration that has one; empty when none has.
Table verdict_table(const std::vector<Record> &records) {
  Table t;
  t.title = "verdicts";
  for (auto &r : records) {
    if (r.status != Status::measured || !r.details.is_object())
      continue;
    auto v = r.details.find("verdict");
    if (v != r.details.end() && v->is_string())
      t.add({r.id + " " + r.config, v->get<std::string>()});
  }
  return t;
}

Table env_table(const Json &env) {
  Table t;
  t.title = "environment";
  auto s = [](const Json &v) {
    return v.is_null() ? std::string("n/a") : v.is_string() ? v.get<std::string>() : v.dump();
  };
  for (auto key :
       {"cpu_model", "cores", "logical_cpus", "smt", "numa_nodes", "governor", "kernel", "threads"})
    t.add({key, s(member(env, key))});
  t.add({"blas", s(member(member(env, "blas"), "config"))});
  return t;
}
} // namespace

Report results_report(const std::vector<Record> &records, const Json &env) {
  Report r;
  r.json = [records, env] {
    Json j;
    j["environment"] = env;
    if (env.is_object()) // the envelope's context block gains what the results were measured on
      j["context"] = {{"cpu_model", env.value("cpu_model", Json(nullptr))},
                      {"governor", env.value("governor", Json(nullptr))},
                      {"kernel", env.value("kernel", Json(nullptr))},
                      {"threads", env.value("threads", Json(nullptr))}};
    j["results"] = Json::array();
    for (auto &rec : records)
      j["results"].push_back(to_json(rec));
    return j;
  };
  auto tables = [records, env] {
    std::vector<Table> out{results_table(records)};
    if (auto v = verdict_table(records); !v.rows.empty())
      out.push_back(std::move(v));
    out.push_back(env_table(env));
    return out;
  };
  r.table = [tables](const TextStyle &s) { return render(tables(), Format::table, s.width); };
  r.markdown = [tables] { return render(tables(), Format::markdown); };
  r.csv = [records] { return std::vector<Table>{results_table(records)}; };
  return r;
}

Report history_report(const std::vector<StoredResult> &results) {
  Json arr = Json::array();
  Table t;
  t.header = {"run", "time", "benchmark", "config", "status", "median", "unit", "CV %", "samples"};
  for (auto &s : results) {
    const Record &r = s.record;
    Json j = to_json(r);
    j["run"] = s.run;
    j["time"] = s.time;
    arr.push_back(j);
    t.add({std::to_string(s.run), s.time, r.id, r.config, status_name(r.status), num(r.rate_median),
           r.rate_unit, r.seconds.n ? fmt::format("{:.2f}", 100 * r.seconds.rsd()) : "n/a",
           std::to_string(r.seconds.n)});
  }
  Report rep;
  rep.json = [arr] { return Json{{"results", arr}}; };
  rep.table = [t](const TextStyle &s) { return render({t}, Format::table, s.width); };
  rep.markdown = [t] { return render({t}, Format::markdown); };
  rep.csv = [t] { return std::vector<Table>{t}; };
  return rep;
}

Report compare_report(std::int64_t a, const std::vector<StoredResult> &ra, std::int64_t b,
                      const std::vector<StoredResult> &rb) {
  Json arr = Json::array();
  Table t;
  t.header = {
      "benchmark", "config",      fmt::format("run {}", a), fmt::format("run {}", b), "unit",
      "ratio",     "beyond noise"};
  for (auto &x : ra) {
    for (auto &y : rb) {
      const Record &p = x.record, &q = y.record;
      if (p.id != q.id || p.config != q.config || !p.rate_median || !q.rate_median)
        continue;
      // A rate of 0 in run A (a one-rank collective's busbw) has no ratio.
      std::optional<double> ratio;
      if (*p.rate_median > 0)
        ratio = *q.rate_median / *p.rate_median;
      bool noise = beyond_noise(*p.rate_median, p.seconds.rsd(), *q.rate_median, q.seconds.rsd());
      arr.push_back({{"id", p.id},
                     {"config", p.config},
                     {"a", *p.rate_median},
                     {"b", *q.rate_median},
                     {"unit", p.rate_unit},
                     {"ratio", ratio},
                     {"beyond_noise", noise}});
      t.add({p.id, p.config, num(p.rate_median), num(q.rate_median), p.rate_unit,
             num(ratio, "{:.3f}"), noise ? "yes" : "no"});
    }
  }
  Report rep;
  rep.json = [arr, a, b] { return Json{{"run_a", a}, {"run_b", b}, {"results", arr}}; };
  rep.table = [t](const TextStyle &s) { return render({t}, Format::table, s.width); };
  rep.markdown = [t] { return render({t}, Format::markdown); };
  rep.csv = [t] { return std::vector<Table>{t}; };
  return rep;
}

Report list_report(const Context &ctx) {
  std::vector<std::vector<std::string>> rows;
  Json arr = Json::array();
  for (auto &b : registry()) {
    std::optional<std::string> skip = b.can_run ? b.can_run(ctx) : std::nullopt;
    rows.push_back({b.id, b.needs, skip ? "no: " + *skip : "yes", b.summary});
    arr.push_back({{"id", b.id},
                   {"family", b.family},
                   {"summary", b.summary},
                   {"needs", b.needs},
                   {"can_run", !skip},
                   {"reason", skip ? Json(*skip) : Json(nullptr)}});
  }
  Report r;
  r.json = [arr] { return Json{{"benchmarks", arr}}; };
  auto table = [rows] {
    Table t;
    t.header = {"benchmark", "needs", "runs here", "what"};
    t.rows = rows;
    return std::vector<Table>{t};
  };
  r.table = [table](const TextStyle &s) { return render(table(), Format::table, s.width); };
  r.markdown = [table] { return render(table(), Format::markdown); };
  r.csv = table;
  return r;
}

} // namespace dlrig::bench
