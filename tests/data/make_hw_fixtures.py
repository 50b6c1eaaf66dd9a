#!/usr/bin/env python3
"""Writes the hardware part of the fixture machines under tests/data/ (sysfs, procfs, /etc/os-release,
.dlrig/statvfs). Run it from anywhere: python3 tests/data/make_hw_fixtures.py

Each fixture is a sysroot tree laid out as the kernel lays out the real files, following
Documentation/ABI/testing/sysfs-bus-pci, sysfs-class-net, sysfs-class-infiniband, sysfs-bus-thunderbolt,
sysfs-devices-node, Documentation/filesystems/proc.rst and the amdgpu documentation
(kernel.org/doc/html/latest/gpu/amdgpu/). PCI devices live under /sys/devices/pciDDDD:BB/... and
/sys/bus/pci/devices/BDF is a relative link into that tree, like on a real machine.

It only writes the files the hardware probes read and never deletes anything, so files other
developers add to the same fixtures (software, nvml.json) are left alone. The values are those of
the machine each fixture models; see tests/data/README.md.
"""
import os
import pathlib

HERE = pathlib.Path(__file__).resolve().parent


class Tree:
    def __init__(self, name):
        self.root = HERE / name
        self.root.mkdir(parents=True, exist_ok=True)

    def write(self, path, text):
        p = self.root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    def write_bytes(self, path, data):
        p = self.root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)

    def link(self, path, target):
        p = self.root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.is_symlink() or p.exists():
            p.unlink()
        os.symlink(target, p)

    def mkdir(self, path):
        (self.root / path.lstrip("/")).mkdir(parents=True, exist_ok=True)


def rel(from_dir, to):
    return os.path.relpath(to, from_dir)


# --- PCI -------------------------------------------------------------------------------------------

def pci_device(t, chain, vendor, device, cls, numa=-1, link=None, driver=None, subsys=("0x0000", "0x0000"),
               extra=None):
    """chain: list of BDFs from the root port down to this device; the device's sysfs path is
    /sys/devices/pciDDDD:BB/<chain...>. link: (cur_speed, cur_width, max_speed, max_width) strings."""
    bdf = chain[-1]
    host = "pci" + chain[0][:7]
    dev = "/sys/devices/" + host + "/" + "/".join(chain)
    t.write(dev + "/vendor", vendor + "\n")
    t.write(dev + "/device", device + "\n")
    t.write(dev + "/class", cls + "\n")
    t.write(dev + "/subsystem_vendor", subsys[0] + "\n")
    t.write(dev + "/subsystem_device", subsys[1] + "\n")
    t.write(dev + "/numa_node", f"{numa}\n")
    if link:
        cs, cw, ms, mw = link
        t.write(dev + "/current_link_speed", cs + "\n")
        t.write(dev + "/current_link_width", cw + "\n")
        t.write(dev + "/max_link_speed", ms + "\n")
        t.write(dev + "/max_link_width", mw + "\n")
    if driver:
        drv = "/sys/bus/pci/drivers/" + driver
        t.link(dev + "/driver", rel(dev, drv))
        t.link(drv + "/" + bdf, rel(drv, dev))
    for name, value in (extra or {}).items():
        t.write(dev + "/" + name, value)
    t.link("/sys/bus/pci/devices/" + bdf, rel("/sys/bus/pci/devices", dev))
    return dev


def slot(t, name, address, max_speed, cur_speed):
    """A slot the firmware describes: /sys/bus/pci/slots/NAME is a directory of its own (not a link), with
    address "domain:bus:device" and the bus speeds as pci_speed_string() prints them (drivers/pci/slot.c)."""
    d = "/sys/bus/pci/slots/" + name
    t.write(d + "/address", address + "\n")
    t.write(d + "/max_bus_speed", max_speed + "\n")
    t.write(d + "/cur_bus_speed", cur_speed + "\n")


def child_bus(t, bridge_dev, bus, cpus):
    """The bridge's secondary bus, as the kernel shows it: BRIDGE/pci_bus/DDDD:BB (with its cpulistaffinity
    attribute, so that git keeps the directory)."""
    t.write(bridge_dev + "/pci_bus/" + bus + "/cpulistaffinity", cpus + "\n")


def gts(speed):
    return {2.5: "2.5 GT/s PCIe", 5: "5.0 GT/s PCIe", 8: "8.0 GT/s PCIe", 16: "16.0 GT/s PCIe",
            32: "32.0 GT/s PCIe"}[speed]


def link(cur, cw, mx, mw):
    return (gts(cur), str(cw), gts(mx), str(mw))


BRIDGE = "0x060400"
HOST_BRIDGE = "0x060000"
VGA = "0x030000"
DISPLAY_3D = "0x030200"
AUDIO = "0x040300"
NVME = "0x010802"
IB = "0x020700"
ETH = "0x020000"

# --- block, net, rdma ------------------------------------------------------------------------------

def block(t, name, rotational, parent_dev):
    """A disk: /sys/block/NAME links to its device directory like the kernel does."""
    dev = parent_dev + "/block/" + name if "/nvme/" not in parent_dev else parent_dev + "/" + name
    t.write(dev + "/queue/rotational", f"{rotational}\n")
    t.link("/sys/block/" + name, rel("/sys/block", dev))


def netdev(t, name, dev_dir, type_, operstate, speed_mbps, wireless=False):
    d = dev_dir + "/net/" + name
    t.write(d + "/type", f"{type_}\n")
    t.write(d + "/operstate", operstate + "\n")
    if speed_mbps is not None:
        t.write(d + "/speed", f"{speed_mbps}\n")
    if wireless:
        t.mkdir(d + "/wireless")
        t.write(d + "/phy80211/name", "phy0\n")
    t.link("/sys/class/net/" + name, rel("/sys/class/net", d))


def loopback(t):
    netdev(t, "lo", "/sys/devices/virtual", 772, "unknown", None)


def ib_port(t, name, dev_dir, rate, state="4: ACTIVE", link_layer="InfiniBand"):
    d = dev_dir + "/infiniband/" + name
    t.write(d + "/ports/1/rate", rate + "\n")
    t.write(d + "/ports/1/state", state + "\n")
    t.write(d + "/ports/1/link_layer", link_layer + "\n")
    t.link("/sys/class/infiniband/" + name, rel("/sys/class/infiniband", d))


# --- proc, etc -------------------------------------------------------------------------------------

def dimm(t, index, device, bank, size_mb, mts, mem_type):
    """One SMBIOS 3.x memory-device record (type 17, DSP0134 7.18) as the kernel exposes it in
    /sys/firmware/dmi/entries/17-N/raw: the 0x28-byte formatted area, then its strings. size_mb 0 is
    an empty slot; sizes from 32 GB up go in the extended size at 0x1C (0x0C says 0x7FFF)."""
    r = bytearray(0x28)
    r[0], r[1] = 17, 0x28
    r[2:4] = (0x1100 + index).to_bytes(2, "little")  # handle
    r[8:10] = (64 if size_mb else 0xFFFF).to_bytes(2, "little")  # total width
    r[0x0A:0x0C] = (64 if size_mb else 0xFFFF).to_bytes(2, "little")  # data width
    r[0x0C:0x0E] = (min(size_mb, 0x7FFF)).to_bytes(2, "little")
    r[0x0E] = 0x09  # form factor: DIMM
    r[0x10], r[0x11] = 1, 2  # device and bank locators: strings 1 and 2
    r[0x12] = mem_type if size_mb else 0x02  # an empty slot's type is "Unknown"
    r[0x15:0x17] = (mts if size_mb else 0).to_bytes(2, "little")
    r[0x1C:0x20] = (size_mb if size_mb >= 0x7FFF else 0).to_bytes(4, "little")
    r[0x20:0x22] = (mts if size_mb else 0).to_bytes(2, "little")
    data = bytes(r) + device.encode() + b"\0" + bank.encode() + b"\0" + b"\0"
    t.write_bytes(f"/sys/firmware/dmi/entries/17-{index}/raw", data)


def cpuinfo(vendor, family, model, model_name, mhz, flags, sockets, cores_per_socket, smt, cpu_of):
    """Full /proc/cpuinfo (x86) for sockets*cores*smt logical CPUs. cpu_of(i) -> (socket, core_id)."""
    n = sockets * cores_per_socket * smt
    blocks = []
    for i in range(n):
        sock, core = cpu_of(i)
        blocks.append(
            f"processor\t: {i}\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
            f"model name\t: {model_name}\nstepping\t: 8\nmicrocode\t: 0x2b000590\ncpu MHz\t\t: {mhz:.3f}\n"
            f"physical id\t: {sock}\nsiblings\t: {cores_per_socket * smt}\ncore id\t\t: {core}\n"
            f"cpu cores\t: {cores_per_socket}\napicid\t\t: {i * 2}\nfpu\t\t: yes\nflags\t\t: {flags}\n"
            f"bogomips\t: {mhz * 2:.2f}\nclflush size\t: 64\ncache_alignment\t: 64\n"
            f"address sizes\t: 46 bits physical, 57 bits virtual\npower management:\n")
    return "\n".join(blocks) + "\n"


def linear_cpu(sockets, cores, smt):
    # Linux numbers the first thread of every core on socket 0, then socket 1, then the siblings.
    def of(i):
        thread_index = i % (sockets * cores)
        return thread_index // cores, thread_index % cores
    return of


def meminfo(total_kb, avail_kb, swap_total_kb, swap_free_kb, shmem_kb=0):
    free_kb = avail_kb * 9 // 10
    rows = [("MemTotal", total_kb), ("MemFree", free_kb), ("MemAvailable", avail_kb),
            ("Buffers", 204812), ("Cached", avail_kb // 5), ("SwapCached", 0),
            ("Active", total_kb // 20), ("Inactive", total_kb // 25), ("SwapTotal", swap_total_kb),
            ("SwapFree", swap_free_kb), ("Dirty", 120), ("Shmem", shmem_kb),
            ("HugePages_Total", None), ("Hugepagesize", 2048)]
    out = []
    for k, v in rows:
        if v is None:
            out.append(f"{'HugePages_Total:':<16}{0:>8}")
        else:
            out.append(f"{k + ':':<16}{v:>8} kB")
    return "\n".join(out) + "\n"


def node_meminfo(node, total_kb):
    return (f"Node {node} MemTotal:       {total_kb} kB\nNode {node} MemFree:        {total_kb * 9 // 10} kB\n"
            f"Node {node} MemUsed:        {total_kb // 10} kB\n")


def limits(memlock_soft, memlock_hard, nofile_soft, nofile_hard):
    def row(name, soft, hard, unit):
        return f"{name:<26}{soft:<21}{hard:<21}{unit:<10}\n"
    return ("Limit                     Soft Limit           Hard Limit           Units     \n"
            + row("Max cpu time", "unlimited", "unlimited", "seconds")
            + row("Max file size", "unlimited", "unlimited", "bytes")
            + row("Max stack size", "8388608", "unlimited", "bytes")
            + row("Max core file size", "0", "unlimited", "bytes")
            + row("Max processes", "254521", "254521", "processes")
            + row("Max open files", nofile_soft, nofile_hard, "files")
            + row("Max locked memory", memlock_soft, memlock_hard, "bytes")
            + row("Max address space", "unlimited", "unlimited", "bytes")
            + row("Max pending signals", "254521", "254521", "signals")
            + row("Max realtime timeout", "unlimited", "unlimited", "us"))


UBUNTU_2204 = ('PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\n'
               'VERSION="22.04.4 LTS (Jammy Jellyfish)"\nVERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\n'
               'HOME_URL="https://www.ubuntu.com/"\n')
UBUNTU_2404 = ('PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\n'
               'VERSION="24.04.1 LTS (Noble Numbat)"\nVERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\n')
RHEL_94 = ('NAME="Red Hat Enterprise Linux"\nVERSION="9.4 (Plow)"\nID="rhel"\nID_LIKE="fedora"\n'
           'VERSION_ID="9.4"\nPRETTY_NAME="Red Hat Enterprise Linux 9.4 (Plow)"\n')

PSEUDO_MOUNTS = ("sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n"
                 "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
                 "udev /dev devtmpfs rw,nosuid,relatime,size=8010568k,nr_inodes=2002642,mode=755,inode64 0 0\n"
                 "devpts /dev/pts devpts rw,nosuid,noexec,relatime,gid=5,mode=620,ptmxmode=000 0 0\n"
                 "tmpfs /run tmpfs rw,nosuid,nodev,noexec,relatime,size=1607092k,mode=755,inode64 0 0\n"
                 "securityfs /sys/kernel/security securityfs rw,nosuid,nodev,noexec,relatime 0 0\n"
                 "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot 0 0\n"
                 "pstore /sys/fs/pstore pstore rw,nosuid,nodev,noexec,relatime 0 0\n"
                 "bpf /sys/fs/bpf bpf rw,nosuid,nodev,noexec,relatime,mode=700 0 0\n"
                 "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n"
                 "mqueue /dev/mqueue mqueue rw,nosuid,nodev,noexec,relatime 0 0\n"
                 "debugfs /sys/kernel/debug debugfs rw,nosuid,nodev,noexec,relatime 0 0\n"
                 "tracefs /sys/kernel/tracing tracefs rw,nosuid,nodev,noexec,relatime 0 0\n"
                 "fusectl /sys/fs/fuse/connections fusectl rw,nosuid,nodev,noexec,relatime 0 0\n"
                 "configfs /sys/kernel/config configfs rw,nosuid,nodev,noexec,relatime 0 0\n")


def kernel(t, release, version, hostname, arch="x86_64"):
    t.write("/proc/sys/kernel/osrelease", release + "\n")
    t.write("/proc/sys/kernel/version", version + "\n")
    t.write("/proc/sys/kernel/hostname", hostname + "\n")
    t.write("/proc/sys/kernel/arch", arch + "\n")


def cpu_sys(t, online, base_khz=None, max_khz=None):
    t.write("/sys/devices/system/cpu/online", online + "\n")
    if base_khz:
        t.write("/sys/devices/system/cpu/cpu0/cpufreq/base_frequency", f"{base_khz}\n")
    if max_khz:
        t.write("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", f"{max_khz}\n")


def numa(t, nodes):
    """nodes: list of (cpulist, memtotal_kb)."""
    t.write("/sys/devices/system/node/online", f"0-{len(nodes) - 1}\n" if len(nodes) > 1 else "0\n")
    for i, (cpus, kb) in enumerate(nodes):
        t.write(f"/sys/devices/system/node/node{i}/cpulist", cpus + "\n")
        t.write(f"/sys/devices/system/node/node{i}/meminfo", node_meminfo(i, kb))


def statvfs(t, rows):
    t.write("/.dlrig/statvfs", "".join(f"{m} {tot} {free}\n" for m, tot, free in rows))


GIB = 1 << 30
TIGERLAKE_FLAGS = ("fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx "
                   "fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts "
                   "rep_good nopl xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni pclmulqdq dtes64 monitor "
                   "ds_cpl vmx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid sse4_1 sse4_2 x2apic movbe popcnt "
                   "tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb "
                   "invpcid_single ssbd ibrs ibpb stibp ibrs_enhanced fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms "
                   "invpcid avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb intel_pt avx512cd sha_ni "
                   "avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves dtherm ida arat pln pts hwp hwp_notify "
                   "hwp_act_window hwp_epp hwp_pkg_req avx512vbmi umip pku ospke avx512_vbmi2 gfni vaes vpclmulqdq "
                   "avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid movdiri movdir64b fsrm avx512_vp2intersect "
                   "md_clear flush_l1d arch_capabilities")
ZEN3_FLAGS = ("fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht "
              "syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl nonstop_tsc cpuid "
              "extd_apicid aperfmperf rapl pni pclmulqdq monitor ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes "
              "xsave avx f16c rdrand lahf_lm cmp_legacy svm extapic cr8_legacy abm sse4a misalignsse "
              "3dnowprefetch osvw ibs skinit wdt tce topoext perfctr_core perfctr_nb bpext perfctr_llc mwaitx "
              "cpb cat_l3 cdp_l3 hw_pstate ssbd mba ibrs ibpb stibp vmmcall fsgsbase bmi1 avx2 smep bmi2 erms "
              "invpcid cqm rdt_a rdseed adx smap clflushopt clwb sha_ni xsaveopt xsavec xgetbv1 xsaves cqm_llc "
              "cqm_occup_llc cqm_mbm_total cqm_mbm_local clzero irperf xsaveerptr rdpru wbnoinvd arat npt lbrv "
              "svm_lock nrip_save tsc_scale vmcb_clean flushbyasid decodeassists pausefilter pfthreshold avic "
              "v_vmsave_vmload vgif v_spec_ctrl umip pku ospke vaes vpclmulqdq rdpid overflow_recov succor smca "
              "fsrm")
SPR_FLAGS = ("fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr "
             "sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good "
             "nopl xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni pclmulqdq dtes64 monitor ds_cpl vmx "
             "smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt "
             "tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb cat_l3 "
             "cat_l2 cdp_l3 invpcid_single intel_ppin cdp_l2 ssbd mba ibrs ibpb stibp ibrs_enhanced fsgsbase "
             "tsc_adjust bmi1 avx2 smep bmi2 erms invpcid cqm rdt_a avx512f avx512dq rdseed adx smap avx512ifma "
             "clflushopt clwb intel_pt avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves "
             "cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local split_lock_detect avx_vnni avx512_bf16 wbnoinvd "
             "dtherm ida arat pln pts hfi avx512vbmi umip pku ospke waitpkg avx512_vbmi2 gfni vaes vpclmulqdq "
             "avx512_vnni avx512_bitalg tme avx512_vpopcntdq la57 rdpid bus_lock_detect cldemote movdiri "
             "movdir64b enqcmd fsrm md_clear serialize tsxldtrk pconfig arch_lbr ibt amx_bf16 avx512_fp16 "
             "amx_tile amx_int8 flush_l1d arch_capabilities")
ZEN4_FLAGS = (ZEN3_FLAGS.replace("fsgsbase bmi1 avx2", "fsgsbase bmi1 avx2")
              + " avx512f avx512dq avx512ifma avx512cd avx512bw avx512vl avx512_bf16 avx512vbmi avx512_vbmi2 "
              "gfni avx512_vnni avx512_bitalg avx512_vpopcntdq la57 flush_l1d")
CASCADE_FLAGS = ("fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse "
                 "sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid "
                 "tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave "
                 "avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch invpcid_single ssbd ibrs ibpb stibp "
                 "ibrs_enhanced fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm mpx avx512f avx512dq "
                 "rdseed adx smap clflushopt clwb avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves arat "
                 "avx512_vnni md_clear arch_capabilities")


def laptop_base(t, hostname, ram_kb, swap_kb):
    """An 11th-gen Intel laptop (Core i7-1165G7, Tiger Lake-UP3): 4 cores, 8 threads, one NUMA node."""
    kernel(t, "6.5.0-35-generic", "#35~22.04.1-Ubuntu SMP PREEMPT_DYNAMIC Tue May  7 09:00:52 UTC 2", hostname)
    t.write("/etc/os-release", UBUNTU_2204)
    t.write("/proc/cpuinfo", cpuinfo("GenuineIntel", 6, 140, "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz",
                                     2800.0, TIGERLAKE_FLAGS, 1, 4, 2, linear_cpu(1, 4, 2)))
    cpu_sys(t, "0-7", 2800000, 4700000)
    numa(t, [("0-7", ram_kb)])
    t.write("/proc/meminfo", meminfo(ram_kb, ram_kb * 6 // 10, swap_kb, swap_kb))
    t.write("/proc/self/limits", limits("8388608", "8388608", "65536", "1048576"))
    pci_device(t, ["0000:00:00.0"], "0x8086", "0x9a14", HOST_BRIDGE)
    pci_device(t, ["0000:00:02.0"], "0x8086", "0x9a49", VGA, driver="i915", subsys=("0x17aa", "0x22d8"))
    rp = pci_device(t, ["0000:00:1d.0"], "0x8086", "0xa0b0", BRIDGE, link=link(8, 4, 8, 4), driver="pcieport")
    nvme = pci_device(t, ["0000:00:1d.0", "0000:01:00.0"], "0x144d", "0xa80a", NVME, link=link(8, 4, 16, 4),
                      driver="nvme")
    block(t, "nvme0n1", 0, nvme + "/nvme/nvme0")
    wifi = pci_device(t, ["0000:00:14.3"], "0x8086", "0xa0f0", "0x028000", driver="iwlwifi")
    loopback(t)
    netdev(t, "wlp0s20f3", wifi, 1, "up", None, wireless=True)
    del rp


def laptop_no_gpu():
    t = Tree("laptop-no-gpu")
    keep = t.root / "proc" / ".keep"
    if keep.exists():
        keep.unlink()
    laptop_base(t, "thinkpad-x1", 16093888, 2097148)
    t.write("/proc/mounts", PSEUDO_MOUNTS
            + "/dev/nvme0n1p2 / ext4 rw,relatime,errors=remount-ro 0 0\n"
            + "/dev/nvme0n1p1 /boot/efi vfat rw,relatime,fmask=0077,dmask=0077,codepage=437 0 0\n"
            + "tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n"
            + "tmpfs /run/user/1000 tmpfs rw,nosuid,nodev,relatime,size=1609388k,mode=700,uid=1000 0 0\n"
            + "/dev/loop3 /snap/core22/1380 squashfs ro,nodev,relatime,errors=continue 0 0\n")
    statvfs(t, [("/", 502468108288, 311044771840), ("/boot/efi", 535805952, 529385472),
                ("/dev/shm", 8240070656, 8172961792)])


def desktop_rtx4090():
    t = Tree("desktop-rtx4090")
    kernel(t, "6.8.0-45-generic", "#45-Ubuntu SMP PREEMPT_DYNAMIC Fri Aug 30 12:02:04 UTC 2024", "workstation")
    t.write("/etc/os-release", UBUNTU_2404)
    # Ryzen 9 5950X (Zen 3, AM4): 16 cores, 32 threads; acpi-cpufreq gives no base_frequency file.
    t.write("/proc/cpuinfo", cpuinfo("AuthenticAMD", 25, 33, "AMD Ryzen 9 5950X 16-Core Processor", 3400.0,
                                     ZEN3_FLAGS, 1, 16, 2, linear_cpu(1, 16, 2)))
    cpu_sys(t, "0-31", None, 5083398)
    ram_kb = 65758828
    numa(t, [("0-31", ram_kb)])
    t.write("/proc/meminfo", meminfo(ram_kb, 58912456, 8388604, 8388604))
    # AM4 takes DDR4: four DIMM slots, two 32 GB DDR4-3200 modules in A2 and B2 (the boards'
    # recommended pair), as an ASUS AM4 board's SMBIOS names them.
    for i, (dev, bank, size) in enumerate([("DIMM_A1", "P0 CHANNEL A", 0), ("DIMM_A2", "P0 CHANNEL A", 32768),
                                           ("DIMM_B1", "P0 CHANNEL B", 0), ("DIMM_B2", "P0 CHANNEL B", 32768)]):
        dimm(t, i, dev, bank, size, 3200, 0x1A)
    t.write("/proc/self/limits", limits("8388608", "8388608", "65536", "1048576"))
    pci_device(t, ["0000:00:00.0"], "0x1022", "0x1480", HOST_BRIDGE)
    rp = ["0000:00:01.1"]
    rp_dev = pci_device(t, rp, "0x1022", "0x1483", BRIDGE, link=link(16, 16, 16, 16), driver="pcieport")
    child_bus(t, rp_dev, "0000:01", "0-31")
    pci_device(t, rp + ["0000:01:00.0"], "0x10de", "0x2684", VGA, link=link(16, 16, 16, 16), driver="nvidia",
               subsys=("0x1043", "0x889c"))
    # The board's two x16-sized slots (ACPI _SUN 1 and 2): the RTX 4090 in slot 1, on the CPU's x16 root
    # port; slot 2 empty, wired x4 (the root port's link capability says 4 lanes), as on many AM4 boards.
    # An empty port's link is down: only its capability (max_*) is read.
    rp3 = pci_device(t, ["0000:00:03.1"], "0x1022", "0x1483", BRIDGE, driver="pcieport",
                     extra={"max_link_speed": gts(16) + "\n", "max_link_width": "4\n"})
    child_bus(t, rp3, "0000:0c", "0-31")
    slot(t, "1", "0000:01:00", gts(16), gts(16))
    slot(t, "2", "0000:0c:00", gts(16), "Unknown")
    pci_device(t, rp + ["0000:01:00.1"], "0x10de", "0x22ba", AUDIO, link=link(16, 16, 16, 16),
               driver="snd_hda_intel", subsys=("0x1043", "0x889c"))
    rp2 = ["0000:00:01.2"]
    pci_device(t, rp2, "0x1022", "0x1483", BRIDGE, link=link(16, 4, 16, 4), driver="pcieport")
    nvme = pci_device(t, rp2 + ["0000:02:00.0"], "0x15b7", "0x5011", NVME, link=link(16, 4, 16, 4),
                      driver="nvme")
    block(t, "nvme0n1", 0, nvme + "/nvme/nvme0")
    sata = pci_device(t, ["0000:00:08.1", "0000:0b:00.2"], "0x1022", "0x7901", "0x010601", driver="ahci")
    block(t, "sda", 1, sata + "/ata2/host1/target1:0:0/1:0:0:0")
    eth = pci_device(t, ["0000:00:01.3", "0000:05:00.0"], "0x10ec", "0x8125", ETH, link=link(5, 1, 5, 1),
                     driver="r8169")
    loopback(t)
    netdev(t, "enp5s0", eth, 1, "up", 1000)
    netdev(t, "docker0", "/sys/devices/virtual", 1, "down", None)
    t.write("/proc/mounts", PSEUDO_MOUNTS
            + "/dev/nvme0n1p2 / ext4 rw,relatime 0 0\n"
            + "/dev/nvme0n1p1 /boot/efi vfat rw,relatime,fmask=0077,dmask=0077 0 0\n"
            + "/dev/sda1 /data ext4 rw,relatime 0 0\n"
            + "tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n")
    statvfs(t, [("/", 1967317618688, 1204778348544), ("/boot/efi", 535805952, 529385472),
                ("/data", 7937327349760, 3123470929920), ("/dev/shm", 33668521984, 33668521984)])


def laptop_egpu_3080():
    t = Tree("laptop-egpu-3080")
    laptop_base(t, "xps-13", 32574212, 2097148)
    # Tiger Lake's integrated Thunderbolt 4: root port 00:07.0 (8086:9a23) and NHI 00:0d.2 (8086:9a1b).
    # The dock (Razer Core X Chroma, Titan Ridge JHL7540 8086:15ef) shows an upstream and a downstream
    # switch port; the PCIe tunnel gives the GPU a Gen3 x4 link (TB3: "PCIe 3.0 x4", https://github.com/ewagner12/all-ways-egpu/issues/37).
    # The kernel's "removable" attribute (sysfs-bus-pci) marks what sits behind the external-facing port.
    fixed, removable = {"removable": "fixed\n"}, {"removable": "removable\n"}
    rp = ["0000:00:07.0"]
    pci_device(t, rp, "0x8086", "0x9a23", BRIDGE, link=link(8, 4, 8, 4), driver="pcieport", extra=fixed)
    up = rp + ["0000:05:00.0"]
    pci_device(t, up, "0x8086", "0x15ef", BRIDGE, link=link(8, 4, 8, 4), driver="pcieport",
               subsys=("0x1532", "0x1209"), extra=removable)
    down = up + ["0000:06:01.0"]
    pci_device(t, down, "0x8086", "0x15ef", BRIDGE, link=link(8, 4, 8, 4), driver="pcieport",
               subsys=("0x1532", "0x1209"), extra=removable)
    pci_device(t, down + ["0000:07:00.0"], "0x10de", "0x2206", VGA, link=link(8, 4, 16, 16), driver="nvidia",
               subsys=("0x3842", "0x3897"), extra=removable)
    pci_device(t, down + ["0000:07:00.1"], "0x10de", "0x1aef", AUDIO, link=link(8, 4, 16, 16),
               driver="snd_hda_intel", subsys=("0x3842", "0x3897"), extra=removable)
    nhi = pci_device(t, ["0000:00:0d.2"], "0x8086", "0x9a1b", "0x0c0340", driver="thunderbolt")
    dom = nhi + "/domain0"
    t.write(dom + "/security", "user\n")
    host = dom + "/0-0"
    t.write(host + "/vendor_name", "Dell\n")
    t.write(host + "/device_name", "XPS 13 9310\n")
    t.write(host + "/generation", "4\n")
    dock = host + "/0-1"
    t.write(dock + "/vendor_name", "Razer\n")
    t.write(dock + "/device_name", "Core X Chroma\n")
    t.write(dock + "/generation", "3\n")
    t.write(dock + "/authorized", "1\n")
    for name, target in (("domain0", dom), ("0-0", host), ("0-1", dock)):
        t.link("/sys/bus/thunderbolt/devices/" + name, rel("/sys/bus/thunderbolt/devices", target))
    t.write("/proc/mounts", PSEUDO_MOUNTS
            + "/dev/nvme0n1p2 / ext4 rw,relatime,errors=remount-ro 0 0\n"
            + "/dev/nvme0n1p1 /boot/efi vfat rw,relatime,fmask=0077,dmask=0077 0 0\n"
            + "tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n")
    statvfs(t, [("/", 1006450962432, 402580384972), ("/boot/efi", 535805952, 529385472),
                ("/dev/shm", 16677996544, 16677996544)])


H100_BUSES = [(0x18, 0), (0x2a, 0), (0x3a, 0), (0x5d, 0), (0x9a, 1), (0xab, 1), (0xba, 1), (0xdb, 1)]


def server_8xh100():
    t = Tree("server-8xh100")
    kernel(t, "5.15.0-119-generic", "#129-Ubuntu SMP Fri Aug 2 19:25:20 UTC 2024", "dgx-h100-07")
    t.write("/etc/os-release", UBUNTU_2204)
    # 2 x Xeon Platinum 8480+ (Sapphire Rapids): 56 cores each, SMT on, 224 threads.
    t.write("/proc/cpuinfo", cpuinfo("GenuineIntel", 6, 143, "Intel(R) Xeon(R) Platinum 8480+", 2000.0,
                                     SPR_FLAGS, 2, 56, 2, linear_cpu(2, 56, 2)))
    cpu_sys(t, "0-223", 2000000, 3800000)
    ram_kb = 2113305632
    numa(t, [("0-55,112-167", ram_kb // 2), ("56-111,168-223", ram_kb // 2)])
    t.write("/proc/meminfo", meminfo(ram_kb, 2056417536, 0, 0))
    t.write("/proc/self/limits", limits("unlimited", "unlimited", "1048576", "1048576"))
    gen5 = link(32, 16, 32, 16)
    for i, (bus, node) in enumerate(H100_BUSES):
        rp = [f"0000:{bus - 3:02x}:01.0"]
        up = rp + [f"0000:{bus - 2:02x}:00.0"]
        down_gpu = up + [f"0000:{bus - 1:02x}:00.0"]
        down_nic = up + [f"0000:{bus - 1:02x}:01.0"]
        pci_device(t, rp, "0x8086", "0x352a", BRIDGE, numa=node, link=gen5, driver="pcieport")
        # Broadcom PEX89xxx Gen5 switch (1000:c030) in front of each GPU and its NIC.
        pci_device(t, up, "0x1000", "0xc030", BRIDGE, numa=node, link=gen5, driver="pcieport")
        pci_device(t, down_gpu, "0x1000", "0xc030", BRIDGE, numa=node, link=gen5, driver="pcieport")
        nic_port = pci_device(t, down_nic, "0x1000", "0xc030", BRIDGE, numa=node, link=gen5, driver="pcieport")
        pci_device(t, down_gpu + [f"0000:{bus:02x}:00.0"], "0x10de", "0x2330", DISPLAY_3D, numa=node, link=gen5,
                   driver="nvidia", subsys=("0x10de", "0x16c1"))
        # The SXM GPUs sit on the baseboard; the slots the firmware lists hold the ConnectX-7 cards, every
        # one taken.
        child_bus(t, nic_port, f"0000:{bus + 1:02x}", "0-55,112-167" if node == 0 else "56-111,168-223")
        slot(t, f"{i + 1}", f"0000:{bus + 1:02x}:00", gts(32), gts(32))
        nic = pci_device(t, down_nic + [f"0000:{bus + 1:02x}:00.0"], "0x15b3", "0x1021", IB, numa=node,
                         link=gen5, driver="mlx5_core", subsys=("0x15b3", "0x0041"))
        ib_port(t, f"mlx5_{i}", nic, "400 Gb/sec (4X NDR)")
        netdev(t, f"ibp{bus + 1}s0", nic, 32, "up", 400000)
    # Four third-generation NVSwitch chips (10de:22a3) show up as bridges of class 0x0680, not GPUs.
    for i in range(4):
        rp = [f"0000:00:0{i + 1}.0"]
        pci_device(t, rp, "0x8086", "0x352a", BRIDGE, numa=0, link=link(16, 2, 32, 16), driver="pcieport")
        pci_device(t, rp + [f"0000:{5 + i:02x}:00.0"], "0x10de", "0x22a3", "0x068000", numa=0,
                   link=link(16, 2, 16, 2), subsys=("0x10de", "0x1796"))
    eth = pci_device(t, ["0000:00:1c.0", "0000:04:00.0"], "0x14e4", "0x1750", ETH, numa=0,
                     link=link(16, 8, 16, 8), driver="bnxt_en")
    loopback(t)
    netdev(t, "eno8303", eth, 1, "up", 100000)
    nvme = pci_device(t, ["0000:00:1b.0", "0000:03:00.0"], "0x144d", "0xa80a", NVME, numa=0,
                      link=link(16, 4, 16, 4), driver="nvme")
    block(t, "nvme0n1", 0, nvme + "/nvme/nvme0")
    nvme1 = pci_device(t, ["0000:80:1b.0", "0000:81:00.0"], "0x8086", "0x0b60", NVME, numa=1,
                       link=link(16, 4, 16, 4), driver="nvme")
    block(t, "nvme1n1", 0, nvme1 + "/nvme/nvme1")
    t.write("/proc/mounts", PSEUDO_MOUNTS
            + "/dev/nvme0n1p2 / ext4 rw,relatime 0 0\n"
            + "/dev/nvme0n1p1 /boot/efi vfat rw,relatime,fmask=0077,dmask=0077 0 0\n"
            + "/dev/nvme1n1 /raid ext4 rw,relatime 0 0\n"
            + "fileserver:/datasets /datasets nfs4 rw,relatime,vers=4.2,rsize=1048576,wsize=1048576,hard,"
              "proto=tcp,timeo=600 0 0\n"
            + "tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n")
    statvfs(t, [("/", 1888777428992, 1601212416000), ("/boot/efi", 535805952, 529385472),
                ("/raid", 30721537843200, 28314963558400), ("/datasets", 219902325555200, 65970697666560),
                ("/dev/shm", 1081948483584, 1081948483584)])


def amd_gpu(t, dev, card, hwmon):
    # amdgpu attributes sit in the PCI device directory (cardN/device links to it).
    t.write(dev + "/mem_info_vram_total", "205822885888\n")
    t.write(dev + "/mem_info_vram_used", "285212672\n")
    t.write(dev + "/gpu_busy_percent", "0\n")
    t.write(dev + "/pp_dpm_sclk", "0: 500Mhz *\n1: 1300Mhz\n2: 2100Mhz\n")
    t.write(dev + "/pp_dpm_mclk", "0: 900Mhz\n1: 1300Mhz *\n")
    h = dev + "/hwmon/" + hwmon
    t.write(h + "/name", "amdgpu\n")
    # MI300X reports no edge sensor; temp2 is the junction (hotspot), temp3 the memory.
    t.write(h + "/temp2_input", "38000\n")
    t.write(h + "/temp2_label", "junction\n")
    t.write(h + "/temp3_input", "33000\n")
    t.write(h + "/temp3_label", "mem\n")
    t.write(h + "/power1_average", "142000000\n")
    t.write(h + "/power1_cap", "750000000\n")
    t.link("/sys/class/drm/" + card, rel("/sys/class/drm", dev + "/drm/" + card))
    t.mkdir(dev + "/drm/" + card)
    t.write(dev + "/drm/" + card + "/dev", "226:" + card[4:] + "\n")


def node_mi300x():
    t = Tree("node-mi300x")
    kernel(t, "5.14.0-427.13.1.el9_4.x86_64", "#1 SMP PREEMPT_DYNAMIC Wed Apr 10 10:29:16 EDT 2024", "mi300x-node-3")
    t.write("/etc/os-release", RHEL_94)
    # 2 x EPYC 9654 (Zen 4, Genoa): 96 cores each, SMT on, 384 threads; NPS1 gives one node per socket.
    t.write("/proc/cpuinfo", cpuinfo("AuthenticAMD", 25, 17, "AMD EPYC 9654 96-Core Processor", 2400.0, ZEN4_FLAGS,
                                     2, 96, 2, linear_cpu(2, 96, 2)))
    cpu_sys(t, "0-383", None, 3707812)
    ram_kb = 1584918776
    numa(t, [("0-95,192-287", ram_kb // 2), ("96-191,288-383", ram_kb // 2)])
    t.write("/proc/meminfo", meminfo(ram_kb, 1532411904, 0, 0))
    t.write("/proc/self/limits", limits("unlimited", "unlimited", "1048576", "1048576"))
    gen5 = link(32, 16, 32, 16)
    for bdf, rp_bdf, card, hwmon in (("0000:05:00.0", "0000:00:01.1", "card0", "hwmon2"),
                                     ("0000:26:00.0", "0000:20:01.1", "card1", "hwmon3")):
        pci_device(t, [rp_bdf], "0x1022", "0x14ab", BRIDGE, numa=0, link=gen5, driver="pcieport")
        dev = pci_device(t, [rp_bdf, bdf], "0x1002", "0x74a1", DISPLAY_3D, numa=0, link=gen5, driver="amdgpu",
                         subsys=("0x1002", "0x74a1"))
        amd_gpu(t, dev, card, hwmon)
    nvme = pci_device(t, ["0000:80:01.1", "0000:81:00.0"], "0x144d", "0xa80a", NVME, numa=1,
                      link=link(16, 4, 16, 4), driver="nvme")
    block(t, "nvme0n1", 0, nvme + "/nvme/nvme0")
    eth = pci_device(t, ["0000:80:03.1", "0000:83:00.0"], "0x15b3", "0x1021", ETH, numa=1,
                     link=link(32, 16, 32, 16), driver="mlx5_core")
    loopback(t)
    netdev(t, "ens1f0np0", eth, 1, "up", 400000)
    ib_port(t, "mlx5_0", eth, "400 Gb/sec (4X NDR)", link_layer="Ethernet")
    t.write("/proc/mounts", PSEUDO_MOUNTS
            + "/dev/nvme0n1p3 / xfs rw,relatime,attr2,inode64,logbufs=8,logbsize=32k,noquota 0 0\n"
            + "/dev/nvme0n1p1 /boot/efi vfat rw,relatime,fmask=0077,dmask=0077 0 0\n"
            + "tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n")
    statvfs(t, [("/", 3839700000768, 3502000000000), ("/boot/efi", 627900416, 620000000),
                ("/dev/shm", 811478413312, 811478413312)])


def container_shm64():
    t = Tree("container-shm64")
    # Docker on a GCP a2-ultragpu-1g VM (12 vCPUs, Cascade Lake, 170 GB, one A100 80GB at 00:05.0).
    # /sys and /proc show the VM; /proc/self/limits and /proc/mounts are the container's.
    kernel(t, "6.1.0-25-cloud-amd64", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.106-3 (2024-08-26)", "3f4e2a1b9c7d")
    t.write("/etc/os-release", UBUNTU_2204)
    t.write("/proc/cpuinfo", cpuinfo("GenuineIntel", 6, 85, "Intel(R) Xeon(R) CPU @ 2.20GHz", 2200.0, CASCADE_FLAGS,
                                     1, 6, 2, linear_cpu(1, 6, 2)))
    cpu_sys(t, "0-11")
    ram_kb = 174079536
    numa(t, [("0-11", ram_kb)])
    t.write("/proc/meminfo", meminfo(ram_kb, 165380432, 0, 0))
    t.write("/proc/self/limits", limits("65536", "65536", "1048576", "1048576"))
    pci_device(t, ["0000:00:00.0"], "0x8086", "0x1237", HOST_BRIDGE)
    pci_device(t, ["0000:00:05.0"], "0x10de", "0x20b5", DISPLAY_3D, link=link(16, 16, 16, 16), driver="nvidia",
               subsys=("0x10de", "0x1533"))
    loopback(t)
    netdev(t, "eth0", "/sys/devices/virtual", 1, "up", 10000)
    t.write("/proc/mounts",
            "overlay / overlay rw,relatime,lowerdir=/var/lib/docker/overlay2/l/Q3X:/var/lib/docker/overlay2/l/7YB,"
            "upperdir=/var/lib/docker/overlay2/9c1/diff,workdir=/var/lib/docker/overlay2/9c1/work 0 0\n"
            "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
            "tmpfs /dev tmpfs rw,nosuid,size=65536k,mode=755,inode64 0 0\n"
            "devpts /dev/pts devpts rw,nosuid,noexec,relatime,gid=5,mode=620,ptmxmode=666 0 0\n"
            "sysfs /sys sysfs ro,nosuid,nodev,noexec,relatime 0 0\n"
            "cgroup /sys/fs/cgroup cgroup2 ro,nosuid,nodev,noexec,relatime 0 0\n"
            "mqueue /dev/mqueue mqueue rw,nosuid,nodev,noexec,relatime 0 0\n"
            "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k,inode64 0 0\n"
            "/dev/sda1 /etc/resolv.conf ext4 rw,relatime,discard,errors=remount-ro 0 0\n"
            "/dev/sda1 /etc/hostname ext4 rw,relatime,discard,errors=remount-ro 0 0\n"
            "/dev/sda1 /etc/hosts ext4 rw,relatime,discard,errors=remount-ro 0 0\n"
            "/dev/sda1 /workspace ext4 rw,relatime,discard,errors=remount-ro 0 0\n"
            "proc /proc/bus proc ro,nosuid,nodev,noexec,relatime 0 0\n"
            "tmpfs /proc/acpi tmpfs ro,relatime,inode64 0 0\n")
    disk = pci_device(t, ["0000:00:03.0"], "0x1af4", "0x1004", "0x000000", driver="virtio-pci")
    block(t, "sda", 0, disk + "/virtio1/host0/target0:0:1/0:0:1:0")
    statvfs(t, [("/", 211243667456, 148902817792), ("/workspace", 211243667456, 148902817792),
                ("/etc/hosts", 211243667456, 148902817792), ("/etc/hostname", 211243667456, 148902817792),
                ("/etc/resolv.conf", 211243667456, 148902817792), ("/dev/shm", 67108864, 67108864)])


if __name__ == "__main__":
    laptop_no_gpu()
    desktop_rtx4090()
    laptop_egpu_3080()
    server_8xh100()
    node_mi300x()
    container_shm64()
