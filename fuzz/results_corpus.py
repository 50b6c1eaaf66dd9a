#!/usr/bin/env python3
"""Writes fuzz_results' seeds from a real results database (`dlrig bench --db DB`): one seed per
family of each run, holding that run's row and at most three of its result rows, and one per run
with the first row of each family, in the target's JSON form (fuzz/fuzz_results.cpp).
  fuzz/results_corpus.py DB PREFIX    e.g. fuzz/results_corpus.py r.db fuzz/corpus/results/host"""
import json
import sqlite3
import sys

RESULT_COLUMNS = ("id, run, bench, family, config, status, reason, rate_median, rate_best,"
                  " rate_worst, rate_unit, samples, seconds_median, cv, share_of_peak, record")


def main(db_path, prefix):
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    runs = db.execute("SELECT id, time, tier, environment FROM runs ORDER BY id").fetchall()
    written = 0
    for run in runs:
        families = [f for (f,) in db.execute(
            "SELECT DISTINCT family FROM results WHERE run = ? ORDER BY family", (run[0],))]
        for family in families:
            rows = db.execute(f"SELECT {RESULT_COLUMNS} FROM results WHERE run = ? AND family = ?"
                              " ORDER BY id LIMIT 3", (run[0], family)).fetchall()
            seed = {"runs": [list(run)], "results": [list(r) for r in rows]}
            name = f"{prefix}-run{run[0]}-{family}.json"
            with open(name, "w") as out:
                json.dump(seed, out, separators=(",", ":"))
            written += 1
        first = db.execute(f"SELECT {RESULT_COLUMNS} FROM results WHERE id IN (SELECT min(id) FROM"
                           " results WHERE run = ? GROUP BY family) ORDER BY id", (run[0],))
        with open(f"{prefix}-run{run[0]}-all.json", "w") as out:
            json.dump({"runs": [list(run)], "results": [list(r) for r in first]}, out,
                      separators=(",", ":"))
        written += 1
    print(f"{written} seeds from {db_path}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
