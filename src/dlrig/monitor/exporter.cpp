#include "dlrig/monitor/exporter.hpp"

// Debian's cpp-httplib is a compiled library (libcpp-httplib.so, "split" build): its bounds on a
// request line and a header line (8192 bytes each) are the ones it was compiled with.
#include <httplib.h>

#include <fmt/format.h>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>
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

using Clock = std::chrono::steady_clock;

// Waits until fd is ready for events or the deadline passes; true when ready (an error or a hang-up
// counts as ready: the next read or write says what it was).
bool wait_until(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      return false;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1000)));
    if (n > 0)
      return true;
    if (n < 0 && errno != EINTR)
      return false;
  }
}

bool address_text(const sockaddr_storage &a, socklen_t len, std::string &ip, int &port) {
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<const sockaddr *>(&a), len, host, sizeof host, serv,
                    sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  ip = host;
  port = std::atoi(serv);
  return true;
}

// One accepted connection as cpp-httplib's Stream, with a deadline on each phase rather than on
// each read: a request must arrive whole within the read timeout of its first byte, and a response
// must be sent within the write timeout of its first byte. cpp-httplib's own stream times out
// only a read that gets no byte at all, so a client sending one byte every few seconds held a
// worker for as long as it liked.
class DeadlineStream final : public httplib::Stream {
public:
  DeadlineStream(int fd, std::chrono::seconds read_timeout, std::chrono::seconds write_timeout)
      : fd_(fd), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

  // Waits up to `idle` for the next request's first byte; then its read deadline starts.
  bool next_request(std::chrono::seconds idle) {
    if (begin_ == end_ && !wait_until(fd_, POLLIN, Clock::now() + idle))
      return false;
    deadline_ = Clock::now() + read_timeout_;
    writing_ = false;
    return true;
  }

  bool is_readable() const override { return begin_ != end_ || wait_until(fd_, POLLIN, deadline_); }
  bool is_writable() const override {
    return wait_until(fd_, POLLOUT, writing_ ? deadline_ : Clock::now() + write_timeout_);
  }

  // True once a read missed its deadline (answered 408 here) or found the connection closed: the
  // connection is then ended rather than waited on for a next request.
  bool broken() const { return broken_; }

  ssize_t read(char *ptr, size_t size) override {
    if (begin_ == end_) {
      if (!wait_until(fd_, POLLIN, deadline_)) {
        // The request did not arrive whole in time: 408 Request Timeout (RFC 9110, 15.5.9) is
        // answered here and the connection closed; cpp-httplib's answer to the failed read
        // (a 400, which would blame the request) is not sent.
        if (!broken_ && !writing_) {
          constexpr std::string_view body = "the request did not arrive whole in time\n";
          const std::string answer =
              fmt::format("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: "
                          "text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n{}",
                          body.size(), body);
          (void)write(answer.data(), answer.size());
          timed_out_ = true;
        }
        broken_ = true;
        return -1;
      }
      ssize_t n;
      do
        n = ::recv(fd_, buffer_, sizeof buffer_, MSG_DONTWAIT);
      while (n < 0 && errno == EINTR);
      if (n <= 0) {
        broken_ = true;
        return n;
      }
      begin_ = 0;
      end_ = static_cast<std::size_t>(n);
    }
    std::size_t n = std::min(size, end_ - begin_);
    std::memcpy(ptr, buffer_ + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char *ptr, size_t size) override {
    if (timed_out_) // already answered 408
      return -1;
    if (!writing_) {
      writing_ = true;
      deadline_ = Clock::now() + write_timeout_;
    }
    for (;;) {
      if (!wait_until(fd_, POLLOUT, deadline_))
        return -1;
      ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0)
        return n;
      if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
        return -1;
    }
  }

  void get_remote_ip_and_port(std::string &ip, int &port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getpeername(fd_, reinterpret_cast<sockaddr *>(&a), &len) == 0)
      address_text(a, len, ip, port);
  }
  void get_local_ip_and_port(std::string &ip, int &port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &len) == 0)
      address_text(a, len, ip, port);
  }
  socket_t socket() const override { return fd_; }

private:
  int fd_;
  std::chrono::seconds read_timeout_, write_timeout_;
  Clock::time_point deadline_ = Clock::now();
  bool writing_ = false;
  bool broken_ = false;
  bool timed_out_ = false; // 408 sent
  char buffer_[4096];
  std::size_t begin_ = 0, end_ = 0;
};

// The open connections, so that stop() can end them at once: shutdown() wakes a worker waiting
// on its client, whatever the client does. A socket is shut down only while it is registered,
// and unregistered before it is closed, so a descriptor number reused meanwhile is never touched.
class Connections {
public:
  bool add(int fd) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_)
      return false;
    open_.insert(fd);
    return true;
  }
  void remove(int fd) {
    std::lock_guard<std::mutex> lock(mutex_);
    open_.erase(fd);
  }
  void stop() {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    for (int fd : open_)
      ::shutdown(fd, SHUT_RDWR);
  }
  bool stopping() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stopping_;
  }

private:
  std::mutex mutex_;
  std::set<int> open_;
  bool stopping_ = false;
};

// cpp-httplib's server with dlrig's connection loop: Server::process_and_close_socket is the one
// virtual step between accept and the request parser (cpp-httplib's SSLServer replaces it the same
// way), and process_request is protected for that purpose.
class BoundedServer final : public httplib::Server {
public:
  BoundedServer(Connections &connections, int timeout_seconds)
      : connections_(connections), timeout_(timeout_seconds) {}

  // Ends listen_after_bind(), whether it is running or about to: accept() on a listening socket
  // that is shut down fails at once (Linux), and cpp-httplib then closes it and returns. Unlike
  // Server::stop() this holds before the loop has started, and may not be repeated (the socket is
  // closed afterwards).
  void stop_listening() {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    socket_t s = svr_sock_.load();
    if (!stopped_ && s != INVALID_SOCKET) {
      ::shutdown(s, SHUT_RDWR);
      stopped_ = true;
    }
  }

private:
  bool process_and_close_socket(socket_t sock) override {
    bool ret = false;
    if (connections_.add(sock)) {
      DeadlineStream stream(sock, timeout_, timeout_);
      for (std::size_t left = keep_alive_max_count_; left > 0; --left) {
        if (connections_.stopping() || !stream.next_request(timeout_))
          break;
        bool closed = false;
        ret = process_request(stream, left == 1, closed, nullptr);
        if (!ret || closed || stream.broken())
          break;
      }
      connections_.remove(sock);
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ret;
  }

  Connections &connections_;
  std::chrono::seconds timeout_;
  std::mutex stop_mutex_;
  bool stopped_ = false;
};

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

// Why an address cannot be listened on: binds a socket of our own the way the server does
// (SO_REUSEADDR only) and names the errno. cpp-httplib says only that it failed.
std::string bind_failure(const std::string &host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo *found = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0 || !found)
    return "not an address of this machine (no such address or host name)";
  int err = 0;
  for (addrinfo *a = found; a && err != EADDRINUSE; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0)
      err = errno;
    else if (::listen(fd, 1) != 0)
      err = errno;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  switch (err) {
  case EADDRINUSE:
    return "address in use (another program, or another dlrig serve, listens there)";
  case EADDRNOTAVAIL:
    return "not an address of this machine";
  case EACCES:
  case EPERM:
    return "a port below 1024 needs the privilege (CAP_NET_BIND_SERVICE)";
  case 0:
    return "the address was in use or unavailable a moment ago; try again";
  default:
    return std::strerror(err);
  }
}

std::string host_port(const std::string &host, int port) {
  if (host.find(':') != std::string::npos)
    return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

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
  Connections connections;
  std::unique_ptr<BoundedServer> server;
  std::function<Sample()> collect;
  SystemFacts facts;
  std::mutex mutex;           // one collection at a time: NVML calls and the window
  std::vector<Sample> window; // oldest first; diagnosed in place, never copied
};

Exporter::Exporter(ServeOptions options, std::function<Sample()> collect, SystemFacts facts)
    : impl_(std::make_unique<Impl>()), options_(std::move(options)) {
  impl_->collect = std::move(collect);
  impl_->facts = std::move(facts);
  impl_->server = std::make_unique<BoundedServer>(impl_->connections, options_.timeout_seconds);
  auto &svr = *impl_->server;
  const int threads = options_.threads, queued = options_.queued;
  svr.new_task_queue = [threads, queued] { return new BoundedPool(threads, queued); };
  // cpp-httplib's default sets SO_REUSEPORT, with which a second server binds the same port and
  // the kernel shares the clients between the two. SO_REUSEADDR alone lets a restarted server
  // bind while the old connections linger in TIME_WAIT, and refuses a port that is listened on.
  svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
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
  auto &svr = *impl_->server;
  if (options_.port == 0) {
    port_ = svr.bind_to_any_port(options_.host);
    if (port_ <= 0) {
      error_ =
          fmt::format("cannot listen on {}: {}", options_.host, bind_failure(options_.host, 0));
      return false;
    }
    return true;
  }
  if (!svr.bind_to_port(options_.host, options_.port)) {
    error_ = fmt::format("cannot listen on {}: {}", host_port(options_.host, options_.port),
                         bind_failure(options_.host, options_.port));
    return false;
  }
  port_ = options_.port;
  return true;
}

void Exporter::run() {
  impl_->server->listen_after_bind();
}

void Exporter::stop() {
  if (!impl_)
    return;
  impl_->connections.stop();
  impl_->server->stop_listening();
}

std::string Exporter::scrape() {
  MetricsInput in;
  Sample s;
  std::vector<Finding> findings;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto start = std::chrono::steady_clock::now();
    s = impl_->collect();
    add_to_window(impl_->window, s, options_.window_seconds, options_.window_spacing_seconds);
    findings = diagnose(impl_->window);
    in.scrape_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++scrapes_;
  }
  // Rendering reads only this scrape's own copies: other scrapes collect meanwhile.
  in.sample = &s;
  in.facts = impl_->facts;
  in.findings = &findings;
  in.per_process = options_.per_process;
  return render_metrics(in);
}

} // namespace dlrig::monitor
