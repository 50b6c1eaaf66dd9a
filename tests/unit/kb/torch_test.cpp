// PyTorch release knowledge: every patch release's own rows, the lookup that says whether it
// found the exact release, nightly versions and the companions' version families.
#include "dlrig/kb/kb.hpp"

#include <gtest/gtest.h>

namespace dlrig::kb {
namespace {

TEST(KbTorch, ParsesReleasesNightliesAndLocalVersions) {
  auto n = parse_torch_version("2.8.0.dev20250401+cu128");
  EXPECT_EQ(n.release, "2.8.0");
  EXPECT_EQ(n.nightly_date, "20250401");
  EXPECT_EQ(n.local, "cu128");
  EXPECT_TRUE(n.nightly());
  EXPECT_TRUE(n.pre.empty());
  auto cpu = parse_torch_version(" 2.6.0.dev20241112+cpu ");
  EXPECT_EQ(cpu.release, "2.6.0");
  EXPECT_EQ(cpu.nightly_date, "20241112");
  EXPECT_EQ(cpu.local, "cpu");
  auto rocm = parse_torch_version("2.9.0.dev20250801+rocm6.4");
  EXPECT_EQ(rocm.local, "rocm6.4");
  EXPECT_TRUE(rocm.nightly());
  auto plain = parse_torch_version("2.5.1+cu124");
  EXPECT_EQ(plain.release, "2.5.1");
  EXPECT_FALSE(plain.nightly());
  EXPECT_EQ(plain.local, "cu124");
  auto rc = parse_torch_version("2.4.0rc1");
  EXPECT_EQ(rc.release, "2.4.0");
  EXPECT_EQ(rc.pre, "rc1");
  EXPECT_FALSE(rc.nightly());
  EXPECT_TRUE(parse_torch_version("").release.empty());
}

TEST(KbTorch, EveryPatchReleaseHasItsOwnRows) {
  for (const char *v : {"1.5.0", "1.9.0", "1.12.1", "2.2.0", "2.0.0", "2.7.0", "2.9.0"}) {
    auto l = builtin().lookup_torch(v);
    ASSERT_NE(l.release, nullptr) << v;
    EXPECT_TRUE(l.exact) << v;
    EXPECT_EQ(l.release->version, v);
  }
  auto r = builtin().lookup_torch("2.2.0+cu121");
  ASSERT_TRUE(r.exact);
  EXPECT_EQ(r.release->torchvision, "0.17.0");
  EXPECT_EQ(r.release->torchaudio, "2.2.0");
  ASSERT_NE(r.release->variant("cu121"), nullptr);
  EXPECT_EQ(builtin().torch_release("1.12.1")->torchaudio, "0.12.1");
  EXPECT_EQ(builtin().torch_release("1.9.0")->torchvision, "0.10.0");
  EXPECT_EQ(builtin().torch_release("1.5.0")->torchaudio, ""); // the source names none
  const auto *two = builtin().torch_release("2.0.0");
  EXPECT_EQ(two->torchvision, "0.15.1");
  EXPECT_EQ(two->torchvision_also, std::vector<std::string>{"0.15.0"});
}

TEST(KbTorch, UnlistedVersionsFallBackToTheirMinorAndSaySo) {
  auto mm = builtin().lookup_torch("2.5");
  ASSERT_NE(mm.release, nullptr);
  EXPECT_FALSE(mm.exact);
  EXPECT_EQ(mm.release->version, "2.5.1");             // the newest listed patch
  auto patch = builtin().lookup_torch("1.10.2+cu113"); // not on the previous-versions page
  ASSERT_NE(patch.release, nullptr);
  EXPECT_FALSE(patch.exact);
  EXPECT_EQ(patch.release->version, "1.10.1");
  auto nightly = builtin().lookup_torch("2.8.0.dev20250401+cu128");
  EXPECT_FALSE(nightly.exact);
  EXPECT_TRUE(nightly.parsed.nightly());
  EXPECT_EQ(nightly.parsed.nightly_date, "20250401");
  ASSERT_NE(nightly.release, nullptr);
  EXPECT_EQ(nightly.release->version, "2.8.0");
  // The nightly's CUDA variant is known, and with it the driver it needs.
  ASSERT_NE(builtin().cuda_min_driver("12.8"), nullptr);
  auto future = builtin().lookup_torch("9.1.0.dev20990101+cu999");
  EXPECT_EQ(future.release, nullptr);
  EXPECT_TRUE(future.parsed.nightly());
}

TEST(KbTorch, CompanionFamilies) {
  EXPECT_EQ(torch_companion_family("2.7.0", "torchvision"), "0.22");
  EXPECT_EQ(torch_companion_family("2.7.0+cu126", "torchaudio"), "2.7");
  EXPECT_EQ(torch_companion_family("1.12.1", "torchvision"), "0.13");
  EXPECT_EQ(torch_companion_family("1.12.1", "torchaudio"), "0.12");
  EXPECT_EQ(torch_companion_family("2.10.0.dev20251001+cu130", "torchvision"), "0.25");
  EXPECT_EQ(torch_companion_family("2.7.0", "torchtext"), "");
  EXPECT_EQ(torch_companion_family("0.4.1", "torchvision"), "");
  // The rule holds for every release the kb lists (pytorch/vision README's table).
  for (const auto &r : builtin().torch) {
    auto mm = [](const std::string &v) { return v.substr(0, v.find('.', v.find('.') + 1)); };
    if (!r.torchvision.empty()) {
      EXPECT_EQ(mm(r.torchvision), torch_companion_family(r.version, "torchvision")) << r.version;
    }
    for (const auto &v : r.torchvision_also)
      EXPECT_EQ(mm(v), torch_companion_family(r.version, "torchvision")) << r.version;
    if (!r.torchaudio.empty()) {
      EXPECT_EQ(mm(r.torchaudio), torch_companion_family(r.version, "torchaudio")) << r.version;
    }
  }
}

TEST(KbTorch, PipCommandsFollowTheSourcesShape) {
  const auto *r19 = builtin().torch_release("1.9.0");
  ASSERT_NE(r19->variant("cu111"), nullptr);
  EXPECT_EQ(pip_command(*r19, *r19->variant("cu111")),
            "pip install torch==1.9.0+cu111 torchvision==0.10.0+cu111 torchaudio==0.9.0 -f "
            "https://download.pytorch.org/whl/torch_stable.html");
  const auto *r17 = builtin().torch_release("1.7.1");
  ASSERT_NE(r17->variant("cu102"), nullptr);
  EXPECT_EQ(pip_command(*r17, *r17->variant("cu102")),
            "pip install torch==1.7.1 torchvision==0.8.2 torchaudio==0.7.2");
  const auto *r22 = builtin().torch_release("2.2.0");
  EXPECT_EQ(pip_command(*r22, *r22->variant("cu118")),
            "pip install torch==2.2.0 torchvision==0.17.0 torchaudio==2.2.0 --index-url "
            "https://download.pytorch.org/whl/cu118");
}

} // namespace
} // namespace dlrig::kb
