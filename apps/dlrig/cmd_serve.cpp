// `dlrig serve`: a Prometheus exporter (monitor/exporter.hpp). Binds 127.0.0.1:19445 unless
// --listen says otherwise; SIGINT/SIGTERM stop it (exit 0). --once prints one scrape and exits.
// Exit codes: 0 stopped by a signal, 64 usage (also --data naming nothing), 74 the address cannot
// be bound, or --once's scrape cannot be written to standard output.
#include "commands.hpp"
#include "dlrig/monitor/exporter.hpp"
#include "dlrig/platform/fs.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

namespace dlrig::cli {

namespace {

std::atomic<bool> g_serve_stop{false};
extern "C" void on_serve_signal(int) {
  g_serve_stop.store(true);
}

struct ServeCliOptions {
  std::string sysroot = "/";
  bool no_nvml = false;
  monitor::SamplerOptions sampler; // --nvml-timeout's limits
  std::string data;
  std::string listen = "127.0.0.1:" + std::to_string(monitor::kDefaultPort);
  bool per_process = false;
  bool once = false;
};

} // namespace

Runner setup_serve(CLI::App &sub) {
  auto o = std::make_shared<ServeCliOptions>();
  sub.add_option("--listen", o->listen,
                 "Address and port to serve on (default 127.0.0.1:19445; 0.0.0.0:PORT exposes it "
                 "to the network)")
      ->type_name("ADDR:PORT")
      ->check(non_empty());
  sub.add_flag("--per-process", o->per_process,
               "Also export per-process GPU memory and SM share (pid labels: many series)");
  sub.add_option("--sysroot", o->sysroot, "Read /proc and /etc under DIR instead of /")
      ->type_name("DIR")
      ->check(non_empty());
  sub.add_flag("--no-nvml", o->no_nvml, "Do not load NVML (host readings only)");
  add_sampler_nvml_options(sub, o->sampler);
  sub.add_option("--data", o->data, "Where the training data lives: export its disk's throughput")
      ->type_name("PATH")
      ->check(non_empty());
  sub.add_flag("--once", o->once, "Print one scrape's metrics to stdout and exit");

  return [o](const Envelope &) {
    auto listen = monitor::parse_listen(o->listen);
    if (!listen)
      throw Failure(ExitCode::usage, "--listen " + o->listen +
                                         ": expected ADDR:PORT (127.0.0.1:19445, [::1]:19445, "
                                         ":19445) with a port from 0 to 65535");
    Sysroot fs(o->sysroot);
    if (!fs.is_directory("/"))
      throw Failure(ExitCode::usage, "--sysroot " + o->sysroot + ": not a directory");
    if (!o->data.empty())
      if (auto why = monitor::data_path_problem(fs, o->data))
        throw Failure(ExitCode::usage, "--data " + o->data + ": " + *why);
    monitor::SamplerOptions so = o->sampler;
    so.nvml_library = monitor::default_nvml_library();
    so.skip_nvml = o->no_nvml;
    so.data_path = o->data;
    so.processes = true;
    monitor::Sampler sampler(fs, so);

    monitor::ServeOptions opts;
    opts.host = listen->first;
    opts.port = listen->second;
    opts.per_process = o->per_process;
    // A lost GPU or a read that failed makes dlrig_up 0: say which on stderr, each the first
    // time. A lost GPU has no read_errors (NVML is no longer asked about it).
    std::set<std::string> said;
    std::mutex said_mutex;
    bool nvml_was_ok = sampler.nvml_ok();
    auto say_nvml = [&] { // NVML that did not open, that stopped answering, or answers again
      if (!sampler.nvml_ok() && said.insert("NVML: " + sampler.nvml_error()).second)
        to_stderr("dlrig serve: NVML: " + sampler.nvml_error() + " (dlrig_up is 0)");
      if (sampler.nvml_ok() && !nvml_was_ok) { // said why it stopped, above
        to_stderr("dlrig serve: NVML answers again; NVIDIA GPUs are read again");
        std::erase_if(said, [](const std::string &s) { return s.rfind("NVML: ", 0) == 0; });
      }
      nvml_was_ok = sampler.nvml_ok();
    };
    say_nvml();
    auto take = [&] {
      monitor::Sample s = sampler.take();
      std::lock_guard<std::mutex> lock(said_mutex);
      say_nvml();
      auto say = [&](const monitor::GpuSample &g, const std::string &what) {
        if (said.insert(fmt::format("GPU {}: {}", g.index, what)).second)
          to_stderr(fmt::format("dlrig serve: GPU {}: {} (dlrig_up is 0)", g.index, what));
      };
      for (const auto &g : s.gpus) {
        if (g.lost)
          say(g, "fell off the bus (NVML: GPU is lost): it needs a reset or a reboot");
        for (const auto &e : g.read_errors)
          say(g, e);
      }
      return s;
    };
    monitor::Exporter exporter(opts, take, sampler.facts());
    if (o->once) {
      std::cout << exporter.scrape();
      return ExitCode::ok;
    }
    if (!exporter.bind())
      throw Failure(ExitCode::io, exporter.error());
    std::signal(SIGPIPE, SIG_IGN);
    std::signal(SIGINT, on_serve_signal);
    std::signal(SIGTERM, on_serve_signal);
    to_stderr(
        fmt::format("dlrig serve: listening on http://{}:{}/metrics",
                    opts.host.find(':') != std::string::npos ? "[" + opts.host + "]" : opts.host,
                    exporter.port()));
    std::thread watcher([&] {
      while (!g_serve_stop.load())
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      exporter.stop();
    });
    exporter.run();
    g_serve_stop.store(true);
    watcher.join();
    to_stderr(fmt::format("dlrig serve: stopped after {} scrapes", exporter.scrapes()));
    return ExitCode::ok;
  };
}

} // namespace dlrig::cli
