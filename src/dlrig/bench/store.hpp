#pragma once
// The results database: SQLite, default $XDG_DATA_HOME/dlrig/results.db (else
// ~/.local/share/dlrig/results.db), `--db PATH`. A versioned schema (PRAGMA user_version plus a
// schema_migrations table, one row per applied migration), WAL, a 5 s busy timeout, one
// transaction per result: killing dlrig mid-run loses at most the result in progress.
// A database dlrig cannot use is refused with a message naming the file and what to do, and is
// never truncated, overwritten or repaired: locked past the timeout or read-only -> ErrorKind::io
// (exit 74); not a regular file (a folder, a FIFO), not a database, corrupt (PRAGMA quick_check),
// another program's (tables but no schema_migrations) or of a newer schema ->
// ErrorKind::bad_input (exit 65); so is a row dlrig did not write (decode_result). Nothing is
// written to a file, and it is not switched to WAL, before it has been read, checked and found to
// be a dlrig database of this schema or older (or empty).
#include "dlrig/bench/bench.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace dlrig::bench {

inline constexpr int kStoreSchema = 1;

// The default path, or nullopt when neither XDG_DATA_HOME nor HOME is set.
std::optional<std::string> default_db_path();

struct StoredRun {
  std::int64_t id = 0;
  std::string time, tier;
  Json environment;
  std::size_t results = 0;
};

struct StoredResult {
  std::int64_t run = 0;
  std::string time;
  Record record; // id, family, config, status, reason, rates, unit, seconds (n, median, cv),
                 // details
};

// A column's value as SQLite holds it: NULL, a number (INTEGER or REAL) or text (a BLOB is read
// as its bytes).
struct Cell {
  enum class Kind { null, number, text } kind = Kind::null;
  double number = 0;
  std::string text;
};
// A row of the results table, every column as stored, joined with its run's time.
struct ResultRow {
  std::int64_t id = 0, run = 0;
  std::string run_time;
  Cell bench, family, config, status, reason, rate_median, rate_best, rate_worst, rate_unit,
      samples, seconds_median, cv, share_of_peak, record;
};
// A row of the runs table; `results`: how many results it has.
struct RunRow {
  std::int64_t id = 0;
  Cell time, tier, environment;
  std::int64_t results = 0;
};
// What a row holds, or why it is not a row dlrig wrote (edited by hand, another program's
// writes): a status it does not know, a rate, time or count that is text, negative or not finite,
// a record or environment that is not a JSON object, text where a number belongs or the reverse.
// Error kind bad_input; the message names the row and the column ("result 12 (run 3,
// cpu.gemm.sgemm): rate_median is the text 'fast', not a number"). Pure: Store::results and
// Store::runs read every row through them, and so does the fuzz target.
dlrig::Result<StoredResult> decode_result(const ResultRow &row);
dlrig::Result<StoredRun> decode_run(const RunRow &row);

class Store {
public:
  // For writing: creates the file (and its folder) when missing, switches it to WAL and migrates
  // it. busy_ms: how long to wait for another writer before giving up (tests shorten it).
  static dlrig::Result<std::shared_ptr<Store>> open(const std::string &path, int busy_ms = 5000);
  // For reading only (history, show, compare, fit, doctor): never created, switched or migrated,
  // and PRAGMA query_only, so nothing is written; opened read-write where the file allows (SQLite
  // then removes a WAL database's -wal and -shm files as the last connection closes, which a
  // read-only connection cannot), read-only where it does not, so a read-only file reads; a WAL
  // database in a folder this user cannot write is read immutable when no -wal holds results. No
  // file -> ErrorKind::not_found (exit 65); an empty database has no runs. begin_run and add fail
  // on it.
  static dlrig::Result<std::shared_ptr<Store>> open_for_reading(const std::string &path,
                                                                int busy_ms = 5000);
  ~Store();
  Store(const Store &) = delete;
  Store &operator=(const Store &) = delete;

  dlrig::Result<std::int64_t> begin_run(const std::string &time, const std::string &tier,
                                        const Json &environment);
  std::optional<Error> add(std::int64_t run, const Record &r); // its own transaction
  // A row dlrig did not write (decode_run, decode_result) fails the whole read with kind
  // bad_input, naming the file, the row and how to delete it; nothing is changed.
  dlrig::Result<std::vector<StoredRun>> runs();
  // Every result of one run, or (run = nullopt) every result of `id` (all ids when empty),
  // oldest first.
  dlrig::Result<std::vector<StoredResult>> results(std::optional<std::int64_t> run,
                                                   const std::string &id = "");
  const std::string &path() const { return path_; }

private:
  enum class Access { read, write };
  static dlrig::Result<std::shared_ptr<Store>> open_as(const std::string &path, int busy_ms,
                                                       Access access);
  // The error for a row decode_run or decode_result refused: the file, the row, the fix.
  Error foreign_row(const std::string &what, const std::string &delete_sql) const;
  Store(sqlite3 *db, std::string path, int busy_ms)
      : db_(db), path_(std::move(path)), busy_ms_(busy_ms) {}
  sqlite3 *db_;
  std::string path_;
  int busy_ms_;
  bool empty_ = false; // opened for reading, no schema yet: no runs
};

// compare: beyond the noise when |b/a - 1| > 2 (CV_a + CV_b), the two runs' coefficients of
// variation of their samples.
bool beyond_noise(double a, double cv_a, double b, double cv_b);

} // namespace dlrig::bench
