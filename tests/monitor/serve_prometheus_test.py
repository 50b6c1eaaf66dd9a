#!/usr/bin/env python3
"""A real Prometheus scrapes `dlrig serve` on loopback and answers PromQL over what it scraped.

dlrig serve runs on the fake NVML (tests/data/nvml/watch-starving.json) and the fixture host,
on a free loopback port it picks itself (--listen 127.0.0.1:0); Prometheus (Debian's package)
runs from a temporary folder on another free loopback port, scraping every second. The test asks
Prometheus' HTTP API for the GPU's utilisation, for a join with dlrig_gpu_info and for the
finding, and checks every answer. Exit 77 (skipped) when prometheus is not installed.

Usage: serve_prometheus_test.py --dlrig BIN --fake-nvml LIB --data TESTS_DATA
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.headers, r.read().decode()


def query(port, promql):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    _, _, body = http_get(url)
    doc = json.loads(body)
    assert doc["status"] == "success", body
    return doc["data"]["result"]


def wait_for(what, fn, timeout=60):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        try:
            got = fn()
            if got:
                return got
        except Exception as e:  # not up yet
            last = e
        time.sleep(0.5)
    raise SystemExit(f"FAIL: timed out waiting for {what} (last error: {last})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlrig", required=True)
    ap.add_argument("--fake-nvml", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    prom = shutil.which("prometheus")
    if not prom:
        print("SKIP: prometheus is not installed (scripts/deps.sh installs it)")
        return 77

    tmp = tempfile.mkdtemp(prefix="dlrig-prom-")
    procs = []
    try:
        env = dict(os.environ, DLRIG_NVML_LIBRARY=a.fake_nvml,
                   DLRIG_FAKE_NVML_SCENARIO=os.path.join(a.data, "nvml", "watch-starving.json"))
        serve_err = open(os.path.join(tmp, "serve.err"), "w+")
        serve = subprocess.Popen(
            [a.dlrig, "serve", "--listen", "127.0.0.1:0",
             "--sysroot", os.path.join(a.data, "training-rtx4090")],
            env=env, stdout=subprocess.DEVNULL, stderr=serve_err)
        procs.append(serve)

        def serve_port():
            serve_err.seek(0)
            if serve.poll() is not None:
                raise SystemExit(f"FAIL: dlrig serve exited {serve.returncode}: {serve_err.read()}")
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/metrics", serve_err.read())
            return int(m.group(1)) if m else None
        port = wait_for("dlrig serve to listen", serve_port, 20)
        status, headers, body = http_get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200
        assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8", headers
        assert "dlrig_up 1" in body, body

        prom_port = free_port()
        config = os.path.join(tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: dlrig\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{port}']\n")
        prom_log = open(os.path.join(tmp, "prometheus.log"), "w")
        procs.append(subprocess.Popen(
            [prom, f"--config.file={config}", f"--storage.tsdb.path={tmp}/data",
             f"--web.listen-address=127.0.0.1:{prom_port}"],
            stdout=prom_log, stderr=subprocess.STDOUT, cwd=tmp))
        wait_for("prometheus to be ready",
                 lambda: http_get(f"http://127.0.0.1:{prom_port}/-/ready")[0] == 200)

        up = wait_for("a successful scrape",
                      lambda: [r for r in query(prom_port, 'up{job="dlrig"}')
                               if r["value"][1] == "1"])
        assert up, up
        util = wait_for("dlrig_gpu_utilization_ratio",
                        lambda: query(prom_port, "dlrig_gpu_utilization_ratio"))
        assert len(util) == 1 and float(util[0]["value"][1]) == 0.04, util
        assert util[0]["metric"]["uuid"] == "GPU-d1e70001-0000-4000-8000-000000000001", util
        joined = query(prom_port, "dlrig_gpu_memory_used_bytes * on(uuid) group_left(name) "
                                  "dlrig_gpu_info")
        assert joined and joined[0]["metric"]["name"] == "NVIDIA GeForce RTX 4090", joined
        assert float(joined[0]["value"][1]) == 9663676416, joined
        finding = query(prom_port, 'dlrig_finding{id="pid-namespace"}')
        assert finding and finding[0]["metric"]["severity"] == "info", finding
        energy = wait_for("a rate over the energy counter",
                          lambda: query(prom_port, "rate(dlrig_gpu_energy_joules_total[10s])"),
                          30)
        assert float(energy[0]["value"][1]) == 0.0, energy  # the scenario's counter is constant
        print("OK: Prometheus scraped dlrig serve and answered PromQL over it")
        return 0
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        if procs and procs[0].returncode not in (0, None):
            print(f"dlrig serve exited {procs[0].returncode}", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
