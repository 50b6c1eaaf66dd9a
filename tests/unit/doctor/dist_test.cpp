#include "unit/doctor/machines.hpp"

#include <gtest/gtest.h>

namespace dlrig::doctor::test {
namespace {

TEST(DoctorDist, MasterPortInUse) {
  Snapshot s = healthy_server();
  s.software.master_port_in_use = true;
  s.software.env["MASTER_PORT"] = "29500";
  auto f = run_check("dist.master-port-in-use", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fix[0], "find the holder: ss -ltnp 'sport = :29500'");
  EXPECT_TRUE(run_check("dist.master-port-in-use", healthy_server()).empty());
}

TEST(DoctorDist, NcclEnvLeftFromDebugging) {
  Snapshot s = healthy_server();
  s.software.env["NCCL_DEBUG"] = "INFO";
  s.software.env["NCCL_P2P_DISABLE"] = "1";
  s.software.env["NCCL_IB_DISABLE"] = "1";
  auto f = run_check("dist.nccl-env", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fix.size(), 3u);
  Snapshot warn_level = healthy_server();
  warn_level.software.env["NCCL_DEBUG"] = "WARN";
  EXPECT_TRUE(run_check("dist.nccl-env", warn_level).empty());
  // P2P disabled on PCIe-only GPUs is the documented stopgap, not a mistake.
  Snapshot desk = healthy_desktop();
  desk.software.env["NCCL_P2P_DISABLE"] = "1";
  EXPECT_TRUE(run_check("dist.nccl-env", desk).empty());
}

TEST(DoctorDist, SocketIfname) {
  Snapshot s = healthy_server();
  s.software.env["NCCL_SOCKET_IFNAME"] = "eth0";
  EXPECT_EQ(worst("dist.socket-ifname", s), Severity::fail);
  s.software.env["NCCL_SOCKET_IFNAME"] = "enp";
  EXPECT_TRUE(run_check("dist.socket-ifname", s).empty());
  s.software.env["NCCL_SOCKET_IFNAME"] = "^docker,lo";
  EXPECT_TRUE(run_check("dist.socket-ifname", s).empty());
  s.software.env["NCCL_SOCKET_IFNAME"] = "=enp170s0";
  EXPECT_EQ(worst("dist.socket-ifname", s), Severity::fail);
}

TEST(DoctorDist, RankEnv) {
  Snapshot s = healthy_server();
  s.software.env["RANK"] = "4";
  s.software.env["WORLD_SIZE"] = "4";
  EXPECT_EQ(worst("dist.rank-env", s), Severity::fail);
  s.software.env["RANK"] = "3";
  EXPECT_TRUE(run_check("dist.rank-env", s).empty());
  s.software.env["LOCAL_RANK"] = "8";
  EXPECT_EQ(worst("dist.rank-env", s), Severity::fail);
  Snapshot bad = healthy_server();
  bad.software.env["MASTER_PORT"] = "auto";
  EXPECT_EQ(worst("dist.rank-env", bad), Severity::fail);
  // A number that is no port fails too; the ends of the range do not.
  for (const char *port : {"99999", "0", "-1", "65536"}) {
    bad.software.env["MASTER_PORT"] = port;
    auto f = run_check("dist.rank-env", bad);
    ASSERT_EQ(f.size(), 1u) << port;
    EXPECT_NE(f[0].title.find("is not a port number (1-65535)"), std::string::npos) << f[0].title;
  }
  for (const char *port : {"1", "29500", "65535"}) {
    bad.software.env["MASTER_PORT"] = port;
    EXPECT_TRUE(run_check("dist.rank-env", bad).empty()) << port;
  }
}

// ---- dist.nccl-not-found: only with 2+ GPUs or a distributed launch ------------------------

TEST(DoctorDist, NcclNowhereWarnsOnAMultiGpuMachine) {
  Snapshot s = healthy_server(); // 8 GPUs
  s.software.nccl_files =
      LibraryFiles{{"/home/ana/venv/lib/python3.11/site-packages/nvidia/nccl/lib"}, {}};
  auto f = run_check("dist.nccl-not-found", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warn);
  EXPECT_EQ(f[0].title, "NCCL (libnccl.so*) is not in the 1 folder looked in: "
                        "torch.distributed's nccl backend and dlrig bench's nccl.* cannot load it");
  EXPECT_EQ(f[0].fix.front(), "pip install nvidia-nccl-cu12");
  EXPECT_TRUE(run_check("dist.nccl-not-found", healthy_server()).empty()); // found: passes
}

TEST(DoctorDist, NcclIsNoConcernOnOneGpuWithoutADistributedLaunch) {
  Snapshot s = healthy_desktop(); // one GPU
  s.software.nccl_files = LibraryFiles{{"/usr/lib/x86_64-linux-gnu"}, {}};
  EXPECT_TRUE(run_check("dist.nccl-not-found", s).empty());
  const Check *c = find_check("dist.nccl-not-found");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(not_applicable(*c, s)) << "one GPU, no launch: not applicable";
  s.software.env["WORLD_SIZE"] = "4"; // one GPU per node, four nodes
  EXPECT_EQ(worst("dist.nccl-not-found", s), Severity::warn);
  EXPECT_FALSE(not_applicable(*c, s));
}

} // namespace
} // namespace dlrig::doctor::test
