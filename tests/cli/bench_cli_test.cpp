// `dlrig bench` through the real binary, with DLRIG_BENCH_SMALL=1 (smallest sizes).
#include "dlrig/bench/decode.hpp"
#include "support/cli.hpp"
#include "support/jpeg.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace dlrig::test {
namespace {

TEST(BenchCli, QuickGemmMeasuresVerifiedResultsWithEnvironment) {
  auto db = scratch("cli_quick.db").string();
  std::filesystem::remove(db);
  auto r = run_dlrig({"bench", "--quick", "cpu.gemm", "cpu.stream", "--json", "--db", db},
                     {"DLRIG_BENCH_SMALL=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_TRUE(j["environment"].contains("cpu_model"));
  EXPECT_TRUE(j["environment"].contains("governor"));
  EXPECT_NE(j["environment"]["blas"]["config"].get<std::string>().find("OpenBLAS"),
            std::string::npos);
  int measured = 0;
  for (auto &res : j["results"]) {
    if (res["status"] == "measured") {
      ++measured;
      EXPECT_GT(res["rate"]["median"].get<double>(), 0);
      EXPECT_GE(res["seconds"]["samples"].get<int>(), 1);
    } else {
      EXPECT_EQ(res["status"], "skipped") << res.dump();
      EXPECT_FALSE(res["reason"].is_null());
    }
  }
  EXPECT_GE(measured, 6); // sgemm, dgemm and the four STREAM kernels
  EXPECT_NE(r.err.find("bench: cpu.gemm.sgemm"), std::string::npos) << r.err; // progress
  EXPECT_NE(r.err.find("bench: [1/"), std::string::npos) << r.err;            // and a count
  EXPECT_TRUE(j["context"].contains("cpu_model"));
  EXPECT_TRUE(j["context"].contains("governor"));
  EXPECT_TRUE(j["context"].contains("kernel"));
  EXPECT_GE(j["context"]["threads"].get<int>(), 1);
  EXPECT_EQ(j["context"]["tool"], "dlrig"); // the envelope's context is kept

  auto again =
      run_dlrig({"bench", "--quick", "cpu.gemm.sgemm", "--db", db}, {"DLRIG_BENCH_SMALL=1"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  auto history = run_dlrig({"bench", "history", "cpu.gemm.sgemm", "--db", db, "--json"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  auto h = nlohmann::json::parse(history.out);
  EXPECT_GE(h["results"].size(), 2u);
  auto cmp = run_dlrig({"bench", "compare", "1", "2", "--db", db, "--json"});
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  auto c = nlohmann::json::parse(cmp.out);
  ASSERT_GE(c["results"].size(), 1u);
  EXPECT_GT(c["results"][0]["ratio"].get<double>(), 0);
  EXPECT_TRUE(c["results"][0]["beyond_noise"].is_boolean());
  auto show = run_dlrig({"bench", "show", "2", "--db", db});
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("cpu.gemm.sgemm"), std::string::npos);
  auto missing = run_dlrig({"bench", "show", "99", "--db", db});
  EXPECT_EQ(missing.exit_code, 64);
}

// cpu.stream runs the widest vectors the CPU has (AVX-512F, AVX2, else SSE2's 16 bytes),
// DLRIG_STREAM_VECTOR_BYTES caps the width, and every width's output is checked element by element.
TEST(BenchCli, StreamRunsTheWidestVectorsTheCpuHasAndChecksEachWidth) {
  std::size_t widest = 16;
#if defined(__x86_64__)
  __builtin_cpu_init();
  widest = __builtin_cpu_supports("avx512f") ? 64 : __builtin_cpu_supports("avx2") ? 32 : 16;
#endif
  auto db = scratch("cli_stream_width.db").string();
  for (const char *cap : {"", "16", "32", "64"}) {
    std::filesystem::remove(db);
    std::vector<std::string> env{"DLRIG_BENCH_SMALL=1"};
    if (*cap)
      env.push_back(std::string("DLRIG_STREAM_VECTOR_BYTES=") + cap);
    auto r = run_dlrig({"bench", "--quick", "cpu.stream", "--json", "--db", db}, env);
    ASSERT_EQ(r.exit_code, 0) << cap << ": " << r.err;
    const std::size_t want = *cap ? std::min<std::size_t>(std::stoul(cap), widest) : widest;
    int measured = 0;
    const auto j = nlohmann::json::parse(r.out);
    for (const auto &res : j["results"]) {
      ASSERT_EQ(res["status"], "measured") << cap << ": " << res.dump();
      EXPECT_EQ(res["details"]["vector_bytes"], want) << cap << ": " << res["id"];
      EXPECT_NE(res["details"]["vector"].get<std::string>().find(std::to_string(want) + " B"),
                std::string::npos);
      ++measured;
    }
    EXPECT_EQ(measured, 4) << cap; // copy, scale, add, triad
  }
}

// A benchmark run beside other work reads low with nothing to say why (the H100 VM's side by side
// ran at a load average of 3.6 to 7.6): each result now says how many CPUs other processes used
// while it ran, and the table's note says its rate may be low. Here a process spins on one CPU.
TEST(BenchCli, OtherWorkOnTheMachineIsNamedBesideTheResult) {
  const pid_t spinner = ::fork();
  ASSERT_GE(spinner, 0);
  if (spinner == 0)
    for (;;) {
    }
  auto db = scratch("cli_host_load.db").string();
  std::filesystem::remove(db);
  auto r = run_dlrig({"bench", "--quick", "cpu.stream.triad", "--json", "--db", db});
  auto table = run_dlrig({"bench", "--quick", "cpu.stream.triad", "--db", db});
  ::kill(spinner, SIGKILL);
  ::waitpid(spinner, nullptr, 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 1u);
  const auto &load = j["results"][0]["details"]["host_load"];
  ASSERT_TRUE(load.is_object()) << j["results"][0].dump();
  EXPECT_GE(load["other_cpus"].get<double>(), 0.5) << load.dump();
  EXPECT_GE(load["steal_cpus"].get<double>(), 0.0);
  EXPECT_NE(load.value("note", "").find("CPUs while this ran: its rate may be low"),
            std::string::npos)
      << load.dump();
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("while this ran: its rate may be low"), std::string::npos) << table.out;
}

TEST(BenchCli, DataDecodeMeasuresImagesPerSecondAndCatchesAWrongDecode) {
  auto db = scratch("cli_decode.db").string();
  std::filesystem::remove(db);
  auto r =
      run_dlrig({"bench", "--quick", "data.decode", "--json", "--db", db}, {"DLRIG_BENCH_SMALL=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["results"].empty());
  for (auto &res : j["results"]) {
    EXPECT_EQ(res["status"], "measured") << res.dump();
    EXPECT_EQ(res["rate_unit"], "images/s");
    // Images per second, not giga-images: tens to thousands on any CPU.
    EXPECT_GT(res["rate"]["median"].get<double>(), 1.0) << res.dump();
    EXPECT_NE(res["details"]["verdict"].get<std::string>().find("images/s"), std::string::npos);
  }
  // On every core the verdict weighs decoding against what ResNet-50 training consumes, on this
  // machine's GPU or, with none, on an RTX 4090 for reference.
  const auto &all = j["results"].back();
  EXPECT_NE(all["details"]["verdict"].get<std::string>().find("ResNet-50 training on "),
            std::string::npos)
      << all.dump();
  auto bad = run_dlrig({"bench", "--quick", "data.decode", "--db", db},
                       {"DLRIG_BENCH_SMALL=1", "DLRIG_BENCH_CORRUPT=1"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  auto missing =
      run_dlrig({"bench", "--quick", "data.decode", "--data", "/nonexistent/jpegs", "--db", db},
                {"DLRIG_BENCH_SMALL=1"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE((missing.out + missing.err).find("/nonexistent/jpegs"), std::string::npos)
      << missing.out << missing.err;
}

// The user's folder of JPEGs with a truncated file and a 60000 x 60000 header of 236 bytes (10.8
// GB of RGB, about 8 s a decode, before the limits): the good files are measured, the others named
// in the note; a FIFO given as the file is refused at once.
// A dataset's file names reach stderr's progress lines (a configuration that failed names its
// first file): their control characters are escaped there too, not only in the table on stdout.
TEST(BenchCli, ProgressLinesEscapeAFileNamesControlCharacters) {
  namespace fs = std::filesystem;
  const auto dir = scratch("decode_hostile_name");
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_bytes(dir / "evil\x1b]0;pwned\x07.jpg", {'j', 'u', 'n', 'k'});
  auto db = scratch("cli_decode_hostile.db").string();
  fs::remove(db);
  auto r = run_dlrig({"bench", "--quick", "data.decode", "--data", dir.string(), "--db", db},
                     {"DLRIG_BENCH_SMALL=1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("evil\\x1b]0;pwned\\x07.jpg: not a readable JPEG"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\x07'), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
}

TEST(BenchCli, DataDecodeLeavesOutUnreadableFilesAndNamesThem) {
  namespace fs = std::filesystem;
  const auto dir = scratch("decode_refused");
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto good = bench::encode_jpeg(bench::generate_rgb(64, 48, 1), 64, 48, 90);
  ASSERT_TRUE(good.ok());
  write_bytes(dir / "a.jpg", *good);
  write_bytes(dir / "b.jpg", std::vector<unsigned char>(good->begin(), good->begin() + 300));
  write_bytes(dir / "c.jpg", hand_made_jpeg(60000, 60000, false, 1, 100));
  auto db = scratch("cli_decode_refused.db").string();
  fs::remove(db);
  auto r = run_dlrig({"bench", "--quick", "data.decode", "--data", dir.string(), "--db", db},
                     {"DLRIG_BENCH_SMALL=1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 of 3 files left out: b.jpg: not a readable JPEG: the file ends before "
                       "the image does"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("c.jpg: not a readable JPEG: 60000x60000 is 3600000000 pixels"),
            std::string::npos)
      << r.out;
  auto shown = run_dlrig({"bench", "show", "1", "--db", db, "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  auto j = nlohmann::json::parse(shown.out);
  ASSERT_FALSE(j["results"].empty()) << shown.out;
  for (auto &res : j["results"]) {
    EXPECT_EQ(res["status"], "measured") << res.dump();
    EXPECT_EQ(res["details"]["images"], 1) << res.dump();
    EXPECT_EQ(res["details"]["files_refused"].size(), 2u) << res.dump();
  }

  // A FIFO in the folder is passed over (only regular files are taken); a file that cannot be
  // read is left out and named as one that does not decode, not the end of the whole set.
  ASSERT_EQ(::mkfifo((dir / "d.jpg").c_str(), 0600), 0);
  write_bytes(dir / "e.jpg", *good);
  fs::resize_file(dir / "e.jpg", bench::max_jpeg_file_bytes + 1); // sparse: nothing is written
  auto f = run_dlrig({"bench", "--quick", "data.decode", "--data", dir.string(), "--db", db},
                     {"DLRIG_BENCH_SMALL=1"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_NE(f.out.find("3 of 4 files left out"), std::string::npos) << f.out;
  EXPECT_NE(f.out.find("e.jpg: " + std::to_string(bench::max_jpeg_file_bytes + 1) +
                       " bytes is too large for a JPEG file"),
            std::string::npos)
      << f.out;
  EXPECT_EQ(f.out.find("d.jpg"), std::string::npos) << f.out;
  fs::remove_all(dir);
}

TEST(BenchCli, CorruptDatabaseExits65AndIsNotTouched) {
  auto db = scratch("cli_corrupt.db").string();
  std::ofstream(db, std::ios::binary) << std::string(4096, 'z');
  auto r = run_dlrig({"bench", "--quick", "cpu.gemm.sgemm", "--db", db}, {"DLRIG_BENCH_SMALL=1"});
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find(db), std::string::npos) << r.err;
  std::ifstream in(db, std::ios::binary);
  std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(back, std::string(4096, 'z'));
}

std::string file_bytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// `sqlite3 other.db "create table t(x)"; dlrig bench --db other.db` added dlrig's tables to it and
// switched it to WAL.
TEST(BenchCli, AnotherProgramsDatabaseIsRefusedWith65Untouched) {
  auto db = scratch("cli_other.db").string();
  sqlite3 *other = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(other, "create table t(x); insert into t values (1)", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(other);
  const auto before = file_bytes(db);
  auto r = run_dlrig({"bench", "--quick", "cpu.gemm.sgemm", "--db", db}, {"DLRIG_BENCH_SMALL=1"});
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find(db + ": a SQLite database of another program"), std::string::npos) << r.err;
  EXPECT_EQ(file_bytes(db), before);
  EXPECT_FALSE(std::filesystem::exists(db + "-wal"));
  EXPECT_EQ(run_dlrig({"bench", "history", "--db", db}).exit_code, 65);
}

// history, show and compare created a missing file (and switched one to WAL).
TEST(BenchCli, HistoryNeverCreatesTheDatabase) {
  auto db = scratch("cli_none.db").string();
  auto r = run_dlrig({"bench", "history", "--db", db});
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find(db + ": no such file"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(db));
  EXPECT_EQ(run_dlrig({"bench", "show", "1", "--db", db}).exit_code, 65);
  EXPECT_EQ(run_dlrig({"bench", "compare", "1", "2", "--db", db}).exit_code, 65);
  EXPECT_FALSE(std::filesystem::exists(db));
}

// The XDG Base Directory Specification: a relative XDG_DATA_HOME is invalid and ignored, so the
// database does not move with the current folder; HOME's place is taken instead.
TEST(BenchCli, ARelativeXdgDataHomeIsIgnored) {
  auto home = scratch("cli_relative_xdg").string();
  auto r = run_dlrig({"bench", "history"}, {"XDG_DATA_HOME=relative/data", "HOME=" + home});
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find(home + "/.local/share/dlrig/results.db: no such file"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("relative/data"), std::string::npos) << r.err;
  // A relative HOME too: no database, the fix named; nothing made under the current folder.
  auto none = run_dlrig({"bench", "history"}, {"XDG_DATA_HOME=relative/data", "HOME=rel"});
  EXPECT_EQ(none.exit_code, 64) << none.err;
  EXPECT_NE(none.err.find("give one with --db PATH"), std::string::npos) << none.err;
  EXPECT_FALSE(std::filesystem::exists("rel"));
}

// A FIFO as --data ran every data.decode and storage.read configuration to "failed" and exited 0;
// it is refused before anything runs or is stored.
TEST(BenchCli, DataThatIsNeitherAFileNorAFolderIsRefusedBeforeAnythingRuns) {
  auto dir = scratch("cli_data_fifo");
  std::filesystem::create_directories(dir);
  auto fifo = (dir / "pipe").string();
  auto db = (dir / "r.db").string();
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const char *family : {"data.decode", "storage.read"}) {
    auto r = run_dlrig({"bench", "--quick", family, "--data", fifo, "--db", db},
                       {"DLRIG_BENCH_SMALL=1"});
    EXPECT_EQ(r.exit_code, 65) << family << "\n" << r.err;
    EXPECT_NE(r.err.find("--data " + fifo + ": is a FIFO (named pipe)"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("running"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(db)) << family;
  }
  auto devnull = run_dlrig({"bench", "--quick", "storage.read", "--data", "/dev/null", "--db", db},
                           {"DLRIG_BENCH_SMALL=1"});
  EXPECT_EQ(devnull.exit_code, 65) << devnull.err;
  EXPECT_NE(devnull.err.find("/dev/null: is a device"), std::string::npos) << devnull.err;
}

TEST(BenchCli, ADatabaseThatIsAFolderIsNotARegularFile) {
  auto dir = scratch("cli_folder.db").string();
  std::filesystem::create_directories(dir);
  auto r = run_dlrig({"bench", "--quick", "cpu.gemm.sgemm", "--db", dir}, {"DLRIG_BENCH_SMALL=1"});
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find(dir + ": not a regular file but a folder"), std::string::npos) << r.err;
  EXPECT_EQ(run_dlrig({"bench", "history", "--db", dir}).exit_code, 65);
}

void sql(const std::string &db, const char *statement) {
  sqlite3 *h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h, statement, nullptr, nullptr, nullptr), SQLITE_OK) << statement;
  sqlite3_close(h);
}

// A row edited by hand (sqlite3 results.db "UPDATE results SET rate_median = 'fast'") was read as
// a rate of 0, and a status dlrig does not know as "measured". Every reader now refuses the
// database naming the file, the row, the column and the statement that deletes the row; the
// commands that only use stored results (fit, doctor) say so and go on without them; nothing is
// written to the file, --cpu-vs-gpu measures nothing into it.
TEST(BenchCli, AHandEditedRowIsRefusedByEveryReaderAndNoByteChanges) {
  auto home = scratch("xdg-edited");
  std::filesystem::create_directories(home / "dlrig");
  auto db = (home / "dlrig" / "results.db").string();
  auto made =
      run_dlrig({"bench", "--quick", "cpu.gemm.sgemm", "--db", db}, {"DLRIG_BENCH_SMALL=1"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  sql(db, "PRAGMA journal_mode=DELETE; UPDATE results SET rate_median = 'fast' WHERE id = 1");
  const auto before = file_bytes(db);
  const std::string why = db + ": result 1 (run 1, cpu.gemm.sgemm): rate_median is the text "
                               "'fast', not a number";
  for (auto args : std::vector<std::vector<std::string>>{
           {"bench", "history", "--db", db},
           {"bench", "show", "1", "--db", db},
           {"bench", "compare", "1", "1", "--db", db},
           {"bench", "--cpu-vs-gpu", "resnet-50", "--gpu", "RTX 4090", "--db", db}}) {
    auto r = run_dlrig(args, {"DLRIG_BENCH_SMALL=1"});
    EXPECT_EQ(r.exit_code, 65) << args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("sqlite3 " + db + " \"DELETE FROM results WHERE id = 1\""),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("measuring it now"), std::string::npos) << r.err;
  }
  auto fit = run_dlrig({"fit", "resnet-50", "--gpu", "RTX 4090", "--json"},
                       {"XDG_DATA_HOME=" + home.string()});
  ASSERT_LE(fit.exit_code, 1) << fit.err;
  bool said = false;
  const auto fit_json = nlohmann::json::parse(fit.out);
  for (auto &a : fit_json["assumptions"])
    said = said || a.get<std::string>().find("no `dlrig bench` result is used: results database " +
                                             why) != std::string::npos;
  EXPECT_TRUE(said) << fit.out;
  auto doctor = run_dlrig({"doctor", "--json"}, {"XDG_DATA_HOME=" + home.string()});
  ASSERT_NE(doctor.out, "") << doctor.err;
  said = false;
  const auto doctor_json = nlohmann::json::parse(doctor.out);
  for (auto &n : doctor_json["not_run"])
    said = said || (n["id"] == "bench.storage_feed" &&
                    n["reason"].get<std::string>().find(why) != std::string::npos);
  EXPECT_TRUE(said) << doctor.out;
  EXPECT_TRUE(file_bytes(db) == before); // (not EXPECT_EQ: a failure would print the file)
  EXPECT_FALSE(std::filesystem::exists(db + "-wal"));
}

// A record's details of another shape than dlrig writes (a number where it writes text, a run's
// environment without its members) made `bench show` an internal error (exit 70) through
// nlohmann's type_error, or read a missing member through the const operator[] (undefined
// behaviour). They are now left out of the note, and a run of rate 0 has no ratio in compare.
TEST(BenchCli, DetailsOfAnotherShapeArePrintedWithoutThem) {
  auto db = scratch("cli_shapes.db").string();
  auto made =
      run_dlrig({"bench", "--quick", "cpu.gemm.sgemm", "--db", db}, {"DLRIG_BENCH_SMALL=1"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  sql(db, "UPDATE results SET rate_median = 0, record = json_set(record, '$.details.host_load', "
          "json('{\"note\": 5}'), '$.details.gpus', json('[{\"gpu\": \"x\", "
          "\"gpu_state_samples\": {\"throttled_readings\": 2}}]'), '$.details.library_note', "
          "7, '$.details.nccl_algorithm', json('{\"requested\": 3}')); "
          "UPDATE runs SET environment = '{\"cores\": \"two\"}'");
  for (const char *format : {"--json", "--csv", "--markdown", "--color=always"}) {
    auto show = run_dlrig({"bench", "show", "1", "--db", db, format});
    EXPECT_EQ(show.exit_code, 0) << format << ": " << show.err;
    EXPECT_EQ(show.err.find("internal error"), std::string::npos) << show.err;
  }
  auto show = run_dlrig({"bench", "show", "1", "--db", db});
  EXPECT_NE(show.out.find("GPU ? throttled in 2 of ? passes"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("two"), std::string::npos) << show.out; // the environment's cores
  auto compare = run_dlrig({"bench", "compare", "1", "1", "--db", db, "--json"});
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  auto rows = nlohmann::json::parse(compare.out)["results"];
  ASSERT_FALSE(rows.empty()) << compare.out;
  EXPECT_TRUE(rows[0]["ratio"].is_null()) << compare.out;
}

// Results that never reached stdout (`> file` on a full disk) were exit 0.
TEST(BenchCli, StdoutThatCannotBeWrittenIsExit74) {
  auto db = scratch("cli_empty.db").string();
  std::ofstream(db).close();
  auto err = scratch("cli_full.err").string();
  std::string sanitizers;
  for (const auto &o : sanitizer_options())
    sanitizers += " '" + o + "'";
  int status =
      std::system(("env -i PATH=/usr/bin:/bin" + sanitizers + " '" + std::string(DLRIG_BINARY) +
                   "' bench history --json --db '" + db + "' >/dev/full 2>'" + err + "'")
                      .c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 74) << file_bytes(err);
  EXPECT_NE(file_bytes(err).find("cannot write to standard output"), std::string::npos)
      << file_bytes(err);
}

TEST(BenchCli, NoHomeNoDbIsAUsageError) {
  auto r = run_dlrig({"bench", "--quick", "cpu.gemm.sgemm"}, {"DLRIG_BENCH_SMALL=1"});
  EXPECT_EQ(r.exit_code, 64) << r.err;
  EXPECT_NE(r.err.find("--db"), std::string::npos) << r.err;
}

TEST(BenchCli, WrongResultExitsTwo) {
  auto r =
      run_dlrig({"bench", "--quick", "cpu.gemm.dgemm", "--db", scratch("cli_wrong.db").string()},
                {"DLRIG_BENCH_SMALL=1", "DLRIG_BENCH_CORRUPT=1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("verification failed"), std::string::npos) << r.out;
}

// The core dlrig names for this CPU (bench/openblas_core.hpp) from /proc/cpuinfo's first
// processor; "" when it has neither AVX-512 nor AVX2 + FMA.
std::string expected_core() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, vendor, flags;
  while (std::getline(in, line) && (vendor.empty() || flags.empty())) {
    if (line.rfind("vendor_id", 0) == 0)
      vendor = line.substr(line.find(':') + 2);
    if (line.rfind("flags", 0) == 0)
      flags = line.substr(line.find(':') + 1) + " ";
  }
  auto has = [&](const std::string &f) { return flags.find(" " + f + " ") != std::string::npos; };
  if (has("avx512f"))
    return "SkylakeX";
  if (has("avx2") && has("fma"))
    return vendor == "AuthenticAMD" || vendor == "HygonGenuine" ? "Zen" : "Haswell";
  return "";
}

std::size_t count(const std::string &text, const std::string &what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

// OpenBLAS recognises this CI machine's CPU, so the test hook makes dlrig decide as if it had
// fallen back to Prescott (as Debian's 0.3.21 does on the H200 VM): dlrig runs itself again with
// OPENBLAS_CORETYPE for this CPU, once, before any benchmark, and stores one run.
TEST(BenchCli, OpenblasFallbackRunsAgainWithItsCore) {
  const auto core = expected_core();
  if (core.empty())
    GTEST_SKIP() << "this CPU has neither AVX-512 nor AVX2 + FMA";
  auto db = scratch("cli_openblas_core.db").string();
  std::filesystem::remove(db);
  auto r = run_dlrig({"bench", "--quick", "cpu.gemm.sgemm", "--json", "--db", db},
                     {"DLRIG_BENCH_SMALL=1", "DLRIG_BENCH_OPENBLAS_DETECTED=Prescott"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  if (j["environment"]["blas"]["config"].get<std::string>().find("DYNAMIC_ARCH") ==
      std::string::npos)
    GTEST_SKIP() << "this OpenBLAS is not DYNAMIC_ARCH: OPENBLAS_CORETYPE does nothing";
  EXPECT_EQ(count(r.err, "running again with OPENBLAS_CORETYPE=" + core), 1u) << r.err;
  EXPECT_EQ(count(r.err, "bench: [1/"), 1u) << r.err; // progress once, after the new start
  EXPECT_LT(r.err.find("running again"), r.err.find("bench: [1/")) << r.err;
  EXPECT_EQ(count(r.err, "stored in"), 1u) << r.err;
  EXPECT_NE(j["environment"]["blas"]["config"].get<std::string>().find(" " + core + " "),
            std::string::npos)
      << j["environment"].dump();
  ASSERT_FALSE(j["results"].empty());
  for (auto &res : j["results"]) {
    const auto &d = res["details"];
    ASSERT_TRUE(d["library_core_selected"].is_string()) << d.dump();
    const auto selected = d["library_core_selected"].get<std::string>();
    EXPECT_EQ(selected.rfind("OPENBLAS_CORETYPE=" + core + " set by dlrig: OpenBLAS ", 0), 0u)
        << selected;
    EXPECT_NE(selected.find("detected Prescott on a CPU with"), std::string::npos) << selected;
    EXPECT_EQ(selected.find("did not take effect"), std::string::npos) << selected;
    EXPECT_TRUE(d["library_note"].is_null()) << d.dump(); // the core matches the CPU now
  }
  auto history = run_dlrig({"bench", "history", "--db", db, "--json"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  auto h = nlohmann::json::parse(history.out);
  EXPECT_EQ(h["results"].size(), j["results"].size()) << history.out; // stored once
  for (auto &res : h["results"])
    EXPECT_EQ(res["run"], 1);
}

// A user's own OPENBLAS_CORETYPE is kept (the note names the older core), and
// DLRIG_OPENBLAS_AUTO_CORE=0 turns the choice off.
TEST(BenchCli, OpenblasCoreOfTheUserIsKept) {
  const auto core = expected_core();
  for (auto env : {std::vector<std::string>{"OPENBLAS_CORETYPE=Prescott"},
                   std::vector<std::string>{"DLRIG_OPENBLAS_AUTO_CORE=0"}}) {
    env.insert(env.end(), {"DLRIG_BENCH_SMALL=1", "DLRIG_BENCH_OPENBLAS_DETECTED=Prescott"});
    auto r = run_dlrig({"bench", "--quick", "cpu.gemm.sgemm", "--json", "--db",
                        scratch("cli_openblas_user.db").string()},
                       env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("running again"), std::string::npos) << env.front() << "\n" << r.err;
    auto j = nlohmann::json::parse(r.out);
    ASSERT_FALSE(j["results"].empty());
    const auto config = j["environment"]["blas"]["config"].get<std::string>();
    for (auto &res : j["results"]) {
      EXPECT_TRUE(res["details"]["library_core_selected"].is_null()) << res["details"].dump();
      // OpenBLAS honours the user's Prescott: the note says it is older than this CPU.
      if (env.front().rfind("OPENBLAS_CORETYPE=", 0) == 0 && !core.empty() &&
          config.find("DYNAMIC_ARCH") != std::string::npos) {
        EXPECT_NE(config.find(" Prescott "), std::string::npos) << config;
        ASSERT_TRUE(res["details"]["library_note"].is_string()) << res["details"].dump();
        EXPECT_NE(
            res["details"]["library_note"].get<std::string>().find("OPENBLAS_CORETYPE=" + core),
            std::string::npos);
      }
    }
  }
}

// cpu.gemm.bf16 through a fake OpenBLAS with cblas_sbgemm (Debian's 0.3.21 has none).
std::vector<std::string> sbgemm_env(const std::string &library) {
  return {"DLRIG_BENCH_SMALL=1", "DLRIG_SBGEMM_LIBRARY=" + library};
}

TEST(BenchCli, Bf16GemmRunsAndVerifiesThroughSbgemm) {
  auto db = scratch("cli_bf16.db").string();
  std::filesystem::remove(db);
  auto r = run_dlrig({"bench", "--quick", "cpu.gemm.bf16", "--json", "--db", db},
                     sbgemm_env(DLRIG_FAKE_SBGEMM));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_GE(j["results"].size(), 1u);
  for (auto &res : j["results"]) {
    EXPECT_EQ(res["status"], "measured") << res.dump();
    EXPECT_GT(res["rate"]["median"].get<double>(), 0);
    EXPECT_EQ(res["work"], 2.0 * 128 * 128 * 128) << res.dump(); // 2n^3, n = 128
    EXPECT_NE(res["details"]["sbgemm_from"].get<std::string>().find("DLRIG_SBGEMM_LIBRARY"),
              std::string::npos);
    EXPECT_TRUE(res["peak"].is_null());
  }
}

TEST(BenchCli, Bf16GemmWrongProductExitsTwo) {
  auto db = scratch("cli_bf16_wrong.db").string();
  std::filesystem::remove(db);
  auto env = sbgemm_env(DLRIG_FAKE_SBGEMM);
  env.push_back("DLRIG_FAKE_SBGEMM_WRONG=1");
  auto r = run_dlrig({"bench", "--quick", "cpu.gemm.bf16", "--db", db}, env);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("verification failed"), std::string::npos) << r.out;
}

TEST(BenchCli, Bf16GemmSkipsWithoutTheSymbol) {
  auto db = scratch("cli_bf16_missing.db").string();
  std::filesystem::remove(db);
  auto missing = run_dlrig({"bench", "--quick", "cpu.gemm.bf16", "--json", "--db", db},
                           sbgemm_env(DLRIG_FAKE_SBGEMM_MISSING));
  ASSERT_EQ(missing.exit_code, 0) << missing.out << missing.err;
  auto j = nlohmann::json::parse(missing.out);
  ASSERT_GE(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["status"], "skipped");
  EXPECT_NE(j["results"][0]["reason"].get<std::string>().find("does not export cblas_sbgemm"),
            std::string::npos)
      << j["results"][0].dump();
  auto r = run_dlrig({"bench", "--quick", "cpu.gemm.bf16", "--json", "--db", db},
                     sbgemm_env("/nonexistent/libopenblas.so"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("does not load"), std::string::npos) << r.out;
}

// OpenBLAS is loaded when a CPU GEMM first runs, not with dlrig (its threads would start with
// every command): the binary does not link it, and without it the CPU GEMMs skip, saying why and
// what to install, while the other benchmarks and commands run.
TEST(BenchCli, WithoutOpenblasTheCpuGemmsSkipAndTheRestRuns) {
  const std::vector<std::string> env = {"DLRIG_OPENBLAS_LIBRARY=/nonexistent/libopenblas.so.0",
                                        "DLRIG_BENCH_SMALL=1"};
  auto list = run_dlrig({"bench", "--list", "--csv"}, env);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("OpenBLAS did not load"), std::string::npos) << list.out;
  auto db = scratch("cli_no_openblas.db").string();
  std::filesystem::remove(db);
  auto r =
      run_dlrig({"bench", "--quick", "cpu.gemm.sgemm", "cpu.stream", "--json", "--db", db}, env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["environment"]["blas"]["config"].is_null()) << j["environment"].dump();
  int skipped = 0, measured = 0;
  for (auto &res : j["results"]) {
    if (res["id"] == "cpu.gemm.sgemm") {
      EXPECT_EQ(res["status"], "skipped") << res.dump();
      const auto why = res["reason"].get<std::string>();
      EXPECT_NE(why.find("/nonexistent/libopenblas.so.0"), std::string::npos) << why;
      EXPECT_NE(why.find("libopenblas0 (scripts/deps.sh)"), std::string::npos) << why;
      ++skipped;
    } else if (res["status"] == "measured") {
      ++measured;
    }
  }
  EXPECT_GE(skipped, 1);
  EXPECT_GE(measured, 1); // cpu.stream
  EXPECT_EQ(run_dlrig({"kb", "gpus"}, env).exit_code, 0);
}

TEST(BenchCli, UnknownIdIsUsageWithNearestNames) {
  auto r = run_dlrig({"bench", "cpu.gem"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("cpu.gemm"), std::string::npos) << r.err;
}

TEST(BenchCli, ListSaysWhatRunsHere) {
  auto r = run_dlrig({"bench", "--list", "--csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cpu.gemm.sgemm"), std::string::npos);
  EXPECT_NE(r.out.find("cpu.gemm.bf16"), std::string::npos);
}

} // namespace
} // namespace dlrig::test
