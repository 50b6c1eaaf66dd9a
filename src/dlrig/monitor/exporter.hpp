#pragma once
// `dlrig serve`: a Prometheus exporter. render_metrics() is the pure part (a sample, its findings
// and the scrape's own duration -> the text exposition format 0.0.4); Exporter is the HTTP
// server (cpp-httplib) that collects a sample at scrape time and serves /metrics, a landing page
// at / and /healthz. It serves nothing else: no file is ever read through HTTP.
//
// Naming follows Prometheus' conventions (https://prometheus.io/docs/practices/naming/) as
// nvidia_gpu_exporter does: base units in the name, ratios 0-1, counters ending in _total, only
// uuid and index labels on the GPU series and the rest in dlrig_gpu_info to join on.
#include "dlrig/monitor/diagnose.hpp"
#include "dlrig/monitor/sample.hpp"
#include "dlrig/monitor/sampler.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dlrig::monitor {

inline constexpr const char *kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";
// Outside Prometheus' exporter range 9100-9999, whose 9445 (the first choice) belongs to
// mindprince's nvidia_gpu_prometheus_exporter on the Default port allocations list
// (https://github.com/prometheus/prometheus/wiki/Default-port-allocations).
inline constexpr int kDefaultPort = 19445;

struct MetricsInput {
  const Sample *sample = nullptr;
  SystemFacts facts;
  const std::vector<Finding> *findings = nullptr;
  double scrape_seconds = 0;
  bool per_process = false; // dlrig_process_* series (PID labels: opt-in, high cardinality)
};
std::string render_metrics(const MetricsInput &in);

// Escapes a label value (\\, \", \n) for the text format.
std::string escape_label(std::string_view v);

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = kDefaultPort; // 0: any free port (tests)
  bool per_process = false;
  int threads = 8;             // requests served at once
  int queued = 32;             // accepted connections waiting for a thread; then accept waits
  int timeout_seconds = 5;     // a request's whole read, a response's whole write, keep-alive
  std::size_t max_body = 1024; // bytes; a scrape has no body
  double window_seconds = 60;  // samples kept for the diagnoses
  // At most one sample per this many seconds in the window (add_to_window): a flood of scrapes
  // neither grows the memory nor slows each scrape's diagnoses.
  double window_spacing_seconds = 0.1;
};

// "ADDR:PORT", "[v6]:PORT" or ":PORT" (loopback) -> host and port; nullopt when malformed.
std::optional<std::pair<std::string, int>> parse_listen(std::string_view text);

class Exporter {
public:
  // collect: one fresh sample (called at scrape time, one call at a time).
  Exporter(ServeOptions options, std::function<Sample()> collect, SystemFacts facts);
  ~Exporter();
  // Binds (SO_REUSEADDR, never SO_REUSEPORT: a port another server listens on is refused);
  // false with error() when the address cannot be had ("cannot listen on 127.0.0.1:19445:
  // address in use ...", "... not an address of this machine").
  bool bind();
  int port() const { return port_; }
  const std::string &error() const { return error_; }
  // Serves until stop(). Each request must arrive whole within timeout_seconds of its first byte
  // and its answer be sent within timeout_seconds; an idle connection is closed after
  // timeout_seconds.
  void run();
  // Thread-safe, from any thread, after bind(): run() returns promptly (it ends every open
  // connection, whatever its client is doing), also when run() has not started yet.
  void stop();
  // The /metrics body of one scrape (what the handler sends).
  std::string scrape();
  std::uint64_t scrapes() const { return scrapes_.load(); }

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  ServeOptions options_;
  int port_ = 0;
  std::string error_;
  std::atomic<std::uint64_t> scrapes_{0};
};

} // namespace dlrig::monitor
