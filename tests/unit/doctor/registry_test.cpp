#include "dlrig/doctor/facts.hpp"
#include "unit/doctor/machines.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace dlrig::doctor::test {
namespace {

// The ids issue 5 promises to scripts: never rename them.
const char *const kContract[] = {"gpu.none-visible",
                                 "driver.nvml-mismatch",
                                 "driver.too-old-for-torch",
                                 "torch.cpu-only-build",
                                 "torch.arch-unsupported",
                                 "torch.companion-mismatch",
                                 "cuda.ld-library-path-shadows",
                                 "cuda.multiple-toolkits",
                                 "cuda.toolkit-newer-than-driver",
                                 "kernel.nouveau-loaded",
                                 "link.egpu-bandwidth",
                                 "link.pcie-downtrained",
                                 "link.p2p-blocked",
                                 "gpu.thermal-throttle",
                                 "gpu.power-throttle",
                                 "gpu.ecc-errors",
                                 "gpu.retired-pages",
                                 "gpu.persistence-off",
                                 "gpu.mig-enabled",
                                 "gpu.fabric-manager",
                                 "host.shm-small",
                                 "host.memlock-limit",
                                 "host.ram-vs-vram",
                                 "host.cpu-cores-per-gpu",
                                 "host.dataset-on-slow-disk",
                                 "dist.master-port-in-use",
                                 "dist.nccl-env",
                                 "env.cuda-launch-blocking",
                                 "container.no-gpu-runtime",
                                 "wsl.driver-inside"};

TEST(DoctorRegistry, HoldsEveryContractIdAndAtLeast45Checks) {
  for (const char *id : kContract)
    EXPECT_NE(find_check(id), nullptr) << id;
  EXPECT_GE(all_checks().size(), 45u);
}

TEST(DoctorRegistry, IdsAreUniqueAndStartWithTheirArea) {
  std::set<std::string_view> seen;
  for (const auto &c : all_checks()) {
    EXPECT_TRUE(seen.insert(c.id).second) << c.id;
    EXPECT_EQ(c.id.substr(0, c.area.size() + 1), std::string(c.area) + ".") << c.id;
    EXPECT_FALSE(c.title.empty() || c.reads.empty() || c.fires.empty() || c.fix.empty() ||
                 c.source.empty())
        << c.id;
    EXPECT_NE(c.run, nullptr) << c.id;
  }
}

// Words of a check's text, split at spaces and list separators, so a URL stays one word.
std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t j = text.find_first_of(" ;,()", i);
    if (j == std::string_view::npos)
      j = text.size();
    if (j > i)
      out.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

bool is_url(std::string_view w) {
  return w.substr(0, 8) == "https://" && w.size() > 12;
}

// A word a reader of the repository cannot follow: a path into the project's private research
// notes (reference/environment.md and its siblings), which live outside the repository.
bool cites_private_notes(std::string_view text) {
  for (auto w : words(text))
    if (!is_url(w) && (w.find("reference/") != std::string_view::npos ||
                       (w.size() > 3 && w.substr(w.size() - 3) == ".md")))
      return true;
  return false;
}

TEST(DoctorRegistry, EverySourceIsPublicOrMarkedUnverified) {
  for (const auto &c : all_checks()) {
    bool has_url = false;
    for (auto w : words(c.source))
      has_url = has_url || is_url(w);
    EXPECT_TRUE(has_url || c.source.find("UNVERIFIED") != std::string_view::npos)
        << c.id << ": " << c.source;
    for (std::string_view text : {c.title, c.reads, c.fires, c.fix, c.source})
      EXPECT_FALSE(cites_private_notes(text)) << c.id << ": " << text;
  }
}

TEST(DoctorRegistry, PrivateNotesAreRecognised) {
  EXPECT_TRUE(cites_private_notes("reference/environment.md §2 #14"));
  EXPECT_TRUE(cites_private_notes("see links.md"));
  EXPECT_FALSE(cites_private_notes(
      "https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/"));
  EXPECT_FALSE(cites_private_notes("https://github.com/pytorch/pytorch/blob/main/RELEASE.md"));
}

TEST(DoctorRegistry, NearestIdsForATypo) {
  auto near = nearest_ids("kernel.noveau-loaded");
  ASSERT_FALSE(near.empty());
  EXPECT_EQ(near[0], "kernel.nouveau-loaded");
  EXPECT_EQ(nearest_ids("shm")[0], "host.shm-small");
}

// False alarms are bugs: healthy machines give no warn and no fail.
TEST(DoctorRegistry, HealthyServerHasNoAlarms) {
  EXPECT_EQ(alarms(healthy_server()), std::vector<std::string>{});
}
TEST(DoctorRegistry, HealthyDesktopHasNoAlarms) {
  EXPECT_EQ(alarms(healthy_desktop()), std::vector<std::string>{});
}
TEST(DoctorRegistry, HealthyLaptopHasNoAlarms) {
  EXPECT_EQ(alarms(healthy_laptop()), std::vector<std::string>{});
}
TEST(DoctorRegistry, EmptySnapshotHasNoAlarms) {
  // Everything unknown: nothing may fire a warn or fail on an unknown.
  EXPECT_EQ(alarms(Snapshot{}), std::vector<std::string>{});
}
TEST(DoctorRegistry, HealthyMachinesHaveNoAlarmsWithAnEmptyKnowledgeBase) {
  kb::KnowledgeBase empty;
  for (const auto &s : {healthy_server(), healthy_desktop(), healthy_laptop()})
    for (const auto &c : all_checks())
      for (const auto &f : c.run(s, empty, {}))
        EXPECT_LT(f.severity, Severity::warn) << f.id << ": " << f.title;
}

TEST(DoctorFacts, VersionsCompareNumerically) {
  EXPECT_LT(compare_versions("550.54.14", "550.54.15"), 0);
  EXPECT_GT(compare_versions("12.10", "12.9"), 0);
  EXPECT_EQ(compare_versions("2.5.1+cu124", "2.5.1"), 0);
  EXPECT_EQ(major_minor("12.4.131"), "12.4");
  EXPECT_EQ(major_minor("n/a"), "");
}

TEST(DoctorFacts, RuleR1ArchCoverage) {
  std::vector<std::string> cu124 = {"sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"};
  EXPECT_EQ(arch_covers(cu124, "8.9"), true);                    // sm_86 cubin runs on 8.9
  EXPECT_EQ(arch_covers(cu124, "12.0"), false);                  // RTX 50: no sm_12x, no PTX
  EXPECT_EQ(arch_covers(cu124, "3.7"), false);                   // Kepler dropped
  EXPECT_EQ(arch_covers({"sm_90", "compute_90"}, "12.0"), true); // PTX JIT forward
  EXPECT_EQ(arch_covers({"sm_90a"}, "9.0"), true);
  EXPECT_EQ(arch_covers({"sm_90a"}, "10.0"), false); // arch-specific: not forward
  EXPECT_EQ(arch_covers({"sm_100"}, "10.3"), true);
  EXPECT_EQ(arch_covers({"7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX"}, "12.1"), true);
  EXPECT_EQ(arch_covers({}, "8.0"), std::nullopt);
}

// One formula (core/pcie.hpp); it agrees with the sourced rows of data/links.csv.
TEST(DoctorFacts, PcieBandwidthIsTheCoreFormula) {
  EXPECT_NEAR(*pcie_bytes_per_s(8, 4), 3.94e9, 0.01e9);
  EXPECT_NEAR(*pcie_bytes_per_s(16, 16), 31.5e9, 0.1e9);
  EXPECT_EQ(pcie_bytes_per_s(16, 0), std::nullopt);
  for (const auto &l : kb::builtin().links)
    if (l.kind == "pcie" && l.transfer_rate_gts && l.per_lane_bytes_per_s &&
        *l.transfer_rate_gts < 64) {
      EXPECT_NEAR(*pcie_bytes_per_s(*l.transfer_rate_gts, 1), *l.per_lane_bytes_per_s, 0.001e9)
          << l.name;
    }
}

TEST(DoctorFacts, ChooseWheelPrefersTheInstalledRelease) {
  auto kb = test_kb();
  auto w = choose_wheel(kb, std::string("12.4"), {"8.9"}, "2.5.1+cpu");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->release->version, "2.5.1");
  EXPECT_EQ(w->variant->tag, "cu124");
  auto blackwell = choose_wheel(kb, std::string("12.4"), {"12.0"});
  EXPECT_FALSE(blackwell); // cu128 needs a CUDA 12.8 driver
}

} // namespace
} // namespace dlrig::doctor::test

namespace dlrig::doctor::test {
namespace {

// The same rules against the embedded knowledge base: its rows, not the test subset.
TEST(DoctorBuiltinKb, HealthyMachinesHaveNoAlarms) {
  const auto &kb = kb::builtin();
  for (const auto &s : {healthy_server(), healthy_desktop(), healthy_laptop()})
    for (const auto &c : all_checks())
      for (const auto &f : c.run(s, kb, {}))
        EXPECT_LT(f.severity, Severity::warn) << f.id << ": " << f.title;
}

TEST(DoctorBuiltinKb, Rtx5090WithCu124GetsABlackwellWheel) {
  Snapshot s = healthy_desktop();
  s.gpus[0].nvml->name = "NVIDIA GeForce RTX 5090";
  s.gpus[0].nvml->compute_capability = "12.0";
  s.nvidia.driver_version = "570.124.06";
  s.nvidia.cuda_driver_version = "12.8";
  auto f = run_check("torch.arch-unsupported", s, kb::builtin());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::fail);
  EXPECT_NE(f[0].fix[0].find("--index-url https://download.pytorch.org/whl/cu128"),
            std::string::npos)
      << f[0].fix[0];
}

TEST(DoctorBuiltinKb, CpuWheelOnA4090GetsTheSameReleaseWithCuda) {
  Snapshot s = healthy_desktop();
  auto &t = *s.software.python_envs[0].torch;
  t.version = "2.5.1+cpu";
  t.variant = "cpu";
  t.cuda.reset();
  auto f = run_check("torch.cpu-only-build", s, kb::builtin());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fix[0], "pip install --force-reinstall torch==2.5.1 torchvision==0.20.1 "
                         "torchaudio==2.5.1 --index-url https://download.pytorch.org/whl/cu124");
}

std::vector<Finding> throwing_check(const Snapshot &, const kb::KnowledgeBase &,
                                    const DoctorOptions &) {
  throw std::out_of_range("stoul: out of range");
}

// Issue 10.4: one check that throws becomes a "could not check" finding; the others still run.
TEST(DoctorRegistry, ACheckThatThrowsBecomesCouldNotCheck) {
  Check c{"test.throws", "env", Severity::warn, "t", "r", "f", "x", "s", throwing_check};
  auto findings = run_isolated(c, healthy_desktop(), test_kb(), {});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].id, "test.throws");
  EXPECT_EQ(findings[0].severity, Severity::info);
  EXPECT_NE(findings[0].title.find("Could not check"), std::string::npos);
  ASSERT_FALSE(findings[0].evidence.empty());
  EXPECT_EQ(findings[0].evidence[0].value, "stoul: out of range");
}

TEST(DoctorRegistry, HugeCudaVisibleDevicesDoesNotThrow) {
  Snapshot s = healthy_server();
  s.software.env["CUDA_VISIBLE_DEVICES"] = "12345678901234567890123";
  const Check *c = find_check("env.cuda-visible-devices");
  ASSERT_NE(c, nullptr);
  EXPECT_NO_THROW(c->run(s, test_kb(), {}));
  EXPECT_EQ(worst("env.cuda-visible-devices", s), Severity::fail);
  s.software.env["CUDA_VISIBLE_DEVICES"] = "0000000000000000000000007";
  EXPECT_TRUE(run_check("env.cuda-visible-devices", s).empty());
}

} // namespace
} // namespace dlrig::doctor::test
