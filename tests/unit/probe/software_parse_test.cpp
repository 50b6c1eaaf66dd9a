#include "dlrig/probe/software_parse.hpp"

#include <gtest/gtest.h>

namespace dlrig {
namespace {

TEST(SoftwareParse, CudnnMembersAreTheSubLibrarySonames) {
  EXPECT_EQ(cudnn_members({"libcudnn.so.9", "libcudnn_ops.so.9.1.0", "libcudnn_ops.so.9",
                           "libcudnn_cnn.so.9.1.0", "libcudnn_ops.so", "libcudnn_adv.so.x",
                           "libnccl.so.2", ".keep"}),
            (std::vector<std::string>{"libcudnn_cnn.so.9", "libcudnn_ops.so.9"}));
  EXPECT_TRUE(cudnn_members({}).empty());
}

TEST(SoftwareParse, ProcModulesNamesTheFirstColumn) {
  auto names = parse_proc_modules("nvidia_uvm 4890624 0 - Live 0x0 (PO)\n"
                                  "nvidia 54353920 3 nvidia_uvm, Live 0x0 (PO)\n\n");
  EXPECT_EQ(names, (std::set<std::string>{"nvidia", "nvidia_uvm"}));
  EXPECT_TRUE(parse_proc_modules("").empty());
}

TEST(SoftwareParse, ModprobeBlacklistAndInstallFalse) {
  auto names = parse_modprobe_blacklist("# blacklist ignored\n"
                                        "blacklist nouveau   # trailing comment\n"
                                        "options nouveau modeset=0\n"
                                        "install nvidia_peermem /bin/false\n"
                                        "install foo /sbin/modprobe --ignore-install foo\n"
                                        "blacklist\n");
  EXPECT_EQ(names, (std::set<std::string>{"nouveau", "nvidia_peermem"}));
}

TEST(SoftwareParse, NvidiaProcVersionTellsOpenFromProprietary) {
  auto closed = parse_nvidia_proc_version(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
      "GCC version:  gcc version 12.3.0\n");
  EXPECT_EQ(closed.version, "550.54.15");
  EXPECT_EQ(closed.open, false);
  auto open = parse_nvidia_proc_version(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\n");
  EXPECT_EQ(open.version, "570.86.15");
  EXPECT_EQ(open.open, true);
  auto odd = parse_nvidia_proc_version("garbage without a version\n");
  EXPECT_FALSE(odd.version);
  EXPECT_FALSE(odd.open);
  EXPECT_FALSE(parse_nvidia_proc_version("").first_line);
}

TEST(SoftwareParse, TaintP) {
  EXPECT_EQ(taint_is_proprietary("PO\n"), true);
  EXPECT_EQ(taint_is_proprietary("O"), false);
  EXPECT_FALSE(taint_is_proprietary("  \n"));
}

TEST(SoftwareParse, IommuMode) {
  EXPECT_EQ(parse_iommu_mode("root=/dev/sda1 quiet"), "default");
  EXPECT_EQ(parse_iommu_mode("intel_iommu=on iommu=pt"), "pt");
  EXPECT_EQ(parse_iommu_mode("amd_iommu=on"), "on");
  EXPECT_EQ(parse_iommu_mode("intel_iommu=off iommu=pt"), "off");
  EXPECT_EQ(parse_iommu_mode("xintel_iommu=on"), "default");
}

TEST(SoftwareParse, LibraryVersionFromName) {
  EXPECT_EQ(library_version_from_name("libcuda.so.550.54.15", "libcuda.so"), "550.54.15");
  EXPECT_EQ(library_version_from_name("libcuda.so.1", "libcuda.so"), "1");
  EXPECT_FALSE(library_version_from_name("libcuda.so", "libcuda.so"));
  EXPECT_FALSE(library_version_from_name("libcudart.so.12", "libcuda.so"));
  EXPECT_FALSE(library_version_from_name("libcuda.so.1.bak", "libcuda.so"));
  EXPECT_FALSE(library_version_from_name("libcuda.so.1..2", "libcuda.so"));
  EXPECT_EQ(library_version_from_name("libnccl.so.2.21.5", "libnccl.so"), "2.21.5");
}

TEST(SoftwareParse, LdSoConf) {
  auto conf = parse_ld_so_conf("include /etc/ld.so.conf.d/*.conf\n# comment\n/opt/lib:/opt/lib2\n"
                               "/usr/local/lib=libc5\n\n");
  EXPECT_EQ(conf.includes, std::vector<std::string>{"/etc/ld.so.conf.d/*.conf"});
  EXPECT_EQ(conf.dirs, (std::vector<std::string>{"/opt/lib", "/opt/lib2", "/usr/local/lib"}));
}

TEST(SoftwareParse, SplitPathListDropsEmptyEntries) {
  EXPECT_EQ(split_path_list("/a::/b:"), (std::vector<std::string>{"/a", "/b"}));
  EXPECT_TRUE(split_path_list("").empty());
}

TEST(SoftwareParse, CudaVersionFiles) {
  EXPECT_EQ(parse_cuda_version_json(R"({"cuda": {"name": "CUDA SDK", "version": "12.4.131"}})"),
            "12.4.131");
  EXPECT_FALSE(parse_cuda_version_json(R"({"cuda": {"version": 12.4}})"));
  EXPECT_FALSE(parse_cuda_version_json(R"({"cuda": "12.4"})"));
  EXPECT_FALSE(parse_cuda_version_json("{not json"));
  EXPECT_FALSE(parse_cuda_version_json(R"({"cuda": {"version": "twelve"}})"));
  EXPECT_EQ(parse_cuda_version_txt("CUDA Version 11.8.89\n"), "11.8.89");
  EXPECT_FALSE(parse_cuda_version_txt("CUDA Version\n"));
  EXPECT_FALSE(parse_cuda_version_txt(""));
  EXPECT_EQ(cuda_version_from_dirname("cuda-12.4"), "12.4");
  EXPECT_EQ(cuda_version_from_dirname("cuda12.1"), "12.1");
  EXPECT_FALSE(cuda_version_from_dirname("cuda"));
  EXPECT_FALSE(cuda_version_from_dirname("cuda-12"));
  EXPECT_FALSE(cuda_version_from_dirname("cuda-latest"));
  EXPECT_EQ(parse_cuda_h_version("#define CUDA_VERSION 12040\n"), "12.4");
  EXPECT_EQ(parse_cuda_h_version("#define CUDA_VERSION 11080\n"), "11.8");
  EXPECT_FALSE(parse_cuda_h_version("#define CUDA_VERSION abc\n"));
}

TEST(SoftwareParse, CudnnHeader) {
  EXPECT_EQ(parse_cudnn_header("#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n"
                               "#define CUDNN_PATCHLEVEL 0\n"),
            "9.1.0");
  EXPECT_EQ(parse_cudnn_header("#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n"), "8.9");
  EXPECT_FALSE(parse_cudnn_header("#define CUDNN_MAJOR 8\n"));
  EXPECT_FALSE(parse_cudnn_header("#define CUDNN_MAJOR x\n#define CUDNN_MINOR 9\n"));
}

TEST(SoftwareParse, TorchVersionPySaysWhenItHasNoCuda) {
  auto cpu = parse_torch_version_py("__version__ = '2.5.1'\ndebug = False\n"
                                    "cuda: Optional[str] = None\nhip: Optional[str] = None\n");
  EXPECT_TRUE(cpu.cuda_none);
  EXPECT_FALSE(cpu.cuda);
  auto gpu = parse_torch_version_py("__version__ = '2.5.1+cu124'\ncuda: Optional[str] = '12.4'\n");
  EXPECT_FALSE(gpu.cuda_none);
  EXPECT_EQ(gpu.cuda, "12.4");
  auto xpu = parse_torch_version_py("cuda = None\nxpu: Optional[str] = '20250001'\n");
  EXPECT_EQ(xpu.xpu, "20250001");
  EXPECT_FALSE(parse_torch_version_py("__version__ = '2.5.1'\n").cuda_none); // does not say
}

TEST(SoftwareParse, VersionHeadersOfNcclAndCublas) {
  auto macros = [](std::string_view stem) {
    for (const auto &h : kLibraryHeaders)
      if (h.stem == stem)
        return h.macros;
    return std::vector<std::string_view>{};
  };
  EXPECT_EQ(
      parse_version_header("#define NCCL_MAJOR 2\n#define NCCL_MINOR 28\n#define NCCL_PATCH 9\n",
                           macros("libnccl.so")),
      "2.28.9");
  EXPECT_EQ(parse_version_header("#define CUBLAS_VER_MAJOR 13\n#define CUBLAS_VER_MINOR 1\n"
                                 "#define CUBLAS_VER_PATCH 0\n#define CUBLAS_VER_BUILD 3\n",
                                 macros("libcublas.so")),
            "13.1.0.3");
  EXPECT_FALSE(parse_version_header("#define NCCL_MAJOR 2\n", macros("libnccl.so")));
}

TEST(SoftwareParse, TorchVersionPy) {
  auto cu = parse_torch_version_py("__version__ = '2.5.1+cu124'\ndebug = False\n"
                                   "cuda: Optional[str] = '12.4'\nhip: Optional[str] = None\n");
  EXPECT_EQ(cu.version, "2.5.1+cu124");
  EXPECT_EQ(cu.cuda, "12.4");
  EXPECT_FALSE(cu.hip);
  auto cpu = parse_torch_version_py("__version__ = \"2.5.1+cpu\"\ncuda = None\nhip = None\n");
  EXPECT_EQ(cpu.version, "2.5.1+cpu");
  EXPECT_FALSE(cpu.cuda);
  auto rocm = parse_torch_version_py("__version__ = '2.5.1+rocm6.2'\ncuda = None\n"
                                     "hip = '6.2.41133-dd7f95766'\n");
  EXPECT_EQ(rocm.hip, "6.2.41133-dd7f95766");
  // Odd files: nothing found, nothing thrown.
  auto odd = parse_torch_version_py("__version__ = 2.5\ncuda_x = '1'\ncuda = '12.4\n");
  EXPECT_FALSE(odd.version);
  EXPECT_FALSE(odd.cuda);
  EXPECT_FALSE(parse_torch_version_py("").version);
  EXPECT_EQ(parse_python_version_assignment("__version__ = '0.20.1+cu124'\n"), "0.20.1+cu124");
}

TEST(SoftwareParse, TorchVariant) {
  EXPECT_EQ(torch_variant("2.5.1+cu124"), "cu124");
  EXPECT_EQ(torch_variant("2.5.1+cpu"), "cpu");
  EXPECT_EQ(torch_variant("2.5.1+rocm6.2"), "rocm6.2");
  EXPECT_FALSE(torch_variant("2.5.1"));
  EXPECT_FALSE(torch_variant("2.5.1+"));
}

TEST(SoftwareParse, PythonVersions) {
  EXPECT_EQ(parse_pyvenv_version("home = /usr/bin\nversion = 3.11.4\n"), "3.11.4");
  EXPECT_EQ(parse_pyvenv_version("home = /usr/bin\nversion_info = 3.12.3.final.0\n"), "3.12.3");
  EXPECT_FALSE(parse_pyvenv_version("home = /usr/bin\nversion = three\n"));
  EXPECT_EQ(python_version_from_dirname("python3.11"), "3.11");
  EXPECT_FALSE(python_version_from_dirname("python3"));
  EXPECT_FALSE(python_version_from_dirname("pythonX.Y"));
}

// PEP 427 WHEEL files: what pip writes for a wheel it built from source here, and PyPI's.
TEST(SoftwareParse, WheelBuiltLocally) {
  const char *built = "Wheel-Version: 1.0\nGenerator: setuptools (75.1.0)\nRoot-Is-Purelib: "
                      "false\nTag: cp311-cp311-linux_x86_64\n\n";
  EXPECT_EQ(wheel_built_locally(built), OptBool(true));
  EXPECT_EQ(wheel_built_locally("Wheel-Version: 1.0\r\nRoot-Is-Purelib: false\r\nTag: "
                                "cp310-cp310-linux_aarch64\r\n"),
            OptBool(true));
  const char *pypi = "Wheel-Version: 1.0\nGenerator: bdist_wheel (0.43.0)\nRoot-Is-Purelib: "
                     "false\nTag: cp311-cp311-manylinux_2_17_x86_64\nTag: "
                     "cp311-cp311-manylinux2014_x86_64\n";
  EXPECT_EQ(wheel_built_locally(pypi), OptBool(false));
  EXPECT_EQ(wheel_built_locally("Root-Is-Purelib: true\nTag: py3-none-any\n"), OptBool(false));
  EXPECT_EQ(wheel_built_locally("Wheel-Version: 1.0\n"), std::nullopt);
}

TEST(SoftwareParse, MetadataRequires) {
  const char *meta = "Metadata-Version: 2.1\nName: flash_attn\nVersion: 2.6.3\nRequires-Dist: "
                     "torch\nRequires-Dist: einops\n\nRequires-Dist: numpy (in the description)\n";
  EXPECT_TRUE(metadata_requires(meta, "torch"));
  EXPECT_TRUE(metadata_requires(meta, "EinOps"));
  EXPECT_FALSE(metadata_requires(meta, "numpy")); // after the headers: description text
  EXPECT_TRUE(metadata_requires("Requires-Dist: torch>=2.1; extra == \"cuda\"\n", "torch"));
  EXPECT_FALSE(metadata_requires("Requires-Dist: torchvision>=0.16\n", "torch"));
}

TEST(SoftwareParse, DistInfoNames) {
  auto d = parse_dist_info_name("nvidia_cudnn_cu12-9.1.0.70.dist-info");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->name, "nvidia-cudnn-cu12");
  EXPECT_EQ(d->version, "9.1.0.70");
  auto t = parse_dist_info_name("torch-2.5.1+cu124.dist-info");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->version, "2.5.1+cu124");
  EXPECT_FALSE(parse_dist_info_name("torch.dist-info"));
  EXPECT_FALSE(parse_dist_info_name("torch-2.5.1.egg-info"));
  EXPECT_FALSE(parse_dist_info_name("-2.5.dist-info"));
  auto c = parse_conda_meta_name("pytorch-cuda-11.8-h7e8668a_5.json");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "pytorch-cuda");
  EXPECT_EQ(c->version, "11.8");
  EXPECT_FALSE(parse_conda_meta_name("history"));
  EXPECT_FALSE(parse_conda_meta_name("x.json"));
}

TEST(SoftwareParse, ListenPorts) {
  auto ports = parse_listen_ports(
      "  sl  local_address rem_address   st tx_queue rx_queue\n"
      "   0: 00000000:7339 00000000:0000 0A 00000000:00000000 00:00000000 00000000\n"
      "   1: 0100007F:0016 0100007F:9C40 01 00000000:00000000 00:00000000 00000000\n"
      "   2: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 0\n"
      "   3: garbage\n");
  EXPECT_EQ(ports, (std::set<int>{29497, 8080}));
}

TEST(SoftwareParse, ContainerAndHypervisor) {
  EXPECT_EQ(container_engine_from_cgroup("12:devices:/docker/3f2a\n"), "docker");
  EXPECT_EQ(container_engine_from_cgroup("0::/kubepods/besteffort/pod1/abc\n"), "kubernetes");
  EXPECT_FALSE(container_engine_from_cgroup("0::/init.scope\n"));
  EXPECT_EQ(hypervisor_from_dmi("QEMU", "Standard PC (Q35 + ICH9, 2009)"), "kvm");
  EXPECT_EQ(hypervisor_from_dmi("Microsoft Corporation", "Virtual Machine"), "hyperv");
  EXPECT_FALSE(hypervisor_from_dmi("Micro-Star International Co., Ltd.", "MS-7D70"));
}

std::string config_with_acs(std::uint16_t control) {
  std::string cfg(4096, '\0');
  // Extended capability at 0x100: AER (id 1) pointing at ACS (id 0xD) at 0x140.
  auto put32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
      cfg[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  };
  put32(0x100, 0x0001 | (1u << 16) | (0x140u << 20));
  put32(0x140, 0x000D | (1u << 16));
  cfg[0x146] = static_cast<char>(control & 0xFF);
  cfg[0x147] = static_cast<char>(control >> 8);
  return cfg;
}

TEST(SoftwareParse, AcsControl) {
  auto on = parse_acs_control(config_with_acs(0x001D)); // SrcValid ReqRedir CmpltRedir UpstreamFwd
  ASSERT_TRUE(on);
  EXPECT_TRUE(acs_redirects(*on));
  auto off = parse_acs_control(config_with_acs(0x0001));
  ASSERT_TRUE(off);
  EXPECT_FALSE(acs_redirects(*off));
  EXPECT_FALSE(parse_acs_control(std::string(256, '\0'))); // what a non-root reader gets
  std::string loop(4096, '\0');
  loop[0x100] = 0x01;
  loop[0x102] = 0x01;
  loop[0x103] = 0x10; // next = 0x100: points at itself
  EXPECT_FALSE(parse_acs_control(loop));
}

TEST(SoftwareParse, DeepOutput) {
  auto good = parse_deep_output("noise\nDLRIG_DEEP {\"cuda_available\": true, \"device_count\": 8, "
                                "\"arch_list\": [\"sm_80\", \"sm_90\"]}\n");
  EXPECT_EQ(good.ran, true);
  EXPECT_EQ(good.cuda_available, true);
  EXPECT_EQ(good.device_count, 8);
  EXPECT_EQ(good.arch_list, (std::vector<std::string>{"sm_80", "sm_90"}));
  EXPECT_FALSE(good.error);

  auto garbage = parse_deep_output("\x01\x02 {{{\nDLRIG_DEEP {\"cuda_available\": tru\n");
  EXPECT_EQ(garbage.ran, false);
  ASSERT_TRUE(garbage.error);
  EXPECT_NE(garbage.error->find("not a JSON object"), std::string::npos);

  auto none = parse_deep_output("");
  EXPECT_EQ(none.ran, false);
  EXPECT_EQ(none.error, "the interpreter printed nothing");

  auto wrong_types = parse_deep_output("DLRIG_DEEP {\"cuda_available\": \"yes\", \"device_count\": "
                                       "\"8\", \"arch_list\": [1, \"sm_90\"]}\n");
  EXPECT_EQ(wrong_types.ran, true);
  EXPECT_FALSE(wrong_types.cuda_available);
  EXPECT_FALSE(wrong_types.device_count);
  EXPECT_EQ(wrong_types.arch_list, std::vector<std::string>{"sm_90"});
}

} // namespace
} // namespace dlrig
