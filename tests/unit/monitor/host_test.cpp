#include "dlrig/monitor/host.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dlrig::monitor {
namespace {

using namespace std::string_literals;

TEST(MonitorHost, ProcStatGivesBusyAndTotalTicks) {
  auto t = parse_proc_stat("cpu  100 10 50 800 40 5 5 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->busy, 170u);   // user nice system irq softirq steal
  EXPECT_EQ(t->total, 1010u); // + idle + iowait
  EXPECT_FALSE(parse_proc_stat("intr 0\n"));
  EXPECT_FALSE(parse_proc_stat("cpu  x y z w\n"));
}

TEST(MonitorHost, CpuRatioIsTheBusyShareOfTheInterval) {
  EXPECT_DOUBLE_EQ(*cpu_ratio({100, 1000}, {190, 1100}), 0.9);
  EXPECT_FALSE(cpu_ratio({100, 1000}, {100, 1000})); // no time passed
  EXPECT_FALSE(cpu_ratio({100, 1000}, {50, 900}));   // counters went back
}

TEST(MonitorHost, DiskstatsAndTheMountOfAPath) {
  auto disks = parse_diskstats(" 259       0 nvme0n1 120034 0 98765432 50000 80000 0 45678912 "
                               "90000 0 60000 140000\n   8 16 sdb 1 2 3 4 5 6 7 8 9 10 11\nbad\n");
  ASSERT_EQ(disks.size(), 2u);
  EXPECT_EQ(disks[0].name, "nvme0n1");
  EXPECT_EQ(disks[0].sectors_read, 98765432u);
  EXPECT_EQ(disks[0].sectors_written, 45678912u);
  EXPECT_EQ(find_disk(disks, 8, 16)->name, "sdb");
  EXPECT_EQ(find_disk(disks, 8, 17), nullptr);

  const char *mi = "22 1 259:1 / / rw - ext4 /dev/nvme0n1p1 rw\n"
                   "35 22 259:2 / /data rw - ext4 /dev/nvme0n1p2 rw\n"
                   "36 22 8:17 / /data2 rw - ext4 /dev/sdb1 rw\n"
                   "37 22 8:33 / /mnt/with\\040space rw - ext4 /dev/sdc1 rw\n";
  auto m = mount_for(mi, "/data/imagenet/train");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->minor, 2u);
  EXPECT_EQ(m->mount_point, "/data");
  EXPECT_EQ(mount_for(mi, "/data2/x")->minor, 17u); // not /data: a prefix of the name only
  EXPECT_EQ(mount_for(mi, "/home/alice")->mount_point, "/");
  EXPECT_EQ(mount_for(mi, "/mnt/with space/a")->minor, 33u);
}

TEST(MonitorHost, UsersAndCommandLines) {
  auto users = parse_passwd("root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/a:/bin/sh\n"
                            "broken line\n");
  EXPECT_EQ(users.at(1000), "alice");
  EXPECT_EQ(users.size(), 2u);
  EXPECT_EQ(parse_status_uid("Name:\tpython\nUid:\t1000\t1000\t1000\t1000\n"), 1000u);
  EXPECT_EQ(parse_status_uid("Name:\tpython\n"), std::nullopt);
  EXPECT_EQ(parse_cmdline("python\0train.py\0--lr\0"
                          "0.1\0"s),
            "python train.py --lr 0.1");
  EXPECT_EQ(parse_cmdline(""), std::nullopt);
}

TEST(MonitorHost, ReaderOnAFixtureHost) {
  Sysroot fs(std::string(DLRIG_TEST_DATA) + "/training-rtx4090");
  HostReader r(fs, "/data/imagenet");
  HostSample first = r.read(1.0);
  EXPECT_FALSE(first.cpu_utilization_ratio); // one reading: no interval yet
  EXPECT_EQ(first.memory_total_bytes, 65799364.0 * 1024);
  EXPECT_EQ(first.memory_available_bytes, 52011220.0 * 1024);
  EXPECT_EQ(first.data_device, "nvme0n1p2");
  EXPECT_FALSE(first.data_read_bytes_per_second);
  // The same files again: no tick passed, so no CPU share; no sector moved, so 0 B/s.
  HostSample second = r.read(2.0);
  EXPECT_FALSE(second.cpu_utilization_ratio);
  EXPECT_EQ(second.data_read_bytes_per_second, 0.0);

  ProcessSample p;
  p.pid = 48211;
  r.describe(p);
  EXPECT_TRUE(p.visible);
  EXPECT_EQ(p.user, "alice");
  EXPECT_EQ(p.command, "python train.py --batch-size 64");
  ProcessSample hidden;
  hidden.pid = 51234;
  r.describe(hidden);
  EXPECT_FALSE(hidden.visible);
  EXPECT_FALSE(hidden.user);
}

} // namespace
} // namespace dlrig::monitor
