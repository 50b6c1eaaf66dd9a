#!/usr/bin/env python3
"""Captures this machine as a dlrig fixture: a sysroot tree of the files dlrig's probes read and an
nvml.json scenario for the fake NVML (tests/fake_nvml, format in docs/testing.md), read through
NVML itself (nvidia-ml-py's pynvml). Run on a real GPU machine; the result goes under tests/data/.

  python3 perf/capture_machine.py OUT_DIR [--source "one NVIDIA H200 lent ..."]

The tree follows tests/data/README.md: PCI devices under /sys/devices/pciDDDD:BB/..., each
/sys/bus/pci/devices/BDF a relative link into it, disk sizes in .dlrig/statvfs. Only the attributes
the probes read are copied (no resource*, rom or other files that map or change the device). A
file that cannot be read is left out, as the probe would find it missing. Nothing is written
outside OUT_DIR and nothing on the machine is changed.
"""
import argparse
import datetime
import glob
import json
import os
import sys

PCI_ATTRS = ("vendor", "device", "class", "subsystem_vendor", "subsystem_device", "numa_node",
             "current_link_speed", "current_link_width", "max_link_speed", "max_link_width",
             "removable", "revision", "local_cpulist")
PROC_FILES = ("/proc/cpuinfo", "/proc/meminfo", "/proc/mounts", "/proc/self/mountinfo",
              "/proc/self/limits", "/proc/sys/kernel/arch", "/proc/sys/kernel/hostname",
              "/proc/sys/kernel/osrelease", "/proc/sys/kernel/version", "/proc/version",
              "/proc/cmdline", "/proc/modules", "/proc/driver/nvidia/version", "/proc/1/cgroup",
              "/etc/os-release", "/sys/devices/system/cpu/online", "/sys/devices/system/node/online",
              "/sys/class/dmi/id/product_name", "/sys/class/dmi/id/sys_vendor")


class Tree:
    def __init__(self, root):
        self.root = root

    def path(self, p):
        return os.path.join(self.root, p.lstrip("/"))

    def copy(self, src, limit=1 << 20):
        try:
            with open(src, "rb") as f:
                data = f.read(limit)
        except OSError:
            return False
        dst = self.path(src)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(data)
        return True

    def link(self, src):
        """Recreates the symbolic link `src` with the same (relative) target."""
        try:
            target = os.readlink(src)
        except OSError:
            return
        dst = self.path(src)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.lexists(dst):
            os.unlink(dst)
        os.symlink(target, dst)


def capture_pci(t):
    seen = set()
    for link in sorted(glob.glob("/sys/bus/pci/devices/*")):
        t.link(link)
        dev = os.path.realpath(link)
        # The device and every PCI device above it (bridges, root ports), as lspci -t walks them.
        d = dev
        while os.path.basename(d).count(":") == 2 and d not in seen:
            seen.add(d)
            for a in PCI_ATTRS:
                t.copy(os.path.join(d, a))
            t.copy(os.path.join(d, "config"), limit=4096)
            drv = os.path.join(d, "driver")
            if os.path.islink(drv):
                t.link(drv)
            d = os.path.dirname(d)


def capture_class(t):
    for n in glob.glob("/sys/class/net/*"):
        t.link(n)
        d = os.path.realpath(n)
        for a in ("type", "operstate", "speed", "address_len"):
            t.copy(os.path.join(d, a))
        if os.path.isdir(os.path.join(d, "wireless")):
            os.makedirs(t.path(os.path.join(d, "wireless")), exist_ok=True)
    for n in glob.glob("/sys/class/infiniband/*"):
        t.link(n)
        d = os.path.realpath(n)
        for p in glob.glob(os.path.join(d, "ports/*")):
            for a in ("rate", "state", "link_layer"):
                t.copy(os.path.join(p, a))
    for b in glob.glob("/sys/block/*"):
        t.link(b)
        d = os.path.realpath(b)
        for a in ("queue/rotational", "size", "removable"):
            t.copy(os.path.join(d, a))
    for n in glob.glob("/sys/devices/system/node/node*"):
        for a in ("cpulist", "meminfo"):
            t.copy(os.path.join(n, a))
    for a in ("cpuinfo_max_freq", "base_frequency", "scaling_driver"):
        t.copy("/sys/devices/system/cpu/cpu0/cpufreq/" + a)
    for n in glob.glob("/proc/driver/nvidia/gpus/*/information"):
        t.copy(n)
    for d in ("/sys/bus/thunderbolt/devices", "/sys/firmware/efi"):
        if os.path.isdir(d):
            os.makedirs(t.path(d), exist_ok=True)


def capture_statvfs(t):
    lines = []
    for m in ("/", "/dev/shm", "/tmp", os.getcwd()):
        try:
            s = os.statvfs(m)
        except OSError:
            continue
        lines.append(f"{m} {s.f_blocks * s.f_frsize} {s.f_bavail * s.f_frsize}")
    os.makedirs(t.path("/.dlrig"), exist_ok=True)
    with open(t.path("/.dlrig/statvfs"), "w") as f:
        f.write("\n".join(dict.fromkeys(lines)) + "\n")


def nvml_scenario(source):
    import pynvml as n

    def get(fn, *args):
        try:
            return fn(*args)
        except (n.NVMLError, AttributeError):
            return None

    def text(v):
        return v.decode() if isinstance(v, bytes) else v

    n.nvmlInit()
    out = {"_source": source,
           "driver_version": text(get(n.nvmlSystemGetDriverVersion)),
           "nvml_version": text(get(n.nvmlSystemGetNVMLVersion)),
           "cuda_driver_version": get(n.nvmlSystemGetCudaDriverVersion), "gpus": []}
    for i in range(n.nvmlDeviceGetCount()):
        h = n.nvmlDeviceGetHandleByIndex(i)
        g = {}
        pci = get(n.nvmlDeviceGetPciInfo, h)
        if pci:
            g["bus_id"] = text(pci.busId)
            g["pci_device_id"] = f"0x{pci.pciDeviceId:08x}"
            g["pci_subsystem_id"] = f"0x{pci.pciSubSystemId:08x}"
        g["name"] = text(get(n.nvmlDeviceGetName, h))
        g["uuid"] = text(get(n.nvmlDeviceGetUUID, h))
        mem = get(n.nvmlDeviceGetMemoryInfo, h, n.nvmlMemory_v2) if hasattr(n, "nvmlMemory_v2") else None
        mem = mem or get(n.nvmlDeviceGetMemoryInfo, h)
        if mem:
            g["memory"] = {"total": mem.total, "used": mem.used}
            if hasattr(mem, "reserved"):
                g["memory"]["reserved"] = mem.reserved
        cc = get(n.nvmlDeviceGetCudaComputeCapability, h)
        if cc:
            g["compute_capability"] = list(cc)
        for key, fn in (("clocks_mhz", n.nvmlDeviceGetClockInfo), ("max_clocks_mhz", n.nvmlDeviceGetMaxClockInfo)):
            c = {k: get(fn, h, t) for k, t in (("graphics", n.NVML_CLOCK_GRAPHICS), ("sm", n.NVML_CLOCK_SM),
                                                ("mem", n.NVML_CLOCK_MEM))}
            if any(v is not None for v in c.values()):
                g[key] = {k: v for k, v in c.items() if v is not None}
        g["power_usage_mw"] = get(n.nvmlDeviceGetPowerUsage, h)
        g["enforced_power_limit_mw"] = get(n.nvmlDeviceGetEnforcedPowerLimit, h)
        g["power_default_limit_mw"] = get(n.nvmlDeviceGetPowerManagementDefaultLimit, h)
        g["energy_mj"] = get(n.nvmlDeviceGetTotalEnergyConsumption, h)
        g["temperature_c"] = get(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU)
        th = {k: get(n.nvmlDeviceGetTemperatureThreshold, h, t)
              for k, t in (("shutdown", n.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN),
                           ("slowdown", n.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN))}
        if any(v is not None for v in th.values()):
            g["temperature_thresholds_c"] = {k: v for k, v in th.items() if v is not None}
        g["fan_speed_percent"] = get(n.nvmlDeviceGetFanSpeed, h)
        reasons = get(n.nvmlDeviceGetCurrentClocksEventReasons, h) if hasattr(
            n, "nvmlDeviceGetCurrentClocksEventReasons") else None
        if reasons is None:
            reasons = get(n.nvmlDeviceGetCurrentClocksThrottleReasons, h)
        g["clocks_event_reasons"] = None if reasons is None else f"0x{reasons:x}"
        pm = get(n.nvmlDeviceGetPersistenceMode, h)
        g["persistence_mode"] = None if pm is None else bool(pm)
        g["compute_mode"] = get(n.nvmlDeviceGetComputeMode, h)
        da = get(n.nvmlDeviceGetDisplayActive, h)
        g["display_active"] = None if da is None else bool(da)
        pcie = {"gen_current": get(n.nvmlDeviceGetCurrPcieLinkGeneration, h),
                "gen_max": get(n.nvmlDeviceGetMaxPcieLinkGeneration, h),
                "width_current": get(n.nvmlDeviceGetCurrPcieLinkWidth, h),
                "width_max": get(n.nvmlDeviceGetMaxPcieLinkWidth, h),
                "replay_counter": get(n.nvmlDeviceGetPcieReplayCounter, h),
                "rx_kbps": get(n.nvmlDeviceGetPcieThroughput, h, n.NVML_PCIE_UTIL_RX_BYTES),
                "tx_kbps": get(n.nvmlDeviceGetPcieThroughput, h, n.NVML_PCIE_UTIL_TX_BYTES)}
        g["pcie"] = {k: v for k, v in pcie.items() if v is not None}
        ecc = get(n.nvmlDeviceGetEccMode, h)
        if ecc:
            g["ecc_mode"] = {"current": bool(ecc[0]), "pending": bool(ecc[1])}
            errs = {}
            for k, (t, c) in {"corrected_volatile": (n.NVML_MEMORY_ERROR_TYPE_CORRECTED, n.NVML_VOLATILE_ECC),
                              "uncorrected_volatile": (n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, n.NVML_VOLATILE_ECC),
                              "corrected_aggregate": (n.NVML_MEMORY_ERROR_TYPE_CORRECTED, n.NVML_AGGREGATE_ECC),
                              "uncorrected_aggregate": (n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                                        n.NVML_AGGREGATE_ECC)}.items():
                v = get(n.nvmlDeviceGetTotalEccErrors, h, t, c)
                if v is not None:
                    errs[k] = v
            if errs:
                g["ecc_errors"] = errs
        rr = get(n.nvmlDeviceGetRemappedRows, h)
        if rr:
            g["remapped_rows"] = {"correctable": rr[0], "uncorrectable": rr[1], "pending": bool(rr[2]),
                                  "failure": bool(rr[3])}
        mig = get(n.nvmlDeviceGetMigMode, h)
        if mig:
            g["mig_mode"] = {"current": mig[0], "pending": mig[1]}
        u = get(n.nvmlDeviceGetUtilizationRates, h)
        if u:
            g["utilization_percent"] = {"gpu": u.gpu, "memory": u.memory}
        procs = get(n.nvmlDeviceGetComputeRunningProcesses, h)
        if procs is not None:
            g["processes"] = [{"pid": p.pid, "used_memory": p.usedGpuMemory or 0} for p in procs]
        try:
            g["process_utilization"] = [{"pid": p.pid, "sm": p.smUtil, "mem": p.memUtil}
                                        for p in n.nvmlDeviceGetProcessUtilization(h, 0)]
        except n.NVMLError_NotFound:  # no samples lately: what an idle GPU answers
            g["process_utilization"] = []
        except (n.NVMLError, AttributeError):
            pass
        links = []
        for l in range(18):
            st = get(n.nvmlDeviceGetNvLinkState, h, l)
            if st is None:
                break
            links.append({"links": [l, l], "active": bool(st)})
        if links:
            g["nvlinks"] = links
        out["gpus"].append({k: v for k, v in g.items() if v is not None})
    n.nvmlShutdown()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--source", default="captured by perf/capture_machine.py")
    a = ap.parse_args()
    source = f"{a.source}; captured {datetime.date.today().isoformat()} by perf/capture_machine.py"
    t = Tree(a.out)
    for f in PROC_FILES:
        t.copy(f)
    for step in (capture_pci, capture_class, capture_statvfs):
        try:
            step(t)
        except Exception as e:  # a partial tree is still a fixture; say what is missing
            print(f"capture_machine: {step.__name__}: {type(e).__name__}: {e}", file=sys.stderr)
    try:
        with open(os.path.join(a.out, "nvml.json"), "w") as f:
            json.dump(nvml_scenario(source), f, indent=2)
            f.write("\n")
    except Exception as e:
        print(f"capture_machine: nvml.json: {type(e).__name__}: {e}", file=sys.stderr)


if __name__ == "__main__":
    main()
