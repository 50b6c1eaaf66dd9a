#!/usr/bin/env python3
"""`dlrig watch` in a real terminal: runs it full screen in tmux on the fake NVML and the fixture
host, reads the screen with capture-pane, and checks it shows the GPU, the process with its user
and command, and the diagnoses; then presses q and checks watch exits 0 and leaves the terminal.
Then the same with an NVML that stops answering: the screen says so and q still quits.
Exit 77 (skipped) when tmux is not installed.

Usage: watch_tmux_test.py --dlrig BIN --fake-nvml LIB --data TESTS_DATA
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlrig", required=True)
    ap.add_argument("--fake-nvml", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    if not shutil.which("tmux"):
        print("SKIP: tmux is not installed (scripts/deps.sh installs it)")
        return 77
    starving = os.path.join(a.data, "nvml", "watch-starving.json")
    code = watch_case(a, starving, [],
                      ["NVIDIA GeForce RTX 4090", "48211", "alice",
                       "python train.py --batch-size 64", "UTIL [", "History of GPU 0",
                       "not in this PID namespace", "info: 1 GPU process is not visible",
                       "warning: GPU 0 idle", "Host: CPU "])
    if code:
        return code
    print("OK: watch showed the GPU, its processes and the diagnoses; q quit cleanly")
    # NVML that stops answering mid-run (a GPU fallen off the bus hangs it in the driver): the
    # screen says so after --nvml-timeout, keeps the host, and q still quits.
    with open(starving) as f:
        scenario = json.load(f)
    scenario["hang_ms"] = {"nvmlDeviceGetUtilizationRates": 120000}
    with tempfile.TemporaryDirectory() as tmp:
        hanging = os.path.join(tmp, "hang.json")
        with open(hanging, "w") as f:
            json.dump(scenario, f)
        code = watch_case(a, hanging, ["--nvml-timeout", "0.5"],
                          ["NVML did not answer within 0.5 s", "No NVIDIA GPU to watch.",
                           "Host: CPU "])
    if code:
        return code
    print("OK: an NVML that stopped answering was shown as such; q quit cleanly")
    return 0


def watch_case(a, scenario, extra, wanted):
    # A socket of its own per case: a server just told to exit by the case before can still hold
    # a shared one, and a new session on it fails with "server exited unexpectedly".
    watch_case.count = getattr(watch_case, "count", 0) + 1
    sock = f"dlrig-watch-test-{os.getpid()}-{watch_case.count}"
    env = dict(os.environ, DLRIG_NVML_LIBRARY=a.fake_nvml, TERM="xterm-256color",
               DLRIG_FAKE_NVML_SCENARIO=scenario)
    env.pop("TMUX", None)

    def tmux(*args):
        return subprocess.run(["tmux", "-L", sock, *args], env=env, capture_output=True,
                              text=True, timeout=20)

    def screen():
        return tmux("capture-pane", "-p", "-t", "w").stdout

    args = " ".join(f"'{x}'" for x in extra)
    cmd = (f"'{a.dlrig}' watch --interval 0.2 {args} --sysroot '{a.data}/training-rtx4090'; "
           "echo WATCH-EXITED=$?; sleep 30")
    r = tmux("new-session", "-d", "-s", "w", "-x", "150", "-y", "45", cmd)
    if r.returncode != 0:
        print(f"FAIL: tmux new-session: {r.stderr}")
        return 1
    try:
        end = time.time() + 30
        shown = ""
        while time.time() < end:
            shown = screen()
            if all(w in shown for w in wanted):
                break
            time.sleep(0.3)
        missing = [w for w in wanted if w not in shown]
        if missing:
            print(f"FAIL: the screen lacks {missing}:\n{shown}")
            return 1
        tmux("send-keys", "-t", "w", "q")
        end = time.time() + 10
        while time.time() < end:
            shown = screen()
            if "WATCH-EXITED=" in shown:
                break
            time.sleep(0.2)
        if "WATCH-EXITED=0" not in shown:
            print(f"FAIL: q did not end watch with exit 0:\n{shown}")
            return 1
        if "UTIL [" in shown or "NVML did not answer" in shown:
            print(f"FAIL: the full-screen view was left on the terminal:\n{shown}")
            return 1
        return 0
    finally:
        tmux("kill-server")


if __name__ == "__main__":
    sys.exit(main())
