// A multi-process NCCL job's ranks and rendezvous (ranks.hpp).
#include "dlrig/bench/ranks.hpp"
#include "dlrig/core/text.hpp"
#include "dlrig/platform/tcp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <vector>

namespace dlrig::bench {
namespace {

std::optional<long long> whole(std::string_view s) {
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size())
    return std::nullopt;
  return v;
}

Error usage(std::string message) {
  return make_error(ErrorKind::usage, std::move(message));
}

// "host:port", "[v6]:port" -> host, port.
Result<std::pair<std::string, int>> split_address(std::string_view text, std::string_view what) {
  std::string_view host, port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find("]:");
    if (close == std::string_view::npos)
      return usage(fmt::format("{} \"{}\": expected [IPV6]:PORT", what, text));
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos)
      return usage(fmt::format("{} \"{}\": expected HOST:PORT (rank 0's address and a free "
                               "port, e.g. node0:29500)",
                               what, text));
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  auto p = whole(port);
  if (host.empty() || !p || *p < 1 || *p > 65535)
    return usage(
        fmt::format("{} \"{}\": expected HOST:PORT with a port from 1 to 65535", what, text));
  return std::make_pair(std::string(host), static_cast<int>(*p));
}

// A launcher's variables for this process's rank, the job's size and the rank on its node.
struct Launcher {
  const char *name, *rank, *size, *local;
};
// Open MPI's mpirun (https://docs.open-mpi.org/en/main/tuning-apps/environment-var.html), Slurm's
// srun (https://slurm.schedmd.com/srun.html, "OUTPUT ENVIRONMENT VARIABLES"), and the PMI
// variables of MPICH's Hydra (mpiexec), which Intel MPI also sets.
constexpr Launcher kLaunchers[] = {
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"PMI (MPICH, Intel MPI)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
};

// --rendezvous alone: the rank, the size and the local rank from the first launcher whose rank
// and size are both set.
Result<std::optional<RankSpec>> from_launcher(RankSpec s, const std::string &rendezvous,
                                              const EnvLookup &env) {
  auto a = split_address(rendezvous, "--rendezvous");
  if (!a)
    return a.error();
  s.host = a->first;
  s.port = a->second;
  for (const Launcher &l : kLaunchers) {
    auto rank = env(l.rank), size = env(l.size);
    if (!rank || !size)
      continue;
    auto r = whole(*rank), n = whole(*size);
    if (!r || !n || *n < 1 || *r < 0 || *r >= *n)
      return usage(fmt::format("{}={} {}={} ({}): expected 0 <= rank < size", l.rank, *rank, l.size,
                               *size, l.name));
    s.rank = static_cast<int>(*r);
    s.nranks = static_cast<int>(*n);
    if (auto local = env(l.local)) {
      auto v = whole(*local);
      if (!v || *v < 0)
        return usage(
            fmt::format("{}=\"{}\" ({}): expected a whole number >= 0", l.local, *local, l.name));
      s.local_rank = static_cast<int>(*v);
    }
    s.source = fmt::format("{} ({}, {}, {}) with --rendezvous", l.name, l.rank, l.size, l.local);
    return std::optional<RankSpec>(s);
  }
  return usage("--rendezvous without --rank and --nranks takes them from a launcher, and none is "
               "set: start under mpirun (OMPI_COMM_WORLD_RANK/SIZE), srun "
               "(SLURM_PROCID/SLURM_NTASKS) or mpiexec (PMI_RANK/PMI_SIZE), or give --rank and "
               "--nranks");
}

bool hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

} // namespace

Result<std::optional<RankSpec>> rank_spec(const RankFlags &flags, const EnvLookup &env) {
  RankSpec s;
  if (auto t = env("DLRIG_RENDEZVOUS_TIMEOUT_S")) {
    auto v = whole(*t);
    if (!v || *v < 1 || *v > 86400)
      return usage(fmt::format("DLRIG_RENDEZVOUS_TIMEOUT_S=\"{}\": expected whole seconds from 1 "
                               "to 86400",
                               *t));
    s.timeout = std::chrono::seconds(*v);
  }
  const bool any_flag = flags.rank || flags.nranks || !flags.rendezvous.empty();
  if (any_flag && !flags.rank && !flags.nranks && !flags.rendezvous.empty())
    return from_launcher(s, flags.rendezvous, env);
  if (any_flag) {
    if (!flags.rank || !flags.nranks || flags.rendezvous.empty())
      return usage("--rank, --nranks and --rendezvous go together: give all three (rank 0's "
                   "HOST:PORT in --rendezvous on every rank), or --rendezvous alone under "
                   "mpirun or srun");
    s.rank = *flags.rank;
    s.nranks = *flags.nranks;
    auto a = split_address(flags.rendezvous, "--rendezvous");
    if (!a)
      return a.error();
    s.host = a->first;
    s.port = a->second;
    s.source = "--rank/--nranks/--rendezvous";
    if (s.nranks < 1 || s.rank < 0 || s.rank >= s.nranks)
      return usage(
          fmt::format("--rank {} --nranks {}: expected 0 <= rank < nranks", s.rank, s.nranks));
    if (auto l = env("LOCAL_RANK"); l && whole(*l) && *whole(*l) >= 0)
      s.local_rank = static_cast<int>(*whole(*l));
    return std::optional<RankSpec>(s);
  }
  auto world = env("WORLD_SIZE");
  if (!world)
    return std::optional<RankSpec>();
  auto n = whole(*world);
  if (!n || *n < 1)
    return usage(fmt::format("WORLD_SIZE=\"{}\" (torchrun's environment): expected a whole number "
                             ">= 1",
                             *world));
  if (*n == 1)
    return std::optional<RankSpec>(); // one process: the ordinary single-process run
  std::vector<std::string> missing;
  for (const char *v : {"RANK", "MASTER_ADDR", "MASTER_PORT"})
    if (!env(v))
      missing.push_back(v);
  if (!missing.empty())
    return usage(fmt::format("WORLD_SIZE={} is set but {} {} not: launch with torchrun, or give "
                             "--rank, --nranks and --rendezvous",
                             *n, join(missing, ", "), missing.size() == 1 ? "is" : "are"));
  auto r = whole(*env("RANK"));
  if (!r || *r < 0 || *r >= *n)
    return usage(fmt::format("RANK=\"{}\" (torchrun's environment): expected 0 <= RANK < "
                             "WORLD_SIZE={}",
                             *env("RANK"), *n));
  auto a =
      split_address(*env("MASTER_ADDR") + ":" + *env("MASTER_PORT"), "MASTER_ADDR:MASTER_PORT");
  if (!a)
    return a.error();
  if (a->second == 65535)
    return usage("MASTER_PORT=65535: dlrig's rendezvous listens on MASTER_PORT + 1 (torchrun's "
                 "own store holds MASTER_PORT); choose a lower port, or give --rendezvous");
  s.rank = static_cast<int>(*r);
  s.nranks = static_cast<int>(*n);
  s.host = a->first;
  s.port = a->second + 1; // torchrun's agent keeps its TCPStore on MASTER_PORT
  if (auto l = env("LOCAL_RANK")) {
    auto v = whole(*l);
    if (!v || *v < 0)
      return usage(fmt::format("LOCAL_RANK=\"{}\" (torchrun's environment): expected a whole "
                               "number >= 0",
                               *l));
    s.local_rank = static_cast<int>(*v);
  }
  s.source = "torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT + 1)";
  return std::optional<RankSpec>(s);
}

std::string hello_line(int rank, int nranks, std::string_view gpu, std::string_view plan) {
  return fmt::format("dlrig-nccl-rendezvous 2 rank={} nranks={} gpu={} plan={}", rank, nranks, gpu,
                     plan);
}

std::optional<Hello> parse_hello(std::string_view line) {
  constexpr std::string_view kHead = "dlrig-nccl-rendezvous 2 rank=";
  if (line.substr(0, kHead.size()) != kHead)
    return std::nullopt;
  line.remove_prefix(kHead.size());
  auto sp = line.find(" nranks=");
  if (sp == std::string_view::npos)
    return std::nullopt;
  auto rank = whole(line.substr(0, sp));
  line.remove_prefix(sp + 8);
  auto plan_at = line.find(" plan=");
  if (plan_at == std::string_view::npos)
    return std::nullopt;
  auto gpu_at = line.substr(0, plan_at).find(" gpu=");
  if (gpu_at == std::string_view::npos)
    return std::nullopt;
  auto nranks = whole(line.substr(0, gpu_at));
  const std::string_view gpu = line.substr(gpu_at + 5, plan_at - gpu_at - 5);
  if (!rank || !nranks || *rank < 0 || *nranks < 1 || *rank > 1 << 24 || *nranks > 1 << 24 ||
      gpu.empty() || gpu.find(' ') != std::string_view::npos)
    return std::nullopt;
  return Hello{static_cast<int>(*rank), static_cast<int>(*nranks), std::string(gpu),
               std::string(line.substr(plan_at + 6))};
}

std::string id_line(const UniqueId &id) {
  std::string s = "id ";
  for (unsigned char b : id)
    s += fmt::format("{:02x}", b);
  return s;
}

Result<UniqueId> parse_id_line(std::string_view line, std::string_view from) {
  if (line.substr(0, 6) == "error ")
    return make_error(ErrorKind::bad_input,
                      fmt::format("rank 0 ({}) refused this rank: {}", from, line.substr(6)));
  UniqueId id{};
  if (line.size() == 3 + 2 * id.size() && line.substr(0, 3) == "id " &&
      std::all_of(line.begin() + 3, line.end(), hex_digit)) {
    for (std::size_t i = 0; i < id.size(); ++i)
      id[i] = static_cast<unsigned char>(
          std::stoi(std::string(line.substr(3 + 2 * i, 2)), nullptr, 16));
    return id;
  }
  return make_error(ErrorKind::bad_input,
                    fmt::format("{} is not a dlrig rank 0: it answered \"{}\" instead of \"id "
                                "<256 hex digits>\" (is --rendezvous / MASTER_ADDR:MASTER_PORT "
                                "rank 0's dlrig, and the same dlrig version?)",
                                from, excerpt(line)));
}

void JobLinks::add(int peer_rank, tcp::Socket socket) {
  // A rank whose host vanishes sends nothing more: keep-alive probes close its connection after
  // 5 + 2 x 3 = 11 s of silence (best effort: not every socket is TCP).
  (void)socket.keep_alive(5, 2, 3);
  Peer p;
  p.rank = peer_rank;
  p.socket = std::move(socket);
  peers_.push_back(std::move(p));
}

std::optional<std::string> JobLinks::lost() {
  constexpr std::size_t kMaxLine = 4096;
  for (Peer &p : peers_) {
    if (p.done || p.gone)
      continue;
    auto got = p.socket.read_available(kMaxLine);
    p.partial += got.bytes;
    for (auto nl = p.partial.find('\n'); nl != std::string::npos; nl = p.partial.find('\n')) {
      const std::string line = p.partial.substr(0, nl);
      p.partial.erase(0, nl + 1);
      if (line == "done") {
        p.done = true;
        break; // nothing follows "done"
      }
      p.gone = true;
      if (line.rfind("abort ", 0) == 0 && line.size() > 6)
        return line.substr(6); // the reason names the rank it started on
      return fmt::format("rank {} ({}) sent \"{}\" where \"done\" or \"abort ...\" belongs: "
                         "every rank must run the same dlrig",
                         p.rank, p.socket.peer(), excerpt(line));
    }
    if (p.done)
      continue;
    if (p.partial.size() > kMaxLine) {
      p.gone = true;
      return fmt::format("rank {} ({}) sent more than {} bytes without a line end", p.rank,
                         p.socket.peer(), kMaxLine);
    }
    if (got.closed) {
      p.gone = true;
      return fmt::format("rank {} ({}) closed its connection before finishing its run: its "
                         "process ended (killed, crashed, out of host memory) or its host "
                         "became unreachable",
                         p.rank, p.socket.peer());
    }
  }
  return std::nullopt;
}

void JobLinks::tell(const std::string &line) {
  for (Peer &p : peers_)
    if (!p.gone && !p.done)
      (void)p.socket.send_all(line + "\n");
}

Result<Joined> rendezvous(const RankSpec &spec, std::string_view plan, std::string_view gpu,
                          const std::optional<UniqueId> &id_if_rank0) {
  const auto deadline = std::chrono::steady_clock::now() + spec.timeout;
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(spec.timeout).count();
  constexpr std::size_t kMaxLine = 4096;
  if (spec.rank != 0) {
    auto s = tcp::connect_to(spec.host, spec.port, deadline);
    if (!s)
      return make_error(ErrorKind::io,
                        fmt::format("rank {} of {}: rendezvous with rank 0 at {}:{} timed out "
                                    "after {} s: {} (is rank 0 running, and the port open?)",
                                    spec.rank, spec.nranks, spec.host, spec.port, seconds,
                                    s.error().message));
    if (auto sent = s->send_all(hello_line(spec.rank, spec.nranks, gpu, plan) + "\n"); !sent)
      return sent.error();
    auto line = s->read_line(kMaxLine, deadline);
    if (!line)
      return prefixed(fmt::format("rank {} of {}: rendezvous with rank 0 at {}:{}: ", spec.rank,
                                  spec.nranks, spec.host, spec.port),
                      line.error());
    auto id = parse_id_line(*line, fmt::format("{}:{}", spec.host, spec.port));
    if (!id)
      return id.error();
    Joined j;
    j.id = *id;
    j.links.add(0, std::move(*s));
    return j;
  }
  if (!id_if_rank0)
    return make_error(ErrorKind::usage, "rank 0 needs NCCL's unique id to hand out");
  auto listener = tcp::listen_on(spec.port);
  if (!listener)
    return prefixed(fmt::format("rank 0 of {}: ", spec.nranks), listener.error());
  std::vector<std::pair<int, tcp::Socket>> peers; // rank, connection
  std::set<int> seen;
  std::map<std::string, int, std::less<>> gpus; // a known GPU -> the rank that drives it
  if (gpu != "unknown")
    gpus.emplace(std::string(gpu), 0);
  while (static_cast<int>(peers.size()) < spec.nranks - 1) {
    auto s = tcp::accept_one(*listener, deadline);
    if (!s) {
      std::vector<std::string> absent;
      for (int r = 1; r < spec.nranks; ++r)
        if (!seen.count(r))
          absent.push_back(std::to_string(r));
      return make_error(ErrorKind::io,
                        fmt::format("rank 0 of {}: rendezvous on port {} timed out after {} s "
                                    "waiting for rank {} (start every rank with the same "
                                    "--nranks and --rendezvous; DLRIG_RENDEZVOUS_TIMEOUT_S "
                                    "sets the wait)",
                                    spec.nranks, spec.port, seconds, join(absent, ", ")));
    }
    auto line = s->read_line(kMaxLine, deadline);
    if (!line)
      return prefixed(fmt::format("rank 0 of {}: rendezvous: ", spec.nranks), line.error());
    auto refuse = [&](std::string why) -> Error {
      (void)s->send_all("error " + why + "\n");
      return make_error(ErrorKind::bad_input, "rank 0: " + why);
    };
    auto hello = parse_hello(*line);
    if (!hello) {
      return refuse(fmt::format("{} sent \"{}\", not a dlrig rank's hello (another program on "
                                "port {}? every rank must run dlrig of the same version)",
                                s->peer(), excerpt(*line), spec.port));
    }
    if (hello->nranks != spec.nranks)
      return refuse(fmt::format("rank {} at {} was started with {} ranks, rank 0 with {}: give "
                                "every rank the same --nranks / WORLD_SIZE",
                                hello->rank, s->peer(), hello->nranks, spec.nranks));
    if (hello->rank < 1 || hello->rank >= spec.nranks || seen.count(hello->rank))
      return refuse(fmt::format(
          "{} says it is rank {}, {} (ranks 1 to {} must each come once)", s->peer(), hello->rank,
          seen.count(hello->rank) ? "which already came" : "out of range", spec.nranks - 1));
    if (hello->plan != plan)
      return refuse(fmt::format("rank {} at {} would run \"{}\", rank 0 runs \"{}\": every rank "
                                "must run the same benchmarks with the same options",
                                hello->rank, s->peer(), hello->plan, plan));
    if (auto other = gpus.find(hello->gpu); other != gpus.end()) {
      const auto at = hello->gpu.find('@');
      return refuse(fmt::format(
          "rank {} at {} and rank {} would both drive GPU {} of one machine (boot id {}): NCCL "
          "allows one rank per GPU (ncclCommInitRank answers ncclInvalidUsage); give each rank "
          "its own GPU (LOCAL_RANK, as torchrun sets it) and no more ranks on a machine than it "
          "has GPUs",
          hello->rank, s->peer(), other->second, hello->gpu.substr(0, at),
          at == std::string::npos ? "unknown" : hello->gpu.substr(at + 1)));
    }
    if (hello->gpu != "unknown")
      gpus.emplace(hello->gpu, hello->rank);
    seen.insert(hello->rank);
    peers.emplace_back(hello->rank, std::move(*s));
  }
  Joined j;
  j.id = *id_if_rank0;
  for (auto &[rank, socket] : peers) {
    if (auto sent = socket.send_all(id_line(*id_if_rank0) + "\n"); !sent)
      return prefixed(fmt::format("rank 0 of {}: ", spec.nranks), sent.error());
    j.links.add(rank, std::move(socket));
  }
  return j;
}

} // namespace dlrig::bench
