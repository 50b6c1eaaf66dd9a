// The collect_env reader on one fixture per layout (tests/data/collect_env/, written for these
// tests after torch/utils/collect_env.py's env_info_fmt of each period) and on malformed text.
#include "dlrig/probe/collect_env.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace dlrig::probe {
namespace {

std::string read(const std::string &name) {
  std::ifstream in(std::string(DLRIG_TEST_DATA) + "/collect_env/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << name;
  return ss.str();
}

CollectEnvReport parsed(const std::string &name) {
  auto r = parse_collect_env(read(name));
  EXPECT_TRUE(r) << name << ": " << (r ? "" : r.error().message);
  return r ? *r : CollectEnvReport{};
}

Snapshot snapshot_of(const std::string &name) {
  return collect_env_snapshot(parsed(name), kb::builtin());
}

const CollectEnvPackage *package(const CollectEnvReport &r, const std::string &manager,
                                 const std::string &name) {
  for (const auto &p : r.packages)
    if (p.manager == manager && p.name == name)
      return &p;
  return nullptr;
}

TEST(CollectEnv, FirstLayoutTorch14) {
  auto r = parsed("v1-torch1.4-gtx1080ti.txt");
  EXPECT_EQ(r.format, 1);
  EXPECT_EQ(r.first_line, 2); // after "Collecting environment information..."
  EXPECT_EQ(r.value("PyTorch version"), OptStr("1.4.0"));
  EXPECT_EQ(r.flag("Is debug build"), OptBool(false));
  EXPECT_EQ(r.flag("Is CUDA available"), OptBool(true)); // "Yes" in this layout
  EXPECT_EQ(r.value("CMake version"), OptStr("version 3.10.2"));
  EXPECT_EQ(r.value("Clang version"), std::nullopt); // "Could not collect"
  ASSERT_NE(r.field("Clang version"), nullptr);
  EXPECT_EQ(r.field("Clang version")->line, 8);
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.gpus[0].index, std::optional<int>(0));
  EXPECT_EQ(r.gpus[0].name, "GeForce GTX 1080 Ti");
  EXPECT_EQ(r.cudnn_files, std::vector<std::string>{"/usr/lib/x86_64-linux-gnu/libcudnn.so.7.6.5"});
  ASSERT_EQ(r.packages.size(), 7u);
  const auto *conda = package(r, "conda", "pytorch");
  ASSERT_NE(conda, nullptr);
  EXPECT_EQ(conda->version, OptStr("1.4.0"));
  EXPECT_EQ(conda->build, OptStr("py3.7_cuda10.1.243_cudnn7.6.3_0"));
  EXPECT_EQ(conda->channel, OptStr("pytorch"));
  EXPECT_EQ(package(r, "pip", "torchvision")->version, OptStr("0.5.0"));

  auto s = collect_env_snapshot(r, kb::builtin());
  ASSERT_FALSE(s.notes.empty());
  EXPECT_EQ(s.notes[0].field, "*"); // the mark of a report (doctor/check.hpp, from_collect_env)
  EXPECT_EQ(s.notes[0].source, OptStr("collect_env"));
  EXPECT_EQ(s.host.os.distro_name, OptStr("Ubuntu 18.04.4 LTS"));
  EXPECT_EQ(s.host.os.kernel_release, std::nullopt); // no Python platform line yet
  EXPECT_EQ(s.software.host_compiler_version, OptStr("7"));
  EXPECT_EQ(s.nvidia.driver_version, OptStr("440.64"));
  ASSERT_EQ(s.gpus.size(), 1u);
  ASSERT_TRUE(s.gpus[0].nvml);
  EXPECT_EQ(s.gpus[0].vendor, OptStr("NVIDIA"));
  ASSERT_EQ(s.software.python_envs.size(), 1u);
  const auto &env = s.software.python_envs[0];
  EXPECT_EQ(env.python_version, OptStr("3.7"));
  ASSERT_TRUE(env.torch);
  EXPECT_EQ(env.torch->cuda, OptStr("10.1"));
  EXPECT_EQ(env.torch->cpu_only, OptBool(false));
  EXPECT_EQ(env.torch->cudnn, OptStr("7.6.3")); // from conda's build string
  EXPECT_EQ(env.torchvision, OptStr("0.5.0"));
  ASSERT_EQ(s.software.cuda_toolkits.size(), 1u);
  EXPECT_EQ(s.software.cuda_toolkits[0].version, OptStr("10.1.243"));
  ASSERT_EQ(s.software.libraries.cudnn.size(), 1u);
  EXPECT_EQ(s.software.libraries.cudnn[0].version, OptStr("7.6.5"));
  EXPECT_EQ(s.software.libraries.cudnn[0].origin, OptStr("system"));
}

TEST(CollectEnv, SecondLayoutTwoGpusAndCudnnCandidates) {
  auto r = parsed("v2-torch1.10-2xa100.txt");
  EXPECT_EQ(r.format, 2);
  EXPECT_EQ(r.value("Libc version"), OptStr("glibc-2.31"));
  EXPECT_EQ(r.value("ROCM used to build PyTorch"), std::nullopt); // N/A
  EXPECT_EQ(r.flag("Is CUDA available"), OptBool(true));          // "True" in this layout
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[1].index, std::optional<int>(1));
  EXPECT_EQ(r.gpus[1].name, "NVIDIA A100-SXM4-40GB");
  ASSERT_EQ(r.cudnn_files.size(), 3u);
  EXPECT_EQ(r.field("cuDNN version")->value, "Probably one of the following:");
  EXPECT_EQ(r.packages.size(), 4u); // "[conda] Could not collect" is no package

  auto s = collect_env_snapshot(r, kb::builtin());
  EXPECT_EQ(s.host.os.kernel_release, OptStr("5.4.0-172-generic"));
  EXPECT_EQ(s.host.os.arch, OptStr("x86_64"));
  EXPECT_EQ(s.nvidia.gpu_count, std::optional<int>(2));
  EXPECT_EQ(s.nvidia.nvml_status, OptStr("ok"));
  // nvidia-smi lists only the GPUs the nvidia driver owns.
  EXPECT_EQ(s.gpus[0].driver, OptStr("nvidia"));
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[1].nvml->index, 1);
  // nvidia-smi -L prints no compute capability: the kb knows the A100's by its name.
  EXPECT_EQ(s.gpus[0].nvml->compute_capability, OptStr("8.0"));
  const auto &env = s.software.python_envs.at(0);
  EXPECT_EQ(env.python_version, OptStr("3.8.10"));
  EXPECT_EQ(env.torch->variant, OptStr("cu113"));
  EXPECT_EQ(env.torchaudio, OptStr("0.10.2+cu113"));
  ASSERT_TRUE(env.deep);
  EXPECT_EQ(env.deep->cuda_available, OptBool(true));
  EXPECT_EQ(s.software.libraries.cudnn.at(1).version, OptStr("8.2.1"));
}

// A GPU name the kb has no row for takes the compute capability every row of its model number
// shares (the four A100s: 8.0); none when the rows differ or none matches.
TEST(CollectEnv, CapabilityOfAGpuTheKbLacksComesFromItsModelNumber) {
  const struct {
    const char *name;
    OptStr cc;
  } cases[] = {
      {"NVIDIA A100-SXM4-40GB", OptStr("8.0")}, // the kb's row
      {"NVIDIA A100-SXM-64GB", OptStr("8.0")},  // no row: the A100s agree
      {"NVIDIA Zeta 9000", std::nullopt},       // nothing matches
  };
  for (const auto &c : cases) {
    std::string text = read("v2-torch1.10-2xa100.txt");
    for (auto at = text.find("NVIDIA A100-SXM4-40GB"); at != std::string::npos;
         at = text.find("NVIDIA A100-SXM4-40GB", at + 1))
      text.replace(at, 21, c.name);
    auto r = parse_collect_env(text);
    ASSERT_TRUE(r) << c.name;
    auto s = collect_env_snapshot(*r, kb::builtin());
    ASSERT_EQ(s.gpus.size(), 2u) << c.name;
    ASSERT_TRUE(s.gpus[0].nvml) << c.name;
    EXPECT_EQ(s.gpus[0].nvml->compute_capability, c.cc) << c.name;
  }
}

TEST(CollectEnv, TwoPointXLayoutWithCpuSection) {
  auto r = parsed("v3-torch2.1-rtx4090.txt");
  EXPECT_EQ(r.format, 3);
  EXPECT_EQ(r.value("CUDA_MODULE_LOADING set to"), OptStr("LAZY"));
  EXPECT_EQ(r.flag("Is XNNPACK available"), OptBool(true));
  EXPECT_GT(r.cpu.size(), 20u);
  auto s = collect_env_snapshot(r, kb::builtin());
  const auto &cpu = s.host.cpu;
  EXPECT_EQ(cpu.model, OptStr("AMD Ryzen 9 5950X 16-Core Processor"));
  EXPECT_EQ(cpu.vendor, OptStr("AuthenticAMD"));
  EXPECT_EQ(cpu.threads, std::optional<int>(32));
  EXPECT_EQ(cpu.cores, std::optional<int>(16));
  EXPECT_EQ(cpu.sockets, std::optional<int>(1));
  ASSERT_TRUE(cpu.max_hz);
  EXPECT_NEAR(*cpu.max_hz, 5083.3979e6, 1);
  EXPECT_NE(std::find(cpu.isa.begin(), cpu.isa.end(), "avx2"), cpu.isa.end());
  EXPECT_EQ(std::find(cpu.isa.begin(), cpu.isa.end(), "avx512f"), cpu.isa.end());
  ASSERT_EQ(cpu.numa_nodes.size(), 1u);
  EXPECT_EQ(cpu.numa_nodes[0].cpus, OptStr("0-31"));
  EXPECT_EQ(s.software.env.at("CUDA_MODULE_LOADING"), "LAZY");
  EXPECT_TRUE(s.software.libraries.cudnn.empty()); // "Could not collect"
  // PyTorch's own collect_env lists no transformers (its DEFAULT_PIP_PATTERNS: torch, numpy,
  // mypy, flake8, triton, optree, onnx): unknown, never guessed.
  EXPECT_EQ(s.software.python_envs.at(0).transformers, std::nullopt);
}

// A transformers line — kept by a package filter that names it, as vLLM's collect_env
// (vllm/collect_env.py, built on PyTorch's) does, or pasted by the user — gives the environment's
// transformers: conda's when pip's list has none, pip's first when both do.
TEST(CollectEnv, TransformersFromPipOrConda) {
  auto conda = parse_collect_env("PyTorch version: 2.4.0\n\nVersions of relevant libraries:\n"
                                 "[pip3] torch==2.4.0\n"
                                 "[conda] transformers 4.44.2 pyhd8ed1ab_0 conda-forge\n");
  ASSERT_TRUE(conda) << conda.error().message;
  EXPECT_EQ(collect_env_snapshot(*conda, kb::builtin()).software.python_envs.at(0).transformers,
            OptStr("4.44.2"));
  auto both = parse_collect_env("PyTorch version: 2.4.0\n\nVersions of relevant libraries:\n"
                                "[pip3] transformers==4.45.0\n"
                                "[conda] transformers 4.44.2 pyhd8ed1ab_0 conda-forge\n");
  ASSERT_TRUE(both) << both.error().message;
  EXPECT_EQ(collect_env_snapshot(*both, kb::builtin()).software.python_envs.at(0).transformers,
            OptStr("4.45.0"));
}

TEST(CollectEnv, CurrentLayoutCpuOnlyTorchWithoutSuffixOnWsl2) {
  auto r = parsed("current-cpu-torch-wsl2.txt");
  EXPECT_EQ(r.format, 3);
  EXPECT_EQ(r.flag("Is XPU available"), OptBool(false));
  EXPECT_TRUE(r.unknown_labels.empty());
  auto s = collect_env_snapshot(r, kb::builtin());
  EXPECT_EQ(s.software.runtime.kind, OptStr("wsl2"));
  EXPECT_EQ(s.host.os.kernel_release, OptStr("5.15.153.1-microsoft-standard-WSL2"));
  // Indented lscpu (util-linux 2.37+).
  EXPECT_EQ(s.host.cpu.model, OptStr("11th Gen Intel(R) Core(TM) i7-11800H @ 2.30GHz"));
  EXPECT_EQ(s.host.cpu.cores, std::optional<int>(8));
  const auto &t = *s.software.python_envs.at(0).torch;
  EXPECT_EQ(t.version, OptStr("2.5.1"));
  EXPECT_EQ(t.variant, std::nullopt);
  EXPECT_EQ(t.cuda, std::nullopt);
  // torch imported and said torch.version.cuda is None: a CPU build, whatever its name says.
  EXPECT_EQ(t.cpu_only, OptBool(true));
}

TEST(CollectEnv, CurrentLayoutAllocatorConfigAndNvidiaWheels) {
  auto s = snapshot_of("current-driver-too-old.txt");
  EXPECT_EQ(s.software.env.at("PYTORCH_CUDA_ALLOC_CONF"), "expandable_segments:True");
  EXPECT_EQ(s.software.env.count("CUDA_MODULE_LOADING"), 0u); // "N/A"
  const auto &env = s.software.python_envs.at(0);
  EXPECT_EQ(env.nvidia_wheels.at("nvidia-cudnn-cu12"), "9.1.0.70");
  EXPECT_EQ(env.torch->cudnn, OptStr("9.1.0.70"));
  EXPECT_EQ(env.torch->nccl, OptStr("2.20.5"));
  EXPECT_EQ(s.host.cpu.cores, std::optional<int>(32));
  EXPECT_EQ(s.host.cpu.numa_nodes.size(), 2u);
  EXPECT_EQ(s.host.os.kernel_release, OptStr("4.18.0-513.5.1.el8_9.x86_64"));
}

TEST(CollectEnv, RocmBuildOnMi300x) {
  auto r = parsed("rocm-mi300x.txt");
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.gpus[0].index, std::nullopt);
  EXPECT_EQ(r.gpus[0].name, "AMD Instinct MI300X");
  EXPECT_EQ(r.gpus[0].gfx, OptStr("gfx942:sramecc+:xnack-"));
  EXPECT_EQ(r.value("MIOpen runtime version"), OptStr("3.0.0"));
  auto s = collect_env_snapshot(r, kb::builtin());
  EXPECT_EQ(s.gpus.at(0).vendor, OptStr("AMD"));
  EXPECT_EQ(s.gpus.at(0).driver, OptStr("amdgpu"));
  EXPECT_FALSE(s.gpus.at(0).nvml);
  EXPECT_EQ(s.nvidia.driver_version, std::nullopt);
  const auto &t = *s.software.python_envs.at(0).torch;
  EXPECT_EQ(t.hip, OptStr("6.0.32830-d62f6a171"));
  EXPECT_EQ(t.cuda, std::nullopt);
  EXPECT_EQ(t.cpu_only, OptBool(false));
}

TEST(CollectEnv, NoCudaMachine) {
  auto s = snapshot_of("no-gpu-cpu-torch.txt");
  EXPECT_TRUE(s.gpus.empty());
  EXPECT_TRUE(s.software.cuda_toolkits.empty()); // "No CUDA"
  // The report cannot say there is no GPU, only that it found none: a note, never "none".
  EXPECT_TRUE(std::any_of(s.notes.begin(), s.notes.end(),
                          [](const ProbeNote &n) { return n.field == "gpus"; }));
  EXPECT_EQ(s.software.python_envs.at(0).torch->cpu_only, OptBool(true));
}

TEST(CollectEnv, WindowsCpuAndCudnnDll) {
  auto r = parse_collect_env(
      "PyTorch version: 2.3.1+cu121\nOS: Microsoft Windows 11 Home (10.0.22631 64-bit)\n"
      "Python platform: Windows-10-10.0.22631-SP0\n"
      "cuDNN version: C:\\Program Files\\NVIDIA GPU Computing "
      "Toolkit\\CUDA\\v12.1\\bin\\cudnn_ops_train64_8.dll\n\nCPU:\nArchitecture=9\n"
      "Manufacturer=GenuineIntel\nMaxClockSpeed=2400\nName=13th Gen Intel(R) Core(TM) "
      "i7-13700H\n\nVersions of relevant libraries:\n[pip3] torch==2.3.1+cu121\n");
  ASSERT_TRUE(r) << r.error().message;
  auto s = collect_env_snapshot(*r, kb::builtin());
  EXPECT_EQ(s.host.cpu.model, OptStr("13th Gen Intel(R) Core(TM) i7-13700H"));
  EXPECT_EQ(s.host.cpu.vendor, OptStr("GenuineIntel"));
  EXPECT_EQ(s.host.cpu.max_hz, OptF64(2.4e9));
  EXPECT_EQ(s.host.os.kernel_release, std::nullopt); // not Linux
  ASSERT_EQ(s.software.libraries.cudnn.size(), 1u);
  EXPECT_EQ(s.software.libraries.cudnn[0].version, OptStr("8"));
  EXPECT_EQ(s.software.libraries.cudnn[0].origin, OptStr("toolkit"));
}

TEST(CollectEnv, PastedInAFenceWithCrLfAndTextAfter) {
  std::string text = "Some words first\r\n```\r\nPyTorch version: 2.2.0+cu121\r\nIs debug build: "
                     "False\r\nCUDA used to build PyTorch: 12.1\r\n\r\nVersions of relevant "
                     "libraries:\r\n[pip3] torch==2.2.0+cu121\r\n```\r\ncc @someone\r\n";
  ASSERT_TRUE(looks_like_collect_env(text));
  auto r = parse_collect_env(text);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->value("CUDA used to build PyTorch"), OptStr("12.1"));
  EXPECT_EQ(r->packages.size(), 1u);
}

// A report pasted as a markdown code block (4 spaces in) or quote ("> "), or saved by PowerShell
// as UTF-16, reads as the report itself.
TEST(CollectEnv, IndentedQuotedAndUtf16ReportsReadAsTheReport) {
  const std::string plain = read("v3-torch2.1-rtx4090.txt");
  const auto want = parsed("v3-torch2.1-rtx4090.txt");
  auto with_prefix = [&](const std::string &prefix, const std::string &empty_line) {
    std::string out, line;
    std::istringstream in(plain);
    while (std::getline(in, line))
      out += (line.empty() ? empty_line : prefix + line) + "\n";
    return out;
  };
  for (const auto &[prefix, empty] :
       {std::pair<std::string, std::string>{"    ", ""}, {"> ", ">"}, {"\t", ""}}) {
    auto text = "Here is my environment:\n\n" + with_prefix(prefix, empty) + "\nThanks!\n";
    ASSERT_TRUE(looks_like_collect_env(text)) << "[" << prefix << "]";
    auto r = parse_collect_env(text);
    ASSERT_TRUE(r) << "[" << prefix << "] " << r.error().message;
    EXPECT_EQ(r->value("PyTorch version"), want.value("PyTorch version"));
    EXPECT_EQ(r->gpus.size(), want.gpus.size()) << "[" << prefix << "]";
    EXPECT_EQ(r->packages.size(), want.packages.size()) << "[" << prefix << "]";
    EXPECT_EQ(r->first_line, want.first_line + 2); // the file's own line numbers
  }
  // UTF-16LE and UTF-16BE with their byte-order marks, one character beyond the BMP included.
  std::string le = "\xFF\xFE", be = "\xFE\xFF";
  for (unsigned char c : plain) {
    le += static_cast<char>(c);
    le += '\0';
    be += '\0';
    be += static_cast<char>(c);
  }
  EXPECT_EQ(utf8_from_utf16(le), plain);
  EXPECT_EQ(utf8_from_utf16(be), plain);
  EXPECT_EQ(utf8_from_utf16(std::string("\xFF\xFE\x3D\xD8\x00\xDE", 6)),
            OptStr("\xF0\x9F\x98\x80")); // U+1F600 as a surrogate pair
  EXPECT_EQ(utf8_from_utf16(plain), std::nullopt);
  // Not a paste: words before the label are no prefix.
  EXPECT_FALSE(looks_like_collect_env("see PyTorch version: 2.1 below\n"));
}

TEST(CollectEnv, LoadingUtf16OrNeitherFormSaysWhatItIs) {
  const std::string plain = read("v3-torch2.1-rtx4090.txt");
  auto dir =
      std::filesystem::temp_directory_path() / ("dlrig-collect-env-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const char *name, const std::string &bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return (dir / name).string();
  };
  std::string le = "\xFF\xFE", no_bom;
  for (unsigned char c : plain) {
    le += static_cast<char>(c);
    le += '\0';
    no_bom += static_cast<char>(c);
    no_bom += '\0';
  }
  auto s = load_snapshot_or_report(write("le.txt", le), kb::builtin());
  EXPECT_TRUE(s) << s.error().message;
  auto e = load_snapshot_or_report(write("nobom.txt", no_bom), kb::builtin());
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().kind, ErrorKind::bad_input);
  EXPECT_NE(e.error().message.find("UTF-16"), std::string::npos) << e.error().message;
  EXPECT_NE(e.error().message.find("Out-File -Encoding utf8"), std::string::npos);
  // Binary bytes with a NUL among them are not taken for UTF-16.
  e = load_snapshot_or_report(write("binary.bin", std::string("\x7f"
                                                              "ELF\x02\x01\x01\0\0\0\0\0"
                                                              "\0\0\0\0\x03\0>\0\x01\0\0\0",
                                                              24)),
                              kb::builtin());
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message.find("UTF-16"), std::string::npos) << e.error().message;
  e = load_snapshot_or_report(write("words.txt", "hello world\n"), kb::builtin());
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().kind, ErrorKind::bad_input);
  EXPECT_NE(e.error().message.find("python -m torch.utils.collect_env"), std::string::npos)
      << e.error().message;
  EXPECT_EQ(e.error().message.find("malformed JSON"), std::string::npos) << e.error().message;
  std::filesystem::remove_all(dir);
}

TEST(CollectEnv, UnknownFieldOfANewerLayoutIsKeptAsANote) {
  auto r = parse_collect_env("PyTorch version: 2.9.0\nIs FOO available: True\n* detail\n");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->unknown_labels.size(), 1u);
  EXPECT_EQ(r->unknown_labels[0].first, "Is FOO available");
  auto s = collect_env_snapshot(*r, kb::builtin());
  EXPECT_TRUE(std::any_of(s.notes.begin(), s.notes.end(), [](const ProbeNote &n) {
    return n.reason.find("Is FOO available") != std::string::npos;
  }));
}

TEST(CollectEnv, DetectsJsonAndOtherText) {
  EXPECT_FALSE(looks_like_collect_env("{\"schema_version\": 1}"));
  EXPECT_FALSE(looks_like_collect_env("hello\nworld\n"));
  EXPECT_TRUE(looks_like_collect_env("PyTorch version: N/A\n"));
}

// Each malformed text gives an error naming its line and what was expected.
TEST(CollectEnv, MalformedTextNamesTheLine) {
  struct Case {
    const char *text;
    const char *expect;
  };
  const Case cases[] = {
      {"PyTorch version: banana\n", "line 1: PyTorch version \"banana\" is not a version"},
      {"PyTorch version: 2.1.0\nIs CUDA available: maybe\n", "line 2: Is CUDA available"},
      {"PyTorch version: 2.1.0\n   stray indented words\n", "line 2: \"stray indented words\""},
      {"PyTorch version: 2.1.0\nGPU models and configuration: \nGPU x: A100\n", "line 3:"},
      {"PyTorch version: 2.1.0\nVersions of relevant libraries:\n[pip3] torch 2.1.0\n",
       "line 3: \"[pip3] torch 2.1.0\" is not a pip package line"},
      {"PyTorch version: 2.1.0\nVersions of relevant libraries:\n[conda] pytorch\n",
       "line 3: \"[conda] pytorch\" is not a conda package line"},
      {"PyTorch version: 2.1.0\nVersions of relevant libraries:\n[npm] left-pad==1\n", "[npm]"},
      {"PyTorch version: 2.1.0\nOS: Ubuntu\nPyTorch version: 2.2.0\n",
       "line 3: a second \"PyTorch version:\" line (the first is line 1)"},
      {"just some text\n", "no \"PyTorch version:\" line"},
  };
  for (const auto &c : cases) {
    auto r = parse_collect_env(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos)
        << c.text << " -> " << r.error().message;
  }
}

} // namespace
} // namespace dlrig::probe
