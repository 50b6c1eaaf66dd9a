#include "dlrig/monitor/diagnose.hpp"
#include "dlrig/monitor/sampler.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace dlrig::monitor {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

class SamplerOnFake : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dlrig-monitor-sampler-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void scenario(const std::string &json) {
    auto path = dir_ / "scenario.json";
    std::ofstream(path) << json;
    ::setenv("DLRIG_FAKE_NVML_SCENARIO", path.c_str(), 1);
  }
  SamplerOptions options() const {
    SamplerOptions o;
    o.nvml_library = DLRIG_FAKE_NVML;
    return o;
  }
  fs::path dir_;
  Sysroot host_{std::string(DLRIG_TEST_DATA) + "/training-rtx4090"};
};

// Each frame lasts 500 ms from nvmlInit (the Sampler's construction); samples are taken in the
// middle of frames.
constexpr const char *kTimeline = R"({"driver_version": "550.54.15", "cuda_driver_version": 12040,
 "gpus": [{"bus_id": "00000000:01:00.0", "name": "NVIDIA GeForce RTX 4090", "uuid": "GPU-1",
  "max_clocks_mhz": {"sm": 3120}, "enforced_power_limit_mw": 450000,
  "pcie": {"gen_current": 4, "gen_max": 4, "width_current": 16, "width_max": 16},
  "memory": {"total": 25757220864, "reserved": 340787200, "used": 1244659712},
  "timeline": [
   {"ms": 500, "set": {"utilization_percent": {"gpu": 0, "memory": 0}, "processes": [],
                       "power_usage_mw": 27830, "energy_mj": 1000000}},
   {"ms": 500, "set": {"utilization_percent": {"gpu": 97, "memory": 41},
                       "processes": [{"pid": 48211, "used_memory": 20132659200}],
                       "process_utilization": [{"pid": 48211, "sm": 95}],
                       "memory": {"used": 21474836480}, "power_usage_mw": 402150,
                       "energy_mj": 1200000}},
   {"ms": 500, "xid": 31, "set": {"pcie": {"gen_current": 1}}},
   {"lost": true}
  ]}]})";

TEST_F(SamplerOnFake, FollowsATimelineOfReadingsAndEvents) {
  scenario(kTimeline);
  auto start = Clock::now();
  Sampler sampler(host_, options());
  ASSERT_TRUE(sampler.nvml_ok()) << sampler.nvml_error();
  EXPECT_EQ(sampler.facts().driver_version, "550.54.15");
  EXPECT_EQ(sampler.facts().cuda_version, "12.4");
  auto at = [&](int ms) {
    std::this_thread::sleep_until(start + std::chrono::milliseconds(ms));
    return sampler.take();
  };

  Sample idle = sampler.take();
  ASSERT_EQ(idle.gpus.size(), 1u);
  const GpuSample &g0 = idle.gpus[0];
  EXPECT_EQ(g0.uuid, "GPU-1");
  EXPECT_EQ(g0.utilization_ratio, 0.0);
  EXPECT_DOUBLE_EQ(*g0.power_watts, 27.83);
  EXPECT_EQ(g0.power_limit_watts, 450.0);
  EXPECT_EQ(g0.sm_clock_max_hertz, 3120e6);
  EXPECT_EQ(g0.energy_joules, 1000.0);
  EXPECT_EQ(g0.memory_reserved_bytes, 340787200.0);
  EXPECT_EQ(g0.memory_free_bytes, 25757220864.0 - 1244659712.0);
  ASSERT_TRUE(g0.processes);
  EXPECT_TRUE(g0.processes->empty());
  // What the scenario does not give is unknown, never 0.
  EXPECT_FALSE(g0.temperature_celsius);
  EXPECT_FALSE(g0.fan_ratio);
  EXPECT_FALSE(g0.memory_temperature_celsius);
  EXPECT_FALSE(g0.nvlink_tx_bytes);
  EXPECT_EQ(g0.xid_events, 0.0); // events work: none yet
  EXPECT_EQ(idle.host.memory_total_bytes, 65799364.0 * 1024);

  Sample busy = at(750);
  const GpuSample &g1 = busy.gpus[0];
  EXPECT_EQ(g1.utilization_ratio, 0.97);
  EXPECT_EQ(g1.memory_used_bytes, 21474836480.0);
  ASSERT_EQ(g1.processes->size(), 1u); // a process appeared
  const ProcessSample &p = g1.processes->front();
  EXPECT_EQ(p.pid, 48211u);
  EXPECT_EQ(p.gpu_memory_bytes, 20132659200.0);
  EXPECT_EQ(p.sm_ratio, 0.95);
  EXPECT_EQ(p.user, "alice"); // from the fixture host's /proc and /etc/passwd
  EXPECT_EQ(p.command, "python train.py --batch-size 64");

  Sample degraded = at(1250);
  const GpuSample &g2 = degraded.gpus[0];
  EXPECT_EQ(g2.pcie_link_generation, 1.0); // the link fell to Gen1
  EXPECT_EQ(g2.xids, std::vector<std::uint64_t>{31});
  EXPECT_EQ(g2.xid_events, 1.0);
  EXPECT_EQ(g2.last_xid, 31.0);
  auto findings = diagnose({busy, degraded});
  auto has = [&](const char *id) {
    return std::any_of(findings.begin(), findings.end(),
                       [&](const Finding &f) { return f.id == id; });
  };
  EXPECT_TRUE(has("pcie-link-degraded"));
  EXPECT_TRUE(has("xid"));

  Sample lost = at(1750);
  EXPECT_TRUE(lost.gpus[0].lost);
  EXPECT_FALSE(lost.gpus[0].utilization_ratio);
  EXPECT_TRUE(at(1800).gpus[0].lost); // not asked again
}

TEST_F(SamplerOnFake, MissingFunctionsMakeTheirFieldsUnknown) {
  scenario(R"({"missing_functions": ["nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetPcieThroughput", "nvmlEventSetCreate", "nvmlDeviceGetProcessUtilization"],
   "gpus": [{"bus_id": "00000000:01:00.0", "energy_mj": 5, "temperature_c": 40,
    "pcie": {"tx_kbps": 5}, "utilization_percent": {"gpu": 50, "memory": 10},
    "processes": [{"pid": 48211}], "process_utilization": [{"pid": 48211, "sm": 50}]}]})");
  Sampler sampler(host_, options());
  ASSERT_TRUE(sampler.nvml_ok());
  Sample s = sampler.take();
  const GpuSample &g = s.gpus[0];
  EXPECT_FALSE(g.energy_joules);
  EXPECT_FALSE(g.pcie_tx_bytes_per_second);
  EXPECT_FALSE(g.xid_events); // no event set: Xids unknown, not zero
  EXPECT_EQ(g.temperature_celsius, 40.0);
  EXPECT_EQ(g.utilization_ratio, 0.5);
  ASSERT_EQ(g.processes->size(), 1u);
  EXPECT_FALSE(g.processes->front().sm_ratio);
  EXPECT_FALSE(g.processes->front().gpu_memory_bytes);
}

TEST_F(SamplerOnFake, NoNvmlStillReadsTheHost) {
  SamplerOptions o = options();
  o.nvml_library = (dir_ / "no-such-libnvidia-ml.so").string();
  Sampler sampler(host_, o);
  EXPECT_FALSE(sampler.nvml_ok());
  Sample s = sampler.take();
  EXPECT_FALSE(s.nvml_ok);
  EXPECT_FALSE(s.nvml_error.empty());
  EXPECT_TRUE(s.gpus.empty());
  EXPECT_TRUE(s.host.memory_total_bytes);
}

// NVML that stops answering, while it opens or later in a sample: the sampler waits its limit,
// then says why and goes on with the host alone, never asking NVML again.
TEST_F(SamplerOnFake, NvmlThatStopsAnsweringIsReportedNotWaitedFor) {
  SamplerOptions o = options();
  o.nvml_open_timeout = std::chrono::milliseconds(400);
  o.nvml_sample_timeout = std::chrono::milliseconds(300);
  scenario(R"({"hang_ms": {"nvmlInit_v2": 60000}, "gpus": [{"bus_id": "00000000:01:00.0"}]})");
  auto start = Clock::now();
  Sampler opening(host_, o);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  EXPECT_FALSE(opening.nvml_ok());
  EXPECT_NE(opening.nvml_error().find("NVML did not answer within 0.4 s (--nvml-timeout) while "
                                      "it was being opened"),
            std::string::npos)
      << opening.nvml_error();
  Sample none = opening.take();
  EXPECT_FALSE(none.nvml_ok);
  EXPECT_TRUE(none.gpus.empty());
  EXPECT_TRUE(none.host.memory_total_bytes);

  scenario(R"({"hang_ms": {"nvmlDeviceGetTemperature": 60000},
    "gpus": [{"bus_id": "00000000:01:00.0", "temperature_c": 40}]})");
  Sampler sampling(host_, o);
  ASSERT_TRUE(sampling.nvml_ok()) << sampling.nvml_error(); // opening asks no temperature
  start = Clock::now();
  Sample s = sampling.take();
  auto took = Clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, std::chrono::seconds(3));
  EXPECT_FALSE(s.nvml_ok);
  EXPECT_NE(s.nvml_error.find("within 0.3 s (--nvml-timeout) for a sample"), std::string::npos)
      << s.nvml_error;
  EXPECT_TRUE(s.gpus.empty());
  EXPECT_TRUE(s.host.memory_total_bytes);
  start = Clock::now();
  EXPECT_FALSE(sampling.take().nvml_ok);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(250)); // not asked again
}

// A driver that stops answering and later recovers (the fake sleeps in nvmlInit_v2 while a file
// exists): NVML is asked again, after --nvml-retry and twice as long each time it fails, in a new
// process running `dlrig __nvml-helper` (the real binary), and read again once it answers.
TEST_F(SamplerOnFake, NvmlThatAnswersAgainIsReadAgainInANewProcess) {
  const auto stuck = dir_ / "driver-stuck";
  std::ofstream(stuck) << "1";
  scenario(R"({"hang_while_file": {"nvmlInit_v2": ")" + stuck.string() + R"("},
    "gpus": [{"bus_id": "00000000:01:00.0", "name": "NVIDIA H100 80GB HBM3", "temperature_c": 41}]})");
  SamplerOptions o = options();
  o.nvml_open_timeout = o.nvml_sample_timeout = std::chrono::milliseconds(300);
  o.nvml_helper = DLRIG_BINARY;
  o.nvml_retry = std::chrono::milliseconds(200);
  Sampler sampler(host_, o);
  ASSERT_FALSE(sampler.nvml_ok());
  EXPECT_NE(sampler.nvml_error().find("NVIDIA GPUs are not read until it answers again: dlrig "
                                      "asks it again in 0.2 s (--nvml-retry)"),
            std::string::npos)
      << sampler.nvml_error();
  auto start = Clock::now();
  EXPECT_FALSE(sampler.take().nvml_ok); // before the wait is over: not asked
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(150));
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  Sample again = sampler.take(); // asked, still stuck: times out, the wait doubles
  EXPECT_FALSE(again.nvml_ok);
  EXPECT_NE(again.nvml_error.find("asks it again in 0.4 s"), std::string::npos) << again.nvml_error;
  // The killed helper is left behind until it has ended; the fake's sleep ends at SIGKILL (a
  // driver's would not, and no new helper would start until it did).
  for (int i = 0; i < 100 && children_left_behind() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(children_left_behind(), 0u);

  fs::remove(stuck); // the driver recovers
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  Sample back = sampler.take();
  ASSERT_TRUE(back.nvml_ok) << back.nvml_error;
  ASSERT_TRUE(sampler.nvml_ok());
  ASSERT_EQ(back.gpus.size(), 1u);
  EXPECT_EQ(back.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(back.gpus[0].temperature_celsius, 41);
  EXPECT_TRUE(sampler.take().nvml_ok);

  // Without a helper (a caller that is not dlrig) or with --nvml-retry 0: never again.
  std::ofstream(stuck) << "1";
  for (bool helper : {false, true}) {
    SamplerOptions never = o;
    if (!helper)
      never.nvml_helper.clear();
    else
      never.nvml_retry = std::chrono::milliseconds(0);
    Sampler once(host_, never);
    EXPECT_NE(once.nvml_error().find("restart dlrig once NVML answers"), std::string::npos)
        << once.nvml_error();
    fs::remove(stuck);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    EXPECT_FALSE(once.take().nvml_ok);
    std::ofstream(stuck) << "1";
  }
  fs::remove(stuck);
}

// An NVML that crashes (SIGABRT inside a reading) ends the sampler's child, not the sampler.
TEST_F(SamplerOnFake, NvmlThatCrashesIsReportedNotFatal) {
  scenario(R"({"abort_in": "nvmlDeviceGetPowerUsage",
    "gpus": [{"bus_id": "00000000:01:00.0", "power_usage_mw": 1000}]})");
  Sampler sampler(host_, options());
  ASSERT_TRUE(sampler.nvml_ok()) << sampler.nvml_error();
  Sample s = sampler.take();
  EXPECT_FALSE(s.nvml_ok);
  EXPECT_NE(s.nvml_error.find("ended with signal 6"), std::string::npos) << s.nvml_error;
  EXPECT_TRUE(s.host.memory_total_bytes);
}

TEST(MonitorAmd, Mi300xNodeThroughSysfs) {
  Sysroot node(std::string(DLRIG_TEST_DATA) + "/node-mi300x");
  SamplerOptions o;
  o.skip_nvml = true;
  Sampler sampler(node, o);
  Sample s = sampler.take();
  ASSERT_EQ(s.gpus.size(), 2u);
  const GpuSample &g = s.gpus[0];
  EXPECT_EQ(g.index, 0u);
  EXPECT_EQ(g.bus_id, "0000:05:00.0");
  EXPECT_EQ(g.name, "AMD GPU 1002:74a1");
  EXPECT_EQ(g.utilization_ratio, 0.0);
  EXPECT_EQ(g.memory_total_bytes, 205822885888.0);
  EXPECT_EQ(g.memory_used_bytes, 285212672.0);
  EXPECT_EQ(g.sm_clock_hertz, 500e6);
  EXPECT_EQ(g.sm_clock_max_hertz, 2100e6);
  EXPECT_EQ(g.temperature_celsius, 38.0); // junction: this GPU has no edge sensor
  EXPECT_EQ(g.memory_temperature_celsius, 33.0);
  EXPECT_EQ(g.power_watts, 142.0);
  EXPECT_EQ(g.power_limit_watts, 750.0);
  EXPECT_EQ(g.pcie_link_generation, 5.0);
  EXPECT_EQ(g.pcie_link_width, 16.0);
  EXPECT_FALSE(g.fan_ratio); // no pwm1 in this tree: unknown, not 0
  EXPECT_FALSE(g.energy_joules);
  EXPECT_EQ(s.gpus[1].index, 1u);
  EXPECT_EQ(pcie_generation(2.5), 1.0);
  EXPECT_EQ(pcie_generation(7), std::nullopt);
}

} // namespace
} // namespace dlrig::monitor
