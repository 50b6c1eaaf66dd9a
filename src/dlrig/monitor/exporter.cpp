#include "dlrig/monitor/exporter.hpp"

// Debian's cpp-httplib is a compiled library (libcpp-httplib.so, "split" build): its bounds on a
// request line and a header line (8192 bytes each) are the ones it was compiled with.
#include <httplib.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace dlrig::monitor {

std::string escape_label(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

namespace {

std::string number(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  if (std::fabs(v) < 9.0e15 && v == std::floor(v))
    return fmt::format("{}", static_cast<std::int64_t>(v));
  return fmt::format("{}", v);
}

void family(std::string &out, const char *name, const char *type, const char *help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

std::string gpu_labels(const GpuSample &g) {
  return fmt::format("uuid=\"{}\",index=\"{}\"", escape_label(g.uuid), g.index);
}

struct HostMetric {
  const char *name;
  const char *help;
  std::optional<double> HostSample::*member;
};
const HostMetric kHostMetrics[] = {
    {"dlrig_host_cpu_utilization_ratio",
     "Share of the host's CPU time that was busy since the previous scrape (0-1), /proc/stat.",
     &HostSample::cpu_utilization_ratio},
    {"dlrig_host_memory_total_bytes", "Host RAM in total, /proc/meminfo MemTotal.",
     &HostSample::memory_total_bytes},
    {"dlrig_host_memory_available_bytes", "Host RAM available, /proc/meminfo MemAvailable.",
     &HostSample::memory_available_bytes},
    {"dlrig_host_data_read_bytes_per_second",
     "Reads from the disk holding --data since the previous scrape, /proc/diskstats.",
     &HostSample::data_read_bytes_per_second},
    {"dlrig_host_data_write_bytes_per_second",
     "Writes to the disk holding --data since the previous scrape, /proc/diskstats.",
     &HostSample::data_write_bytes_per_second},
};

} // namespace

std::string render_metrics(const MetricsInput &in) {
  std::string out;
  out.reserve(8192);
  const Sample &s = *in.sample;
  bool up = s.nvml_ok;
  for (const auto &g : s.gpus)
    if (g.lost || g.failed_reads > 0)
      up = false;

  family(out, "dlrig_up", "gauge",
         "1 when NVML answered for every GPU in this scrape; 0 when it did not load, a GPU is "
         "lost or a reading failed (its series is then absent).");
  out += fmt::format("dlrig_up {}\n", up ? 1 : 0);
  family(out, "dlrig_scrape_duration_seconds", "gauge",
         "How long this scrape took to collect: NVML, /proc and the diagnoses.");
  out += fmt::format("dlrig_scrape_duration_seconds {}\n", number(in.scrape_seconds));
  family(out, "dlrig_build_info", "gauge", "The dlrig that serves these metrics.");
  out += fmt::format("dlrig_build_info{{version=\"{}\"}} 1\n", escape_label(DLRIG_VERSION));

  if (!s.gpus.empty()) {
    family(out, "dlrig_gpu_info", "gauge",
           "One series per GPU with its identity, to join on uuid or index.");
    for (const auto &g : s.gpus)
      out += fmt::format(
          "dlrig_gpu_info{{uuid=\"{}\",name=\"{}\",driver_version=\"{}\",cuda_version=\"{}\","
          "pci_bus_id=\"{}\",index=\"{}\"}} 1\n",
          escape_label(g.uuid), escape_label(g.name),
          escape_label(in.facts.driver_version.value_or("")),
          escape_label(in.facts.cuda_version.value_or("")), escape_label(g.bus_id), g.index);
  }
  for (const auto &f : gpu_fields()) {
    bool any = false;
    for (const auto &g : s.gpus)
      if (!g.lost && (g.*f.member).has_value() && std::isfinite(*(g.*f.member))) {
        if (!any)
          family(out, f.metric, f.counter ? "counter" : "gauge", f.help);
        any = true;
        out += fmt::format("{}{{{}}} {}\n", f.metric, gpu_labels(g), number(*(g.*f.member)));
      }
  }
  if (in.per_process) {
    bool mem = false, sm = false;
    std::string mem_lines, sm_lines;
    for (const auto &g : s.gpus) {
      if (g.lost || !g.processes)
        continue;
      for (const auto &p : *g.processes) {
        std::string labels = fmt::format("{},pid=\"{}\"", gpu_labels(g), p.pid);
        if (p.gpu_memory_bytes) {
          mem = true;
          mem_lines += fmt::format("dlrig_process_gpu_memory_bytes{{{}}} {}\n", labels,
                                   number(*p.gpu_memory_bytes));
        }
        if (p.sm_ratio) {
          sm = true;
          sm_lines += fmt::format("dlrig_process_sm_utilization_ratio{{{}}} {}\n", labels,
                                  number(*p.sm_ratio));
        }
      }
    }
    if (mem) {
      family(out, "dlrig_process_gpu_memory_bytes", "gauge",
             "Device memory a process uses (--per-process).");
      out += mem_lines;
    }
    if (sm) {
      family(out, "dlrig_process_sm_utilization_ratio", "gauge",
             "Share of the last period a process's kernels ran (--per-process).");
      out += sm_lines;
    }
  }
  for (const auto &h : kHostMetrics)
    if (auto v = s.host.*h.member; v && std::isfinite(*v)) {
      family(out, h.name, "gauge", h.help);
      out += fmt::format("{} {}\n", h.name, number(*v));
    }
  family(out, "dlrig_finding", "gauge",
         "1 for each live diagnosis that holds now (ids: docs/monitoring.md).");
  if (in.findings) {
    // One series per id, severity and GPU: the same rule can say two things about one GPU
    // (two Xids), which are one series.
    std::vector<std::string> seen;
    for (const auto &f : *in.findings) {
      std::string line = fmt::format("dlrig_finding{{id=\"{}\",severity=\"{}\",gpu=\"{}\"}} 1\n",
                                     escape_label(f.id), escape_label(f.severity),
                                     f.gpu ? std::to_string(*f.gpu) : std::string());
      if (std::find(seen.begin(), seen.end(), line) == seen.end()) {
        seen.push_back(line);
        out += line;
      }
    }
  }
  return out;
}

std::optional<std::pair<std::string, int>> parse_listen(std::string_view text) {
  std::string host;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return std::nullopt;
    host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos)
      return std::nullopt;
    host = std::string(text.substr(0, colon));
    if (host.find(':') != std::string::npos)
      return std::nullopt; // a bare IPv6 address needs brackets
    port_text = text.substr(colon + 1);
  }
  if (host.empty())
    host = "127.0.0.1";
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535)
    return std::nullopt;
  return std::pair{host, port};
}

// --- the server ----------------------------------------------------------------------------------

namespace {

// A fixed set of worker threads and a bounded queue of accepted connections. When the queue is
// full, enqueue waits, so the accepting thread stops accepting and further clients wait in the
// kernel's backlog: at most threads + queued connections are held at once.
class BoundedPool final : public httplib::TaskQueue {
public:
  BoundedPool(int threads, int queued) : max_queued_(static_cast<std::size_t>(queued)) {
    for (int i = 0; i < threads; ++i)
      workers_.emplace_back([this] { work(); });
  }
  ~BoundedPool() override = default;

  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [&] { return jobs_.size() < max_queued_ || shutdown_; });
    jobs_.push_back(std::move(fn));
    ready_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      shutdown_ = true;
    }
    ready_.notify_all();
    room_.notify_all();
    for (auto &t : workers_)
      t.join();
  }

private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return !jobs_.empty() || shutdown_; });
        if (jobs_.empty())
          return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
        room_.notify_one();
      }
      fn();
    }
  }

  std::size_t max_queued_;
  std::vector<std::thread> workers_;
  std::deque<std::function<void()>> jobs_;
  std::mutex mutex_;
  std::condition_variable ready_, room_;
  bool shutdown_ = false;
};

const char *kLanding = R"(<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>dlrig exporter</title></head>
<body><h1>dlrig exporter</h1>
<p>GPU and host metrics for Prometheus, collected when scraped.</p>
<ul><li><a href="metrics">/metrics</a>: the metrics (text format 0.0.4)</li>
<li><a href="healthz">/healthz</a>: liveness</li></ul>
<p>Metric names, units and the live diagnoses: docs/monitoring.md in dlrig's repository.</p>
</body></html>
)";

} // namespace

struct Exporter::Impl {
  httplib::Server server;
  std::function<Sample()> collect;
  SystemFacts facts;
  std::mutex mutex; // one collection at a time: NVML calls and the window
  std::deque<Sample> window;
  double last_duration = 0;
};

Exporter::Exporter(ServeOptions options, std::function<Sample()> collect, SystemFacts facts)
    : impl_(std::make_unique<Impl>()), options_(std::move(options)) {
  impl_->collect = std::move(collect);
  impl_->facts = std::move(facts);
  auto &svr = impl_->server;
  const int threads = options_.threads, queued = options_.queued;
  svr.new_task_queue = [threads, queued] { return new BoundedPool(threads, queued); };
  svr.set_read_timeout(options_.timeout_seconds, 0);
  svr.set_write_timeout(options_.timeout_seconds, 0);
  svr.set_keep_alive_timeout(options_.timeout_seconds);
  svr.set_keep_alive_max_count(100);
  svr.set_payload_max_length(options_.max_body);
  svr.set_tcp_nodelay(true);

  svr.Get("/metrics", [this](const httplib::Request &, httplib::Response &res) {
    res.set_content(scrape(), kMetricsContentType);
  });
  svr.Get("/healthz", [](const httplib::Request &, httplib::Response &res) {
    res.set_content("ok\n", "text/plain; charset=utf-8");
  });
  svr.Get("/", [](const httplib::Request &, httplib::Response &res) {
    res.set_content(kLanding, "text/html; charset=utf-8");
  });
  svr.set_exception_handler(
      [](const httplib::Request &, httplib::Response &res, std::exception_ptr) {
        res.status = 500;
        res.set_content("internal error\n", "text/plain; charset=utf-8");
      });
}

Exporter::~Exporter() {
  stop();
}

bool Exporter::bind() {
  auto &svr = impl_->server;
  if (options_.port == 0) {
    port_ = svr.bind_to_any_port(options_.host);
    if (port_ <= 0) {
      error_ = fmt::format("cannot listen on {}: no free port", options_.host);
      return false;
    }
    return true;
  }
  if (!svr.bind_to_port(options_.host, options_.port)) {
    error_ = fmt::format("cannot listen on {}:{} (in use, not an address of this machine, or a "
                         "port below 1024 without the privilege)",
                         options_.host, options_.port);
    return false;
  }
  port_ = options_.port;
  return true;
}

void Exporter::run() {
  impl_->server.listen_after_bind();
}

void Exporter::stop() {
  if (impl_ && impl_->server.is_running())
    impl_->server.stop();
}

std::string Exporter::scrape() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto start = std::chrono::steady_clock::now();
  Sample s = impl_->collect();
  auto &w = impl_->window;
  w.push_back(s);
  while (!w.empty() && s.time - w.front().time > options_.window_seconds)
    w.pop_front();
  std::vector<Sample> window(w.begin(), w.end());
  std::vector<Finding> findings = diagnose(window);
  double duration = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MetricsInput in;
  in.sample = &s;
  in.facts = impl_->facts;
  in.findings = &findings;
  in.scrape_seconds = duration;
  in.per_process = options_.per_process;
  ++scrapes_;
  return render_metrics(in);
}

} // namespace dlrig::monitor
