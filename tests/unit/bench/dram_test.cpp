// SMBIOS type-17 parsing and the DRAM's theoretical bandwidth (bench/dram.hpp), per-NUMA STREAM,
// and the expectations behind exit 1.
#include "dlrig/bench/bench.hpp"
#include "dlrig/bench/dram.hpp"
#include "dlrig/bench/report.hpp"

#include <gtest/gtest.h>

#include <sched.h>

#include <filesystem>
#include <fstream>

namespace dlrig::bench {
namespace {

// A type-17 record of SMBIOS 3.x layout (0x28 bytes formatted), then its strings.
std::vector<std::uint8_t> type17(std::uint16_t size_mb, std::uint16_t speed,
                                 std::uint16_t configured, const std::string &device,
                                 const std::string &bank, std::uint16_t width = 64,
                                 std::uint8_t type = 0x22) {
  std::vector<std::uint8_t> r(0x28, 0);
  r[0] = 17;
  r[1] = 0x28;
  auto put = [&](std::size_t at, std::uint16_t v) {
    r[at] = static_cast<std::uint8_t>(v & 0xff);
    r[at + 1] = static_cast<std::uint8_t>(v >> 8);
  };
  put(0x08, width);
  put(0x0A, width);
  put(0x0C, size_mb);
  r[0x10] = 1; // device locator: string 1
  r[0x11] = 2; // bank locator: string 2
  r[0x12] = type;
  put(0x15, speed);
  put(0x20, configured);
  for (const auto &s : {device, bank}) {
    r.insert(r.end(), s.begin(), s.end());
    r.push_back(0);
  }
  r.push_back(0);
  return r;
}

TEST(Dram, ParsesType17Fields) {
  auto d = parse_type17(type17(16384, 4800, 4400, "DIMM_A1", "P0 CHANNEL A"));
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->installed);
  EXPECT_EQ(d->device_locator, "DIMM_A1");
  EXPECT_EQ(d->bank_locator, "P0 CHANNEL A");
  EXPECT_EQ(d->configured_mts, 4400); // the configured speed wins over the rated one
  EXPECT_EQ(d->data_width_bits, 64);
  EXPECT_EQ(d->channel, "p0 channel a");
  EXPECT_EQ(d->memory_type, "DDR5");
  EXPECT_EQ(parse_type17(type17(8192, 3200, 3200, "A1", "B", 64, 0x1A))->memory_type, "DDR4");
  EXPECT_EQ(parse_type17(type17(8192, 6400, 6400, "A1", "B", 64, 0x23))->memory_type, "LPDDR5");
  EXPECT_FALSE(parse_type17(type17(8192, 3200, 3200, "A1", "B", 64, 0x02))->memory_type); // Unknown
  auto empty = parse_type17(type17(0, 0, 0, "DIMM_B1", "P0 CHANNEL B"));
  ASSERT_TRUE(empty);
  EXPECT_FALSE(empty->installed);
  EXPECT_FALSE(parse_type17({16, 0x17}));          // another type
  EXPECT_FALSE(parse_type17({17, 0x28, 0, 0, 0})); // truncated
}

TEST(Dram, ChannelNamesFromLocators) {
  EXPECT_EQ(channel_of("BANK 0", "ChannelA-DIMM0"), "channel a");
  EXPECT_EQ(channel_of("P1 CHANNEL B", "DIMM 1"), "p1 channel b");
  EXPECT_EQ(channel_of("P0_Node0_Channel3_Dimm0", ""), "p0_node0_channel 3");
  EXPECT_FALSE(channel_of("BANK 0", "DIMM A1")); // no channel named: unknown, not guessed
}

TEST(Dram, PeakIsChannelsTimesSpeedTimesWidth) {
  std::vector<Dimm> dimms;
  for (auto [dev, bank] : {std::pair{"DIMM_A1", "P0 CHANNEL A"},
                           {"DIMM_A2", "P0 CHANNEL A"},
                           {"DIMM_B1", "P0 CHANNEL B"}})
    dimms.push_back(*parse_type17(type17(16384, 3200, 3200, dev, bank)));
  dimms.push_back(*parse_type17(type17(0, 0, 0, "DIMM_C1", "P0 CHANNEL C"))); // empty slot
  auto p = dram_peak(dimms);
  ASSERT_TRUE(p.bytes_per_s);
  EXPECT_EQ(p.channels, 2);                         // two modules share channel A
  EXPECT_DOUBLE_EQ(*p.bytes_per_s, 2 * 3200e6 * 8); // 51.2 GB/s
  EXPECT_NE(p.assumption.find("2 x 3200 MT/s x 8 B"), std::string::npos) << p.assumption;

  dimms.push_back(*parse_type17(type17(16384, 3200, 3200, "DIMM 7", "BANK 7")));
  EXPECT_FALSE(dram_peak(dimms).bytes_per_s); // a module without a channel: unknown
  EXPECT_FALSE(dram_peak({}).bytes_per_s);
  EXPECT_NE(dram_peak({}).assumption.find("unknown"), std::string::npos);
}

TEST(Dram, SocketLabelsFromLocators) {
  EXPECT_EQ(socket_of("P0 CHANNEL A", "DIMM 0"), 0);
  EXPECT_EQ(socket_of("P1 CHANNEL A", "DIMM 1"), 1);
  EXPECT_EQ(socket_of("NODE 1", "CPU2_DIMM_A1"), 2); // the CPU label wins over the node
  EXPECT_EQ(socket_of("NODE 1", "DIMM_A1"), 1);
  EXPECT_EQ(socket_of("P0_Node0_Channel3_Dimm0", ""), 0);
  EXPECT_EQ(socket_of("", "PROC 2 DIMM 4"), 2);
  EXPECT_EQ(socket_of("SOCKET 0", "DIMM 0"), 0);
  EXPECT_EQ(socket_of("", "P1-DIMMA1"), 1);
  EXPECT_FALSE(socket_of("BANK 0", "ChannelA-DIMM0")); // no socket named: unknown
  EXPECT_FALSE(socket_of("", "A1"));                   // Dell's slot names: unknown
  EXPECT_FALSE(socket_of("", "DIMM_A1"));
}

// Two sockets labelled `first` and `second`: channels A and B (two modules) on the first, A on
// the second, whose channel B slot is empty.
std::vector<Dimm> two_sockets(const std::string &first, const std::string &second) {
  std::vector<Dimm> dimms;
  for (auto [dev, bank] : {std::pair{"DIMM 0", first + " CHANNEL A"},
                           {"DIMM 0", first + " CHANNEL B"},
                           {"DIMM 1", first + " CHANNEL B"},
                           {"DIMM 0", second + " CHANNEL A"}})
    dimms.push_back(*parse_type17(type17(16384, 3200, 3200, dev, bank)));
  dimms.push_back(*parse_type17(type17(0, 0, 0, "DIMM 0", second + " CHANNEL B")));
  return dimms;
}

TEST(Dram, NodePeakIsItsSocketsChannels) {
  auto dimms = two_sockets("P0", "P1");
  EXPECT_DOUBLE_EQ(*dram_peak(dimms).bytes_per_s, 3 * 3200e6 * 8);
  auto n0 = node_dram_peak(dimms, 0, 2, 2), n1 = node_dram_peak(dimms, 1, 2, 2);
  ASSERT_TRUE(n0.bytes_per_s) << n0.assumption;
  ASSERT_TRUE(n1.bytes_per_s) << n1.assumption;
  EXPECT_DOUBLE_EQ(*n0.bytes_per_s, 2 * 3200e6 * 8);
  EXPECT_DOUBLE_EQ(*n1.bytes_per_s, 1 * 3200e6 * 8);
  EXPECT_EQ(n0.channels, 2);
  EXPECT_NE(n0.assumption.find("assumes NUMA node = socket"), std::string::npos) << n0.assumption;
  // 1-based labels ("CPU1", "CPU2") rank the same way.
  auto one_based = two_sockets("CPU1", "CPU2");
  EXPECT_DOUBLE_EQ(*node_dram_peak(one_based, 1, 2, 2).bytes_per_s, 1 * 3200e6 * 8);
}

TEST(Dram, NodePeakUnknownWithItsReason) {
  auto dimms = two_sockets("P0", "P1");
  auto why = [&](const std::vector<Dimm> &d, int nodes, std::optional<int> sockets) {
    auto p = node_dram_peak(d, 0, nodes, sockets);
    EXPECT_FALSE(p.bytes_per_s) << p.assumption;
    return p.assumption;
  };
  EXPECT_NE(why(dimms, 4, 2).find("4 NUMA nodes on 2 sockets"), std::string::npos); // SNC/NPS
  EXPECT_NE(why(dimms, 2, std::nullopt).find("socket count is unknown"), std::string::npos);
  EXPECT_NE(why(dimms, 3, 3).find("name 2 sockets"), std::string::npos);
  auto unnamed = dimms;
  unnamed.push_back(*parse_type17(type17(16384, 3200, 3200, "DIMM 9", "CHANNEL C")));
  EXPECT_NE(why(unnamed, 2, 2).find("does not name its socket"), std::string::npos);
  // No channel in the locators: the machine's peak is unknown, so the node's is too.
  std::vector<Dimm> no_channel{*parse_type17(type17(16384, 3200, 3200, "CPU0_DIMM_A1", "NODE 0")),
                               *parse_type17(type17(16384, 3200, 3200, "CPU1_DIMM_A1", "NODE 1"))};
  EXPECT_NE(why(no_channel, 2, 2).find("machine's peak"), std::string::npos);
  EXPECT_FALSE(node_dram_peak({}, 0, 2, 2).bytes_per_s);
}

TEST(Dram, ReadsEntriesFromAFolder) {
  auto root = std::filesystem::temp_directory_path() / ("dlrig-dmi-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "17-0");
  std::filesystem::create_directories(root / "16-0");
  auto rec = type17(8192, 2666, 2666, "ChannelB-DIMM0", "BANK 2");
  std::ofstream(root / "17-0" / "raw", std::ios::binary)
      .write(reinterpret_cast<const char *>(rec.data()), static_cast<std::streamsize>(rec.size()));
  auto dimms = probe::read_dimms(Sysroot(root.string()), "/");
  std::filesystem::remove_all(root);
  ASSERT_EQ(dimms.size(), 1u);
  EXPECT_EQ(dimms[0].channel, "channel b");
}

TEST(Expectations, FloorsFromCitedFacts) {
  auto nvme = storage_expectation(std::string("nvme"));
  ASSERT_TRUE(nvme);
  EXPECT_DOUBLE_EQ(nvme->min_rate, 0.6);
  EXPECT_FALSE(nvme->source.empty());
  EXPECT_DOUBLE_EQ(storage_expectation(std::string("sata-ssd"))->min_rate, 0.3);
  EXPECT_FALSE(storage_expectation(std::string("hdd")));
  EXPECT_FALSE(storage_expectation(std::nullopt));
  auto stream = stream_expectation(51.2);
  ASSERT_TRUE(stream);
  EXPECT_DOUBLE_EQ(stream->min_rate, 25.6);
  EXPECT_TRUE(stream->on_best);
  EXPECT_FALSE(stream_expectation(0));
}

Benchmark fixed(const char *id, double rate_gbs) {
  return {id,
          "x",
          "fixed",
          "nothing",
          nullptr,
          [](const Context &) {
            return std::vector<Config>{{"a", {}}};
          },
          [rate_gbs](const Config &, const Context &, Sampler &s) {
            while (s.more())
              s.add(1.0);
            Outcome o;
            o.work = rate_gbs * 1e9;
            o.work_unit = "B";
            o.rate_unit = "GB/s";
            o.expectation = Expectation{2.0, false, "two", ""};
            return o;
          }};
}

TEST(Expectations, BelowTheFloorExitsOneAndWrongStillTwo) {
  Context ctx;
  ctx.tier = Tier::quick;
  auto low = fixed("x.low", 1.0), high = fixed("x.high", 3.0);
  auto rs = run_all({&low, &high}, RunOptions{ctx, nullptr, nullptr, nullptr});
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].below_expectation, true);
  EXPECT_EQ(rs[1].below_expectation, false);
  EXPECT_EQ(to_json(rs[0])["expectation"]["met"], false);
  EXPECT_EQ(exit_status(rs), 1);
  EXPECT_EQ(exit_status({rs[1]}), 0);
  Record wrong;
  wrong.status = Status::wrong;
  rs.push_back(wrong);
  EXPECT_EQ(exit_status(rs), 2);
  // The test hook replaces the family's floor.
  ctx.test_expectations["x.high"] = 5.0;
  auto hooked = run_all({&high}, RunOptions{ctx, nullptr, nullptr, nullptr});
  EXPECT_EQ(hooked[0].below_expectation, true);
}

TEST(Runner, AStopRequestEndsTheRunBeforeTheNextBenchmark) {
  Context ctx;
  ctx.tier = Tier::quick;
  auto a = fixed("x.a", 3.0), b = fixed("x.b", 3.0);
  int asked = 0;
  RunOptions o{ctx, nullptr, nullptr, [&] { return ++asked > 2; }};
  auto rs = run_all({&a, &b}, o);
  ASSERT_EQ(rs.size(), 1u); // x.a ran; the stop came before x.b
  EXPECT_EQ(rs[0].id, "x.a");
}

TEST(StreamNuma, OneConfigPerNodeAndThreadsPinnedToIt) {
  Snapshot snap;
  snap.host.cpu.numa_nodes = {{0, std::string("0"), std::nullopt},
                              {1, std::string("1"), std::nullopt}};
  Context ctx;
  ctx.tier = Tier::quick;
  ctx.small = true;
  ctx.hardware_threads = 2;
  ctx.snapshot = &snap;
  const Benchmark *triad = nullptr;
  for (auto &b : registry())
    if (b.id == "cpu.stream.triad")
      triad = &b;
  ASSERT_NE(triad, nullptr);
  auto configs = triad->configs(ctx);
  ASSERT_EQ(configs.size(), 3u); // all threads, node 0, node 1
  EXPECT_NE(configs[1].label.find("node=0 threads=1"), std::string::npos) << configs[1].label;
  // Node 0 alone (this machine's CPU 0 exists everywhere).
  cpu_set_t before, after;
  ASSERT_EQ(::sched_getaffinity(0, sizeof before, &before), 0);
  Sampler s(stop_rule(Tier::quick));
  auto o = triad->run(configs[1], ctx, s);
  ASSERT_EQ(::sched_getaffinity(0, sizeof after, &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after)); // the caller, member 0 of the team, is unpinned again
  EXPECT_FALSE(o.verification_error) << *o.verification_error;
  EXPECT_EQ(o.details["numa_node"], 0);
  EXPECT_NE(o.details["binding"].get<std::string>().find("pinned to node 0"), std::string::npos)
      << o.details.dump();
  EXPECT_FALSE(o.expectation); // no socket count in the snapshot: the node's share is unknown
  EXPECT_NE(o.peak_assumption.value_or("").find("per node"), std::string::npos);
  EXPECT_NE(o.details["team"].get<std::string>().find("persistent"), std::string::npos);
}

} // namespace
} // namespace dlrig::bench
