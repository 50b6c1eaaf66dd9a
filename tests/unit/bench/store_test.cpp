// The results database: migrations, two writers, a writer killed with SIGKILL, and files it must
// refuse without touching them (not a database, a newer schema, another program's database).
#include "dlrig/bench/store.hpp"
#include "support/cli.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

namespace dlrig::bench {
namespace {

std::string fresh(const std::string &name) {
  auto p = test::scratch(name);
  std::filesystem::remove(p);
  std::filesystem::remove(p.string() + "-wal");
  std::filesystem::remove(p.string() + "-shm");
  return p.string();
}

std::string bytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Record sample_record(const std::string &id, double rate) {
  Record r;
  r.id = id;
  r.family = "cpu.gemm";
  r.config = "n=1";
  r.rate_median = rate;
  r.rate_unit = "GFLOP/s";
  r.seconds = summarize({1, 1.01, 0.99});
  return r;
}

// A database at `path` holding one run of `n` results of cpu.gemm.sgemm (rates 0, 1, ...),
// closed again.
void store_results(const std::string &path, int n) {
  auto db = Store::open(path);
  ASSERT_TRUE(db) << db.error().message;
  auto run = (*db)->begin_run("t", "quick", Json::object());
  ASSERT_TRUE(run);
  for (int i = 0; i < n; ++i)
    ASSERT_FALSE((*db)->add(*run, sample_record("cpu.gemm.sgemm", i)));
}

int sql_int(const std::string &path, const char *sql) {
  sqlite3 *db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt *st = nullptr;
  int v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

void sql_exec(const std::string &path, const char *sql) {
  sqlite3 *db = nullptr;
  sqlite3_open(path.c_str(), &db);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  sqlite3_close(db);
}

TEST(BenchStore, NewDatabaseIsMigratedAndKeepsResults) {
  auto path = fresh("migrate.db");
  {
    auto db = Store::open(path);
    ASSERT_TRUE(db) << db.error().message;
    auto run = (*db)->begin_run("2026-01-01T00:00:00Z", "quick", Json{{"cpu_model", "x"}});
    ASSERT_TRUE(run);
    EXPECT_FALSE((*db)->add(*run, sample_record("cpu.gemm.sgemm", 12.5)));
  }
  EXPECT_EQ(sql_int(path, "PRAGMA user_version"), kStoreSchema);
  EXPECT_EQ(sql_int(path, "SELECT max(version) FROM schema_migrations"), kStoreSchema);
  EXPECT_EQ(sql_int(path, "SELECT count(*) FROM schema_migrations"), kStoreSchema);
  auto again = Store::open(path); // reopening migrates nothing twice
  ASSERT_TRUE(again);
  EXPECT_EQ(sql_int(path, "SELECT count(*) FROM schema_migrations"), kStoreSchema);
  auto rs = (*again)->results(std::nullopt, "cpu.gemm.sgemm");
  ASSERT_TRUE(rs);
  ASSERT_EQ(rs->size(), 1u);
  EXPECT_DOUBLE_EQ(*(*rs)[0].record.rate_median, 12.5);
  EXPECT_NEAR((*rs)[0].record.seconds.rsd(), summarize({1, 1.01, 0.99}).rsd(), 1e-12);
  auto runs = (*again)->runs();
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].environment["cpu_model"], "x");
}

TEST(BenchStore, NotADatabaseIsRefusedAndLeftByteIdentical) {
  auto path = fresh("garbage.db");
  std::string junk(5000, 'x');
  junk.replace(0, 16, "SQLite format 3"); // looks like one at first glance
  std::ofstream(path, std::ios::binary) << junk;
  auto db = Store::open(path);
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().kind, ErrorKind::bad_input);
  EXPECT_NE(db.error().message.find(path), std::string::npos);
  EXPECT_EQ(bytes(path), junk);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST(BenchStore, NewerSchemaIsRefusedUntouched) {
  auto path = fresh("newer.db");
  sql_exec(path, "CREATE TABLE schema_migrations(version INTEGER); PRAGMA user_version = 99");
  auto before = bytes(path);
  auto db = Store::open(path);
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().kind, ErrorKind::bad_input);
  EXPECT_NE(db.error().message.find("newer"), std::string::npos) << db.error().message;
  EXPECT_EQ(bytes(path), before);
}

TEST(BenchStore, AnotherProgramsDatabaseIsRefused) {
  auto path = fresh("other.db");
  sql_exec(path, "CREATE TABLE t(x); PRAGMA user_version = 1");
  auto before = bytes(path);
  auto db = Store::open(path);
  ASSERT_FALSE(db);
  EXPECT_EQ(bytes(path), before);
}

TEST(BenchStore, ReadOnlyFileIsAnIoError) {
  if (geteuid() == 0)
    GTEST_SKIP() << "root writes read-only files";
  auto path = fresh("readonly.db");
  { ASSERT_TRUE(Store::open(path)); }
  std::filesystem::permissions(path, std::filesystem::perms::owner_read);
  auto db = Store::open(path);
  bool refused = !db;
  if (db) { // opened: writing must then fail cleanly
    auto run = (*db)->begin_run("t", "quick", Json::object());
    refused = !run;
    if (!run) {
      EXPECT_EQ(run.error().kind, ErrorKind::io);
    }
  } else {
    EXPECT_EQ(db.error().kind, ErrorKind::io);
  }
  EXPECT_TRUE(refused);
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
}

TEST(BenchStore, TwoWritersBothSucceed) {
  auto path = fresh("two.db");
  { ASSERT_TRUE(Store::open(path)); }
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto db = Store::open(path);
    if (!db)
      _exit(3);
    auto run = (*db)->begin_run("t", "quick", Json::object());
    for (int i = 0; i < 200 && run; ++i)
      if ((*db)->add(*run, sample_record("child", i)))
        _exit(4);
    _exit(run ? 0 : 5);
  }
  auto db = Store::open(path);
  ASSERT_TRUE(db);
  auto run = (*db)->begin_run("t", "quick", Json::object());
  ASSERT_TRUE(run);
  for (int i = 0; i < 200; ++i)
    ASSERT_FALSE((*db)->add(*run, sample_record("parent", i)));
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ((*db)->results(std::nullopt, "child")->size(), 200u);
  EXPECT_EQ((*db)->results(std::nullopt, "parent")->size(), 200u);
}

TEST(BenchStore, WriterKilledMidRunLeavesEarlierResultsReadable) {
  auto path = fresh("killed.db");
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipefd[0]);
    auto db = Store::open(path);
    if (!db)
      _exit(3);
    auto run = (*db)->begin_run("t", "quick", Json::object());
    for (int i = 0; run; ++i) {
      if ((*db)->add(*run, sample_record("killed", i)))
        _exit(4);
      if (i == 49) {
        char c = 'k';
        (void)!write(pipefd[1], &c, 1); // 50 results are committed
      }
    }
    _exit(5);
  }
  close(pipefd[1]);
  char c = 0;
  ASSERT_EQ(read(pipefd[0], &c, 1), 1);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  close(pipefd[0]);
  auto db = Store::open(path);
  ASSERT_TRUE(db) << db.error().message;
  auto rs = (*db)->results(std::nullopt, "killed");
  ASSERT_TRUE(rs);
  ASSERT_GE(rs->size(), 50u);
  for (std::size_t i = 0; i < 50; ++i)
    EXPECT_DOUBLE_EQ(*(*rs)[i].record.rate_median, static_cast<double>(i));
}

TEST(BenchStore, LockedPastTheTimeoutIsAnIoErrorNamingTheFile) {
  auto path = fresh("locked.db");
  { ASSERT_TRUE(Store::open(path)); }
  sqlite3 *holder = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto db = Store::open(path, 50);
  ASSERT_TRUE(db) << db.error().message; // reading is not blocked in WAL mode
  auto run = (*db)->begin_run("t", "quick", Json::object());
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().kind, ErrorKind::io);
  EXPECT_NE(run.error().message.find("locked"), std::string::npos) << run.error().message;
  EXPECT_NE(run.error().message.find(path), std::string::npos);
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  EXPECT_TRUE((*db)->begin_run("t", "quick", Json::object())); // free again: it works
}

// The journal mode as the file's header says it (bytes 18 and 19: 1 rollback journal, 2 WAL),
// read without SQLite: a connection to a WAL database creates its -wal and -shm files.
std::string journal_mode(const std::string &path) {
  const std::string b = bytes(path);
  if (b.size() < 20)
    return "";
  return b[18] == 2 && b[19] == 2 ? "wal" : b[18] == 1 && b[19] == 1 ? "delete" : "other";
}

// Opening path for writing, then for reading, is refused as bad input (exit 65) with a message
// that names the file and says `says`, and leaves every byte as it was: no WAL beside it.
void expect_refused_untouched(const std::string &path, const std::string &says) {
  const auto before = bytes(path);
  const auto mode = journal_mode(path);
  for (auto open : {&Store::open, &Store::open_for_reading}) {
    auto db = open(path, 5000);
    ASSERT_FALSE(db);
    EXPECT_EQ(db.error().kind, ErrorKind::bad_input) << db.error().message;
    EXPECT_NE(db.error().message.find(path), std::string::npos) << db.error().message;
    EXPECT_NE(db.error().message.find(says), std::string::npos) << db.error().message;
    EXPECT_EQ(bytes(path), before);
    EXPECT_EQ(journal_mode(path), mode);
  }
  if (mode != "wal") {
    EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  }
}

// Another program's database with no user_version (as `sqlite3 other.db "create table t(x)"`
// leaves it) was taken over: dlrig's tables added and the file switched to WAL.
TEST(BenchStore, AnotherProgramsTablesAreRefusedBeforeTheSwitchToWal) {
  auto path = fresh("foreign.db");
  sql_exec(path, "CREATE TABLE t(x); INSERT INTO t VALUES (1)");
  ASSERT_EQ(journal_mode(path), "delete");
  expect_refused_untouched(path, "a SQLite database of another program");
  expect_refused_untouched(path, "--db PATH");
}

// A table named like one of dlrig's failed the migration as an I/O error (74) after the switch.
TEST(BenchStore, AForeignResultsTableIsBadInputAndUntouched) {
  auto path = fresh("foreign-results.db");
  sql_exec(path, "CREATE TABLE results(x)");
  expect_refused_untouched(path, "(tables results; no schema_migrations)");
}

// Two pages of a database damaged on disk (a copy of a real one, overwritten at 4096 and
// 3 x 4096): refused before anything is written next to them.
TEST(BenchStore, ACorruptPageIsRefusedAndNoByteChanges) {
  auto path = fresh("corrupt-page.db");
  ASSERT_NO_FATAL_FAILURE(store_results(path, 300));
  ASSERT_FALSE(std::filesystem::exists(path + "-wal")); // checkpointed as the last one closed
  ASSERT_GT(std::filesystem::file_size(path), 4u * 4096);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    const std::string junk(512, '\xa5');
    for (std::streamoff at : {std::streamoff(4096), std::streamoff(3 * 4096)}) {
      f.seekp(at);
      f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
  }
  expect_refused_untouched(path, "corrupt");
}

TEST(BenchStore, AFolderOrAFifoIsNotARegularFile) {
  auto dir = fresh("a-folder.db");
  std::filesystem::create_directories(dir);
  auto db = Store::open(dir);
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().kind, ErrorKind::bad_input);
  EXPECT_NE(db.error().message.find("not a regular file but a folder"), std::string::npos)
      << db.error().message;
  auto fifo = fresh("a-fifo.db");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto f = Store::open(fifo); // returns: a FIFO is never opened (it would wait for a writer)
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().kind, ErrorKind::bad_input);
  EXPECT_NE(f.error().message.find("FIFO"), std::string::npos) << f.error().message;
  EXPECT_EQ(Store::open_for_reading(fifo).error().kind, ErrorKind::bad_input);
}

// history, show and compare read: they created the file when it was missing, and switched a
// database to WAL (a read-only one failed with 74).
TEST(BenchStore, ReadingNeverCreatesSwitchesOrMigrates) {
  auto missing = fresh("missing.db");
  auto none = Store::open_for_reading(missing);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, ErrorKind::not_found);
  EXPECT_NE(none.error().message.find(missing), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(missing));

  auto empty = fresh("empty.db");
  std::ofstream(empty).close();
  {
    auto db = Store::open_for_reading(empty);
    ASSERT_TRUE(db) << db.error().message;
    EXPECT_TRUE((*db)->runs()->empty());
    EXPECT_TRUE((*db)->results(std::nullopt)->empty());
    EXPECT_FALSE((*db)->begin_run("t", "quick", Json::object()));
  }
  EXPECT_EQ(std::filesystem::file_size(empty), 0u);

  auto path = fresh("rollback-journal.db");
  ASSERT_NO_FATAL_FAILURE(store_results(path, 1));
  sql_exec(path, "PRAGMA journal_mode=DELETE");
  auto before = bytes(path);
  {
    auto db = Store::open_for_reading(path);
    ASSERT_TRUE(db) << db.error().message;
    EXPECT_EQ((*db)->results(std::nullopt)->size(), 1u);
  }
  EXPECT_EQ(journal_mode(path), "delete");
  EXPECT_EQ(bytes(path), before);

  // A WAL database read leaves no -wal or -shm file behind (a read-only connection would), and
  // nothing can be written through the reading connection.
  auto wal = fresh("wal.db");
  ASSERT_NO_FATAL_FAILURE(store_results(wal, 1));
  ASSERT_EQ(journal_mode(wal), "wal");
  ASSERT_FALSE(std::filesystem::exists(wal + "-wal"));
  const auto wal_before = bytes(wal);
  {
    auto db = Store::open_for_reading(wal);
    ASSERT_TRUE(db) << db.error().message;
    EXPECT_EQ((*db)->results(std::nullopt)->size(), 1u);
    auto refused = (*db)->begin_run("t", "quick", Json::object());
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().kind, ErrorKind::io);
  }
  EXPECT_FALSE(std::filesystem::exists(wal + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(wal + "-shm"));
  EXPECT_EQ(bytes(wal), wal_before);
}

// Runs `read` in a child process as a user who cannot write `folder` (nobody where the test runs
// as root, who writes anywhere; the same user otherwise), with `folder` made read-only meanwhile.
// The child's exit status.
int read_in_a_folder_this_user_cannot_write(const std::filesystem::path &folder,
                                            const std::function<int()> &read) {
  namespace fs = std::filesystem;
  fs::permissions(folder, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read |
                              fs::perms::others_exec);
  pid_t child = fork();
  if (child == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
      _exit(90);
    if (access(folder.c_str(), W_OK) == 0 || access(folder.c_str(), R_OK | X_OK) != 0)
      _exit(91);
    _exit(read());
  }
  int status = 0;
  waitpid(child, &status, 0);
  fs::permissions(folder, fs::perms::owner_all);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(BenchStore, AWalDatabaseInAFolderThisUserCannotWriteReads) {
  // SQLite must create the -shm beside a WAL database to read it; here it cannot, so the file is
  // read immutable. The name needs URI escapes ('?', '#', '%').
  auto folder = test::scratch("locked-wal");
  std::filesystem::create_directories(folder);
  const std::string path = (folder / "r?#%.db").string();
  ASSERT_NO_FATAL_FAILURE(store_results(path, 3));
  ASSERT_EQ(journal_mode(path), "wal");
  const auto before = bytes(path);
  int read = read_in_a_folder_this_user_cannot_write(folder, [&] {
    auto db = Store::open_for_reading(path);
    if (!db) {
      fprintf(stderr, "%s\n", db.error().message.c_str());
      return 1;
    }
    auto results = (*db)->results(std::nullopt);
    if (!results || results->size() != 3 || (*results)[2].record.rate_median != 2.0)
      return 2;
    return (*db)->begin_run("t", "quick", Json::object()) ? 3 : 0; // nothing written through it
  });
  EXPECT_EQ(read, 0);
  EXPECT_EQ(bytes(path), before);
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST(BenchStore, AWalHoldingResultsInAFolderThisUserCannotWriteIsRefused) {
  // A -wal with results not yet in the file: an immutable read would miss them, so it is refused
  // with what to do, and nothing changes.
  auto source = fresh("wal-source.db");
  ASSERT_NO_FATAL_FAILURE(store_results(source, 1));
  sqlite3 *holder = nullptr;
  ASSERT_EQ(sqlite3_open(source.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder,
                         "PRAGMA wal_autocheckpoint = 0; INSERT INTO runs(time, tier, environment)"
                         " VALUES ('t2', 'quick', '{}')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  auto folder = test::scratch("locked-wal-with-results");
  std::filesystem::create_directories(folder);
  const std::string path = (folder / "r.db").string();
  std::filesystem::copy_file(source, path);
  std::filesystem::copy_file(source + "-wal", path + "-wal");
  sqlite3_close(holder);
  ASSERT_GT(std::filesystem::file_size(path + "-wal"), 0u);
  const auto before = bytes(path), wal_before = bytes(path + "-wal");
  int read = read_in_a_folder_this_user_cannot_write(folder, [&] {
    auto db = Store::open_for_reading(path);
    if (db)
      return 1;
    if (db.error().kind != ErrorKind::io)
      return 2;
    const auto &m = db.error().message;
    return m.find(path + "-wal holds results") != std::string::npos &&
                   m.find("dlrig bench history --db " + path) != std::string::npos
               ? 0
               : 3;
  });
  EXPECT_EQ(read, 0);
  EXPECT_EQ(bytes(path), before);
  EXPECT_EQ(bytes(path + "-wal"), wal_before);
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
}

Cell text(std::string t) {
  Cell c;
  c.kind = Cell::Kind::text;
  c.text = std::move(t);
  return c;
}
Cell number(double v) {
  Cell c;
  c.kind = Cell::Kind::number;
  c.number = v;
  return c;
}

// A row as Store::add writes one.
ResultRow good_row() {
  ResultRow row;
  row.id = 7;
  row.run = 2;
  row.run_time = "2026-11-28T03:00:00Z";
  row.bench = text("cpu.gemm.sgemm");
  row.family = text("cpu.gemm");
  row.config = text("n=512 threads=2");
  row.status = text("measured");
  row.rate_median = number(900);
  row.rate_best = number(910);
  row.rate_worst = number(880);
  row.rate_unit = text("GFLOP/s");
  row.samples = number(5);
  row.seconds_median = number(0.01);
  row.cv = number(0.02);
  row.record = text(R"({"id":"cpu.gemm.sgemm","details":{"threads":2}})");
  return row;
}

TEST(BenchStore, ARowAsDlrigWritesItDecodes) {
  auto r = decode_result(good_row());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->run, 2);
  EXPECT_EQ(r->record.id, "cpu.gemm.sgemm");
  EXPECT_EQ(r->record.status, Status::measured);
  EXPECT_EQ(r->record.rate_median, 900);
  EXPECT_FALSE(r->record.share_of_peak); // NULL: unknown
  EXPECT_FALSE(r->record.reason);
  EXPECT_EQ(r->record.seconds.n, 5u);
  EXPECT_DOUBLE_EQ(r->record.seconds.rsd(), 0.02);
  EXPECT_EQ(r->record.details["threads"], 2);
}

// Each way a row edited outside dlrig can differ from what Store::add writes is refused, naming
// the row and the column; before, a status dlrig did not know read as "measured", text in a rate
// column as 0, a record that was not JSON as no details.
TEST(BenchStore, ARowDlrigDidNotWriteIsRefusedNamingTheColumn) {
  struct Case {
    std::function<void(ResultRow &)> edit;
    std::string says;
  };
  const std::vector<Case> cases = {
      {[](ResultRow &r) { r.status = text("great"); },
       "status is 'great', not measured, skipped, failed or wrong"},
      {[](ResultRow &r) { r.status = number(1); }, "status is the number 1, not text"},
      {[](ResultRow &r) { r.bench = Cell{}; }, "bench is empty (NULL), not text"},
      {[](ResultRow &r) { r.rate_median = text("fast"); },
       "rate_median is the text 'fast', not a number"},
      {[](ResultRow &r) { r.rate_best = number(-3); }, "rate_best is -3, not a finite number >= 0"},
      {[](ResultRow &r) { r.rate_worst = number(std::numeric_limits<double>::infinity()); },
       "rate_worst is inf, not a finite number >= 0"},
      {[](ResultRow &r) { r.samples = number(2.5); }, "samples is 2.5, not a count of samples"},
      {[](ResultRow &r) { r.samples = number(1e18); }, "samples is 1e+18, not a count of samples"},
      {[](ResultRow &r) { r.cv = text(""); }, "cv is the text '', not a number"},
      {[](ResultRow &r) { r.share_of_peak = number(-0.5); },
       "share_of_peak is -0.5, not a finite number >= 0"},
      {[](ResultRow &r) { r.record = text("{\"details\": "); }, "record is not JSON (byte 13"},
      {[](ResultRow &r) { r.record = text("[1, 2]"); },
       "record is JSON but not an object: '[1, 2]'"},
      {[](ResultRow &r) { r.record = text(R"({"details": 1e999})"); },
       "record holds a number too large for JSON"},
      {[](ResultRow &r) { r.record = text(R"({"details": "x"})"); },
       "record's details is not a JSON object"},
      {[](ResultRow &r) { r.record = Cell{}; }, "record is empty (NULL), not a JSON object"},
  };
  for (const auto &c : cases) {
    ResultRow row = good_row();
    c.edit(row);
    auto r = decode_result(row);
    ASSERT_FALSE(r) << c.says;
    EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
    EXPECT_NE(r.error().message.find("result 7 (run 2, "), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
  }
  // What Store::add writes for an unknown reading: NULL rates, samples and CV; a reason.
  ResultRow skipped = good_row();
  skipped.status = text("skipped");
  skipped.reason = text("needs a GPU");
  skipped.rate_median = skipped.rate_best = skipped.rate_worst = skipped.samples = Cell{};
  skipped.seconds_median = skipped.cv = Cell{};
  auto r = decode_result(skipped);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->record.reason, "needs a GPU");
  EXPECT_FALSE(r->record.rate_median);
  EXPECT_EQ(r->record.seconds.n, 0u);
}

TEST(BenchStore, ARunWhoseEnvironmentIsNotAnObjectIsRefused) {
  RunRow row;
  row.id = 4;
  row.time = text("t");
  row.tier = text("quick");
  row.environment = text(R"({"cpu_model": "x"})");
  auto ok = decode_run(row);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->environment["cpu_model"], "x");
  row.environment = text("null");
  auto r = decode_run(row);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("run 4: environment is JSON but not an object"),
            std::string::npos)
      << r.error().message;
}

// Through the database: the whole read is refused with the file, the row and the statement that
// deletes it, and not one byte of the file changes.
TEST(BenchStore, AnEditedRowFailsTheReadAndNoByteChanges) {
  auto path = fresh("edited.db");
  store_results(path, 3);
  sql_exec(path, "PRAGMA journal_mode=DELETE; UPDATE results SET status = 'great' WHERE id = 2");
  const auto before = bytes(path);
  auto db = Store::open_for_reading(path);
  ASSERT_TRUE(db) << db.error().message;
  auto all = (*db)->results(std::nullopt);
  ASSERT_FALSE(all);
  EXPECT_EQ(all.error().kind, ErrorKind::bad_input);
  EXPECT_NE(all.error().message.find("results database " + path +
                                     ": result 2 (run 1, cpu.gemm.sgemm): status is 'great'"),
            std::string::npos)
      << all.error().message;
  EXPECT_NE(all.error().message.find("sqlite3 " + path + " \"DELETE FROM results WHERE id = 2\""),
            std::string::npos)
      << all.error().message;
  EXPECT_EQ(bytes(path), before);
  sql_exec(path, "UPDATE results SET status = 'measured'; UPDATE runs SET environment = 'x'");
  auto runs = (*db)->runs();
  ASSERT_FALSE(runs);
  EXPECT_NE(runs.error().message.find(
                "run 1: environment is not JSON (byte 1: 'x'); dlrig did not write that row"),
            std::string::npos)
      << runs.error().message;
  EXPECT_NE(runs.error().message.find("DELETE FROM results WHERE run = 1; DELETE FROM runs WHERE "
                                      "id = 1"),
            std::string::npos);
}

TEST(BenchStore, BeyondNoise) {
  EXPECT_FALSE(beyond_noise(100, 0.01, 103, 0.01)); // 3 % < 2 x 2 %
  EXPECT_TRUE(beyond_noise(100, 0.01, 110, 0.01));
  EXPECT_TRUE(beyond_noise(100, 0.01, 90, 0.01));
  EXPECT_FALSE(beyond_noise(0, 0.01, 90, 0.01));
}

} // namespace
} // namespace dlrig::bench
