# Sourced by the perf/*.sh scripts: time_it CMD... prints "median p90" in milliseconds of RUNS
# (default 20) runs of the whole process, or "n/a n/a" when it exits with neither 0 nor 1.
time_it() {
  python3 - "${RUNS:-20}" "$@" <<'EOF'
import subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
t = []
for _ in range(runs):
    s = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    t.append((time.perf_counter() - s) * 1000)
    if rc not in (0, 1):
        print("n/a n/a"); sys.exit(0)
t.sort()
print(f"{t[len(t) // 2]:.1f} {t[min(len(t) - 1, int(len(t) * 0.9))]:.1f}")
EOF
}

