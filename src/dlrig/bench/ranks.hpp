#pragma once
// One rank of a multi-process (multi-node) NCCL job for `dlrig bench nccl.*` (docs/bench.md,
// "Multi-node"), without MPI: which rank this process is, how many there are and where rank 0
// listens, from `--rank/--nranks/--rendezvous` or torchrun's environment; and the rendezvous over
// TCP through which rank 0 hands NCCL's unique id to every other rank.
//
// The rendezvous, one line each way per peer (text, so a wrong peer is easy to name):
//   rank R -> rank 0: "dlrig-nccl-rendezvous 2 rank=R nranks=N gpu=GPU plan=PLAN"
//   rank 0 -> rank R: "id HEX" (the 128-byte ncclUniqueId, 256 hex digits), or "error MESSAGE"
// PLAN is what the rank will run (ids, tier): every rank must issue the same collectives, so
// rank 0 refuses a peer whose nranks or plan differ from its own, and a rank number given twice.
// GPU is the GPU the rank drives, "BUS_ID@BOOT_ID" (the PCI bus id on the machine whose kernel
// booted as BOOT_ID, /proc/sys/kernel/random/boot_id: containers on one machine share it), or
// "unknown": NCCL allows one rank per GPU (ncclCommInitRank answers ncclInvalidUsage, seen on an
// H100), so rank 0 refuses two ranks that name the same GPU. Version 1 had no gpu field.
// The connections stay open while the job runs (JobLinks): a rank that stops tells the others.
#include "dlrig/bench/bench.hpp"
#include "dlrig/core/result.hpp"
#include "dlrig/platform/tcp.hpp"

#include <array>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace dlrig::bench {

struct RankSpec {
  int rank = 0, nranks = 1;
  std::string host; // rank 0's address
  int port = 0;
  // The GPU of this machine the rank drives (torchrun's LOCAL_RANK); nullopt: rank modulo the
  // GPUs this process sees.
  std::optional<int> local_rank;
  std::string source; // "--rank/--nranks/--rendezvous" or "torchrun's environment (...)"
  std::chrono::milliseconds timeout{std::chrono::seconds(120)}; // for the whole rendezvous
};

// The flags as given (absent: nullopt / empty).
struct RankFlags {
  std::optional<int> rank, nranks;
  std::string rendezvous; // HOST:PORT ("[::1]:29500" for an IPv6 address)
};

using EnvLookup = std::function<std::optional<std::string>(const char *)>;

// The job from the flags (all three or none; --rendezvous alone takes the rank, the size and the
// local rank from Open MPI's, Slurm's or PMI's variables), else from torchrun's RANK, WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT (LOCAL_RANK optional) when WORLD_SIZE is set and above 1, listening
// on MASTER_PORT + 1 (torchrun's agent keeps its own store on MASTER_PORT); nullopt when neither
// asks for ranks. DLRIG_RENDEZVOUS_TIMEOUT_S (seconds, default 120) bounds the rendezvous, and
// again the NCCL communicator's creation that follows it (gpu_nccl.cpp).
// Errors (kind usage) name the flag or variable and the fix. Pure.
Result<std::optional<RankSpec>> rank_spec(const RankFlags &flags, const EnvLookup &env);

using UniqueId = std::array<unsigned char, 128>; // ncclUniqueId's bytes

// The protocol's lines (pure, tested on their own).
std::string hello_line(int rank, int nranks, std::string_view gpu, std::string_view plan);
struct Hello {
  int rank = 0, nranks = 0;
  std::string gpu; // "BUS_ID@BOOT_ID" or "unknown"
  std::string plan;
};
// nullopt when `line` is not a hello.
std::optional<Hello> parse_hello(std::string_view line);
std::string id_line(const UniqueId &id);
// The id of an "id HEX" line; an error (kind bad_input) quoting an "error ..." line or junk.
Result<UniqueId> parse_id_line(std::string_view line, std::string_view from);

// The rendezvous's connections, kept open while the job runs: how a rank learns that another one
// stopped, where NCCL would wait for it forever (a collective's kernel spins until every rank has
// joined it). After the id each side sends at most one line: "done" (this rank ran its whole plan
// and issues no more collectives) or "abort WHY" (it stopped the job; WHY begins with the rank
// where the stop started, "rank 2 ..."). Rank 0 holds a connection
// to every other rank and passes an abort on; every other rank holds one to rank 0. A connection
// that closes without "done" is a rank whose process ended (killed, crashed) or whose host went
// away (TCP keep-alive probes close a silent connection after 11 s).
class JobLinks {
public:
  void add(int peer_rank, tcp::Socket socket);
  // Why the job cannot go on, from what the peers sent since the last call, without waiting;
  // nullopt while every peer is running or has finished.
  std::optional<std::string> lost();
  // Sends `line` to every peer still connected; a peer that is gone is skipped.
  void tell(const std::string &line);

private:
  struct Peer {
    int rank = 0;
    tcp::Socket socket;
    std::string partial; // bytes after the last '\n'
    bool done = false, gone = false;
  };
  std::vector<Peer> peers_;
};

// Rank 0: listens on spec.port, waits for the other nranks - 1 ranks' hellos and sends each the
// id. Another rank: connects to host:port (retrying while nothing listens yet), sends its hello
// and returns the id rank 0 sends. `gpu`: this rank's GPU as the hello carries it. Errors: kind
// bad_input for a peer that sent junk or a hello whose nranks, plan or rank does not fit or whose
// GPU another rank drives (the peer is told why), kind io for the deadline (spec.timeout) or a
// network failure; the message names the peer and the fix. The connections are kept in `links`.
struct Joined {
  UniqueId id{};
  JobLinks links;
};
Result<Joined> rendezvous(const RankSpec &spec, std::string_view plan, std::string_view gpu,
                          const std::optional<UniqueId> &id_if_rank0);

// Makes nccl.* run as `spec`'s rank (gpu_nccl.cpp): rank 0 asks NCCL for a unique id
// (ncclGetUniqueId), the rendezvous hands it to the others, and the communicator is then created
// with ncclCommInitRank on this rank's GPU, before any benchmark runs. `plan`: what this rank will
// run (hello_line). Throws Failure: ExitCode::bad_input (65) for junk or a peer whose nranks,
// rank, plan or GPU does not fit, ExitCode::unavailable (69) for the deadline, the network, NCCL
// not usable or its communicator refused.
void join_nccl_job(const Context &ctx, const RankSpec &spec, const std::string &plan);

// The end of this rank's part: tells the other ranks "done" when `completed` (every benchmark of
// the plan ran), else that it stopped. Returns why the job stopped early when it did (a rank
// that ended, failed or was interrupted; NCCL's own error): the results before it stand, and
// `dlrig bench` exits 2. Nothing when this process is not a rank of a job.
std::optional<std::string> end_nccl_job(const Context &ctx, bool completed);

} // namespace dlrig::bench
