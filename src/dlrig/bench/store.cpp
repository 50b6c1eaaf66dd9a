// The results database (store.hpp).
#include "dlrig/bench/store.hpp"

#include "dlrig/core/text.hpp"

#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace dlrig::bench {
namespace {

// Migration N brings the schema from N - 1 to N.
const char *const kMigrations[] = {
    // 1
    "CREATE TABLE runs (id INTEGER PRIMARY KEY, time TEXT NOT NULL, tier TEXT NOT NULL,"
    " environment TEXT NOT NULL);"
    "CREATE TABLE results (id INTEGER PRIMARY KEY, run INTEGER NOT NULL REFERENCES runs(id),"
    " bench TEXT NOT NULL, family TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL,"
    " reason TEXT, rate_median REAL, rate_best REAL, rate_worst REAL, rate_unit TEXT,"
    " samples INTEGER, seconds_median REAL, cv REAL, share_of_peak REAL, record TEXT NOT NULL);"
    "CREATE INDEX results_bench ON results(bench, run);",
};

Error db_error(sqlite3 *db, int rc, const std::string &path, const std::string &doing,
               int busy_ms) {
  int code = db ? sqlite3_extended_errcode(db) : rc;
  int primary = code & 0xff;
  std::string what = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
    return make_error(
        ErrorKind::io,
        fmt::format("results database {}: still locked by another process after {:g} s "
                    "({}); wait for the other dlrig to finish, or give another file "
                    "with --db PATH",
                    path, busy_ms / 1000.0, doing));
  if (primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN || primary == SQLITE_PERM)
    return make_error(ErrorKind::io,
                      fmt::format("results database {}: cannot be {} ({}: {}); fix its "
                                  "permissions or give another file with --db PATH",
                                  path, primary == SQLITE_READONLY ? "written" : "opened", doing,
                                  what));
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
    return make_error(ErrorKind::bad_input,
                      fmt::format("results database {}: not a readable SQLite database ({}); "
                                  "dlrig leaves it as it is: move it away (or give another file "
                                  "with --db PATH) and run again",
                                  path, what));
  return make_error(ErrorKind::io, fmt::format("results database {}: {}: {}", path, doing, what));
}

int exec(sqlite3 *db, const char *sql) {
  return sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
}

struct Stmt {
  sqlite3_stmt *s = nullptr;
  ~Stmt() { sqlite3_finalize(s); }
};

void bind_opt(sqlite3_stmt *s, int i, const std::optional<double> &v) {
  if (v)
    sqlite3_bind_double(s, i, *v);
  else
    sqlite3_bind_null(s, i);
}
std::string col_text(sqlite3_stmt *s, int i) {
  auto *t = sqlite3_column_text(s, i);
  return t ? std::string(reinterpret_cast<const char *>(t),
                         static_cast<std::size_t>(sqlite3_column_bytes(s, i)))
           : "";
}
Cell col_cell(sqlite3_stmt *s, int i) {
  Cell c;
  switch (sqlite3_column_type(s, i)) {
  case SQLITE_NULL:
    break;
  case SQLITE_INTEGER:
  case SQLITE_FLOAT:
    c.kind = Cell::Kind::number;
    c.number = sqlite3_column_double(s, i);
    break;
  default: // text, or a BLOB read as its bytes
    c.kind = Cell::Kind::text;
    c.text = col_text(s, i);
  }
  return c;
}

// A cell's text as a message quotes it.
std::string shown(const std::string &text) {
  return "'" + excerpt(text, 40) + "'";
}

std::string describe(const Cell &c) {
  if (c.kind == Cell::Kind::null)
    return "empty (NULL)";
  if (c.kind == Cell::Kind::number)
    return fmt::format("the number {}", c.number);
  return "the text " + shown(c.text);
}

// The decoders' checks; each returns why the cell is not what dlrig writes there.
using CellProblem = std::optional<std::string>;

CellProblem text_of(const char *column, const Cell &c, bool nullable, std::string &out) {
  if (c.kind == Cell::Kind::text || (nullable && c.kind == Cell::Kind::null)) {
    out = c.text;
    return std::nullopt;
  }
  return fmt::format("{} is {}, not text", column, describe(c));
}

// NULL (unknown) or a finite number >= 0.
CellProblem amount_of(const char *column, const Cell &c, std::optional<double> &out) {
  if (c.kind == Cell::Kind::null) {
    out.reset();
    return std::nullopt;
  }
  if (c.kind != Cell::Kind::number)
    return fmt::format("{} is {}, not a number", column, describe(c));
  if (!std::isfinite(c.number) || c.number < 0)
    return fmt::format("{} is {}, not a finite number >= 0", column, c.number);
  out = c.number;
  return std::nullopt;
}

// A JSON object (dlrig writes every record and environment as one).
CellProblem object_of(const char *column, const Cell &c, Json &out) {
  if (c.kind != Cell::Kind::text)
    return fmt::format("{} is {}, not a JSON object", column, describe(c));
  try {
    out = Json::parse(c.text);
  } catch (const Json::parse_error &e) {
    return fmt::format("{} is not JSON (byte {}: {})", column, e.byte, shown(c.text));
  } catch (const Json::exception &) { // a number beyond double's range is not a parse error
    return fmt::format("{} holds a number too large for JSON: {}", column, shown(c.text));
  }
  if (!out.is_object())
    return fmt::format("{} is JSON but not an object: {}", column, shown(c.text));
  return std::nullopt;
}

} // namespace

// A relative XDG_DATA_HOME is ignored, as the XDG Base Directory Specification asks
// (https://specifications.freedesktop.org/basedir-spec/latest/): a database under the current
// folder would change with it. A relative HOME names no place either.
std::optional<std::string> default_db_path() {
  const char *xdg = std::getenv("XDG_DATA_HOME");
  if (xdg && *xdg == '/')
    return std::string(xdg) + "/dlrig/results.db";
  const char *home = std::getenv("HOME");
  if (home && *home == '/')
    return std::string(home) + "/.local/share/dlrig/results.db";
  return std::nullopt;
}

namespace {

// The tables of the database (not SQLite's own), or the error of reading them: the first read of
// the file, where one that is not a database fails untouched.
dlrig::Result<std::vector<std::string>> table_names(sqlite3 *db, const std::string &path,
                                                    int busy_ms) {
  Stmt st;
  int rc = sqlite3_prepare_v2(
      db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'", -1,
      &st.s, nullptr);
  if (rc != SQLITE_OK)
    return db_error(db, rc, path, "reading its tables", busy_ms);
  std::vector<std::string> out;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW)
    out.push_back(col_text(st.s, 0));
  if (rc != SQLITE_DONE)
    return db_error(db, rc, path, "reading its tables", busy_ms);
  return out;
}

dlrig::Result<int> schema_version(sqlite3 *db, const std::string &path, int busy_ms) {
  Stmt st;
  int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st.s, nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_step(st.s);
  if (rc != SQLITE_ROW)
    return db_error(db, rc, path, "reading its schema version", busy_ms);
  return sqlite3_column_int(st.s, 0);
}

Error corrupt(const std::string &path, const std::string &what) {
  return make_error(ErrorKind::bad_input,
                    fmt::format("results database {}: corrupt ({}); dlrig leaves it as it is: "
                                "move it away (or give another file with --db PATH) and run "
                                "again; `sqlite3 {} .recover` may save its results",
                                path, what, path));
}

// PRAGMA quick_check: every page and b-tree read once (not the indexes' contents), so a page
// damaged on disk is found before anything is written next to it.
std::optional<Error> quick_check(sqlite3 *db, const std::string &path, int busy_ms) {
  Stmt st;
  int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(5)", -1, &st.s, nullptr);
  if (rc != SQLITE_OK)
    return db_error(db, rc, path, "checking it", busy_ms);
  std::vector<std::string> said;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW)
    said.push_back(col_text(st.s, 0));
  if (rc != SQLITE_DONE) {
    Error e = db_error(db, rc, path, "checking it", busy_ms);
    return (rc & 0xff) == SQLITE_CORRUPT ? corrupt(path, sqlite3_errmsg(db)) : e;
  }
  if (said.size() == 1 && said[0] == "ok")
    return std::nullopt;
  std::string what;
  for (const auto &line : said)
    what += (what.empty() ? "" : "; ") + line;
  return corrupt(path, "PRAGMA quick_check: " + what);
}

// `path` as an SQLite URI that opens it immutable (https://sqlite.org/uri.html): '?', '#' and '%'
// percent-encoded, a relative path kept relative.
std::string immutable_uri(const std::string &path) {
  std::string uri = "file:";
  for (char c : path)
    uri += c == '?' ? "%3f" : c == '#' ? "%23" : c == '%' ? "%25" : std::string(1, c);
  return uri + "?immutable=1";
}

// Reading failed because SQLite could not create the -shm a WAL database needs: the folder is not
// this user's to write and no -shm is there (SQLITE_READONLY_DIRECTORY, or SQLITE_CANTOPEN when a
// -wal is there).
bool cannot_make_shm(sqlite3 *db, const std::string &path) {
  const int primary = sqlite3_extended_errcode(db) & 0xff;
  if (primary != SQLITE_READONLY && primary != SQLITE_CANTOPEN)
    return false;
  auto folder = std::filesystem::path(path).parent_path();
  std::error_code ec;
  return ::access(folder.empty() ? "." : folder.c_str(), W_OK) != 0 &&
         !std::filesystem::exists(path + "-shm", ec);
}

bool has(const std::vector<std::string> &names, const char *name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

} // namespace

dlrig::Result<std::shared_ptr<Store>> Store::open(const std::string &path, int busy_ms) {
  return open_as(path, busy_ms, Access::write);
}

dlrig::Result<std::shared_ptr<Store>> Store::open_for_reading(const std::string &path,
                                                              int busy_ms) {
  return open_as(path, busy_ms, Access::read);
}

dlrig::Result<std::shared_ptr<Store>> Store::open_as(const std::string &path, int busy_ms,
                                                     Access access) {
  const bool write = access == Access::write;
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    return make_error(
        ErrorKind::bad_input,
        fmt::format("results database {}: not a regular file but {}; give a file with --db PATH",
                    path,
                    std::filesystem::is_directory(status)               ? "a folder"
                    : status.type() == std::filesystem::file_type::fifo ? "a FIFO (named pipe)"
                                                                        : "a device or a socket"));
  if (!write && !std::filesystem::exists(status))
    return make_error(ErrorKind::not_found,
                      fmt::format("results database {}: no such file: no benchmark has been "
                                  "stored there (`dlrig bench` creates it); give the database "
                                  "with --db PATH",
                                  path));
  if (write) {
    auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty())
      std::filesystem::create_directories(parent, ec);
  }
  sqlite3 *db = nullptr;
  // Read-write even for reading (SQLite falls back to read-only on a write-protected file), with
  // query_only set below: a read-only connection leaves a WAL database's -wal and -shm behind.
  int rc = sqlite3_open_v2(path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | (write ? SQLITE_OPEN_CREATE : 0), nullptr);
  if (rc != SQLITE_OK) {
    Error e = db_error(db, rc, path, "opening", busy_ms);
    sqlite3_close(db);
    return e;
  }
  std::shared_ptr<Store> store(new Store(db, path, busy_ms));
  sqlite3_busy_timeout(db, busy_ms);
  if (!write && (rc = exec(db, "PRAGMA query_only = ON")) != SQLITE_OK)
    return db_error(db, rc, path, "opening it for reading only", busy_ms);
  // Read and checked before anything is written (the switch to WAL included): a file that is not
  // a database, is corrupt, is another program's or has a newer schema fails here, untouched.
  auto tables = table_names(db, path, busy_ms);
  if (!tables && !write && cannot_make_shm(db, path)) {
    // A WAL database in a folder this user cannot write: SQLite must create its -shm there to
    // read it. With no -wal beside it (or an empty one) the file holds every result, and SQLite's
    // immutable open reads it without the -shm (and without locks: a run storing into it at that
    // moment is not seen). A -wal with results in it cannot be read that way.
    std::error_code size_ec;
    auto wal = std::filesystem::file_size(path + "-wal", size_ec);
    if (!size_ec && wal > 0)
      return make_error(
          ErrorKind::io,
          fmt::format("results database {}: cannot be read by this user: its {}-wal holds "
                      "results not yet in the file, and SQLite must create {}-shm to read them "
                      "in a folder this user cannot write; let the file's owner run `dlrig bench "
                      "history --db {}` once (it folds them in), or copy the database with its "
                      "-wal to a folder you can write and give that with --db PATH",
                      path, path, path, path));
    sqlite3 *frozen = nullptr;
    rc = sqlite3_open_v2(immutable_uri(path).c_str(), &frozen,
                         SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
    if (rc != SQLITE_OK) {
      Error e = db_error(frozen, rc, path, "opening it immutable", busy_ms);
      sqlite3_close(frozen);
      return e;
    }
    store.reset(new Store(frozen, path, busy_ms)); // closes the first connection
    db = frozen;
    tables = table_names(db, path, busy_ms);
  }
  if (!tables)
    return tables.error();
  auto version = schema_version(db, path, busy_ms);
  if (!version)
    return version.error();
  // dlrig's marker: schema_migrations, created in the same transaction as the first migration.
  const bool ours = has(*tables, "schema_migrations");
  if (!tables->empty() && !ours) {
    std::string names;
    for (const auto &t : *tables)
      names += (names.empty() ? "" : ", ") + t;
    return make_error(ErrorKind::bad_input,
                      fmt::format("results database {}: a SQLite database of another program "
                                  "(tables {}; no schema_migrations); dlrig leaves it as it is: "
                                  "give dlrig a file of its own with --db PATH",
                                  path, names));
  }
  if (*version > kStoreSchema)
    return make_error(ErrorKind::bad_input,
                      fmt::format("results database {}: schema version {} is newer than this "
                                  "dlrig's ({}); use a newer dlrig, or give another file with "
                                  "--db PATH (dlrig leaves this one as it is)",
                                  path, *version, kStoreSchema));
  if (*version > 0 && !ours)
    return make_error(ErrorKind::bad_input,
                      fmt::format("results database {}: a SQLite database but not dlrig's (no "
                                  "schema_migrations table); give another file with --db PATH",
                                  path));
  if (auto bad = quick_check(db, path, busy_ms))
    return *bad;
  if (!write) {
    store->empty_ = *version == 0; // an empty file: no results, nothing migrated
    return store;
  }
  if ((rc = exec(db, "PRAGMA journal_mode=WAL")) != SQLITE_OK)
    return db_error(db, rc, path, "switching to WAL", busy_ms);
  int current = *version;
  if (current < kStoreSchema) {
    if ((rc = exec(db, "BEGIN IMMEDIATE")) != SQLITE_OK)
      return db_error(db, rc, path, "starting the migration", busy_ms);
    if (auto again = schema_version(db, path, busy_ms))
      current = *again; // another process may have migrated meanwhile
    rc = exec(db, "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
                  " applied TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)");
    for (int v = current + 1; rc == SQLITE_OK && v <= kStoreSchema; ++v) {
      rc = exec(db, kMigrations[v - 1]);
      if (rc == SQLITE_OK)
        rc = exec(db, fmt::format("INSERT INTO schema_migrations(version) VALUES ({});"
                                  "PRAGMA user_version = {}",
                                  v, v)
                          .c_str());
    }
    if (rc == SQLITE_OK)
      rc = exec(db, "COMMIT");
    if (rc != SQLITE_OK) {
      Error e = db_error(db, rc, path, "migrating its schema", busy_ms);
      exec(db, "ROLLBACK");
      return e;
    }
  }
  return store;
}

Store::~Store() {
  sqlite3_close(db_);
}

dlrig::Result<std::int64_t> Store::begin_run(const std::string &time, const std::string &tier,
                                             const Json &environment) {
  Stmt st;
  int rc = sqlite3_prepare_v2(db_, "INSERT INTO runs(time, tier, environment) VALUES (?,?,?)", -1,
                              &st.s, nullptr);
  std::string env = environment.dump();
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st.s, 1, time.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.s, 2, tier.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.s, 3, env.c_str(), -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(st.s);
  }
  if (rc != SQLITE_DONE)
    return db_error(db_, rc, path_, "recording the run", busy_ms_);
  return static_cast<std::int64_t>(sqlite3_last_insert_rowid(db_));
}

std::optional<Error> Store::add(std::int64_t run, const Record &r) {
  Stmt st;
  int rc = sqlite3_prepare_v2(
      db_,
      "INSERT INTO results(run, bench, family, config, status, reason, rate_median, rate_best,"
      " rate_worst, rate_unit, samples, seconds_median, cv, share_of_peak, record)"
      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
      -1, &st.s, nullptr);
  if (rc == SQLITE_OK) {
    std::string record = to_json(r).dump();
    sqlite3_bind_int64(st.s, 1, run);
    sqlite3_bind_text(st.s, 2, r.id.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.s, 3, r.family.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.s, 4, r.config.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.s, 5, status_name(r.status), -1, SQLITE_STATIC);
    if (r.reason)
      sqlite3_bind_text(st.s, 6, r.reason->c_str(), -1, SQLITE_TRANSIENT);
    bind_opt(st.s, 7, r.rate_median);
    bind_opt(st.s, 8, r.rate_best);
    bind_opt(st.s, 9, r.rate_worst);
    sqlite3_bind_text(st.s, 10, r.rate_unit.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st.s, 11, static_cast<std::int64_t>(r.seconds.n));
    bind_opt(st.s, 12, r.seconds.n ? std::optional<double>(r.seconds.median) : std::nullopt);
    bind_opt(st.s, 13, r.seconds.n ? std::optional<double>(r.seconds.rsd()) : std::nullopt);
    bind_opt(st.s, 14, r.share_of_peak);
    sqlite3_bind_text(st.s, 15, record.c_str(), -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(st.s); // autocommit: one transaction per result
  }
  if (rc != SQLITE_DONE)
    return db_error(db_, rc, path_, "recording a result", busy_ms_);
  return std::nullopt;
}

dlrig::Result<std::vector<StoredRun>> Store::runs() {
  if (empty_)
    return std::vector<StoredRun>{};
  Stmt st;
  int rc = sqlite3_prepare_v2(db_,
                              "SELECT runs.id, time, tier, environment, (SELECT count(*) FROM "
                              "results WHERE run = runs.id) FROM runs ORDER BY runs.id",
                              -1, &st.s, nullptr);
  if (rc != SQLITE_OK)
    return db_error(db_, rc, path_, "reading runs", busy_ms_);
  std::vector<StoredRun> out;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
    RunRow row;
    row.id = sqlite3_column_int64(st.s, 0);
    row.time = col_cell(st.s, 1);
    row.tier = col_cell(st.s, 2);
    row.environment = col_cell(st.s, 3);
    row.results = sqlite3_column_int64(st.s, 4);
    auto run = decode_run(row);
    if (!run)
      return foreign_row(run.error().message,
                         fmt::format("DELETE FROM results WHERE run = {0}; DELETE FROM runs WHERE "
                                     "id = {0}",
                                     row.id));
    out.push_back(std::move(run).value());
  }
  if (rc != SQLITE_DONE)
    return db_error(db_, rc, path_, "reading runs", busy_ms_);
  return out;
}

dlrig::Result<std::vector<StoredResult>> Store::results(std::optional<std::int64_t> run,
                                                        const std::string &id) {
  if (empty_)
    return std::vector<StoredResult>{};
  Stmt st;
  int rc = sqlite3_prepare_v2(
      db_,
      "SELECT results.id, results.run, runs.time, bench, family, config, status, reason,"
      " rate_median, rate_best, rate_worst, rate_unit, samples, seconds_median, cv,"
      " share_of_peak, record"
      " FROM results JOIN runs ON runs.id = results.run"
      " WHERE (?1 IS NULL OR results.run = ?1) AND (?2 = '' OR bench = ?2 OR family = ?2)"
      " ORDER BY results.id",
      -1, &st.s, nullptr);
  if (rc != SQLITE_OK)
    return db_error(db_, rc, path_, "reading results", busy_ms_);
  if (run)
    sqlite3_bind_int64(st.s, 1, *run);
  sqlite3_bind_text(st.s, 2, id.c_str(), -1, SQLITE_TRANSIENT);
  std::vector<StoredResult> out;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
    ResultRow row;
    row.id = sqlite3_column_int64(st.s, 0);
    row.run = sqlite3_column_int64(st.s, 1);
    row.run_time = col_text(st.s, 2);
    int i = 3;
    for (Cell *c : {&row.bench, &row.family, &row.config, &row.status, &row.reason,
                    &row.rate_median, &row.rate_best, &row.rate_worst, &row.rate_unit, &row.samples,
                    &row.seconds_median, &row.cv, &row.share_of_peak, &row.record})
      *c = col_cell(st.s, i++);
    auto result = decode_result(row);
    if (!result)
      return foreign_row(result.error().message,
                         fmt::format("DELETE FROM results WHERE id = {}", row.id));
    out.push_back(std::move(result).value());
  }
  if (rc != SQLITE_DONE)
    return db_error(db_, rc, path_, "reading results", busy_ms_);
  return out;
}

Error Store::foreign_row(const std::string &what, const std::string &delete_sql) const {
  return make_error(ErrorKind::bad_input,
                    fmt::format("results database {0}: {1}; dlrig did not write that row (edited "
                                "by hand or by another program) and leaves the file as it is: "
                                "delete the row (sqlite3 {0} \"{2}\") or give another file with "
                                "--db PATH",
                                path_, what, delete_sql));
}

dlrig::Result<StoredRun> decode_run(const RunRow &row) {
  StoredRun r;
  r.id = row.id;
  r.results = static_cast<std::size_t>(std::max<std::int64_t>(row.results, 0));
  CellProblem p = text_of("time", row.time, false, r.time);
  if (!p)
    p = text_of("tier", row.tier, false, r.tier);
  if (!p)
    p = object_of("environment", row.environment, r.environment);
  if (p)
    return make_error(ErrorKind::bad_input, fmt::format("run {}: {}", row.id, *p));
  return r;
}

dlrig::Result<StoredResult> decode_result(const ResultRow &row) {
  StoredResult s;
  s.run = row.run;
  s.time = row.run_time;
  Record &r = s.record;
  std::string status, reason;
  std::optional<double> samples, median, cv;
  Json record;
  CellProblem p;
  auto check = [&p](CellProblem q) {
    if (!p)
      p = std::move(q);
  };
  check(text_of("bench", row.bench, false, r.id));
  check(text_of("family", row.family, false, r.family));
  check(text_of("config", row.config, false, r.config));
  check(text_of("status", row.status, false, status));
  if (!p) {
    bool known = false;
    for (Status k : {Status::measured, Status::skipped, Status::failed, Status::wrong})
      if (status == status_name(k)) {
        r.status = k;
        known = true;
      }
    if (!known)
      p = fmt::format("status is {}, not measured, skipped, failed or wrong", shown(status));
  }
  check(text_of("reason", row.reason, true, reason));
  if (row.reason.kind == Cell::Kind::text)
    r.reason = reason;
  check(amount_of("rate_median", row.rate_median, r.rate_median));
  check(amount_of("rate_best", row.rate_best, r.rate_best));
  check(amount_of("rate_worst", row.rate_worst, r.rate_worst));
  check(text_of("rate_unit", row.rate_unit, true, r.rate_unit));
  check(amount_of("samples", row.samples, samples));
  if (!p && samples && (*samples != std::floor(*samples) || *samples > 1e9))
    p = fmt::format("samples is {}, not a count of samples", *samples);
  check(amount_of("seconds_median", row.seconds_median, median));
  check(amount_of("cv", row.cv, cv));
  check(amount_of("share_of_peak", row.share_of_peak, r.share_of_peak));
  check(object_of("record", row.record, record));
  if (!p && record.contains("details") && !record["details"].is_object())
    p = "record's details is not a JSON object";
  if (p)
    return make_error(
        ErrorKind::bad_input,
        fmt::format("result {} (run {}, {}): {}", row.id, row.run,
                    row.bench.kind == Cell::Kind::text ? excerpt(row.bench.text, 40) : "?", *p));
  r.seconds.n = static_cast<std::size_t>(samples.value_or(0));
  r.seconds.median = median.value_or(0);
  // the CV is kept as stdev/mean with mean = 1
  r.seconds.mean = 1;
  r.seconds.stdev = cv.value_or(0);
  if (record.contains("details"))
    r.details = record["details"];
  return s;
}

bool beyond_noise(double a, double cv_a, double b, double cv_b) {
  if (!(a > 0) || !(b > 0))
    return false;
  return std::fabs(b / a - 1) > 2 * (cv_a + cv_b);
}

} // namespace dlrig::bench
