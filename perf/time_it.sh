# Sourced by the perf/*.sh scripts: time_it CMD... prints "median p90" in milliseconds of RUNS
# (default 20) runs of the whole process, or "n/a n/a" when it exits with neither 0 nor 1. With
# TIME_IT_CPU=1 it adds the median CPU time (user + system) of the process, which other load on
# a shared machine does not inflate the way it does wall-clock time.
time_it() {
  python3 - "${RUNS:-20}" "$@" <<'PY'
import os, resource, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
t, c = [], []
for _ in range(runs):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    s = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    t.append((time.perf_counter() - s) * 1000)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    c.append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000)
    if rc not in (0, 1):
        print("n/a n/a n/a" if os.environ.get("TIME_IT_CPU") == "1" else "n/a n/a"); sys.exit(0)
t.sort(); c.sort()
out = f"{t[len(t) // 2]:.1f} {t[min(len(t) - 1, int(len(t) * 0.9))]:.1f}"
if os.environ.get("TIME_IT_CPU") == "1":
    out += f" {c[len(c) // 2]:.1f}"
print(out)
PY
}
