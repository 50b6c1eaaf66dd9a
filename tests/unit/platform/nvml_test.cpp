#include "dlrig/platform/nvml.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace dlrig::nvml {
namespace {

namespace fs = std::filesystem;

// --- the table and its resolver, without a library ----------------------------------------------

// Distinct addresses for a lookup to hand out (never called).
int marker_v3, marker_v2, marker_plain;

SymbolLookup exporting(std::map<std::string, void *> symbols) {
  return [symbols = std::move(symbols)](const char *name) -> void * {
    auto it = symbols.find(name);
    return it == symbols.end() ? nullptr : it->second;
  };
}

TEST(NvmlEntryPoints, NewestVersionIsBoundFirst) {
  auto t = resolve(exporting({{"nvmlDeviceGetPciInfo_v3", &marker_v3},
                              {"nvmlDeviceGetPciInfo_v2", &marker_v2},
                              {"nvmlDeviceGetPciInfo", &marker_plain}}));
  EXPECT_EQ(reinterpret_cast<void *>(t.device_get_pci_info.fn), &marker_v3);
  EXPECT_STREQ(t.device_get_pci_info.bound, "nvmlDeviceGetPciInfo_v3");
  EXPECT_EQ(t.device_get_pci_info.version(), 3);
}

TEST(NvmlEntryPoints, FallsBackFromV3ToV2ToPlain) {
  auto v2 = resolve(exporting({{"nvmlDeviceGetPciInfo_v2", &marker_v2},
                               {"nvmlDeviceGetPciInfo", &marker_plain},
                               {"nvmlDeviceGetComputeRunningProcesses_v2", &marker_v2}}));
  EXPECT_EQ(reinterpret_cast<void *>(v2.device_get_pci_info.fn), &marker_v2);
  EXPECT_STREQ(v2.device_get_pci_info.name(), "nvmlDeviceGetPciInfo_v2");
  EXPECT_EQ(v2.device_get_compute_running_processes.version(), 2);

  auto plain = resolve(exporting({{"nvmlDeviceGetPciInfo", &marker_plain},
                                  {"nvmlInit", &marker_plain},
                                  {"nvmlDeviceGetComputeRunningProcesses", &marker_plain}}));
  EXPECT_EQ(reinterpret_cast<void *>(plain.device_get_pci_info.fn), &marker_plain);
  EXPECT_STREQ(plain.device_get_pci_info.name(), "nvmlDeviceGetPciInfo");
  EXPECT_STREQ(plain.init.name(), "nvmlInit");
  // v1 process records are a different layout: the caller learns it from the bound name.
  EXPECT_EQ(plain.device_get_compute_running_processes.version(), 1);
  // A renamed function falls back to its old name the same way.
  auto old = resolve(exporting({{"nvmlDeviceGetCurrentClocksThrottleReasons", &marker_plain}}));
  EXPECT_STREQ(old.device_get_current_clocks_event_reasons.name(),
               "nvmlDeviceGetCurrentClocksThrottleReasons");
}

TEST(NvmlEntryPoints, AbsentFunctionIsUnboundAndNamedByItsNewestName) {
  auto t = resolve(exporting({{"nvmlInit_v2", &marker_v2}}));
  EXPECT_TRUE(t.init);
  EXPECT_FALSE(t.device_get_pci_info);
  EXPECT_EQ(t.device_get_pci_info.bound, nullptr);
  EXPECT_STREQ(t.device_get_pci_info.name(), "nvmlDeviceGetPciInfo_v3");
  EXPECT_EQ(t.device_get_pci_info.version(), 0);
  EXPECT_FALSE(t.device_get_power_usage);
}

TEST(NvmlEntryPoints, VersionOfTheBoundName) {
  EntryPoint<int (*)()> e;
  auto bind = [&](const char *name) {
    e.bind(
        [&](const char *asked) -> void * {
          return std::string(asked) == name ? &marker_v2 : nullptr;
        },
        {name});
    return e.version();
  };
  EXPECT_EQ(bind("cuGetProcAddress_v2"), 2);
  EXPECT_EQ(bind("nvmlDeviceGetComputeRunningProcesses_v3"), 3);
  EXPECT_EQ(bind("nvmlDeviceGetName"), 1);
  EXPECT_EQ(bind("nvmlDeviceGet_vX"), 1); // not a version suffix
}

// --- the session, over an injected table
// ----------------------------------------------------------

int g_inits = 0;
int g_shutdowns = 0;
Return g_init_answer = kSuccess;
Return fake_init() {
  ++g_inits;
  return g_init_answer;
}
Return fake_shutdown() {
  ++g_shutdowns;
  return kSuccess;
}

EntryPoints counting_table() {
  return resolve(exporting({{"nvmlInit_v2", reinterpret_cast<void *>(&fake_init)},
                            {"nvmlShutdown", reinterpret_cast<void *>(&fake_shutdown)}}));
}

TEST(NvmlSession, InitialisesOnceAndShutsDownOnce) {
  g_inits = g_shutdowns = 0;
  g_init_answer = kSuccess;
  {
    Session s(counting_table(), "injected");
    EXPECT_TRUE(s.ready());
    EXPECT_EQ(s.error_code(), kSuccess);
    Session moved(std::move(s)); // the moved-from session must not shut NVML down
    EXPECT_TRUE(moved.ready());
    EXPECT_FALSE(s.ready());
    EXPECT_EQ(g_inits, 1);
    EXPECT_EQ(g_shutdowns, 0);
  }
  EXPECT_EQ(g_inits, 1);
  EXPECT_EQ(g_shutdowns, 1);
}

TEST(NvmlSession, FailedInitIsAStateAndIsNotShutDown) {
  g_inits = g_shutdowns = 0;
  g_init_answer = kErrorLibRmVersionMismatch;
  {
    Session s(counting_table(), "injected");
    EXPECT_EQ(s.state(), Session::State::init_failed);
    EXPECT_EQ(s.error_code(), kErrorLibRmVersionMismatch);
    EXPECT_EQ(s.error(), "NVML error 18"); // no nvmlErrorString in this table
  }
  EXPECT_EQ(g_inits, 1);
  EXPECT_EQ(g_shutdowns, 0);
  g_init_answer = kSuccess;
}

TEST(NvmlSession, LibraryWithoutInitIsNotNvml) {
  Session s(resolve(exporting({})), "libsomething.so");
  EXPECT_EQ(s.state(), Session::State::not_nvml);
  EXPECT_EQ(s.error_code(), kErrorFunctionNotFound);
  EXPECT_NE(s.error().find("libsomething.so"), std::string::npos);
}

TEST(NvmlSession, LibraryThatDoesNotLoad) {
  auto s = Session::open("/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(s.state(), Session::State::not_loaded);
  EXPECT_EQ(s.error_code(), kErrorLibraryNotFound);
  EXPECT_EQ(s.library_path(), "/nonexistent/libnvidia-ml.so.1");
  EXPECT_NE(s.error().find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
}

// --- over the fake NVML
// -----------------------------------------------------------------------------

// The fake exports every name of every table line, with the table's signature (its exports are
// generated from the same table).
TEST(NvmlFake, ExportsEveryNameOfTheTable) {
  void *lib = ::dlopen(DLRIG_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << ::dlerror();
  std::set<std::string> absent;
#define DLRIG_TEST_NAME(ctx, name)                                                                 \
  if (!::dlsym(lib, #name))                                                                        \
    absent.insert(#name);
#define DLRIG_TEST_LINE(field, ret, params, args, ...)                                             \
  DLRIG_PP_FOR_EACH(DLRIG_TEST_NAME, ~, __VA_ARGS__)
  DLRIG_NVML_ENTRY_POINTS(DLRIG_TEST_LINE)
#undef DLRIG_TEST_LINE
#undef DLRIG_TEST_NAME
  EXPECT_TRUE(absent.empty()) << *absent.begin();
  ::dlclose(lib);
}

class NvmlOnFake : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dlrig-platform-nvml-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the scenario and points the fake at it; the next Session::open reads it.
  void scenario(const std::string &json) {
    auto path = dir_ / "scenario.json";
    std::ofstream(path) << json;
    ::setenv("DLRIG_FAKE_NVML_SCENARIO", path.c_str(), 1);
  }

  fs::path dir_;
};

constexpr const char *kChanging = R"({"driver_version": "550.54.15", "gpus": [{
  "bus_id": "00000000:01:00.0", "name": "NVIDIA GeForce RTX 4090",
  "memory": {"total": 25757220864, "used": [1244659712, 20000000000]},
  "utilization_percent": {"gpu": [0, 97, 99], "memory": [0, 41]},
  "power_usage_mw": [27830, 398000, 441000],
  "temperature_c": [38, 71, null],
  "clocks_mhz": {"sm": [210, 2520]},
  "enforced_power_limit_mw": 450000,
  "processes": [[], [{"pid": 48211, "used_memory": 18000000000}]]
}]})";

TEST_F(NvmlOnFake, SuccessiveSamplesFollowTheScenariosSequences) {
  scenario(kChanging);
  auto session = Session::open(DLRIG_FAKE_NVML);
  ASSERT_TRUE(session.ready()) << session.error();

  LiveSample idle = sample(session, 0u);
  ASSERT_TRUE(idle.power_usage_mw.value);
  EXPECT_EQ(*idle.power_usage_mw.value, 27830u);
  EXPECT_EQ(idle.temperature_c.value, 38u);
  EXPECT_EQ(idle.sm_clock_mhz.value, 210u);
  ASSERT_TRUE(idle.utilization_percent.value);
  EXPECT_EQ(idle.utilization_percent.value->gpu, 0u);
  ASSERT_TRUE(idle.memory.value);
  EXPECT_EQ(idle.memory.value->used_bytes, 1244659712u);
  EXPECT_EQ(idle.memory.value->total_bytes, 25757220864u);
  ASSERT_TRUE(idle.processes.value);
  EXPECT_TRUE(idle.processes.value->empty());
  EXPECT_FALSE(idle.gpu_lost());

  LiveSample busy = sample(session, 0u);
  EXPECT_EQ(busy.power_usage_mw.value, 398000u);
  EXPECT_EQ(busy.temperature_c.value, 71u);
  EXPECT_EQ(busy.sm_clock_mhz.value, 2520u);
  EXPECT_EQ(busy.utilization_percent.value->gpu, 97u);
  EXPECT_EQ(busy.utilization_percent.value->memory, 41u);
  EXPECT_EQ(busy.memory.value->used_bytes, 20000000000u);
  ASSERT_EQ(busy.processes.value->size(), 1u);
  EXPECT_EQ(busy.processes.value->front().pid, 48211u);
  EXPECT_EQ(busy.processes.value->front().used_memory_bytes, 18000000000u);

  // Past the end a sequence keeps its last value; a null element is a reading the GPU did not
  // give that time (NOT_SUPPORTED), not a zero.
  LiveSample third = sample(session, 0u);
  EXPECT_EQ(third.power_usage_mw.value, 441000u);
  EXPECT_EQ(third.temperature_c.value, std::nullopt);
  EXPECT_EQ(third.temperature_c.status, kErrorNotSupported);
  EXPECT_EQ(third.sm_clock_mhz.value, 2520u);
  EXPECT_EQ(third.utilization_percent.value->gpu, 99u);
  EXPECT_EQ(third.utilization_percent.value->memory, 41u);

  // Static readings do not move: the scenario gives one value.
  auto handle = device_handle(session, 0);
  ASSERT_TRUE(handle.value);
  StaticInfo st = read_static(session, *handle.value);
  EXPECT_EQ(st.name.value, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(st.power_limit_mw.value, 450000u);
  ASSERT_TRUE(st.pci.value);
  EXPECT_EQ(bus_id_text(*st.pci.value), "00000000:01:00.0");
  // What the scenario does not give is NOT_SUPPORTED: the fake fails closed.
  EXPECT_EQ(st.uuid.status, kErrorNotSupported);
  EXPECT_EQ(st.uuid.value, std::nullopt);
}

TEST_F(NvmlOnFake, GpuLostMidRunIsAnErrorValueInTheSample) {
  // Three calls answered (the handle, utilization, memory), then the GPU falls off the bus.
  scenario(R"({"gpus": [{"bus_id": "00000000:01:00.0", "lost_after_calls": 3,
    "memory": {"total": 25757220864, "used": 1244659712},
    "utilization_percent": {"gpu": 97, "memory": 41}, "power_usage_mw": 398000,
    "temperature_c": 71}]})");
  auto session = Session::open(DLRIG_FAKE_NVML);
  ASSERT_TRUE(session.ready()) << session.error();
  auto handle = device_handle(session, 0);
  ASSERT_TRUE(handle.value);

  LiveSample first = sample(session, *handle.value);
  EXPECT_EQ(first.utilization_percent.value->gpu, 97u);
  ASSERT_TRUE(first.memory.value);
  EXPECT_EQ(first.power_usage_mw.value, std::nullopt);
  EXPECT_EQ(first.power_usage_mw.status, kErrorGpuIsLost);
  EXPECT_STREQ(first.power_usage_mw.symbol, "nvmlDeviceGetPowerUsage");
  EXPECT_TRUE(first.gpu_lost());
  EXPECT_EQ(session.error_text(first.device_status), "GPU is lost");

  LiveSample second = sample(session, *handle.value);
  EXPECT_TRUE(second.gpu_lost());
  EXPECT_EQ(second.utilization_percent.status, kErrorGpuIsLost);
  EXPECT_EQ(second.temperature_c.value, std::nullopt);
  EXPECT_EQ(second.processes.status, kErrorGpuIsLost);

  // By index, the handle itself is refused: every reading carries that answer.
  LiveSample by_index = sample(session, 0u);
  EXPECT_TRUE(by_index.gpu_lost());
  EXPECT_EQ(by_index.memory.status, kErrorGpuIsLost);
  EXPECT_STREQ(by_index.memory.symbol, "nvmlDeviceGetHandleByIndex_v2");
}

TEST_F(NvmlOnFake, SymbolTheLibraryLacksMakesOnlyItsReadingUnknown) {
  scenario(kChanging);
  auto session = Session::open(DLRIG_FAKE_NVML, [](const char *name) {
    return std::string(name) != "nvmlDeviceGetPowerUsage";
  });
  ASSERT_TRUE(session.ready()) << session.error();
  LiveSample s = sample(session, 0u);
  EXPECT_EQ(s.power_usage_mw.value, std::nullopt);
  EXPECT_EQ(s.power_usage_mw.status, kErrorFunctionNotFound);
  EXPECT_STREQ(s.power_usage_mw.symbol, "nvmlDeviceGetPowerUsage");
  EXPECT_EQ(s.temperature_c.value, 38u);
  EXPECT_EQ(s.memory.value->used_bytes, 1244659712u);
  EXPECT_FALSE(s.gpu_lost());
}

TEST_F(NvmlOnFake, OlderStructLayoutsFollowTheBoundVersion) {
  // Without _v2/_v3 exports: v1 memory (reserved not in used) and 16-byte v1 process records.
  scenario(R"({"gpus": [{"bus_id": "00000000:01:00.0",
    "memory": {"total": 1000, "reserved": 100, "used": 400},
    "processes": [{"pid": 7, "used_memory": 300}, {"pid": 8}]}]})");
  std::set<std::string> hidden{"nvmlDeviceGetMemoryInfo_v2",
                               "nvmlDeviceGetComputeRunningProcesses_v3",
                               "nvmlDeviceGetComputeRunningProcesses_v2"};
  auto session =
      Session::open(DLRIG_FAKE_NVML, [&](const char *name) { return !hidden.count(name); });
  ASSERT_TRUE(session.ready());
  EXPECT_EQ(session.table().device_get_compute_running_processes.version(), 1);
  LiveSample s = sample(session, 0u);
  EXPECT_EQ(s.memory.value->used_bytes, 300u);
  EXPECT_STREQ(s.memory.symbol, "nvmlDeviceGetMemoryInfo");
  ASSERT_EQ(s.processes.value->size(), 2u);
  EXPECT_EQ((*s.processes.value)[0].pid, 7u);
  EXPECT_EQ((*s.processes.value)[0].used_memory_bytes, 300u);
  EXPECT_EQ((*s.processes.value)[1].pid, 8u);
  EXPECT_EQ((*s.processes.value)[1].used_memory_bytes, std::nullopt);
}

TEST_F(NvmlOnFake, UnusableScenarioValueIsAnErrorNotACrash) {
  // An object where a number belongs: the fake answers UNKNOWN for that call and nothing else.
  scenario(R"({"gpus": [{"bus_id": "00000000:01:00.0", "power_usage_mw": {"watts": 300},
    "temperature_c": 40}]})");
  auto session = Session::open(DLRIG_FAKE_NVML);
  ASSERT_TRUE(session.ready());
  LiveSample s = sample(session, 0u);
  EXPECT_EQ(s.power_usage_mw.status, kErrorUnknown);
  EXPECT_EQ(s.power_usage_mw.value, std::nullopt);
  EXPECT_EQ(s.temperature_c.value, 40u);
}

TEST_F(NvmlOnFake, SamplingAFixtureUntilItsGpuIsLost) {
  // What `watch` will do: sample one GPU again and again; the readings rise with the job, then
  // the GPU falls off the bus and the samples say so instead of failing.
  ::setenv("DLRIG_FAKE_NVML_SCENARIO",
           (std::string(DLRIG_TEST_DATA) + "/nvml/load-then-lost.json").c_str(), 1);
  auto session = Session::open(DLRIG_FAKE_NVML);
  ASSERT_TRUE(session.ready()) << session.error();
  auto handle = device_handle(session, 0);
  ASSERT_TRUE(handle.value);
  StaticInfo st = read_static(session, *handle.value);
  EXPECT_EQ(st.power_limit_mw.value, 450000u);

  std::vector<LiveSample> samples;
  for (int i = 0; i < 20 && (samples.empty() || !samples.back().gpu_lost()); ++i)
    samples.push_back(sample(session, *handle.value));
  ASSERT_GE(samples.size(), 3u);
  EXPECT_TRUE(samples.back().gpu_lost());
  EXPECT_EQ(samples[0].power_usage_mw.value, 27830u);
  EXPECT_EQ(samples[1].power_usage_mw.value, 402150u);
  EXPECT_EQ(samples[1].utilization_percent.value->gpu, 96u);
  EXPECT_EQ(samples[1].pcie_gen_current.value, 4u);
  EXPECT_EQ(samples[1].processes.value->size(), 1u);
  EXPECT_FALSE(samples[1].gpu_lost());
  // After the loss nothing is read: every reading is unknown with the loss as its reason.
  LiveSample after = sample(session, *handle.value);
  EXPECT_TRUE(after.gpu_lost());
  EXPECT_EQ(after.power_usage_mw.value, std::nullopt);
  EXPECT_EQ(after.memory.status, kErrorGpuIsLost);
}

} // namespace
} // namespace dlrig::nvml
