// Hostile and odd input to the front door (issue 11): special files, out-of-range numbers in a
// snapshot, numeric flags out of range, and messages that say the true reason.
#include "support/cli.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace dlrig::test {
namespace {

namespace fs = std::filesystem;

std::string write(const std::string &name, const std::string &text) {
  auto p = scratch(name);
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

// Runs dlrig under timeout(1), so that a regression that blocks fails the test instead of hanging
// the suite: 124 means it was still running after `seconds`.
int run_with_timeout(const std::string &args, int seconds, std::string *err = nullptr) {
  auto err_file = scratch("stderr.txt").string();
  std::string cmd = "timeout " + std::to_string(seconds) + " " + DLRIG_BINARY + " " + args +
                    " >/dev/null 2>" + err_file + " </dev/null";
  int status = std::system(cmd.c_str());
  if (err) {
    std::ifstream in(err_file);
    err->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(HostileInput, FifoAsFromIsRefusedQuickly) {
  auto fifo = scratch("snap.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string err;
  auto start = std::chrono::steady_clock::now();
  int rc = run_with_timeout("doctor --from " + fifo.string(), 10, &err);
  EXPECT_EQ(rc, 65) << err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(err.find("FIFO"), std::string::npos) << err;
}

// fit reads a model folder's config.json, safetensors index and checkpoint headers: a FIFO in any
// of those places is refused by name, never opened for a blocking read (the index was read with
// std::ifstream and waited for ever).
TEST(HostileInput, FifoInAModelFolderIsRefusedQuickly) {
  const std::string config = R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 1000})";
  for (const std::string file :
       {"config.json", "model.safetensors.index.json", "model.safetensors"}) {
    auto dir = scratch("fifo-model-" + file);
    fs::create_directories(dir);
    if (file != "config.json")
      std::ofstream(dir / "config.json") << config;
    ASSERT_EQ(::mkfifo((dir / file).c_str(), 0600), 0);
    std::string err;
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(run_with_timeout("fit " + dir.string() + " --gpu H100", 10, &err), 65) << file;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << file;
    EXPECT_NE(err.find(file + ": is a FIFO (named pipe), not a regular file"), std::string::npos)
        << err;
  }
  // A shard the index names.
  auto dir = scratch("fifo-shard");
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << config;
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"weight_map": {"lm_head.weight": "model-00001-of-00001.safetensors"}})";
  ASSERT_EQ(::mkfifo((dir / "model-00001-of-00001.safetensors").c_str(), 0600), 0);
  std::string err;
  EXPECT_EQ(run_with_timeout("fit " + dir.string() + " --gpu H100", 10, &err), 65) << err;
  EXPECT_NE(err.find("model-00001-of-00001.safetensors: is a FIFO"), std::string::npos) << err;
}

// pick --prices: what is not a regular file is named with its kind.
TEST(HostileInput, PricesThatAreNoRegularFileAreRefusedByKind) {
  auto fifo = scratch("prices.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string pick = "pick llama-3.1-8b --budget 3000USD --prices ";
  std::string err;
  EXPECT_EQ(run_with_timeout(pick + fifo.string(), 10, &err), 65) << err;
  EXPECT_NE(err.find("--prices " + fifo.string() + ": is a FIFO (named pipe), not a regular file"),
            std::string::npos)
      << err;
  EXPECT_EQ(run_with_timeout(pick + "/dev/zero", 10, &err), 65) << err;
  EXPECT_NE(err.find("--prices /dev/zero: is a device"), std::string::npos) << err;
  EXPECT_EQ(run_with_timeout(pick + "/nonexistent/prices.csv", 10, &err), 65) << err;
  EXPECT_NE(err.find("--prices /nonexistent/prices.csv: no such file"), std::string::npos) << err;
}

TEST(HostileInput, DeviceAsFromIsRefused) {
  std::string err;
  EXPECT_EQ(run_with_timeout("info --from /dev/zero", 10, &err), 65) << err;
  EXPECT_NE(err.find("a device, not a regular file"), std::string::npos) << err;
}

TEST(HostileInput, FolderAsFromIsNotMalformedJson) {
  auto r = run_dlrig({"doctor", "--from", fixture("snapshots")});
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find("is a folder"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("malformed"), std::string::npos) << r.err;
}

// Runs dlrig as the unprivileged user "nobody" (65534): root reads any file, so as root (CI) the
// test drops its privileges in a child first. Returns the exit code; stderr goes to err_path.
int run_dlrig_unprivileged(const std::vector<std::string> &args, const std::string &err_path) {
  std::vector<std::string> env_s = sanitizer_options();
  env_s.insert(env_s.begin(), "PATH=/usr/bin:/bin");
  std::vector<char *> envp;
  for (auto &e : env_s)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0 &&
        (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
         ::setresuid(65534, 65534, 65534) != 0))
      ::_exit(120);
    int fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0 || ::dup2(fd, 2) < 0)
      ::_exit(121);
    std::vector<std::string> argv_s{DLRIG_BINARY};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char *> argv;
    for (auto &a : argv_s)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execve(DLRIG_BINARY, argv.data(), envp.data());
    ::_exit(122);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(HostileInput, PermissionDeniedIsNotDoesItExist) {
  // A world-readable folder (the scratch folder is private) holding an unreadable file.
  char dir_tmpl[] = "/tmp/dlrig-perm-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_tmpl), nullptr);
  std::string dir = dir_tmpl;
  ::chmod(dir.c_str(), 0755);
  auto p = dir + "/secret.json";
  std::ofstream(p) << "{\"schema_version\":1}";
  ::chmod(p.c_str(), 0);
  auto err_path = dir + "/stderr";
  // The child opens err_path after dropping privileges: make the folder writable to it.
  ::chmod(dir.c_str(), 0777);
  int rc = run_dlrig_unprivileged({"doctor", "--from", p}, err_path);
  std::ifstream in(err_path);
  std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove_all(dir);
  ASSERT_LT(rc, 120) << "could not start dlrig unprivileged (" << rc << ")";
  EXPECT_EQ(rc, 65) << err;
  EXPECT_NE(err.find("permission denied"), std::string::npos) << err;
  EXPECT_EQ(err.find("exist"), std::string::npos) << err;
}

TEST(HostileInput, EmptyFromIsAUsageError) {
  auto r = run_dlrig({"doctor", "--from", ""});
  EXPECT_EQ(r.exit_code, 64) << r.out << r.err;
  EXPECT_NE(r.err.find("--from"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << "probed the live machine: " << r.out;
  EXPECT_EQ(run_dlrig({"info", "--sysroot", ""}).exit_code, 64);
}

TEST(HostileInput, FifoInsideSysrootDoesNotHang) {
  // A copy of a fixture machine whose meminfo and a GPU attribute are FIFOs.
  auto root = scratch("sysroot");
  fs::copy(fixture("desktop-rtx4090"), root,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  for (const char *rel : {"proc/meminfo", "proc/cpuinfo"}) {
    fs::remove(root / rel);
    ASSERT_EQ(::mkfifo((root / rel).c_str(), 0600), 0);
  }
  std::string err;
  int rc = run_with_timeout("snapshot --no-nvml --sysroot " + root.string(), 20, &err);
  EXPECT_EQ(rc, 0) << err;
}

TEST(HostileInput, NvmlLibraryFifoDoesNotHang) {
  auto fifo = scratch("libnvidia-ml.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string err;
  int rc = run_with_timeout("snapshot --sysroot " + fixture("desktop-rtx4090"), 20, &err);
  ASSERT_EQ(rc, 0) << err; // baseline: the fixture probes
  auto cmd = "DLRIG_NVML_LIBRARY=" + fifo.string() + " timeout 20 " + DLRIG_BINARY +
             " snapshot --sysroot " + fixture("desktop-rtx4090") + " >" +
             scratch("nvml.json").string() + " 2>/dev/null </dev/null";
  int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::ifstream in(scratch("nvml.json"));
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(out.find("FIFO"), std::string::npos) << out.substr(0, 2000);
}

// Issue 11.4: each number is checked against its field's type and range; the field is named.
TEST(HostileInput, OutOfRangeNumbersInASnapshotNameTheField) {
  struct Case {
    const char *json;
    const char *field;
  };
  const Case cases[] = {
      {R"({"schema_version":1,"gpus":[{"bdf":"0000:01:00.0","nvml":{"index":0,"ecc_uncorrected_volatile":-1}}]})",
       "/gpus/0/nvml/ecc_uncorrected_volatile"},
      {R"({"schema_version":1,"gpus":[{"bdf":"0000:01:00.0","link":{"current_width":1e26}}]})",
       "/gpus/0/link/current_width"},
      {R"({"schema_version":1,"gpus":[{"bdf":"0000:01:00.0","nvml":{"index":0,"memory_total_bytes":9223372036854775808}}]})",
       "/gpus/0/nvml/memory_total_bytes"},
      {R"({"schema_version":4294967297})", "schema_version 4294967297"},
      {R"({"schema_version":1,"x":1e999})", "too large"},
      {R"({"schema_version":1,"host":[]})", "/host: expected an object, found an array"},
  };
  for (const auto &c : cases) {
    auto p = write("range.json", c.json);
    auto r = run_dlrig({"doctor", "--from", p});
    EXPECT_EQ(r.exit_code, 65) << c.json << "\n" << r.err;
    EXPECT_NE(r.err.find(c.field), std::string::npos) << c.json << "\n" << r.err;
    EXPECT_NE(r.err.find(p), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("value()"), std::string::npos) << r.err;
  }
}

// Issue 10.4: a CUDA_VISIBLE_DEVICES of 23 digits killed the doctor through std::stoul.
TEST(HostileInput, HugeCudaVisibleDevicesIsAFindingNotACrash) {
  std::ifstream in(fixture("snapshots/healthy-desktop.json"));
  auto j = nlohmann::json::parse(in);
  j["software"]["env"]["CUDA_VISIBLE_DEVICES"] = "12345678901234567890123";
  auto p = write("cvd.json", j.dump());
  auto r = run_dlrig({"doctor", "--json", "--from", p});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  auto report = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto &f : report["findings"])
    found |= f["id"] == "env.cuda-visible-devices";
  EXPECT_TRUE(found) << r.out;
}

// Issue 11.6: every numeric flag has a range; NaN, infinity and overflow are usage errors.
TEST(HostileInput, NumericFlagsOutOfRangeAreUsageErrors) {
  const std::vector<std::vector<std::string>> bad = {
      {"doctor", "--deep-timeout", "nan"},
      {"doctor", "--deep-timeout", "inf"},
      {"doctor", "--deep-timeout", "1e400"},
      {"fit", "llama-3-8b", "--gpu", "H100", "--batch", "18446744073709551615"},
      {"fit", "llama-3-8b", "--gpu", "H100", "--batch", "-1"},
      {"fit", "llama-3-8b", "--gpu", "H100", "--seq", "0"},
      {"fit", "llama-3-8b", "--gpu", "H100", "--gpus", "1.5"},
      {"fit", "llama-3-8b", "--gpu", "H100", "--dataset-tokens", "nan"},
      {"fit", "llama-3-8b", "--gpu", "H100", "--samples", "-inf"},
      {"pick", "llama-3-8b", "--mode", "infer", "--tokens-per-s", "nan"},
      {"pick", "llama-3-8b", "--gpus-max", "9"},
      {"pick", "llama-3-8b", "--dataset-tokens", "1e300"},
  };
  for (const auto &args : bad) {
    auto r = run_dlrig(args);
    std::string line;
    for (const auto &a : args)
      line += a + " ";
    EXPECT_EQ(r.exit_code, 64) << line << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(args[args.size() - 2]), std::string::npos) << line << "\n" << r.err;
  }
}

} // namespace
} // namespace dlrig::test
