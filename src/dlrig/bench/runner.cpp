// The registry's lookup and the runner (bench.hpp): skips with a reason, catches every failure of
// one benchmark so the others still run, turns samples into a record.
#include "dlrig/bench/bench.hpp"
#include "dlrig/core/json.hpp"
#include "dlrig/core/text.hpp"

#include <fmt/format.h>

#include <chrono>
#include <exception>

namespace dlrig::bench {

const std::vector<Benchmark> &registry() {
  static const std::vector<Benchmark> all = [] {
    std::vector<Benchmark> v;
    for (auto family : {
             cpu_gemm_benchmarks, cpu_stream_benchmarks, data_decode_benchmarks,
             storage_read_benchmarks,
             gpu_benchmarks,      // gpu_families.cpp: the GPU families (issue 14)
             gpu_gemm_benchmarks, // gpu_gemm.cpp: cuBLASLt GEMM per precision
             nccl_benchmarks,     // gpu_nccl.cpp: NCCL collectives across the local GPUs
         })
      for (auto &b : family())
        v.push_back(std::move(b));
    return v;
  }();
  return all;
}

dlrig::Result<std::vector<const Benchmark *>> select(const std::vector<std::string> &names) {
  std::vector<const Benchmark *> out;
  auto add = [&](const Benchmark &b) {
    for (auto *p : out)
      if (p == &b)
        return;
    out.push_back(&b);
  };
  if (names.empty()) {
    for (auto &b : registry())
      add(b);
    return out;
  }
  for (auto &name : names) {
    bool found = false;
    for (auto &b : registry())
      if (b.id == name || b.family == name || b.id.rfind(name + ".", 0) == 0) {
        add(b);
        found = true;
      }
    if (!found) {
      std::vector<std::string> ids;
      for (auto &b : registry()) {
        ids.push_back(b.id);
        ids.push_back(b.family);
      }
      auto near = nearest_names(ids, name);
      std::string hint = near.empty() ? "" : " (did you mean " + join(near, ", ") + "?)";
      return make_error(ErrorKind::usage,
                        fmt::format("no benchmark or family \"{}\"{}; `dlrig bench --list` shows "
                                    "them all",
                                    name, hint));
    }
  }
  return out;
}

Json to_json(const Record &r) {
  Json j;
  j["id"] = r.id;
  j["family"] = r.family;
  j["config"] = r.config;
  j["status"] = status_name(r.status);
  j["reason"] = r.reason ? Json(*r.reason) : Json(nullptr);
  auto opt = [](const std::optional<double> &v) { return v ? Json(*v) : Json(nullptr); };
  if (r.seconds.n > 0)
    j["seconds"] = {{"samples", r.seconds.n}, {"median", r.seconds.median}, {"min", r.seconds.min},
                    {"max", r.seconds.max},   {"q1", r.seconds.q1},         {"q3", r.seconds.q3},
                    {"iqr", r.seconds.iqr()}, {"cv", r.seconds.rsd()}};
  else
    j["seconds"] = nullptr;
  j["work"] = r.work > 0 ? Json(r.work) : Json(nullptr);
  j["work_unit"] = r.work_unit;
  j["rate_unit"] = r.rate_unit;
  j["rate"] = {
      {"median", opt(r.rate_median)}, {"best", opt(r.rate_best)}, {"worst", opt(r.rate_worst)}};
  j["peak"] = opt(r.peak);
  j["share_of_peak"] = opt(r.share_of_peak);
  j["peak_assumption"] = r.peak_assumption ? Json(*r.peak_assumption) : Json(nullptr);
  j["details"] = r.details;
  if (r.expectation)
    j["expectation"] = {{"min", r.expectation->min_rate},
                        {"statistic", r.expectation->on_best ? "best" : "median"},
                        {"basis", r.expectation->basis},
                        {"source", r.expectation->source},
                        {"met", r.below_expectation ? Json(!*r.below_expectation) : Json(nullptr)}};
  else
    j["expectation"] = nullptr;
  return j;
}

namespace {
Record base(const Benchmark &b, std::string config) {
  Record r;
  r.id = b.id;
  r.family = b.family;
  r.config = std::move(config);
  return r;
}
} // namespace

std::vector<Record> run_all(const std::vector<const Benchmark *> &which, const RunOptions &o) {
  std::vector<Record> out;
  auto keep = [&](Record r) {
    if (o.on_record)
      o.on_record(r);
    out.push_back(std::move(r));
  };
  auto say = [&](const std::string &s) {
    if (o.progress)
      o.progress(s);
  };
  // Progress: "[done/total]" and, once a configuration has finished, an ETA from the mean time
  // per configuration so far.
  std::size_t total = 0, done = 0;
  for (const Benchmark *b : which) {
    try {
      if (!(b->can_run && b->can_run(o.ctx)))
        total += b->configs(o.ctx).size();
    } catch (const std::exception &) {
      ++total;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  auto eta = [&]() -> std::string {
    double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (done == 0 || done >= total)
      return fmt::format("[{}/{}]", done, total);
    return fmt::format("[{}/{}, about {:.0f} s left]", done, total,
                       spent / static_cast<double>(done) * static_cast<double>(total - done));
  };
  auto stopped = [&] { return o.stop && o.stop(); };
  for (const Benchmark *b : which) {
    if (stopped())
      break;
    std::optional<std::string> skip;
    try {
      skip = b->can_run ? b->can_run(o.ctx) : std::nullopt;
    } catch (const std::exception &e) {
      skip = std::string("could not tell whether it can run: ") + e.what();
    }
    if (skip) {
      Record r = base(*b, "");
      r.status = Status::skipped;
      r.reason = skip;
      say(fmt::format("{}: skipped: {}", b->id, *skip));
      keep(std::move(r));
      continue;
    }
    std::vector<Config> configs;
    try {
      configs = b->configs(o.ctx);
    } catch (const std::exception &e) {
      Record r = base(*b, "");
      r.status = Status::failed;
      r.reason = e.what();
      keep(std::move(r));
      continue;
    }
    for (const Config &c : configs) {
      if (stopped())
        break;
      Record r = base(*b, c.label);
      say(fmt::format("{} {}: running", b->id, c.label));
      try {
        Sampler s(stop_rule(o.ctx.tier), o.stop);
        const auto load_before = host_load_mark();
        Outcome oc = b->run(c, o.ctx, s);
        const auto load_after = host_load_mark();
        r.seconds = summarize(s.samples());
        r.work = oc.work;
        r.work_unit = oc.work_unit;
        r.rate_unit = oc.rate_unit;
        r.details = oc.details;
        if (load_before && load_after)
          if (auto load = host_load_between(*load_before, *load_after))
            r.details["host_load"] =
                host_load_json(*load, b->family.rfind("gpu.", 0) != 0 && b->family != "nccl");
        if (s.cut_short())
          r.details["interrupted"] =
              fmt::format("cut short by Ctrl-C (SIGINT/SIGTERM) after {} samples, before the "
                          "stopping rule was met",
                          s.samples().size());
        r.peak = oc.peak;
        r.peak_assumption = oc.peak_assumption;
        if (oc.verification_error) {
          r.status = Status::wrong;
          r.reason = "verification failed: " + *oc.verification_error;
        } else if (r.seconds.n == 0 || !(r.seconds.min > 0)) {
          r.status = Status::failed;
          r.reason = "no timed sample";
        } else {
          r.rate_median = oc.work / r.seconds.median / oc.rate_scale;
          r.rate_best = oc.work / r.seconds.min / oc.rate_scale;
          r.rate_worst = oc.work / r.seconds.max / oc.rate_scale;
          if (r.peak && *r.peak > 0)
            r.share_of_peak = *r.rate_median / *r.peak;
          r.expectation = oc.expectation;
          if (auto t = o.ctx.test_expectations.find(b->id); t != o.ctx.test_expectations.end())
            r.expectation = Expectation{t->second, false, "test hook DLRIG_BENCH_EXPECT", ""};
          if (r.expectation)
            r.below_expectation =
                (r.expectation->on_best ? *r.rate_best : *r.rate_median) < r.expectation->min_rate;
        }
      } catch (const Skip &e) {
        r.status = Status::skipped;
        r.reason = e.what();
      } catch (const std::exception &e) {
        r.status = Status::failed;
        r.reason = e.what();
      }
      ++done;
      if (r.status == Status::measured)
        say(fmt::format("{} {} {}: {:.1f} {} (median of {}, CV {:.2f} %){}{}", eta(), b->id,
                        c.label, *r.rate_median, r.rate_unit, r.seconds.n, 100 * r.seconds.rsd(),
                        r.below_expectation.value_or(false)
                            ? fmt::format(": BELOW the expected {:.3g} ({})",
                                          r.expectation->min_rate, r.expectation->basis)
                            : "",
                        member_text(r.details, "interrupted") ? " (cut short by Ctrl-C)" : ""));
      else
        say(fmt::format("{} {} {}: {}: {}", eta(), b->id, c.label, status_name(r.status),
                        r.reason.value_or("")));
      keep(std::move(r));
    }
  }
  return out;
}

} // namespace dlrig::bench
