// Distributed-training checks: the rendezvous port, NCCL variables, ranks. Each check's `source`
// names the public reports it rests on.
#include "dlrig/doctor/facts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace dlrig::doctor {
namespace {

std::optional<long> to_long(const std::optional<std::string> &v) {
  if (!v || v->empty())
    return std::nullopt;
  long n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || p != v->data() + v->size())
    return std::nullopt;
  return n;
}

std::vector<Finding> master_port(const Snapshot &s, const kb::KnowledgeBase &,
                                 const DoctorOptions &) {
  if (s.software.master_port_in_use != OptBool(true))
    return {};
  std::string port = env_var(s, "MASTER_PORT").value_or("29500");
  Finding f = make_finding(
      "dist.master-port-in-use", Severity::fail,
      "MASTER_PORT " + port + " is already taken on this host",
      "The rank-0 process must listen on MASTER_PORT; when another process (often a previous run "
      "that did not exit) holds it, startup fails with \"The server socket has failed to bind "
      "... Address already in use\".",
      {"find the holder: ss -ltnp 'sport = :" + port + "'",
       "export MASTER_PORT=$(python3 -c 'import socket;s=socket.socket();s.bind((\"\",0));"
       "print(s.getsockname()[1])')",
       "or with torchrun: --rdzv-endpoint=localhost:0 / --master-port <free port>"});
  f.with("MASTER_PORT", port).with("in_use", "yes");
  return {f};
}

bool truthy(const std::optional<std::string> &v) {
  return v && (*v == "1" || *v == "true");
}

std::vector<Finding> nccl_env(const Snapshot &s, const kb::KnowledgeBase &, const DoctorOptions &) {
  std::vector<std::string> problems;
  std::vector<std::string> fix;
  Finding f = make_finding(
      "dist.nccl-env", Severity::warn, "",
      "NCCL variables change how every collective runs; left over from debugging or set for "
      "another machine, they slow training or disable the fast paths this machine has.");
  auto debug = env_var(s, "NCCL_DEBUG");
  if (debug && (*debug == "INFO" || *debug == "TRACE")) {
    problems.push_back("NCCL_DEBUG=" + *debug + " logs every operation");
    fix.push_back("unset NCCL_DEBUG NCCL_DEBUG_SUBSYS   # or NCCL_DEBUG=WARN");
    f.with("NCCL_DEBUG", *debug);
  }
  bool nvlink = false;
  for (const auto &p : s.nvidia.pairs)
    nvlink = nvlink || (p.topology && p.topology->rfind("NV", 0) == 0);
  if (truthy(env_var(s, "NCCL_P2P_DISABLE")) && nvlink) {
    problems.push_back("NCCL_P2P_DISABLE=1 turns off NVLink peer-to-peer");
    fix.push_back("unset NCCL_P2P_DISABLE");
    f.with("NCCL_P2P_DISABLE", "1");
  }
  bool rdma_up = false;
  for (const auto &p : s.host.rdma)
    rdma_up = rdma_up || p.state == OptStr("ACTIVE");
  if (truthy(env_var(s, "NCCL_IB_DISABLE")) && rdma_up) {
    problems.push_back("NCCL_IB_DISABLE=1 with active InfiniBand/RoCE ports");
    fix.push_back("unset NCCL_IB_DISABLE");
    f.with("NCCL_IB_DISABLE", "1");
  }
  if (truthy(env_var(s, "NCCL_SHM_DISABLE")) && nvidia_gpus(s).size() >= 2) {
    problems.push_back("NCCL_SHM_DISABLE=1 sends intra-node traffic through the network");
    fix.push_back("unset NCCL_SHM_DISABLE   # and give /dev/shm room instead");
    f.with("NCCL_SHM_DISABLE", "1");
  }
  if (problems.empty())
    return {};
  f.title = join(problems, "; ");
  f.fix = fix;
  return {f};
}

bool matches_interface(const std::string &spec, const std::vector<NetInterface> &ifs) {
  // NCCL_SOCKET_IFNAME: comma-separated prefixes; "^" excludes, "=" asks for exact names.
  std::string body = spec;
  bool exclude = !body.empty() && body.front() == '^';
  if (exclude)
    body.erase(0, 1);
  bool exact = !body.empty() && body.front() == '=';
  if (exact)
    body.erase(0, 1);
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= body.size()) {
    auto end = body.find(',', start);
    if (end == std::string::npos)
      end = body.size();
    if (end > start)
      names.push_back(body.substr(start, end - start));
    start = end + 1;
  }
  for (const auto &i : ifs) {
    bool hit = false;
    for (const auto &n : names)
      hit = hit || (exact ? i.name == n : i.name.rfind(n, 0) == 0);
    if (exclude ? !hit && i.kind != OptStr("loopback") : hit)
      return true;
  }
  return false;
}

std::vector<Finding> socket_ifname(const Snapshot &s, const kb::KnowledgeBase &,
                                   const DoctorOptions &) {
  if (s.host.network.empty())
    return {};
  std::vector<Finding> out;
  std::vector<std::string> names;
  for (const auto &i : s.host.network)
    if (i.kind != OptStr("loopback"))
      names.push_back(i.name);
  for (const char *var : {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"}) {
    auto v = env_var(s, var);
    if (!v || v->empty() || matches_interface(*v, s.host.network))
      continue;
    Finding f = make_finding(
        "dist.socket-ifname", Severity::fail,
        fmt::format("{}={} matches no network interface here", var, *v),
        "NCCL and Gloo bootstrap over the interfaces this variable names; when none exists, "
        "initialisation fails (\"no socket interface found\") or hangs until it times out.",
        {fmt::format("export {}={}   # an interface that reaches the other nodes", var,
                     names.empty() ? std::string("<nic>") : names.front()),
         fmt::format("or unset {}", var)});
    f.with(var, *v).with("interfaces", join(names, ", "));
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> rank_env(const Snapshot &s, const kb::KnowledgeBase &, const DoctorOptions &) {
  std::vector<std::string> problems;
  auto rank = to_long(env_var(s, "RANK"));
  auto world = to_long(env_var(s, "WORLD_SIZE"));
  auto local = to_long(env_var(s, "LOCAL_RANK"));
  for (const char *var : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"})
    if (auto v = env_var(s, var); v && !to_long(v))
      problems.push_back(fmt::format("{}=\"{}\" is not a number", var, *v));
  // A port is 1..65535; torch's TCPStore cannot listen on anything else.
  if (auto port = to_long(env_var(s, "MASTER_PORT")); port && (*port < 1 || *port > 65535))
    problems.push_back(fmt::format("MASTER_PORT={} is not a port number (1-65535)", *port));
  if (world && *world < 1)
    problems.push_back("WORLD_SIZE is below 1");
  if (rank && world && (*rank < 0 || *rank >= *world))
    problems.push_back(fmt::format("RANK {} is outside 0..WORLD_SIZE-1 ({})", *rank, *world - 1));
  std::size_t gpus = nvml_gpus(s).size();
  if (local && gpus > 0 && (*local < 0 || static_cast<std::size_t>(*local) >= gpus))
    problems.push_back(fmt::format("LOCAL_RANK {} but {} GPUs here", *local, gpus));
  if (problems.empty())
    return {};
  Finding f = make_finding(
      "dist.rank-env", Severity::fail, join(problems, "; "),
      "torch.distributed reads these variables at init_process_group: wrong values hang the "
      "rendezvous or pick a GPU that does not exist (\"invalid device ordinal\").",
      {"unset RANK WORLD_SIZE LOCAL_RANK   # let torchrun set them per process",
       "torchrun --nproc-per-node=gpu train.py"});
  for (const char *var : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"})
    if (auto v = env_var(s, var))
      f.with(var, *v);
  return {f};
}

const BenchLibrary kNccl{"dist.nccl-not-found",
                         "NCCL",
                         "libnccl.so",
                         "nvidia-nccl",
                         "nccl",
                         "DLRIG_NCCL_LIBRARY",
                         "torch.distributed's nccl backend and dlrig bench's nccl.* cannot load it",
                         "libnccl.so.2"};

// NCCL matters where GPUs talk to each other: 2+ GPUs here or a distributed launch. One GPU
// without one never loads it, so its absence is no finding there (applicability.cpp says so).
std::vector<Finding> nccl_not_found(const Snapshot &s, const kb::KnowledgeBase &,
                                    const DoctorOptions &) {
  if (!uses_nccl(s))
    return {};
  return bench_library_missing(s, s.software.nccl_files, kNccl);
}

} // namespace

std::vector<Check> dist_checks() {
  return {
      {"dist.master-port-in-use", "dist", Severity::fail, "MASTER_PORT already in use",
       "software.master_port_in_use, software.env.MASTER_PORT",
       "the probe found a listener on MASTER_PORT (default 29500)",
       "pick a free port (the command is printed)",
       "https://github.com/pytorch/pytorch/issues/85604, "
       "https://github.com/pytorch/pytorch/issues/126510; "
       "https://github.com/meta-pytorch/torchtune/issues/1025",
       master_port},
      {"dist.nccl-env", "dist", Severity::warn, "NCCL variables left from debugging or set wrong",
       "software.env NCCL_DEBUG, NCCL_P2P_DISABLE, NCCL_IB_DISABLE, NCCL_SHM_DISABLE; "
       "nvidia.pairs; host.rdma",
       "NCCL_DEBUG=INFO/TRACE; P2P disabled on an NVLink machine; IB disabled with active "
       "RDMA ports; SHM disabled with 2+ GPUs",
       "unset the variables",
       "https://github.com/NVIDIA/nccl/issues/2079; "
       "https://github.com/NVIDIA/nccl-tests/issues/117; "
       "https://github.com/NVIDIA/nccl/issues/286; "
       "NCCL environment variables "
       "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",
       nccl_env},
      {"dist.socket-ifname", "dist", Severity::fail,
       "NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME names no interface here",
       "software.env NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME; host.network",
       "no interface matches the variable's prefixes (^ excludes, = exact)",
       "export the variable with an existing interface, or unset it",
       "https://github.com/NVIDIA/nccl/issues/286, https://github.com/NVIDIA/nccl/issues/913, "
       "https://github.com/NVIDIA/nccl/issues/1837",
       socket_ifname},
      {"dist.rank-env", "dist", Severity::fail, "RANK/WORLD_SIZE/LOCAL_RANK inconsistent",
       "software.env RANK, WORLD_SIZE, LOCAL_RANK, MASTER_PORT; gpus[]",
       "a value is not a number, MASTER_PORT is not a port (1-65535), RANK is not below "
       "WORLD_SIZE, or LOCAL_RANK is not below the GPU count",
       "unset them and let torchrun set them",
       "PyTorch torch.distributed environment initialisation (env://) "
       "https://pytorch.org/docs/stable/distributed.html",
       rank_env},
      {"dist.nccl-not-found", "dist", Severity::warn,
       "NCCL (libnccl) is nowhere PyTorch and dlrig bench look, with 2+ GPUs or a distributed "
       "launch",
       "software.nccl_files (the folders listed and the files found), "
       "software.python_envs[].torch, gpus[], software.env WORLD_SIZE, MASTER_ADDR",
       "2 or more NVIDIA GPUs (or WORLD_SIZE above 1, or MASTER_ADDR set) and a PyTorch built "
       "for CUDA, and no libnccl.so* in DLRIG_NCCL_LIBRARY (when set, alone), the torch "
       "environments' site-packages nvidia/nccl/lib, nvidia/cu*/lib and torch/lib, a conda "
       "environment's lib, the CUDA toolkits, or the loader's folders; one GPU without a "
       "distributed launch never loads NCCL: not applicable",
       "pip install nvidia-nccl-cuXX (torch's CUDA major) or reinstall torch from its index; or "
       "export DLRIG_NCCL_LIBRARY=/path/to/libnccl.so.2",
       "the wheels' dependency and RPATH: "
       "https://github.com/pytorch/pytorch/blob/main/.ci/manywheel/build_cuda.sh; "
       "https://github.com/pinokiocomputer/pinokio/issues/193 (import torch in a venv fails: "
       "libnccl.so.2: cannot open shared object file)",
       nccl_not_found},
  };
}

} // namespace dlrig::doctor
