#include "dlrig/monitor/exporter.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

namespace dlrig::monitor {
namespace {

Sample example(bool lost = false) {
  Sample s;
  s.time = 1000;
  GpuSample g;
  g.index = 0;
  g.uuid = "GPU-d1e70001";
  g.name = "NVIDIA GeForce \"RTX\" 4090";
  g.bus_id = "00000000:01:00.0";
  g.utilization_ratio = 0.97;
  g.memory_used_bytes = 21474836480;
  g.energy_joules = 1160;
  g.power_watts = 402.15;
  g.clocks_event_reasons = 0x20;
  g.temperature_celsius = 87;
  g.processes =
      std::vector<ProcessSample>{ProcessSample{48211, 2e10, 0.95, "alice", "python", true}};
  s.gpus.push_back(g);
  GpuSample gone;
  gone.index = 1;
  gone.uuid = "GPU-2";
  gone.lost = lost;
  s.gpus.push_back(gone);
  s.host.cpu_utilization_ratio = 0.25;
  return s;
}

TEST(MonitorExporter, MetricsInBaseUnitsWithInfoAndFindings) {
  Sample s = example();
  std::vector<Finding> fs = {{"throttling", "warning", 0u, "..."},
                             {"pid-namespace", "info", std::nullopt, "..."}};
  MetricsInput in;
  in.sample = &s;
  in.facts = {"550.54.15", "12.4"};
  in.findings = &fs;
  in.scrape_seconds = 0.0012;
  std::string m = render_metrics(in);
  EXPECT_NE(m.find("dlrig_up 1\n"), std::string::npos);
  EXPECT_NE(m.find("# TYPE dlrig_gpu_energy_joules_total counter\n"), std::string::npos);
  EXPECT_NE(m.find("dlrig_gpu_utilization_ratio{uuid=\"GPU-d1e70001\",index=\"0\"} 0.97\n"),
            std::string::npos);
  EXPECT_NE(m.find("dlrig_gpu_memory_used_bytes{uuid=\"GPU-d1e70001\",index=\"0\"} 21474836480\n"),
            std::string::npos);
  EXPECT_NE(m.find("dlrig_gpu_info{uuid=\"GPU-d1e70001\",name=\"NVIDIA GeForce \\\"RTX\\\" "
                   "4090\",driver_version=\"550.54.15\",cuda_version=\"12.4\",pci_bus_id="
                   "\"00000000:01:00.0\",index=\"0\"} 1\n"),
            std::string::npos);
  EXPECT_NE(m.find("dlrig_finding{id=\"throttling\",severity=\"warning\",gpu=\"0\"} 1\n"),
            std::string::npos);
  EXPECT_NE(m.find("dlrig_finding{id=\"pid-namespace\",severity=\"info\",gpu=\"\"} 1\n"),
            std::string::npos);
  EXPECT_NE(m.find("dlrig_scrape_duration_seconds 0.0012\n"), std::string::npos);
  // What no GPU gave is absent, never 0; per-process series only when asked.
  EXPECT_EQ(m.find("dlrig_gpu_fan_speed_ratio"), std::string::npos);
  EXPECT_EQ(m.find("dlrig_gpu_temperature_celsius{uuid=\"GPU-2\""), std::string::npos);
  EXPECT_EQ(m.find("dlrig_process_"), std::string::npos);
  in.per_process = true;
  EXPECT_NE(render_metrics(in).find(
                "dlrig_process_gpu_memory_bytes{uuid=\"GPU-d1e70001\",index=\"0\",pid=\"48211\"}"),
            std::string::npos);
  EXPECT_EQ(m.back(), '\n');
}

TEST(MonitorExporter, ALostGpuOrNoNvmlMakesUpZero) {
  Sample s = example(true);
  MetricsInput in;
  in.sample = &s;
  std::string m = render_metrics(in);
  EXPECT_NE(m.find("dlrig_up 0\n"), std::string::npos);
  EXPECT_EQ(m.find("{uuid=\"GPU-2\",index=\"1\"} "), std::string::npos);
  Sample none;
  none.nvml_ok = false;
  in.sample = &none;
  EXPECT_NE(render_metrics(in).find("dlrig_up 0\n"), std::string::npos);
}

TEST(MonitorExporter, ListenAddresses) {
  EXPECT_EQ(parse_listen("127.0.0.1:19445"), (std::pair<std::string, int>{"127.0.0.1", 19445}));
  EXPECT_EQ(parse_listen(":0"), (std::pair<std::string, int>{"127.0.0.1", 0}));
  EXPECT_EQ(parse_listen("[::1]:80"), (std::pair<std::string, int>{"::1", 80}));
  EXPECT_FALSE(parse_listen("localhost"));
  EXPECT_FALSE(parse_listen("::1:80"));
  EXPECT_FALSE(parse_listen("1.2.3.4:65536"));
  EXPECT_FALSE(parse_listen("1.2.3.4:x"));
  EXPECT_EQ(escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}

TEST(MonitorExporter, TheGrafanaDashboardAsksOnlyForMetricsServeExports) {
  // Every metric with a value, so that every family is rendered.
  Sample s = example();
  for (const auto &f : gpu_fields())
    s.gpus[0].*f.member = 1;
  s.host.memory_total_bytes = s.host.memory_available_bytes = 1;
  s.host.data_read_bytes_per_second = s.host.data_write_bytes_per_second = 1;
  std::vector<Finding> fs = {{"throttling", "warning", 0u, "..."}};
  MetricsInput in;
  in.sample = &s;
  in.findings = &fs;
  in.per_process = true;
  std::string text = render_metrics(in);
  std::set<std::string> exported;
  std::regex type_line("# TYPE (dlrig_[a-z_]+) ");
  for (std::sregex_iterator it(text.begin(), text.end(), type_line), end; it != end; ++it)
    exported.insert((*it)[1]);

  std::ifstream in_file(std::string(DLRIG_TEST_DATA) + "/../../contrib/grafana/dlrig-gpus.json");
  ASSERT_TRUE(in_file);
  Json dash = Json::parse(in_file);
  std::size_t asked = 0;
  std::regex metric("dlrig_[a-z_]+");
  for (const auto &panel : dash.at("panels"))
    for (const auto &target : panel.at("targets")) {
      std::string expr = target.at("expr");
      for (std::sregex_iterator it(expr.begin(), expr.end(), metric), end; it != end; ++it) {
        ++asked;
        EXPECT_TRUE(exported.count(it->str())) << it->str() << " in " << expr;
      }
    }
  EXPECT_GT(asked, 10u);
}

// --- the HTTP server, on loopback --------------------------------------------------------------

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends raw bytes and reads the answer until the server closes.
std::string talk(int port, const std::string &request) {
  int fd = connect_to(port);
  if (fd < 0)
    return "";
  std::size_t sent = 0;
  while (sent < request.size()) {
    auto n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0)
      break;
    sent += static_cast<std::size_t>(n);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string get(int port, const std::string &path) {
  return talk(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
}

class ServerOnLoopback : public ::testing::Test {
protected:
  void SetUp() override {
    ServeOptions o;
    o.port = 0;
    o.timeout_seconds = 1;
    o.threads = 4;
    exporter_ = std::make_unique<Exporter>(
        o, [] { return example(); }, SystemFacts{});
    ASSERT_TRUE(exporter_->bind()) << exporter_->error();
    thread_ = std::thread([this] { exporter_->run(); });
    for (int i = 0; i < 200 && get(exporter_->port(), "/healthz").empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  void TearDown() override {
    exporter_->stop();
    thread_.join();
  }
  int port() const { return exporter_->port(); }
  std::unique_ptr<Exporter> exporter_;
  std::thread thread_;
};

TEST_F(ServerOnLoopback, MetricsLandingPageAndHealth) {
  std::string m = get(port(), "/metrics");
  EXPECT_EQ(m.rfind("HTTP/1.1 200", 0), 0u) << m;
  EXPECT_NE(m.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
            std::string::npos);
  EXPECT_NE(m.find("dlrig_gpu_utilization_ratio{"), std::string::npos);
  EXPECT_NE(get(port(), "/").find("href=\"metrics\""), std::string::npos);
  EXPECT_NE(get(port(), "/healthz").find("\r\n\r\nok\n"), std::string::npos);
  // Nothing else is served: no files, no traversal.
  EXPECT_EQ(get(port(), "/../../etc/passwd").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(get(port(), "/metrics/../../etc/passwd").find("root:"), std::string::npos);
}

TEST_F(ServerOnLoopback, MalformedAndOversizedRequestsLeaveItServing) {
  EXPECT_EQ(talk(port(), "NONSENSE\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(talk(port(), std::string(1 << 20, 'A')).find("200 OK"), std::string::npos);
  std::string long_uri = "GET /" + std::string(64 * 1024, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_EQ(talk(port(), long_uri).find("200 OK"), std::string::npos);
  std::string huge_header =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + std::string(64 * 1024, 'b') + "\r\n\r\n";
  EXPECT_EQ(talk(port(), huge_header).find("200 OK"), std::string::npos);
  std::string big_body = "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n" +
                         std::string(4096, 'c');
  EXPECT_EQ(talk(port(), big_body).find("dlrig_up"), std::string::npos);
  EXPECT_EQ(get(port(), "/metrics").rfind("HTTP/1.1 200", 0), 0u);
}

TEST_F(ServerOnLoopback, SlowAndDroppedClientsLeaveItServing) {
  // Clients that connect and send half a request, or nothing, then hang on.
  std::vector<int> slow;
  for (int i = 0; i < 6; ++i) {
    int fd = connect_to(port());
    ASSERT_GE(fd, 0);
    if (i % 2)
      ::send(fd, "GET /metr", 9, MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  // Clients that send a request and go away before the answer.
  for (int i = 0; i < 20; ++i) {
    int fd = connect_to(port());
    ::send(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 34, MSG_NOSIGNAL);
    ::close(fd);
  }
  // More slow clients than threads: the read timeout (1 s) frees them; scrapes get through.
  auto start = std::chrono::steady_clock::now();
  std::string m = get(port(), "/metrics");
  EXPECT_EQ(m.rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(8));
  for (int fd : slow)
    ::close(fd);
  EXPECT_EQ(get(port(), "/metrics").rfind("HTTP/1.1 200", 0), 0u);
}

// cpp-httplib sets SO_REUSEPORT by default, with which a second server listened on the same port
// and the kernel shared the scrapes between the two.
TEST(MonitorExporterBind, APortAnotherServerListensOnIsRefused) {
  ServeOptions o;
  o.port = 0;
  Exporter first(
      o, [] { return example(); }, SystemFacts{});
  ASSERT_TRUE(first.bind()) << first.error();
  std::thread serving([&] { first.run(); });
  ServeOptions same = o;
  same.port = first.port();
  Exporter second(
      same, [] { return example(); }, SystemFacts{});
  EXPECT_FALSE(second.bind());
  EXPECT_NE(second.error().find(
                fmt::format("cannot listen on 127.0.0.1:{}: address in use", first.port())),
            std::string::npos)
      << second.error();
  first.stop();
  serving.join();
}

TEST(MonitorExporterBind, AnAddressOfAnotherMachineIsNamedAsSuch) {
  ServeOptions o;
  o.host = "192.0.2.1"; // TEST-NET-1 (RFC 5737): no machine's address
  o.port = 0;
  Exporter e(
      o, [] { return example(); }, SystemFacts{});
  EXPECT_FALSE(e.bind());
  EXPECT_EQ(e.error(), "cannot listen on 192.0.2.1: not an address of this machine");
}

// Clients that send a request one byte at a time, each byte within the read timeout: they keep
// their connection only until the request's deadline. shut_by_server counts the connections the
// server closed.
class Drippers {
public:
  Drippers(int port, int n, std::chrono::milliseconds every) {
    for (int i = 0; i < n; ++i) {
      int fd = connect_to(port);
      if (fd >= 0) {
        ::send(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-A: ", 37, MSG_NOSIGNAL);
        fds_.push_back(fd);
      }
    }
    thread_ = std::thread([this, every] {
      while (!done_.load()) {
        for (std::size_t i = 0; i < fds_.size(); ++i)
          if (!closed_[i] && ::send(fds_[i], "a", 1, MSG_NOSIGNAL) < 0)
            closed_[i] = true;
        std::this_thread::sleep_for(every);
      }
    });
  }
  ~Drippers() {
    done_.store(true);
    thread_.join();
    for (int fd : fds_)
      ::close(fd);
  }
  std::size_t connected() const { return fds_.size(); }
  // Connections the server has closed: past what it answered (kept in answers), reading sees the
  // end (or a reset) without waiting.
  std::size_t shut_by_server() {
    std::size_t n = 0;
    answers_.assign(fds_.size(), "");
    for (std::size_t i = 0; i < fds_.size(); ++i) {
      char buf[4096];
      ssize_t got;
      while ((got = ::recv(fds_[i], buf, sizeof buf, MSG_DONTWAIT)) > 0)
        answers_[i].append(buf, static_cast<std::size_t>(got));
      if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
        ++n;
    }
    return n;
  }
  const std::vector<std::string> &answers() const { return answers_; }

private:
  std::vector<int> fds_;
  std::vector<std::string> answers_;
  bool closed_[64] = {};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

TEST_F(ServerOnLoopback, ClientsDrippingARequestAreCutOffAtItsDeadline) {
  // More drippers than worker threads (4), each byte well within the 1 s read timeout.
  Drippers slow(port(), 6, std::chrono::milliseconds(300));
  ASSERT_EQ(slow.connected(), 6u);
  auto start = std::chrono::steady_clock::now();
  std::string health = get(port(), "/healthz");
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_NE(health.find("\r\n\r\nok\n"), std::string::npos) << health;
  // Each request has 1 s to arrive: the drippers' workers are free again within about 2 s.
  EXPECT_LT(took, std::chrono::milliseconds(3500));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(slow.shut_by_server(), 6u);
  // Each was told why: 408 Request Timeout, not a 400 blaming the request, and nothing else.
  for (const std::string &a : slow.answers()) {
    EXPECT_EQ(a.rfind("HTTP/1.1 408 Request Timeout\r\n", 0), 0u) << a;
    EXPECT_EQ(a.find("HTTP/1.1 400"), std::string::npos) << a;
    EXPECT_NE(a.find("\r\n\r\nthe request did not arrive whole in time\n"), std::string::npos) << a;
  }
}

TEST(MonitorExporterStop, StopEndsRunPromptlyWhateverTheClientsDo) {
  ServeOptions o;
  o.port = 0;
  o.threads = 2;
  o.timeout_seconds = 5;
  Exporter e(
      o, [] { return example(); }, SystemFacts{});
  ASSERT_TRUE(e.bind()) << e.error();
  std::thread serving([&] { e.run(); });
  for (int i = 0; i < 200 && get(e.port(), "/healthz").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  Drippers slow(e.port(), 4, std::chrono::milliseconds(200)); // two served, two queued
  int idle = connect_to(e.port());                            // and one that says nothing
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto start = std::chrono::steady_clock::now();
  e.stop();
  serving.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  ::close(idle);
}

TEST(MonitorExporterStop, StopBeforeRunStillEndsIt) {
  ServeOptions o;
  o.port = 0;
  Exporter e(
      o, [] { return example(); }, SystemFacts{});
  ASSERT_TRUE(e.bind()) << e.error();
  e.stop(); // a SIGTERM that arrives between bind and run
  auto start = std::chrono::steady_clock::now();
  std::thread serving([&] { e.run(); });
  serving.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
}

} // namespace
} // namespace dlrig::monitor
