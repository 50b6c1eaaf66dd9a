// The results database: migrations, two writers, a writer killed with SIGKILL, and files it must
// refuse without touching them (not a database, a newer schema, another program's database).
#include "dlrig/bench/store.hpp"
#include "support/cli.hpp"

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
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

TEST(BenchStore, BeyondNoise) {
  EXPECT_FALSE(beyond_noise(100, 0.01, 103, 0.01)); // 3 % < 2 x 2 %
  EXPECT_TRUE(beyond_noise(100, 0.01, 110, 0.01));
  EXPECT_TRUE(beyond_noise(100, 0.01, 90, 0.01));
  EXPECT_FALSE(beyond_noise(0, 0.01, 90, 0.01));
}

} // namespace
} // namespace dlrig::bench
