// pick's data: every price, platform and sizing constant in range and sourced, the parser naming
// the bad row, --prices overriding per GPU and kind, the age of a price.
#include "dlrig/kb/kb.hpp"
#include "dlrig/pick/data.hpp"
#include "dlrig/pick/machine.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
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
  // A day the month does not have is no date (2026-02-31 was read as March 3rd).
  EXPECT_FALSE(age_days("2026-02-31", "2026-11-25"));
  EXPECT_FALSE(age_days("2026-04-31", "2026-11-25"));
  EXPECT_FALSE(age_days("2026-02-29", "2026-11-25"));
  EXPECT_EQ(age_days("2024-02-29", "2024-03-01"), 1); // a leap year
  EXPECT_FALSE(age_days("2100-02-29", "2100-03-01")); // a century that is not
  EXPECT_EQ(age_days("2000-02-29", "2000-03-01"), 1); // one that is
  EXPECT_EQ(age_days("2026-12-31", "2027-01-01"), 1);
}

TEST(PickData, APriceRowWithADayItsMonthLacksOrAnAbsurdAmountIsRefused) {
  auto bad_date = parse_prices("gpu,kind,price,currency,date,source\n"
                               "GeForce RTX 4090,street_new,1800,USD,2026-02-31,me\n",
                               "p.csv", kb::builtin());
  ASSERT_FALSE(bad_date.ok());
  EXPECT_EQ(bad_date.error().kind, ErrorKind::bad_input);
  EXPECT_NE(bad_date.error().message.find("p.csv:2"), std::string::npos)
      << bad_date.error().message;
  EXPECT_NE(bad_date.error().message.find("\"2026-02-31\" is not YYYY, YYYY-MM or YYYY-MM-DD"),
            std::string::npos)
      << bad_date.error().message;
  auto huge = parse_prices("gpu,kind,price,currency,date,source\n"
                           "GeForce RTX 4090,street_new,1e300,USD,2026-02,me\n",
                           "p.csv", kb::builtin());
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message.find("must be a positive number up to 10000000"),
            std::string::npos)
      << huge.error().message;
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

// data/fx.csv: one day's ECB reference rates, every row sourced by the ECB, in range.
TEST(PickData, ExchangeRatesAreTheEcbsOfOneDayAndInRange) {
  const auto &fx = builtin_fx();
  const auto known = fx_currencies(fx);
  for (const char *c : {"EUR", "USD", "CNY", "GBP", "JPY"})
    EXPECT_NE(std::find(known.begin(), known.end(), c), known.end()) << c;
  // Plausible bands (units per EUR) that catch a swapped or mistyped rate.
  const std::map<std::string, std::pair<double, double>> band = {
      {"EUR", {1, 1}},    {"USD", {0.8, 1.6}},  {"GBP", {0.6, 1.2}}, {"JPY", {90, 250}},
      {"CNY", {5, 10}},   {"CHF", {0.7, 1.6}},  {"CAD", {1.1, 2.2}}, {"AUD", {1.1, 2.4}},
      {"INR", {60, 150}}, {"KRW", {1000, 2000}}};
  for (const auto &f : fx) {
    SCOPED_TRACE(f.currency);
    EXPECT_EQ(f.date, fx.front().date) << "one day's rates";
    EXPECT_EQ(f.source.rfind("https://www.ecb.europa.eu/", 0), 0u) << f.source;
    auto b = band.find(f.currency);
    ASSERT_NE(b, band.end()) << "every currency has a band here";
    EXPECT_GE(f.per_eur, b->second.first);
    EXPECT_LE(f.per_eur, b->second.second);
  }
}

TEST(PickData, ConversionGoesThroughTheEuro) {
  const auto &fx = builtin_fx();
  auto c = conversion(fx, "USD", "EUR", "2026-11-25");
  ASSERT_TRUE(c);
  EXPECT_NEAR(c->factor, 1 / 1.1269, 1e-12);
  EXPECT_EQ(c->age_days, 50);
  EXPECT_FALSE(c->stale);
  auto cny = conversion(fx, "CNY", "USD");
  ASSERT_TRUE(cny);
  EXPECT_NEAR(cny->factor, 1.1269 / 7.5554, 1e-12);
  EXPECT_EQ(conversion(fx, "USD", "USD")->factor, 1);
  EXPECT_FALSE(conversion(fx, "USD", "XYZ"));
  EXPECT_TRUE(conversion(fx, "USD", "EUR", "2027-03-01")->stale);

  // in_currency: rows converted with their original kept, rows without a rate left out.
  std::vector<Price> prices(2);
  prices[0].gpu = prices[1].gpu = "GeForce RTX 4090";
  prices[0].amount = 1000;
  prices[0].currency = "CNY";
  prices[1].amount = 5;
  prices[1].currency = "XYZ";
  std::vector<Conversion> used;
  auto out = in_currency(prices, "USD", fx, "2026-11-25", &used);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NEAR(out[0].amount, 1000 * 1.1269 / 7.5554, 1e-9);
  EXPECT_EQ(out[0].original_amount, 1000);
  EXPECT_EQ(out[0].original_currency, "CNY");
  ASSERT_EQ(used.size(), 1u);
  EXPECT_EQ(used[0].from, "CNY");
}

TEST(PickData, FxParserNamesTheBadRow) {
  auto r = parse_fx("currency,per_eur,date,source,notes\nUSD,1.1,2026-10-06,ecb,\nusd,1,2026-10-06,"
                    "ecb,\n",
                    "fx.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("fx.csv:3"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("currency"), std::string::npos) << r.error().message;
  r = parse_fx("currency,per_eur,date,source,notes\nUSD,-1,2026-10-06,ecb,\n", "fx.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("per_eur"), std::string::npos) << r.error().message;
}

// data/part_prices.csv: every row sourced by a URL, dated where the source dates it, in range per
// part, and in a currency the exchange rates cover.
TEST(PickData, PartPricesAreSourcedAndInRange) {
  const auto &parts = builtin_part_prices();
  ASSERT_GE(parts.size(), 6u);
  const auto known = fx_currencies(builtin_fx());
  std::set<Part> priced;
  for (const auto &p : parts) {
    SCOPED_TRACE("data/part_prices.csv:" + std::to_string(p.line));
    priced.insert(p.part);
    EXPECT_EQ(p.source.rfind("https://", 0), 0u) << p.source;
    EXPECT_NE(std::find(known.begin(), known.end(), p.currency), known.end()) << p.currency;
    const double usd = p.amount * conversion(builtin_fx(), p.currency, "USD")->factor;
    switch (p.part) {
    case Part::ram_ddr4:
    case Part::ram_ddr5: // per kit: $0.5 to $50 per GB
      ASSERT_TRUE(p.capacity_gb);
      EXPECT_GE(usd / *p.capacity_gb, 0.5);
      EXPECT_LE(usd / *p.capacity_gb, 50);
      break;
    case Part::nvme_ssd: // per drive: $0.02 to $1 per GB
      ASSERT_TRUE(p.capacity_gb);
      EXPECT_GE(usd / *p.capacity_gb, 0.02);
      EXPECT_LE(usd / *p.capacity_gb, 1);
      break;
    default: // a dock, a PSU, a board: $50 to $2000
      EXPECT_GE(usd, 50);
      EXPECT_LE(usd, 2000);
    }
    if (!p.date.empty()) {
      EXPECT_TRUE(age_days(p.date, "2026-11-25").has_value()) << p.date;
    }
  }
  for (Part p :
       {Part::ram_ddr4, Part::ram_ddr5, Part::nvme_ssd, Part::egpu_thunderbolt, Part::egpu_oculink})
    EXPECT_TRUE(priced.count(p)) << name(p);
}

TEST(PickData, PartQuotePicksTheNewestKitBigEnoughAndConverts) {
  const auto &parts = builtin_part_prices();
  const auto &fx = builtin_fx();
  auto q = quote_part(parts, Part::ram_ddr5, "USD", fx, "2026-11-25", 40);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->capacity_gb, 64);
  EXPECT_EQ(q->amount, 679.99);
  q = quote_part(parts, Part::ram_ddr5, "USD", fx, "2026-11-25", 200); // more than any kit
  ASSERT_TRUE(q);
  EXPECT_EQ(q->capacity_gb, 64) << "the largest kit, bought as many times as needed";
  q = quote_part(parts, Part::egpu_oculink, "USD", fx, "2026-11-25");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->original_currency, "CNY");
  EXPECT_NEAR(q->amount, 1499 * 1.1269 / 7.5554, 1e-9);
  EXPECT_TRUE(q->stale) << "2024-04-26 is over a year old";
  EXPECT_FALSE(quote_part(parts, Part::psu, "USD", fx, "2026-11-25")) << "no row: unknown, not 0";
  EXPECT_FALSE(quote_part(parts, Part::board_lanes, "USD", fx, "2026-11-25"));
}

TEST(PickData, PartPriceParserNamesTheBadRow) {
  const std::string head = "part,capacity_gb,watts,kind,price,currency,date,seller,source,notes\n";
  auto r =
      parse_part_prices(head + "ram_ddr5,,,street_new,100,USD,2026,shop,https://x,\n", "p.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("p.csv:2"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("capacity_gb"), std::string::npos) << r.error().message;
  r = parse_part_prices(head + "gpu,,,street_new,100,USD,2026,shop,https://x,\n", "p.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("part"), std::string::npos) << r.error().message;
  r = parse_part_prices(head + "psu,,,street_new,100,USD,2026,shop,https://x,\n", "p.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("watts"), std::string::npos) << r.error().message;
}

} // namespace
} // namespace dlrig::pick
