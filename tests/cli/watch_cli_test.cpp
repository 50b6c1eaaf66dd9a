// dlrig watch and dlrig serve --once, the real binary on the fake NVML and the fixture host
// tests/data/training-rtx4090 (docs/testing.md, "Fake NVML"). The HTTP server is tested in
// tests/unit/monitor/exporter_test.cpp, with Prometheus in tests/monitor/.
#include "support/cli.hpp"

#include "dlrig/core/json.hpp"

#include <gtest/gtest.h>

#include <regex>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

namespace dlrig::test {
namespace {

std::vector<std::string> fake_nvml(const std::string &scenario) {
  return {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
          "DLRIG_FAKE_NVML_SCENARIO=" + fixture("nvml/" + scenario)};
}

std::vector<std::string> on_host(std::vector<std::string> args) {
  args.push_back("--sysroot");
  args.push_back(fixture("training-rtx4090"));
  return args;
}

TEST(WatchCli, OnceShowsGpusProcessesAndTheDiagnosis) {
  auto r = run_dlrig(on_host({"watch", "--once"}), fake_nvml("throttling.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("NVIDIA GeForce RTX 4090"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("48211"), std::string::npos);
  EXPECT_NE(r.out.find("alice"), std::string::npos);
  EXPECT_NE(r.out.find("python train.py --batch-size 64"), std::string::npos);
  EXPECT_NE(r.out.find("warning: GPU 0 is throttling (power cap 300 W, thermal 86 °C, hardware "
                       "thermal 86 °C): clocks 1,875 of 3,120 MHz"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos); // not a terminal: no escape codes
}

// On a terminal, --once's tables and diagnoses fit its width; piped, each stays one line.
TEST(WatchCli, OnceFitsTheTerminal) {
  const auto args = on_host({"watch", "--once", "--color", "never"});
  auto piped = run_dlrig(args, fake_nvml("throttling.json"));
  auto tty = run_dlrig_in_terminal(args, 100, fake_nvml("throttling.json"));
  ASSERT_EQ(tty.exit_code, 0) << tty.err;
  auto columns = [](const std::string &l) {
    return std::count_if(l.begin(), l.end(),
                         [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
  };
  long longest = 0;
  for (const auto &l : lines_of(piped.out))
    longest = std::max<long>(longest, columns(l));
  EXPECT_GT(longest, 100) << piped.out;
  for (const auto &l : lines_of(tty.out))
    EXPECT_LE(columns(l), 100) << tty.out;
  EXPECT_NE(tty.out.find("warning: GPU 0 is throttling"), std::string::npos) << tty.out;
}

// A terminal the full screen cannot use (TERM=dumb in an editor's shell buffer, a TERM terminfo
// does not know, none) gets one table per sample and says why, where ncurses printed "Error
// opening terminal" and ended the process with exit 1; TERM=dumb gets no colour either.
TEST(WatchCli, ATerminalWithoutCursorAddressingGetsTablesNotTheFullScreen) {
  const auto args = on_host({"watch", "--count", "2", "--interval", "0.1"});
  for (const std::string term : {"TERM=dumb", "TERM=no-such-terminal", "TERM="}) {
    auto r = run_dlrig_in_terminal(args, 100, [&] {
      auto env = fake_nvml("throttling.json");
      env.insert(env.begin(), term);
      return env;
    }());
    EXPECT_EQ(r.exit_code, 0) << term << r.err;
    EXPECT_NE(r.err.find("one table per sample instead of the full screen"), std::string::npos)
        << term << r.err;
    if (term == "TERM=dumb") {
      EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out; // no colour on a dumb terminal
    }
    // Tables, no cursor movement: colour (SGR) at most.
    const auto text = std::regex_replace(r.out, std::regex("\x1b\\[[0-9;]*m"), "");
    EXPECT_EQ(text.find('\x1b'), std::string::npos) << term << r.out;
    EXPECT_NE(text.find("warning: GPU 0 is throttling"), std::string::npos) << term << r.out;
  }
  auto dumb = run_dlrig_in_terminal({"doctor", "--no-nvml"}, 100, {"TERM=dumb"});
  EXPECT_EQ(dumb.out.find('\x1b'), std::string::npos) << dumb.out;
}

TEST(WatchCli, ContainerProcessesGetTheExplanation) {
  auto r = run_dlrig(on_host({"watch", "--once"}), fake_nvml("watch-starving.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(not in this PID namespace)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run it with --pid=host"), std::string::npos);
}

TEST(WatchCli, IdleWhileItsProcessRunsAppearsOverAWindow) {
  auto r = run_dlrig(on_host({"watch", "--count", "6", "--interval", "0.05"}),
                     fake_nvml("watch-starving.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("warning: GPU 0 idle 100 % of the last"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  // --color always colours even off a terminal; NO_COLOR does not override an explicit always.
  auto c =
      run_dlrig(on_host({"watch", "--once", "--color", "always"}), fake_nvml("throttling.json"));
  EXPECT_NE(c.out.find('\x1b'), std::string::npos);
  auto env = fake_nvml("throttling.json");
  env.push_back("NO_COLOR=1");
  auto n = run_dlrig(on_host({"watch", "--once"}), env);
  EXPECT_EQ(n.out.find('\x1b'), std::string::npos);
}

TEST(WatchCli, JsonLinesOnePerSample) {
  auto r = run_dlrig(on_host({"watch", "--json", "--count", "3", "--interval", "0.05"}),
                     fake_nvml("throttling.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ls = lines_of(r.out);
  ASSERT_EQ(ls.size(), 3u);
  for (const auto &l : ls) {
    Json j = Json::parse(l);
    EXPECT_EQ(j.at("schema_version"), 1);
    EXPECT_EQ(j.at("context").at("tool"), "dlrig");
    const Json &g = j.at("sample").at("gpus").at(0);
    EXPECT_EQ(g.at("power_watts"), 299.4);
    EXPECT_TRUE(g.at("energy_joules").is_null()); // not in the scenario: null, not 0
    EXPECT_EQ(j.at("findings").at(0).at("id"), "throttling");
  }
}

TEST(WatchCli, RecordThenReplayCsvAndJsonLines) {
  for (std::string ext : {".csv", ".jsonl"}) {
    auto file = scratch("run" + ext).string();
    auto r = run_dlrig(on_host({"watch", "--record", file, "--count", "14", "--interval", "0.25"}),
                       fake_nvml("watch-training.json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    auto replay = run_dlrig({"watch", "--replay", file});
    ASSERT_EQ(replay.exit_code, 0) << replay.err;
    EXPECT_NE(replay.out.find("Recording: 14 samples"), std::string::npos) << replay.out;
    EXPECT_NE(replay.out.find("PEAK MEMORY"), std::string::npos);
    EXPECT_NE(replay.out.find("23.5 GiB (98 %)"), std::string::npos) << replay.out;
    auto j = run_dlrig({"watch", "--replay", file, "--json"});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    Json doc = Json::parse(j.out);
    EXPECT_EQ(doc.at("schema_version"), 1);
    const Json &g = doc.at("gpus").at(0);
    EXPECT_EQ(g.at("peak_memory_bytes"), 25243344896.0);
    EXPECT_GT(g.at("energy_joules").get<double>(), 0);
    EXPECT_GT(g.at("throttled_seconds").get<double>(), 0);
    std::set<std::string> ids;
    for (const auto &f : doc.at("findings"))
      ids.insert(f.at("id").get<std::string>());
    EXPECT_TRUE(ids.count("throttling")) << j.out;
    EXPECT_TRUE(ids.count("memory-nearly-full")) << j.out;
    EXPECT_TRUE(ids.count("pcie-link-degraded")) << j.out;
    if (ext == ".jsonl") {
      EXPECT_TRUE(ids.count("xid")) << j.out; // Xids are kept in JSON lines only
    }
  }
}

// Without NVML (or a GPU) a recording still holds every sample's host readings, in CSV too.
TEST(WatchCli, ARecordingWithoutGpusKeepsItsSamples) {
  for (std::string ext : {".csv", ".jsonl"}) {
    auto file = scratch("host-only" + ext).string();
    auto r = run_dlrig(
        on_host({"watch", "--no-nvml", "--record", file, "--count", "3", "--interval", "0.05"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto replay = run_dlrig({"watch", "--replay", file});
    ASSERT_EQ(replay.exit_code, 0) << replay.err;
    EXPECT_NE(replay.out.find("Recording: 3 samples"), std::string::npos) << ext << replay.out;
  }
}

TEST(WatchCli, BadRecordingIsBadInputNamingTheLine) {
  auto file = scratch("bad.jsonl").string();
  std::ofstream(file) << "{\"time\": 1, \"gpus\": []}\nnot json\n";
  auto r = run_dlrig({"watch", "--replay", file});
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_NE(r.err.find(file + ": line 2"), std::string::npos) << r.err;
  auto missing = run_dlrig({"watch", "--replay", scratch("none.csv").string()});
  EXPECT_EQ(missing.exit_code, 65);
  EXPECT_EQ(run_dlrig({"watch", "--interval", "0"}).exit_code, 64);
  EXPECT_EQ(run_dlrig({"watch", "--replay", file, "--once"}).exit_code, 64);
}

// Two recordings joined together go back in time: the replay says where and what to do, where
// it used to sort them into one run. A line that is no recording's (64 MiB without a newline)
// is refused at that line without being held whole.
TEST(WatchCli, ARecordingGoingBackInTimeOrWithAHugeLineIsNamedAtItsLine) {
  auto file = scratch("joined.jsonl").string();
  std::ofstream(file) << "{\"time\": 100, \"gpus\": []}\n{\"time\": 101, \"gpus\": []}\n"
                      << "{\"time\": 5, \"gpus\": []}\n";
  auto r = run_dlrig({"watch", "--replay", file});
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_NE(r.err.find(file + ": line 3: this sample is 96.000 s earlier than the one before"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("replay each on its own"), std::string::npos) << r.err;
  auto huge = scratch("huge.jsonl").string();
  {
    std::ofstream out(huge);
    out << "{\"time\": 1, \"gpus\": []}\n";
    out << std::string((std::size_t{64} << 20) + 1, ' ');
  }
  auto h = run_dlrig({"watch", "--replay", huge});
  EXPECT_EQ(h.exit_code, 65);
  EXPECT_NE(h.err.find(huge + ": line 2 is longer than 64 MiB: not a recording"), std::string::npos)
      << h.err;
  std::filesystem::remove(huge);
}

TEST(ServeCli, OnceScrapeIsValidForPromtool) {
  auto r =
      run_dlrig(on_host({"serve", "--once", "--per-process"}), fake_nvml("watch-starving.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("dlrig_up 1\n"), std::string::npos);
  EXPECT_NE(r.out.find("dlrig_gpu_info{uuid=\"GPU-d1e70001-0000-4000-8000-000000000001\""),
            std::string::npos);
  EXPECT_NE(r.out.find("dlrig_finding{id=\"pid-namespace\",severity=\"info\",gpu=\"\"} 1"),
            std::string::npos);
  EXPECT_NE(r.out.find("dlrig_process_gpu_memory_bytes{"), std::string::npos);
  if (std::system("command -v promtool >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "promtool (Debian's prometheus package, scripts/deps.sh) is not installed";
  auto file = scratch("metrics.txt").string();
  std::ofstream(file) << r.out;
  auto check =
      std::system(("promtool check metrics < " + file + " >" + file + ".out 2>&1").c_str());
  std::ifstream out(file + ".out");
  std::string said((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  EXPECT_EQ(check, 0) << said;
  EXPECT_TRUE(said.empty()) << said; // not even a lint warning
}

TEST(ServeCli, AFailedReadingIsAbsentAndUpZero) {
  auto file = scratch("failing.json").string();
  std::ofstream(file) << R"({"gpus": [{"bus_id": "00000000:01:00.0", "uuid": "GPU-1",
    "power_usage_mw": 300000, "temperature_c": 70,
    "errors": {"nvmlDeviceGetPowerUsage": 999}}]})";
  auto r =
      run_dlrig(on_host({"serve", "--once"}), {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                                               "DLRIG_FAKE_NVML_SCENARIO=" + file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("dlrig_up 0\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("dlrig_gpu_power_watts"), std::string::npos);
  EXPECT_NE(r.out.find("dlrig_gpu_temperature_celsius{uuid=\"GPU-1\",index=\"0\"} 70\n"),
            std::string::npos);
  // Which reading failed, on stderr (an H100 scrape said dlrig_up 0 and nothing else).
  EXPECT_NE(r.err.find("dlrig serve: GPU 0: power (nvmlDeviceGetPowerUsage): "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(dlrig_up is 0)"), std::string::npos) << r.err;
}

// Process samples that age out between NVML's counting call and its reading call (an H200
// serving one scrape after a benchmark): no process used the GPU lately, not a failed read.
TEST(ServeCli, ProcessSamplesThatAgeOutAreNotAFailedRead) {
  auto file = scratch("expiring.json").string();
  std::ofstream(file) << R"({"gpus": [{"bus_id": "00000000:01:00.0", "uuid": "GPU-1",
    "temperature_c": 70, "process_utilization": [{"pid": 4242, "sm": 90}],
    "process_utilization_expires": true}]})";
  auto r =
      run_dlrig(on_host({"serve", "--once"}), {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                                               "DLRIG_FAKE_NVML_SCENARIO=" + file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("dlrig_up 1\n"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.err.find("process_utilization"), std::string::npos) << r.err;
}

TEST(ServeCli, NoNvmlIsUpZeroAndBadListenIsUsage) {
  auto r = run_dlrig(on_host({"serve", "--once"}),
                     {"DLRIG_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("dlrig_up 0\n"), std::string::npos);
  EXPECT_NE(r.out.find("dlrig_host_memory_total_bytes 67378548736\n"), std::string::npos);
  EXPECT_EQ(run_dlrig({"serve", "--listen", "localhost"}).exit_code, 64);
  EXPECT_EQ(run_dlrig({"serve", "--listen", "127.0.0.1:99999"}).exit_code, 64);
}

// On the captured H200 (idle) NVML answers NOT_FOUND for process utilization, meaning no
// samples: not a failed read, so the scrape is up.
TEST(ServeCli, IdleH200ScrapeIsUp) {
  auto r = run_dlrig({"serve", "--once", "--sysroot", fixture("h200-vm")},
                     {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                      "DLRIG_FAKE_NVML_SCENARIO=" + fixture("h200-vm/nvml.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\ndlrig_up 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("name=\"NVIDIA H200\""), std::string::npos) << r.out;
}

// A recording made by `dlrig watch --record` on a real H200 while perf/fit_measure.py trained
// (tests/data/recordings/h200-fit-measure.jsonl, 2026-11-26): replay summarises it.
TEST(WatchCli, ReplaysARecordingFromARealH200) {
  auto r = run_dlrig({"watch", "--replay", fixture("recordings/h200-fit-measure.jsonl")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Recording: 89 samples over 49 s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("39.2 GiB (28 %)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("throttling (power cap 700 W)"), std::string::npos) << r.out;
  auto j = run_dlrig({"watch", "--replay", fixture("recordings/h200-fit-measure.jsonl"), "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  Json summary = Json::parse(j.out);
  EXPECT_NEAR(summary.at("duration_seconds").get<double>(), 48.6, 0.1);
  ASSERT_FALSE(summary.at("findings").empty());
  EXPECT_EQ(summary.at("findings")[0].at("id"), "idle-while-process-runs");
}

// Runs dlrig with its standard output on /dev/full (a disk that is full): the exit code, and
// what it said on stderr in err.
int run_onto_full_disk(const std::vector<std::string> &args, const std::vector<std::string> &env,
                       std::string &err) {
  auto quoted = [](const std::string &a) { return "'" + a + "'"; };
  std::string cmd = "env -i PATH=/usr/bin:/bin DLRIG_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1";
  for (const auto &e : env)
    cmd += " " + quoted(e);
  for (const auto &o : sanitizer_options())
    cmd += " " + quoted(o);
  cmd += " " + quoted(DLRIG_BINARY);
  for (const auto &a : args)
    cmd += " " + quoted(a);
  auto err_file = scratch("full-disk.err").string();
  int status = std::system((cmd + " >/dev/full 2>" + quoted(err_file)).c_str());
  std::ifstream in(err_file);
  err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(WatchCli, ARecordingOrStdoutThatCannotBeWrittenIsExit74) {
  auto r = run_dlrig(on_host(
      {"watch", "--no-nvml", "--count", "2", "--interval", "0.05", "--record", "/dev/full"}));
  EXPECT_EQ(r.exit_code, 74) << r.err;
  EXPECT_NE(r.err.find("--record /dev/full: cannot write the recording (No space left on device)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("recorded to"), std::string::npos) << r.err;
  std::string err;
  EXPECT_EQ(
      run_onto_full_disk(
          on_host({"watch", "--no-nvml", "--count", "2", "--interval", "0.05", "--json"}), {}, err),
      74);
  EXPECT_NE(err.find("dlrig: cannot write to standard output: No space left on device"),
            std::string::npos)
      << err;
  EXPECT_EQ(run_onto_full_disk(on_host({"watch", "--once", "--no-nvml"}), {}, err), 74) << err;
  EXPECT_EQ(run_onto_full_disk(on_host({"serve", "--once"}), fake_nvml("throttling.json"), err),
            74);
  EXPECT_NE(err.find("dlrig: cannot write to standard output"), std::string::npos) << err;
}

// A FIFO with no reader made --record wait for ever in open(); with a reader it is written.
TEST(WatchCli, RecordIntoAFifoNeedsItsReaderAndDoesNotWaitForOne) {
  auto fifo = scratch("record.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto start = std::chrono::steady_clock::now();
  auto r = run_dlrig(on_host({"watch", "--no-nvml", "--count", "1", "--record", fifo.string()}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(r.exit_code, 74) << r.err;
  EXPECT_NE(r.err.find("--record " + fifo.string() +
                       ": a FIFO (named pipe) that no process reads: start its reader first"),
            std::string::npos)
      << r.err;
  // With a reader (this test, holding the read end; two samples fit the pipe's buffer), the
  // recording goes through.
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  auto w = run_dlrig(on_host(
      {"watch", "--no-nvml", "--count", "2", "--interval", "0.05", "--record", fifo.string()}));
  EXPECT_EQ(w.exit_code, 0) << w.err;
  std::string recorded;
  char buf[4096];
  for (ssize_t n; (n = ::read(reader, buf, sizeof buf)) > 0;)
    recorded.append(buf, static_cast<std::size_t>(n));
  ::close(reader);
  auto copy = scratch("record-from-fifo.jsonl");
  std::ofstream(copy) << recorded;
  EXPECT_EQ(run_dlrig({"watch", "--replay", copy.string()}).exit_code, 0) << recorded;
}

// --record replaced a recording that was there (a training run's) without a word.
TEST(WatchCli, RecordKeepsAnExistingFileUnlessOverwrite) {
  auto file = scratch("kept.csv").string();
  std::ofstream(file) << "a recording someone kept\n";
  auto r = run_dlrig(on_host({"watch", "--no-nvml", "--count", "1", "--record", file}));
  EXPECT_EQ(r.exit_code, 64) << r.err;
  EXPECT_NE(r.err.find("--record " + file + ": the file exists"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--overwrite"), std::string::npos) << r.err;
  std::ifstream in(file);
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "a recording someone kept\n");
  auto o =
      run_dlrig(on_host({"watch", "--no-nvml", "--count", "1", "--record", file, "--overwrite"}));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(run_dlrig({"watch", "--replay", file}).exit_code, 0);
  EXPECT_EQ(run_dlrig({"watch", "--overwrite"}).exit_code, 64); // only with --record
}

// --data naming nothing fell to the root's disk; the first sample's disk rate was 0 B/s, taken
// over the few milliseconds between starting and sampling.
TEST(WatchCli, DataMustExistAndItsFirstRateIsUnknown) {
  for (const char *cmd : {"watch", "serve"}) {
    auto r = run_dlrig(on_host({cmd, "--once", "--no-nvml", "--data", "/nonexistent/imagenet"}));
    EXPECT_EQ(r.exit_code, 64) << cmd << r.err;
    EXPECT_NE(r.err.find("--data /nonexistent/imagenet: no such file or directory"),
              std::string::npos)
        << r.err;
  }
  auto r =
      run_dlrig(on_host({"watch", "--once", "--json", "--no-nvml", "--data", "/data/imagenet"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json host = Json::parse(r.out).at("sample").at("host");
  EXPECT_EQ(host.at("data_device"), "nvme0n1p2");
  EXPECT_TRUE(host.at("data_read_bytes_per_second").is_null()) << host;
  EXPECT_TRUE(host.at("data_write_bytes_per_second").is_null()) << host;
  auto s = run_dlrig(on_host({"serve", "--once", "--no-nvml", "--data", "/data/imagenet"}));
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(s.out.find("dlrig_host_data_read_bytes_per_second"), std::string::npos) << s.out;
}

// A GPU that fell off the bus made dlrig_up 0 with nothing on stderr: a lost GPU has no
// read_errors, only lost.
TEST(ServeCli, ALostGpuIsNamedOnStderr) {
  auto file = scratch("lost.json").string();
  std::ofstream(file) << R"({"gpus": [{"bus_id": "00000000:01:00.0", "uuid": "GPU-1",
    "temperature_c": 70, "errors": {"nvmlDeviceGetPowerUsage": 15}}]})";
  auto r =
      run_dlrig(on_host({"serve", "--once"}), {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                                               "DLRIG_FAKE_NVML_SCENARIO=" + file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("dlrig_up 0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dlrig_finding{id=\"gpu-lost\""), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("dlrig serve: GPU 0: fell off the bus (NVML: GPU is lost)"),
            std::string::npos)
      << r.err;
}

// NVML that stops answering (a GPU or the driver has stopped responding: nvidia-smi hangs too) made
// watch and serve hang with it. Now each waits --nvml-timeout, says why on the screen or stderr,
// keeps the host's readings, and exits while the fake NVML is still asleep; serve says dlrig_up 0.
TEST(ServeCli, NvmlThatStopsAnsweringIsReportedNotWaitedFor) {
  for (const char *hang : {"nvmlInit_v2", "nvmlDeviceGetUtilizationRates"}) {
    auto scenario = Json::parse(std::ifstream(fixture("nvml/throttling.json")));
    scenario["hang_ms"] = {{hang, 120000}};
    auto file = scratch("hang.json").string();
    std::ofstream(file) << scenario.dump();
    const std::vector<std::string> env = {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                                          "DLRIG_FAKE_NVML_SCENARIO=" + file};
    const auto start = std::chrono::steady_clock::now();
    auto serve = run_dlrig(on_host({"serve", "--once", "--nvml-timeout", "0.5"}), env);
    ASSERT_EQ(serve.exit_code, 0) << hang << serve.err;
    EXPECT_NE(serve.out.find("dlrig_up 0\n"), std::string::npos) << hang << serve.out;
    EXPECT_NE(serve.out.find("dlrig_host_memory_total_bytes"), std::string::npos) << serve.out;
    EXPECT_EQ(serve.out.find("dlrig_gpu_power_watts"), std::string::npos) << serve.out;
    EXPECT_NE(serve.err.find("dlrig serve: NVML: NVML did not answer within 0.5 s"),
              std::string::npos)
        << hang << serve.err;
    auto watch = run_dlrig(on_host({"watch", "--once", "--nvml-timeout", "0.5"}), env);
    ASSERT_EQ(watch.exit_code, 0) << hang << watch.err;
    EXPECT_NE(watch.out.find("NVML: NVML did not answer within 0.5 s"), std::string::npos)
        << hang << watch.out;
    EXPECT_EQ(watch.out.find("NVIDIA GeForce RTX 4090"), std::string::npos) << watch.out;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20)) << hang;
  }
  // The same scenario without the hang answers in time.
  auto r = run_dlrig(on_host({"serve", "--once", "--nvml-timeout", "0.5"}),
                     fake_nvml("throttling.json"));
  EXPECT_NE(r.out.find("dlrig_gpu_power_watts"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(run_dlrig(on_host({"watch", "--once", "--nvml-timeout", "0"})).exit_code, 64);
}

// NVML that stops answering and later answers again (the driver recovers: the fake sleeps in
// nvmlInit_v2 while a file exists, removed a second in): watch asks again after --nvml-retry in
// a new `dlrig __nvml-helper` process and reads the GPU again, where it used to stop for good.
TEST(WatchCli, NvmlThatAnswersAgainIsReadAgain) {
  const auto stuck = scratch("driver-stuck");
  std::ofstream(stuck) << "1";
  auto scenario = Json::parse(std::ifstream(fixture("nvml/throttling.json")));
  scenario["hang_while_file"] = {{"nvmlInit_v2", stuck.string()}};
  auto file = scratch("hang-while.json").string();
  std::ofstream(file) << scenario.dump();
  std::thread recover([&] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::filesystem::remove(stuck);
  });
  auto r = run_dlrig(
      on_host({"watch", "--json", "--count", "10", "--interval", "0.5", "--nvml-timeout", "0.3",
               "--nvml-retry", "0.2"}),
      {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML, "DLRIG_FAKE_NVML_SCENARIO=" + file});
  recover.join();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto samples = lines_of(r.out);
  ASSERT_EQ(samples.size(), 10u) << r.out;
  const Json first = Json::parse(samples.front()).at("sample");
  EXPECT_FALSE(first.at("nvml_ok").get<bool>());
  EXPECT_NE(first.at("nvml_error").get<std::string>().find("dlrig asks it again in 0.2 s"),
            std::string::npos)
      << first;
  const Json last = Json::parse(samples.back()).at("sample");
  EXPECT_TRUE(last.at("nvml_ok").get<bool>()) << last;
  ASSERT_EQ(last.at("gpus").size(), 1u) << last;
  EXPECT_EQ(last.at("gpus")[0].at("name"), "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(run_dlrig(on_host({"watch", "--once", "--nvml-retry", "-1"})).exit_code, 64);
}

// A second serve on a port in use said nothing of the kind ("dlrig: dlrig serve: cannot listen
// ... (in use, not an address of this machine, or ...)"), or, before SO_REUSEPORT was left off,
// listened beside the first.
TEST(ServeCli, APortInUseIsExit74SayingSo) {
  int held = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(held, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(held, 1), 0);
  socklen_t len = sizeof a;
  ::getsockname(held, reinterpret_cast<sockaddr *>(&a), &len);
  const std::string where = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  auto r = run_dlrig(on_host({"serve", "--no-nvml", "--listen", where}));
  ::close(held);
  EXPECT_EQ(r.exit_code, 74) << r.err;
  EXPECT_NE(r.err.find("\ndlrig: cannot listen on " + where + ": address in use"),
            std::string::npos)
      << r.err;
}

} // namespace
} // namespace dlrig::test
