#!/usr/bin/env python3
"""Writes the software fixture machines (sw-*, container-no-runtime, wsl2) and the software files
of the hardware fixtures server-8xh100 and desktop-rtx4090 (see docs/testing.md, "Fake
interpreters"). The sw trees are rebuilt from scratch; in the hardware trees only the software
paths are written (/proc/modules, /proc/cmdline, /proc/version, /proc/driver, /proc/net,
/proc/PID, /sys/module, /sys/kernel/iommu_groups, /etc/modprobe.d, /etc/ld.so.conf*, /usr, /opt,
/home, /dev/nvidia*). Run it again after editing it.

Sources of the layouts: the file formats are those the kernel documents (proc(5): /proc/modules,
/proc/net/tcp, /proc/PID/comm; sysfs-module: /sys/module/NAME/version and taint), the NVIDIA
driver's /proc/driver/nvidia/version first line, the CUDA toolkit's version.json (12.x) and
version.txt (11.x), PEP 427 dist-info folder names, conda-meta NAME-VERSION-BUILD.json names,
torch/version.py as the PyTorch wheels write it.
"""
import os, sys, shutil, stat
BASE = os.path.dirname(os.path.abspath(__file__))

class Tree:
    def __init__(self, name, fresh=True):
        self.root = os.path.join(BASE, name)
        if fresh and os.path.exists(self.root):
            shutil.rmtree(self.root)
        os.makedirs(self.root, exist_ok=True)
    def p(self, path):
        return os.path.join(self.root, path.lstrip("/"))
    def file(self, path, text="", mode=None):
        full = self.p(path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb" if isinstance(text, bytes) else "w") as f:
            f.write(text)
        if mode:
            os.chmod(full, mode)
    def link(self, path, target):
        full = self.p(path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if os.path.lexists(full):
            os.remove(full)
        os.symlink(target, full)
    def dir(self, path):
        os.makedirs(self.p(path), exist_ok=True)
        self.file(path + "/.keep")

DRV = "550.54.15"
PROC_VERSION_LINUX = "Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #45-Ubuntu SMP PREEMPT_DYNAMIC Fri Aug 30 12:02:04 UTC 2024\n"
TCP_HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"

def tcp_line(i, port, state="0A"):
    return f"   {i}: 00000000:{port:04X} 00000000:0000 {state} 00000000:00000000 00:00000000 00000000     0        0 {1000+i} 1 0000000000000000 100 0 0 10 0\n"

def cpuinfo(hyper=False):
    flags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx lm constant_tsc rep_good nopl xtopology cpuid pni pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand" + (" hypervisor" if hyper else "") + " lahf_lm abm avx2 bmi1 bmi2"
    return f"processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD Ryzen 9 7950X 16-Core Processor\nflags\t\t: {flags}\n\n"

def nvidia_driver(t, version=DRV, open_module=False, uvm=True, peermem=False, gpus=1, modules_extra=""):
    mods = f"nvidia_drm 122880 0 - Live 0x0000000000000000 (PO)\nnvidia_modeset 1355776 1 nvidia_drm, Live 0x0000000000000000 (PO)\n"
    if uvm:
        mods += "nvidia_uvm 4890624 0 - Live 0x0000000000000000 (PO)\n"
    if peermem:
        mods += "nvidia_peermem 16384 0 - Live 0x0000000000000000 (PO)\nib_core 479232 1 nvidia_peermem, Live 0x0000000000000000\n"
    mods += f"nvidia 54353920 3 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (PO)\n" + modules_extra
    mods += "snd_hda_intel 61440 2 - Live 0x0000000000000000\nvideo 73728 1 nvidia_modeset, Live 0x0000000000000000\n"
    t.file("/proc/modules", mods)
    t.file("/sys/module/nvidia/version", version + "\n")
    t.file("/sys/module/nvidia/taint", "O\n" if open_module else "PO\n")
    if uvm:
        t.file("/sys/module/nvidia_uvm/version", version + "\n")
    kind = "NVIDIA UNIX Open Kernel Module for x86_64" if open_module else "NVIDIA UNIX x86_64 Kernel Module"
    t.file("/proc/driver/nvidia/version", f"NVRM version: {kind}  {version}  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n")
    for n in ["nvidiactl", "nvidia-modeset"] + (["nvidia-uvm", "nvidia-uvm-tools"] if uvm else []) + [f"nvidia{i}" for i in range(gpus)]:
        t.file("/dev/" + n)
    lib = "/usr/lib/x86_64-linux-gnu"
    for stem in ["libcuda.so", "libnvidia-ml.so"]:
        t.file(f"{lib}/{stem}.{version}")
        t.link(f"{lib}/{stem}.1", f"{stem}.{version}")
    t.link(f"{lib}/libcuda.so", "libcuda.so.1")

def ld_conf(t, extra=()):
    t.file("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n\n")
    t.file("/etc/ld.so.conf.d/libc.conf", "# libc default configuration\n/usr/local/lib\n")
    t.file("/etc/ld.so.conf.d/x86_64-linux-gnu.conf", "# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n")
    for name, text in extra:
        t.file("/etc/ld.so.conf.d/" + name, text)

def base_host(t, hyper=False, cmdline="BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic root=UUID=0b1c quiet splash", listen=(22, 631)):
    t.file("/proc/version", PROC_VERSION_LINUX)
    t.file("/proc/cmdline", cmdline + "\n")
    t.file("/proc/cpuinfo", cpuinfo(hyper))
    t.file("/proc/net/tcp", TCP_HEADER + "".join(tcp_line(i, p) for i, p in enumerate(listen)))
    t.file("/proc/net/tcp6", TCP_HEADER)
    t.file("/proc/1/comm", "systemd\n")
    t.file("/proc/1/cgroup", "0::/init.scope\n")
    t.file("/proc/812/comm", "sshd\n")
    t.file("/sys/class/dmi/id/sys_vendor", "Micro-Star International Co., Ltd.\n")
    t.file("/sys/class/dmi/id/product_name", "MS-7D70\n")
    t.file("/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c", b"\x06\x00\x00\x00\x00")
    t.dir("/sys/kernel")
    t.file("/etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\noptions nouveau modeset=0\n")
    t.file("/etc/modprobe.d/alsa-base.conf", "options snd-usb-audio index=-2\n")
    t.file("/usr/lib/gcc/x86_64-linux-gnu/12/.keep")
    t.file("/usr/bin/gcc-12")
    t.link("/usr/bin/gcc", "gcc-12")
    ld_conf(t)

def system_python(t, ver="3.11"):
    t.file(f"/usr/bin/python{ver}")
    t.link("/usr/bin/python3", f"python{ver}")
    t.file(f"/usr/lib/python{ver}/os.py", "# stdlib\n")
    t.dir("/usr/lib/python3/dist-packages")

def persistenced(t, pid=1450):
    t.file(f"/proc/{pid}/comm", "nvidia-persiste\n")

def pci_gpu(t, bdf="0000:01:00.0", device="0x2684"):
    d = f"/sys/bus/pci/devices/{bdf}"
    t.file(d + "/vendor", "0x10de\n")
    t.file(d + "/device", device + "\n")
    t.file(d + "/class", "0x030000\n")

def toolkit(t, ver, full, kind="json", cudnn=None, cublas=None, nccl=None, stubs=True):
    root = f"/usr/local/cuda-{ver}"
    t.file(root + "/bin/nvcc", mode=0o644)
    if kind == "json":
        t.file(root + "/version.json", '{\n   "cuda" : {\n      "name" : "CUDA SDK",\n      "version" : "%s"\n   },\n   "cuda_cudart" : {\n      "name" : "CUDA Runtime (cudart)",\n      "version" : "%s"\n   }\n}\n' % (full, full))
    else:
        t.file(root + "/version.txt", f"CUDA Version {full}\n")
    lib = root + "/targets/x86_64-linux/lib"
    t.link(root + "/lib64", "targets/x86_64-linux/lib")
    major = ver.split(".")[0]
    t.file(f"{lib}/libcudart.so.{ver}.{full.split('.')[2]}")
    if cublas:
        t.file(f"{lib}/libcublas.so.{cublas}")
        t.link(f"{lib}/libcublas.so.{cublas.split('.')[0]}", f"libcublas.so.{cublas}")
        t.file(f"{lib}/libcublasLt.so.{cublas}")
        t.link(f"{lib}/libcublasLt.so.{cublas.split('.')[0]}", f"libcublasLt.so.{cublas}")
    if cudnn:
        t.file(f"{lib}/libcudnn.so.{cudnn}")
        t.link(f"{lib}/libcudnn.so.{cudnn.split('.')[0]}", f"libcudnn.so.{cudnn}")
        mj, mn, pt = cudnn.split(".")[:3]
        t.file(root + "/targets/x86_64-linux/include/cudnn_version.h", f"#ifndef CUDNN_VERSION_H_\n#define CUDNN_VERSION_H_\n\n#define CUDNN_MAJOR {mj}\n#define CUDNN_MINOR {mn}\n#define CUDNN_PATCHLEVEL {pt}\n\n#define CUDNN_VERSION (CUDNN_MAJOR * 1000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n#endif\n")
        t.link(root + "/include", "targets/x86_64-linux/include")
    if nccl:
        t.file(f"{lib}/libnccl.so.{nccl}")
        t.link(f"{lib}/libnccl.so.2", f"libnccl.so.{nccl}")
    if stubs:
        t.file(f"{lib}/stubs/libcuda.so")
    return root

def dist(t, site, name, version):
    t.file(f"{site}/{name}-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")

TORCH_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '{v}'
debug = False
cuda: Optional[str] = {cuda}
git_version = 'a8d6afb511a69687bbb2b7e88a3cf67917e1697e'
hip: Optional[str] = {hip}
"""

def torch(t, site, version, cuda="'12.4'", hip="None", wheels=True, tv="0.20.1", ta="2.5.1"):
    variant = version.split("+")[1] if "+" in version else None
    suffix = "+" + variant if variant else ""
    t.file(site + "/torch/version.py", TORCH_VERSION_PY.format(v=version, cuda=cuda, hip=hip))
    t.file(site + "/torch/__init__.py", "# torch\n")
    dist(t, site, "torch", version)
    if tv:
        t.file(site + "/torchvision/version.py", f"__version__ = '{tv}{suffix}'\ngit_version = '7b1b5fa'\nfrom torchvision.extension import _check_cuda_version\nif _check_cuda_version() > 0:\n    cuda = _check_cuda_version()\n")
        dist(t, site, "torchvision", tv + suffix)
    if ta:
        t.file(site + "/torchaudio/version.py", f"__version__ = '{ta}{suffix}'\ngit_version = 'ba696ea'\n")
        dist(t, site, "torchaudio", ta + suffix)
    if wheels:
        for name, v in [("nvidia_cudnn_cu12", "9.1.0.70"), ("nvidia_nccl_cu12", "2.21.5"), ("nvidia_cublas_cu12", "12.4.5.8"),
                        ("nvidia_cuda_runtime_cu12", "12.4.127"), ("nvidia_cuda_nvrtc_cu12", "12.4.127"), ("nvidia_nvjitlink_cu12", "12.4.127"),
                        ("nvidia_cusparse_cu12", "12.3.1.170")]:
            dist(t, site, name, v)
        for lib in ["cudnn", "nccl", "cublas"]:
            t.file(f"{site}/nvidia/{lib}/lib/.keep")
        # The cuDNN 9 wheel's libraries: libcudnn.so.9 and the sub-libraries it opens by name
        # (cuDNN 9 installation guide, "cuDNN library components").
        for stem in CUDNN9_WHEEL:
            t.file(f"{site}/nvidia/cudnn/lib/{stem}.so.9")
        # The libraries dlrig bench loads (and doctor's cuda.cublaslt-not-found and
        # dist.nccl-not-found look for), as the wheels name them.
        t.file(f"{site}/nvidia/cublas/lib/libcublasLt.so.12")
        t.file(f"{site}/nvidia/nccl/lib/libnccl.so.2")
    dist(t, site, "numpy", "2.1.3")
    dist(t, site, "triton", "3.1.0")

CUDNN9_WHEEL = ["libcudnn", "libcudnn_adv", "libcudnn_cnn", "libcudnn_engines_precompiled",
                "libcudnn_engines_runtime_compiled", "libcudnn_graph", "libcudnn_heuristic", "libcudnn_ops"]


def venv(t, root, ver="3.11", pyver="3.11.4"):
    t.file(root + "/pyvenv.cfg", f"home = /usr/bin\ninclude-system-site-packages = false\nversion = {pyver}\nexecutable = /usr/bin/python{ver}\ncommand = /usr/bin/python3 -m venv {root}\n")
    t.link(root + "/bin/python3", "/usr/bin/python3")
    t.link(root + "/bin/python", "python3")
    t.file(root + "/bin/activate", "# activate\n")
    return f"{root}/lib/python{ver}/site-packages"

def fake_pythons(t):
    scripts = {
        "good": '#!/bin/sh\necho "Python says hello"\necho \'DLRIG_DEEP {"cuda_available": true, "device_count": 1, "arch_list": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]}\'\n',
        "nocuda": '#!/bin/sh\necho \'DLRIG_DEEP {"cuda_available": false, "device_count": 0, "arch_list": ["sm_50", "sm_90"], "error": "CUDA initialization: The NVIDIA driver on your system is too old (found version 11040)."}\'\n',
        "hang": '#!/bin/sh\nsleep 600\n',
        "crash": '#!/bin/sh\necho "Segmentation fault (core dumped) in libtorch_cuda.so" >&2\nkill -SEGV $$\n',
        "garbage": '#!/bin/sh\nprintf \'\\001\\002 not json at all {{{\\n\'\necho \'DLRIG_DEEP {"cuda_available": tru\'\n',
        "fails": '#!/bin/sh\necho "ImportError: libcudnn.so.9: cannot open shared object file" >&2\nexit 1\n',
    }
    for name, text in scripts.items():
        t.file(f"/opt/fake/{name}/bin/python3", text, mode=0o755)
    t.file("/opt/fake/notexec/bin/python3", scripts["good"], mode=0o644)
    gsite = "/opt/fake/good/lib/python3.11/site-packages"
    t.file(gsite + "/torch/version.py", TORCH_VERSION_PY.format(v="2.5.1+cu124", cuda="'12.4'", hip="None"))
    t.link("/opt/fake/outside/bin/python3", "/bin/sh")  # resolves inside the fixture: missing there

# 1. torch 2.5.1+cu124 in a venv, healthy workstation
t = Tree("sw-venv-torch251")
base_host(t)
nvidia_driver(t)
persistenced(t)
pci_gpu(t)
system_python(t)
toolkit(t, "12.4", "12.4.131", cublas="12.4.5.8")
t.link("/usr/local/cuda", "cuda-12.4")
site = venv(t, "/home/user/venv")
torch(t, site, "2.5.1+cu124")
dist(t, site, "transformers", "4.46.3")  # before the grouped K/V path (fit's SDPA rule)
fake_pythons(t)

# 2. +cpu torch on a GPU machine
t = Tree("sw-cpu-torch")
base_host(t)
nvidia_driver(t)
pci_gpu(t)
system_python(t)
site = venv(t, "/home/user/venv")
torch(t, site, "2.5.1+cpu", cuda="None", wheels=False)

# 3. two toolkits, LD_LIBRARY_PATH at the older
t = Tree("sw-two-toolkits")
base_host(t)
nvidia_driver(t)
pci_gpu(t)
system_python(t)
toolkit(t, "11.8", "11.8.89", kind="txt", cudnn="8.9.2", cublas="11.11.3.6")
toolkit(t, "12.4", "12.4.131", cublas="12.4.5.8", nccl="2.21.5")
t.link("/usr/local/cuda", "cuda-12.4")
site = venv(t, "/home/user/venv")
torch(t, site, "2.5.1+cu124")

# 3b. torch for CUDA on two GPUs with neither cuBLASLt nor NCCL anywhere: no nvidia wheels (a
# `pip install --no-deps` of the torch wheel), no toolkit, nothing on the loader's path
t = Tree("sw-torch-no-libs")
base_host(t)
nvidia_driver(t, gpus=2)
pci_gpu(t)
pci_gpu(t, bdf="0000:02:00.0")
system_python(t)
site = venv(t, "/home/user/venv")
torch(t, site, "2.5.1+cu124", wheels=False)
t.file("/.dlrig/env", "PATH=/home/user/venv/bin:/usr/bin:/bin\nVIRTUAL_ENV=/home/user/venv\nHOME=/home/user\n")

def conda_cu118(name, extensions=False):
    t = Tree(name)
    base_host(t)
    nvidia_driver(t)
    pci_gpu(t)
    system_python(t)
    toolkit(t, "12.4", "12.4.131", cublas="12.4.5.8")
    t.link("/usr/local/cuda", "cuda-12.4")
    conda = "/home/user/miniconda3"
    t.dir(conda + "/conda-meta")
    t.file(conda + "/conda-meta/python-3.12.4-h5148396_1.json", "{}\n")
    t.file(conda + "/conda-meta/conda-24.5.0-py312h06a4308_0.json", "{}\n")
    t.file(conda + "/bin/python3.12")
    t.link(conda + "/bin/python3", "python3.12")
    t.file(conda + "/lib/python3.12/site-packages/conda/__init__.py")
    env = conda + "/envs/torch118"
    for n in ["python-3.10.14-h955ad1f_1", "pytorch-2.1.2-py3.10_cuda11.8_cudnn8.7.0_0", "pytorch-cuda-11.8-h7e8668a_5",
              "cudnn-8.7.0.84-hcb1b4f2_0", "nccl-2.18.3.1-h6103f9b_0", "libcublas-11.11.3.6-0", "torchvision-0.16.2-py310_cu118",
              "torchaudio-2.1.2-py310_cu118"]:
        t.file(f"{env}/conda-meta/{n}.json", "{}\n")
    t.file(env + "/bin/python3.10")
    t.link(env + "/bin/python3", "python3.10")
    t.link(env + "/bin/python", "python3.10")
    esite = env + "/lib/python3.10/site-packages"
    torch(t, esite, "2.1.2", cuda="'11.8'", wheels=False, tv="0.16.2", ta="2.1.2")
    t.file(env + "/lib/libcudnn.so.8.7.0")
    t.file(env + "/lib/libcublasLt.so.11.11.3.6")
    t.link(env + "/lib/libcublasLt.so.11", "libcublasLt.so.11.11.3.6")
    t.file(env + "/lib/libnccl.so.2.18.3")
    t.link(env + "/lib/libnccl.so.2", "libnccl.so.2.18.3")
    if extensions:
        # A torch extension pip compiled here (linux_x86_64 tag, requires torch) and
        # torch.utils.cpp_extension's JIT cache: this machine builds CUDA extensions.
        fa = esite + "/flash_attn-2.5.8.dist-info"
        t.file(fa + "/WHEEL", "Wheel-Version: 1.0\nGenerator: setuptools (69.5.1)\nRoot-Is-Purelib: false\nTag: cp310-cp310-linux_x86_64\n\n")
        t.file(fa + "/METADATA", "Metadata-Version: 2.1\nName: flash_attn\nVersion: 2.5.8\nRequires-Dist: torch\nRequires-Dist: einops\n\n# FlashAttention\n")
        t.file(esite + "/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so")
        t.file("/home/user/.cache/torch_extensions/py310_cu118/fused_adam/fused_adam.so")

# 4. conda env with torch cu118 beside system CUDA 12.4 (and, in sw-ext-build, extension builds)
conda_cu118("sw-conda-cu118")
conda_cu118("sw-ext-build", extensions=True)

# 5. Docker container without the NVIDIA runtime
t = Tree("container-no-runtime")
t.file("/.dockerenv")
t.file("/proc/version", PROC_VERSION_LINUX)
t.file("/proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic root=UUID=0b1c ro quiet\n")
t.file("/proc/cpuinfo", cpuinfo())
t.file("/proc/1/cgroup", "0::/\n")
t.file("/proc/1/comm", "bash\n")
t.file("/proc/net/tcp", TCP_HEADER)
t.file("/proc/net/tcp6", TCP_HEADER)
t.file("/proc/modules", "nvidia_uvm 4890624 0 - Live 0x0000000000000000 (PO)\nnvidia 54353920 1 nvidia_uvm, Live 0x0000000000000000 (PO)\n")
t.dir("/dev/pts")
t.file("/dev/null")
t.file("/dev/shm/.keep")
ld_conf(t)
system_python(t, "3.10")
site = "/usr/local/lib/python3.10/dist-packages"
torch(t, site, "2.5.1+cu124")

def wsl2(name, linux_driver=False):
    t = Tree(name)
    t.file("/proc/version", "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) (gcc (GCC) 11.2.0, GNU ld (GNU Binutils) 2.37) #1 SMP Fri Mar 29 23:14:13 UTC 2024\n")
    t.file("/proc/cmdline", "initrd=\\initrd.img WSL_ROOT_INIT=1 panic=-1 nr_cpus=16 hv_utils.timesync_implicit=1 swiotlb=force pty.legacy_count=0\n")
    t.file("/proc/cpuinfo", cpuinfo(hyper=True))
    t.file("/proc/1/cgroup", "0::/\n")
    t.file("/proc/1/comm", "init\n")
    t.file("/proc/net/tcp", TCP_HEADER)
    t.file("/proc/net/tcp6", TCP_HEADER)
    t.file("/proc/modules", "")
    t.file("/dev/dxg")
    ld_conf(t, [("ld.wsl.conf", "# This file was automatically generated by WSL.\n/usr/lib/wsl/lib\n")])
    for f in ["libcuda.so.1", "libcuda.so.1.1", "libcuda.so", "libnvidia-ml.so.1", "libdxcore.so", "nvidia-smi"]:
        t.file("/usr/lib/wsl/lib/" + f)
    system_python(t, "3.12")
    site = venv(t, "/home/user/venv", "3.12", "3.12.3")
    torch(t, site, "2.5.1+cu124")
    if linux_driver:
        # A Linux driver's user-space libraries installed inside the distribution (apt install
        # nvidia-driver-550 / cuda): the loader's cache lists WSL's folder first, but the copy
        # is there for every program that searches further, and it replaces nvidia-smi & co.
        lib = "/usr/lib/x86_64-linux-gnu"
        for stem in ["libcuda.so", "libnvidia-ml.so"]:
            t.file(f"{lib}/{stem}.{DRV}")
            t.link(f"{lib}/{stem}.1", f"{stem}.{DRV}")

# 6. WSL2 (and in wsl2-driver-inside, a Linux driver installed inside the distribution)
wsl2("wsl2")
wsl2("wsl2-driver-inside", linux_driver=True)

# 7. a system cuDNN 9.0 (Ubuntu's libcudnn9-cuda-12, in an ld.so.conf folder) beside the 9.1.0.70
# torch's wheel bundles; the system copy has a sub-library the wheel lacks
# (libcudnn_engines_tensor_ir.so.9, as in https://github.com/pytorch/pytorch/issues/185512)
t = Tree("sw-system-cudnn")
base_host(t)
nvidia_driver(t)
persistenced(t)
pci_gpu(t)
system_python(t)
lib = "/usr/lib/x86_64-linux-gnu"
for stem in ["libcudnn", "libcudnn_ops", "libcudnn_cnn", "libcudnn_graph", "libcudnn_engines_tensor_ir"]:
    t.file(f"{lib}/{stem}.so.9.0.0")
    t.link(f"{lib}/{stem}.so.9", f"{stem}.so.9.0.0")
site = venv(t, "/home/user/venv")
torch(t, site, "2.5.1+cu124")

# The hardware fixtures' software: healthy, so that the doctor finds nothing wrong there.
def sw_paths_only(t, gpus, peermem, services, iommu_cmdline, toolkit_too):
    t.file("/proc/version", PROC_VERSION_LINUX.replace("6.8.0-45", "5.15.0-119").replace("#45-Ubuntu", "#129-Ubuntu"))
    t.file("/proc/cmdline", iommu_cmdline + "\n")
    t.file("/proc/net/tcp", TCP_HEADER + tcp_line(0, 22))
    t.file("/proc/net/tcp6", TCP_HEADER)
    t.file("/proc/1/comm", "systemd\n")
    t.file("/proc/1/cgroup", "0::/init.scope\n")
    for pid, comm in services:
        t.file(f"/proc/{pid}/comm", comm + "\n")
    nvidia_driver(t, gpus=gpus, peermem=peermem)
    t.file("/etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\noptions nouveau modeset=0\n")
    ld_conf(t)
    t.file("/usr/lib/gcc/x86_64-linux-gnu/12/.keep")
    t.file("/usr/bin/gcc-12")
    t.link("/usr/bin/gcc", "gcc-12")
    system_python(t, "3.10" if toolkit_too else "3.12")
    if toolkit_too:
        toolkit(t, "12.4", "12.4.131", cublas="12.4.5.8", nccl="2.21.5")
        t.link("/usr/local/cuda", "cuda-12.4")
    site = venv(t, "/home/user/venv", "3.10" if toolkit_too else "3.12", "3.10.12" if toolkit_too else "3.12.3")
    torch(t, site, "2.5.1+cu124")

t = Tree("server-8xh100", fresh=False)
sw_paths_only(t, 8, True, [(2104, "nvidia-persiste"), (2188, "nv-fabricmanage")],
              "BOOT_IMAGE=/vmlinuz-5.15.0-119-generic root=UUID=5d1e ro intel_iommu=on iommu=pt", True)
for i in range(4):
    t.file(f"/dev/nvidia-nvswitch{i}")
t.file("/dev/nvidia-nvswitchctl")
for g in range(12):
    t.file(f"/sys/kernel/iommu_groups/{g}/.keep")

t = Tree("desktop-rtx4090", fresh=False)
sw_paths_only(t, 1, False, [(1871, "nvidia-persiste")],
              "BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic root=UUID=0b1c ro quiet splash", False)
t.file("/proc/version", PROC_VERSION_LINUX)
print("ok")
