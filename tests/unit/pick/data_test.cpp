// pick's data: every price, platform and sizing constant in range and sourced, the parser naming
// the bad row, --prices overriding per GPU and kind, the age of a price.
#include "dlrig/kb/kb.hpp"
#include "dlrig/pick/data.hpp"
#include "dlrig/pick/machine.hpp"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

namespace dlrig::pick {
namespace {

TEST(PickData, PricesAreInRangeAndSourced) {
  const auto &prices = builtin_prices();
  ASSERT_GE(prices.size(), 40u);
  std::set<std::tuple<std::string, PriceKind, std::string>> seen;
  for (const auto &p : prices) {
    SCOPED_TRACE(p.file + ":" + std::to_string(p.line) + " " + p.gpu);
    EXPECT_NE(kb::builtin().find_gpu(p.gpu), nullptr);
    EXPECT_EQ(p.currency, "USD");
    EXPECT_FALSE(p.source.empty());
    if (is_rental(p.kind)) { // per GPU-hour
      EXPECT_GE(p.amount, 0.05);
      EXPECT_LE(p.amount, 20);
    } else { // per GPU
      EXPECT_GE(p.amount, 100);
      EXPECT_LE(p.amount, 60000);
    }
    if (!p.date.empty()) {
      EXPECT_TRUE(age_days(p.date, "2026-11-25").has_value()) << p.date;
    }
    EXPECT_TRUE(seen.insert({p.gpu, p.kind, p.seller}).second) << "duplicate row";
  }
}

TEST(PickData, EveryPriceFileRowIsSourcedByAUrl) {
  for (const auto &p : builtin_prices())
    if (p.file == "data/prices.csv") {
      EXPECT_EQ(p.source.rfind("https://", 0), 0u) << p.line << ": " << p.source;
    }
}

TEST(PickData, UsedIsCheaperThanNewAndSpotThanOnDemand) {
  const auto &prices = builtin_prices();
  auto find = [&](const std::string &gpu, PriceKind k) -> const Price * {
    for (const auto &p : prices)
      if (p.gpu == gpu && p.kind == k)
        return &p;
    return nullptr;
  };
  for (const auto &p : prices) {
    if (p.kind == PriceKind::used)
      if (const auto *n = find(p.gpu, PriceKind::msrp)) {
        EXPECT_LT(p.amount, n->amount * 1.2) << p.gpu;
      }
    if (p.kind == PriceKind::cloud_spot)
      if (const auto *n = find(p.gpu, PriceKind::cloud_on_demand)) {
        EXPECT_LT(p.amount, n->amount) << p.gpu;
      }
  }
}

TEST(PickData, ParserNamesTheBadRow) {
  const auto &kb = kb::builtin();
  const std::string head = "gpu,kind,price,currency,date,source\n";
  const std::string good = "GeForce RTX 4090,street_new,1500,USD,2026-10,https://example.com\n";
  ASSERT_TRUE(parse_prices(head + good, "mine.csv", kb).ok());
  struct Case {
    std::string row, column;
  } cases[] = {
      {"GeForce RTX 9999,used,100,USD,2026,https://x\n", "gpu"},
      {"GeForce RTX 4090,cheap,100,USD,2026,https://x\n", "kind"},
      {"GeForce RTX 4090,used,-5,USD,2026,https://x\n", "price"},
      {"GeForce RTX 4090,used,abc,USD,2026,https://x\n", "price"},
      {"GeForce RTX 4090,used,100,dollars,2026,https://x\n", "currency"},
      {"GeForce RTX 4090,used,100,USD,26/10/2026,https://x\n", "date"},
      {"GeForce RTX 4090,used,100,USD,2026,\n", "source"},
  };
  for (const auto &c : cases) {
    auto r = parse_prices(head + good + c.row, "mine.csv", kb);
    ASSERT_FALSE(r.ok()) << c.row;
    EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
    EXPECT_NE(r.error().message.find("mine.csv:3"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("column " + c.column), std::string::npos) << r.error().message;
  }
  auto missing = parse_prices("gpu,kind,price\n", "mine.csv", kb);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("currency"), std::string::npos);
}

TEST(PickData, OverrideReplacesEachGpuAndKindItPrices) {
  const auto &kb = kb::builtin();
  auto user = parse_prices("gpu,kind,price,currency,date,source\n"
                           "GeForce RTX 4090,street_new,1234,USD,2026-11,my shop\n",
                           "mine.csv", kb);
  ASSERT_TRUE(user.ok());
  auto merged = override_prices(builtin_prices(), *user);
  int new4090 = 0, msrp4090 = 0;
  for (const auto &p : merged) {
    if (p.gpu == "GeForce RTX 4090" && p.kind == PriceKind::street_new) {
      ++new4090;
      EXPECT_EQ(p.amount, 1234);
    }
    if (p.gpu == "GeForce RTX 4090" && p.kind == PriceKind::msrp)
      ++msrp4090;
  }
  EXPECT_EQ(new4090, 1);
  EXPECT_EQ(msrp4090, 1) << "other kinds of the same GPU stay";
}

TEST(PickData, AgeOfAPrice) {
  EXPECT_EQ(age_days("2026-11-25", "2026-11-25T10:00:00Z"), 0);
  EXPECT_EQ(age_days("2026-01-01", "2026-11-25"), 328);
  EXPECT_EQ(age_days("2026", "2026-11-25"), 328) << "a bare year counts from January 1";
  EXPECT_EQ(age_days("2024-07", "2026-11-25"), 877);
  EXPECT_FALSE(age_days("", "2026-11-25"));
  EXPECT_FALSE(age_days("2026-13", "2026-11-25"));
}

TEST(PickData, MsrpComesFromTheGpuCatalog) {
  auto msrp = msrp_prices(kb::builtin());
  auto it = std::find_if(msrp.begin(), msrp.end(),
                         [](const Price &p) { return p.gpu == "GeForce RTX 4090"; });
  ASSERT_NE(it, msrp.end());
  EXPECT_EQ(it->amount, 1599);
  EXPECT_EQ(it->date, "2022");
  EXPECT_EQ(it->file, "data/gpus.csv");
}

TEST(PickData, SizingRulesAreSourcedAndInRange) {
  const auto &s = builtin_sizing();
  for (const auto &c : s.constants) {
    SCOPED_TRACE(c.rule);
    EXPECT_FALSE(c.source.empty());
    EXPECT_FALSE(c.unit.empty());
    if (c.unit == "W") {
      EXPECT_TRUE(c.value >= 50 && c.value <= 5000);
    }
    if (c.unit == "ratio") {
      EXPECT_TRUE(c.value > 0 && c.value <= 4);
    }
    if (c.unit == "lanes") {
      EXPECT_TRUE(c.value == 4 || c.value == 8 || c.value == 16);
    }
    if (c.unit == "B/s") {
      EXPECT_TRUE(c.value >= 1e7 && c.value <= 1e11);
    }
  }
  // Disk rates in the order of the interfaces: a hard disk, SATA, NVMe.
  EXPECT_LT(s["hdd_read_bytes_per_s"], s["sata_ssd_read_bytes_per_s"]);
  EXPECT_LT(s["sata_ssd_read_bytes_per_s"], s["nvme_read_bytes_per_s"]);
  // Every rule plan_machine reads is present (Sizing::at throws otherwise).
  for (const char *rule : {"gpu_lanes_consumer",
                           "gpu_lanes_datacenter",
                           "cpu_cores_per_gpu",
                           "ram_per_gpu_memory",
                           "psu_cpu_w",
                           "psu_rest_w",
                           "gpu_excursion_factor",
                           "psu_excursion_factor",
                           "pcie_8pin_w",
                           "connector_12v_2x6_w",
                           "pcie_slot_w",
                           "circuit_us_w",
                           "power_limit_fraction",
                           "power_limit_throughput",
                           "open_air_max_gpus",
                           "decode_images_per_s_per_thread",
                           "bytes_per_image",
                           "nvme_read_bytes_per_s",
                           "sata_ssd_read_bytes_per_s",
                           "hdd_read_bytes_per_s",
                           "egpu_thunderbolt_inference_loss",
                           "egpu_oculink_inference_loss"})
    EXPECT_NO_THROW(s.at(rule)) << rule;
  ASSERT_GE(s.platforms.size(), 3u);
  for (std::size_t i = 0; i < s.platforms.size(); ++i) {
    EXPECT_FALSE(s.platforms[i].source.empty());
    if (i > 0) {
      EXPECT_GE(s.platforms[i].cpu_lanes, s.platforms[i - 1].cpu_lanes) << "smallest first";
    }
  }
}

TEST(PickData, PlatformParserNamesTheRow) {
  auto r = parse_platforms("platform,cpu_lanes,pcie_gen,max_gpus,source,notes\n"
                           "X,24,5,2,src,\nY,two,5,2,src,\n",
                           "platforms.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("platforms.csv:3: column cpu_lanes"), std::string::npos)
      << r.error().message;
}

// The PSU rule reproduces Intel's worked example: a 300 W GPU on ATX 3.0 -> a 750 W PSU.
TEST(PickMachine, PsuReproducesIntelsExample) {
  kb::GpuSpec g;
  g.name = "300 W card";
  g.form_factor = "desktop";
  g.memory_gb = 24;
  g.tdp_w = 300;
  MachineInput in;
  in.gpu = &g;
  auto plan = plan_machine(in, builtin_sizing());
  EXPECT_DOUBLE_EQ(plan.psu_w, 750);
  EXPECT_DOUBLE_EQ(plan.ram_bytes, 64e9) << "2 x 24 GB -> 48 GB -> sold as 64 GB";
  EXPECT_EQ(plan.cpu_cores, 4);
  EXPECT_EQ(plan.platform, "Intel LGA1700 (Core i9-14900K)");
}

TEST(PickMachine, FourOpenAirCardsNeedAWorkstationPlatformCoolingAndA230VCircuit) {
  const auto *g = kb::builtin().find_gpu("GeForce RTX 4090");
  ASSERT_NE(g, nullptr);
  MachineInput in;
  in.gpu = g;
  in.count = 4;
  auto plan = plan_machine(in, builtin_sizing());
  EXPECT_EQ(plan.platform, "AMD Threadripper PRO 5000WX") << "32 lanes: more than AM5's 24";
  auto has = [&](const std::string &id) {
    for (const auto &r : plan.rules)
      if (r.id == id)
        return r.warning;
    return false;
  };
  EXPECT_TRUE(has("cooling"));
  EXPECT_TRUE(has("circuit")) << "4 x 450 W + 450 W > 1800 W";
  EXPECT_EQ(plan.cpu_cores, 16);
  EXPECT_DOUBLE_EQ(plan.ram_bytes, 192e9) << "2 x 96 GB";
  for (const auto &r : plan.rules)
    EXPECT_FALSE(r.source.empty()) << r.id;
}

TEST(PickMachine, ImagePipelineSizesDecodeThreadsAndStorage) {
  const auto *g = kb::builtin().find_gpu("NVIDIA A100 80GB SXM4");
  MachineInput in;
  in.gpu = g;
  in.count = 8;
  in.images = true;
  in.samples_per_s = 16621;
  in.bytes_per_sample = builtin_sizing()["bytes_per_image"];
  in.dataset_bytes = 1281167 * in.bytes_per_sample.value();
  auto plan = plan_machine(in, builtin_sizing());
  EXPECT_EQ(plan.cpu_cores, 138) << "16621 / 121 images per thread";
  EXPECT_NEAR(*plan.read_bytes_per_s, 16621 * 117000.0, 1);
}

} // namespace
} // namespace dlrig::pick
