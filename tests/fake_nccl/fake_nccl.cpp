// A stand-in for libnccl.so.2, driven by the scenario file named in DLRIG_FAKE_NCCL_SCENARIO
// (format: docs/testing.md, "Fake NCCL"). It runs inside a process that has loaded the fake
// libcuda (DLRIG_CUDA_LIBRARY): buffers are that fake's host memory, so every collective really
// moves and sums the float32 data (dlrig's verification is real), and its time is simulated:
// S x the collective's busbw factor over the scenario's bus bandwidth, added to every rank's stream
// through the fake libcuda's hook, so CUDA events give the scenario's busbw back.
//
// Calls between ncclGroupStart and ncclGroupEnd are queued and carried out at ncclGroupEnd, once
// every rank of the communicator has made its call (as one thread driving all GPUs must do); a
// collective outside a group on more than one rank is ncclInvalidUsage (real NCCL would wait
// forever), as is a group where a rank is missing or the counts disagree.
//
// Scenario keys: "version" (ncclGetVersion's code, 22109 = 2.21.9), "busbw_gbs" {collective: GB/s}
// for all_reduce, all_gather, reduce_scatter, broadcast, sendrecv; "wrong" [collectives whose
// output is off by one]; "slow_ranks" {rank: factor} (ranks in several processes only); "errors"
// {symbol: ncclResult_t}; "conf" {variable: value} set at ncclCommInitAll unless the environment
// has it (NCCL's configuration files). It fails closed: no or an unreadable scenario fails
// ncclCommInitAll; a collective without a rate is ncclInvalidUsage; a buffer that is not the rank's
// GPU memory is ncclInvalidArgument.
//
// Ranks in several processes (ncclGetUniqueId, ncclCommInitRank; dlrig's `--rank`): the processes
// meet in a folder named after the unique id under DLRIG_FAKE_NCCL_DIR (unset: ncclCommInitRank
// fails, ncclSystemError). Each rank writes rank<R> there with its nranks and GPU and waits (at
// most DLRIG_FAKE_NCCL_WAIT_S, default 20 s) for every other rank's: a rank handed another unique
// id waits in another folder and fails (ncclSystemError, "the ranks never met"), as do ranks whose
// nranks differ (ncclInvalidArgument) and two ranks on one GPU (ncclInvalidUsage, as NCCL); the id
// must be one ncclGetUniqueId made (ncclInvalidArgument otherwise). Every operation is then a
// numbered file per rank (op<seq>.rank<R>, written then renamed) holding what the rank sends. As
// NCCL's, an operation returns at once: its time is added to the stream and the stream is held
// through the fake libcuda (dlrig_fake_cuda_hold) until the files it needs are there; each query
// or wait on a held stream progresses the operations in order, so the data really crosses
// processes and a rank that never comes leaves the others' streams held (NCCL's kernel spins).
// ncclCommAbort releases them. ncclCommInitRankConfig with a non-blocking config returns the
// communicator at once (ncclInProgress) and ncclCommGetAsyncError says when every rank has joined,
// as NCCL's non-blocking communicators do. Faults: "exit_at_init" {"rank"} kills that rank's
// process as it enters ncclCommInitRank(Config); "init_never_joins" {"rank"} leaves that rank's
// non-blocking init in progress, never meeting the others; "exit_at_op" {"rank", "op"} as it
// reaches the operation; "async_error_at_op" {"rank", "op", "error"} holds it for ever and reports
// the error through ncclCommGetAsyncError. A blocking communicator's first send or receive with a
// peer connects the two ranks inside ncclGroupEnd, waiting for the peer there as NCCL does
// ("exit_at_connect" {"rank"}, "connect_never" {"rank"}: see connect).
#include "dlrig/platform/nccl_entry_points.hpp"

#include "fake_common/fake_library.hpp"

#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace dlrig::nccl;
using dlrig::fake::CalledAs;
using dlrig::fake::find;
using dlrig::fake::g_symbol;
using nlohmann::json;

namespace {

struct Clique;
// A communicator whose ranks are in several processes (ncclCommInitRank).
// An operation of a multi-process communicator not completed yet.
struct Pending {
  std::string kind;   // as Call::kind
  std::string record; // this rank's file: what it sends, as the send buffer held at the call
  float *recv = nullptr;
  std::size_t count = 0;
  int root = 0, recv_from = 0; // broadcast's root; the rank a receive comes from
  Stream stream = nullptr;
  std::uint64_t seq = 0;
  bool written = false; // this rank's file is there
};
struct Remote {
  std::string dir; // the unique id's meeting folder
  int nranks = 0;
  std::uint64_t seq = 0;         // operations so far
  std::deque<Pending> pending;   // in call order
  bool aborted = false;          // ncclCommAbort
  Result async_error = kSuccess; // what ncclCommGetAsyncError answers
  std::string token;             // the unique id's text
  bool joining = false;          // a non-blocking ncclCommInitRankConfig not finished
  bool blocking = false;         // made by a blocking init: a first send/recv connects in GroupEnd
  std::vector<int> connected;    // the peers a point-to-point connection was made to
  std::chrono::steady_clock::time_point joined_until; // when the meeting gives up
};
struct FakeComm {
  Clique *clique = nullptr;
  int rank = 0, device = 0;
  std::unique_ptr<Remote> remote;
};
struct Clique {
  std::vector<FakeComm *> ranks;
};

// One queued call.
struct Call {
  std::string kind; // all_reduce ... sendrecv ("send" and "recv" both count as sendrecv)
  bool is_recv = false;
  const float *send = nullptr;
  float *recv = nullptr;
  std::size_t count = 0;
  int root_or_peer = 0;
  FakeComm *comm = nullptr;
  Stream stream = nullptr;
};

using AdvanceFn = int (*)(Stream, double);
using IsMemoryOfFn = int (*)(std::uint64_t, std::size_t, int);

struct State {
  bool loaded = false;
  json scenario;
  int group_depth = 0;
  std::vector<Call> queued;
  AdvanceFn advance = nullptr;
  IsMemoryOfFn is_memory_of = nullptr;
  std::vector<FakeComm *> remotes; // communicators from ncclCommInitRank
  std::vector<Clique *> cliques;   // ncclCommInitAll's (never freed: ncclCommDestroy keeps them)
  long long local_ops = 0;         // groups of calls on one-process communicators so far
  std::vector<Stream> held;        // their streams held by "lose_gpu_at_op"
  std::recursive_mutex mutex;
};

// Never destroyed: threads dlrig left inside a call may still use it at exit, and what it holds
// stays reachable for the leak checker (scripts/sanitize.sh).
State &state() {
  static State &s = *new State;
  return s;
}

bool load() {
  auto &s = state();
  if (s.loaded)
    return true;
  const char *path = std::getenv("DLRIG_FAKE_NCCL_SCENARIO");
  if (!path || !*path)
    return false;
  std::ifstream in(path);
  if (!in)
    return false;
  try {
    s.scenario = json::parse(in);
  } catch (const std::exception &) {
    return false;
  }
  const char *cuda = std::getenv("DLRIG_CUDA_LIBRARY");
  void *h = cuda ? dlopen(cuda, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  if (!h)
    return false;
  s.advance = reinterpret_cast<AdvanceFn>(dlsym(h, "dlrig_fake_cuda_advance"));
  s.is_memory_of = reinterpret_cast<IsMemoryOfFn>(dlsym(h, "dlrig_fake_cuda_is_memory_of"));
  s.loaded = s.advance && s.is_memory_of;
  return s.loaded;
}

Result enter() {
  auto &s = state();
  if (!load())
    return kSystemError;
  if (const json *forced = find(s.scenario, {"errors", g_symbol}))
    return forced->get<Result>();
  return kSuccess;
}

#define FAKE_ENTER()                                                                               \
  std::lock_guard<std::recursive_mutex> lock(state().mutex);                                       \
  if (Result entered = enter(); entered != kSuccess)                                               \
  return entered

// "all_reduce_max": ncclAllReduce with ncclMax (dlrig exchanges its ranks' times with it); timed
// at all_reduce's rate.
const char *rate_kind(const std::string &kind) {
  return kind == "all_reduce_max" ? "all_reduce" : kind.c_str();
}

double bus_factor(const std::string &kind, int n) {
  if (kind == "all_reduce" || kind == "all_reduce_max")
    return 2.0 * (n - 1) / n;
  if (kind == "all_gather" || kind == "reduce_scatter")
    return static_cast<double>(n - 1) / n;
  return 1;
}

// "slow_ranks" {rank: factor}: that rank's stream takes factor x the time (a slower GPU or link
// on one rank of a multi-process job; each process advances only its own stream).
double slowdown(int rank) {
  if (const json *f = find(state().scenario, {"slow_ranks", std::to_string(rank).c_str()}))
    return f->get<double>();
  return 1;
}

bool wrong(const std::string &kind) {
  if (const json *w = find(state().scenario, {"wrong"}))
    for (const auto &k : *w)
      if (k == kind)
        return true;
  return false;
}

// Elements each rank sends and receives, and the bytes of the whole buffer, for `count` float32
// elements per rank of collective `kind` over n ranks (NCCL's count conventions).
struct Elements {
  std::size_t send_n, recv_n, total_bytes;
};
Elements elements_of(const std::string &kind, std::size_t count, int n) {
  if (kind == "all_gather")
    return {count, count * static_cast<std::size_t>(n), count * static_cast<std::size_t>(n) * 4};
  if (kind == "reduce_scatter")
    return {count * static_cast<std::size_t>(n), count, count * static_cast<std::size_t>(n) * 4};
  return {count, count, count * 4};
}

// Carries out one collective: `calls` holds one call per rank, in rank order.
Result execute(const std::string &kind, std::vector<Call *> &calls) {
  auto &s = state();
  const int n = static_cast<int>(calls.size());
  const json *rate = find(s.scenario, {"busbw_gbs", rate_kind(kind)});
  if (!rate)
    return kInvalidUsage;
  const std::size_t count = calls[0]->count;
  const auto [send_n, recv_n, total_bytes] = elements_of(kind, count, n);
  for (Call *c : calls) {
    if (c->count != count || c->root_or_peer != calls[0]->root_or_peer)
      return kInvalidUsage;
    if (!s.is_memory_of(reinterpret_cast<std::uint64_t>(c->send), send_n * 4, c->comm->device) ||
        !s.is_memory_of(reinterpret_cast<std::uint64_t>(c->recv), recv_n * 4, c->comm->device))
      return kInvalidArgument;
  }
  // Compute every rank's output first (inputs may alias nothing: dlrig uses separate buffers).
  std::vector<std::vector<float>> out(static_cast<std::size_t>(n), std::vector<float>(recv_n));
  for (int r = 0; r < n; ++r) {
    auto &o = out[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < recv_n; ++i) {
      float v = 0;
      if (kind == "all_reduce")
        for (Call *c : calls)
          v += c->send[i];
      else if (kind == "all_reduce_max")
        for (std::size_t q = 0; q < calls.size(); ++q)
          v = q == 0 ? calls[q]->send[i] : std::max(v, calls[q]->send[i]);
      else if (kind == "all_gather")
        v = calls[i / count]->send[i % count];
      else if (kind == "reduce_scatter")
        for (Call *c : calls)
          v += c->send[static_cast<std::size_t>(r) * count + i];
      else // broadcast
        v = calls[static_cast<std::size_t>(calls[0]->root_or_peer)]->send[i];
      o[i] = v;
    }
  }
  const bool off = wrong(kind);
  const double seconds =
      static_cast<double>(total_bytes) * bus_factor(kind, n) / (rate->get<double>() * 1e9);
  for (int r = 0; r < n; ++r) {
    auto &o = out[static_cast<std::size_t>(r)];
    if (off && !o.empty())
      o[0] += 1;
    std::memcpy(calls[static_cast<std::size_t>(r)]->recv, o.data(), recv_n * 4);
    if (s.advance(calls[static_cast<std::size_t>(r)]->stream, seconds) != 0)
      return kUnhandledCudaError;
  }
  return kSuccess;
}

// Matches every send with the receive of its peer and copies; each rank's stream then advances by
// the larger of what it sent and what it received over the rate (both directions run at once).
Result execute_p2p(std::vector<Call *> &calls) {
  auto &s = state();
  const json *rate = find(s.scenario, {"busbw_gbs", "sendrecv"});
  if (!rate)
    return kInvalidUsage;
  std::map<Stream, std::pair<double, double>> bytes_of; // sent, received
  for (Call *snd : calls) {
    if (snd->is_recv)
      continue;
    Call *rcv = nullptr;
    for (Call *c : calls)
      if (c->is_recv && c->comm->clique == snd->comm->clique &&
          c->comm->rank == snd->root_or_peer && c->root_or_peer == snd->comm->rank)
        rcv = c;
    if (!rcv || rcv->count != snd->count)
      return kInvalidUsage;
    const std::size_t bytes = snd->count * 4;
    if (!s.is_memory_of(reinterpret_cast<std::uint64_t>(snd->send), bytes, snd->comm->device) ||
        !s.is_memory_of(reinterpret_cast<std::uint64_t>(rcv->recv), bytes, rcv->comm->device))
      return kInvalidArgument;
    std::memcpy(rcv->recv, snd->send, bytes);
    if (wrong("sendrecv") && snd->count > 0)
      rcv->recv[0] += 1;
    bytes_of[snd->stream].first += static_cast<double>(bytes);
    bytes_of[rcv->stream].second += static_cast<double>(bytes);
  }
  for (const auto &[stream, b] : bytes_of)
    if (s.advance(stream, std::max(b.first, b.second) / (rate->get<double>() * 1e9)) != 0)
      return kUnhandledCudaError;
  return kSuccess;
}

// ---- ranks in several processes -----------------------------------------------------------------

namespace fs = std::filesystem;

double wait_seconds() {
  const char *w = std::getenv("DLRIG_FAKE_NCCL_WAIT_S");
  return w && *w ? std::atof(w) : 20;
}

// A thread inside a call that waits on other ranks (wait_for, watch_send_buffer). The process's
// exit handlers must not run under it: real CUDA's and NCCL's teardown at exit would pull the
// library from under the call, so a caller that leaves such a call behind has to end the process
// with _exit. The fake fails closed: an exit handler that finds such a thread kills the process,
// saying so (SIGABRT).
std::atomic<int> g_waiting{0};
struct ExitCheck {
  ~ExitCheck() {
    if (g_waiting.load() == 0)
      return;
    std::fprintf(stderr, "fake NCCL: the process's exit handlers ran while a thread was still "
                         "inside an NCCL call (end the process with _exit instead)\n");
    std::abort();
  }
};
struct Waiting {
  Waiting() {
    static ExitCheck check; // constructed at the first wait, destroyed by exit()
    g_waiting.fetch_add(1);
  }
  ~Waiting() { g_waiting.fetch_sub(1); }
  Waiting(const Waiting &) = delete;
  Waiting &operator=(const Waiting &) = delete;
};

// Waits until every path exists; false after wait_seconds().
bool wait_for(const std::vector<fs::path> &paths) {
  const Waiting waiting;
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_seconds());
  for (;;) {
    bool all = true;
    for (const auto &p : paths)
      all = all && fs::exists(p);
    if (all)
      return true;
    if (std::chrono::steady_clock::now() > until)
      return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Writes `bytes` to path atomically (a temporary file renamed).
bool put(const fs::path &path, const std::string &bytes) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out)
      return false;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  return !ec;
}

std::string slurp(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// One rank's record of an operation: "kind count root_or_peer\n" then the float32 it sends.
std::string record(const Call &c, std::size_t send_n) {
  std::string head =
      c.kind + " " + std::to_string(c.count) + " " + std::to_string(c.root_or_peer) + "\n";
  if (c.send)
    head.append(reinterpret_cast<const char *>(c.send), send_n * 4);
  return head;
}

struct Record {
  std::string kind;
  std::size_t count = 0;
  int root_or_peer = 0;
  std::vector<float> data;
};

bool parse_record(const std::string &bytes, Record &r) {
  auto nl = bytes.find('\n');
  if (nl == std::string::npos)
    return false;
  char kind[32] = {};
  unsigned long long count = 0;
  int peer = 0;
  if (std::sscanf(bytes.substr(0, nl).c_str(), "%31s %llu %d", kind, &count, &peer) != 3)
    return false;
  r.kind = kind;
  r.count = count;
  r.root_or_peer = peer;
  r.data.resize((bytes.size() - nl - 1) / 4);
  std::memcpy(r.data.data(), bytes.data() + nl + 1, r.data.size() * 4);
  return true;
}

fs::path op_file(const Remote &m, std::uint64_t seq, int rank) {
  return fs::path(m.dir) / ("op" + std::to_string(seq) + ".rank" + std::to_string(rank));
}

Result complete(FakeComm &comm, const Pending &p);

// A hook the fake libcuda exports (found by dlopen of DLRIG_CUDA_LIBRARY with RTLD_NOLOAD, the
// copy dlrig loaded); null without it.
template <class Fn> Fn fake_cuda_hook(const char *name) {
  const char *cuda = std::getenv("DLRIG_CUDA_LIBRARY");
  void *h = cuda ? dlopen(cuda, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  return h ? reinterpret_cast<Fn>(dlsym(h, name)) : nullptr;
}

// The fake libcuda's hold on a stream (its queries answer CUDA_ERROR_NOT_READY while held) and the
// progress function it calls whenever a held stream is queried or waited for.
using HoldFn = int (*)(Stream, int, void (*)());
HoldFn hold_fn() {
  static HoldFn f = fake_cuda_hook<HoldFn>("dlrig_fake_cuda_hold");
  return f;
}
void progress_all();

// The fake libcuda's hook that makes a GPU lost, now or at its next query (1 when it was a GPU).
using LoseFn = int (*)(int, int);
LoseFn lose_fn() {
  static LoseFn f = fake_cuda_hook<LoseFn>("dlrig_fake_cuda_lose");
  return f;
}

// The files operation `p` needs from the other ranks.
std::vector<fs::path> needed(const Remote &m, const Pending &p, int rank) {
  if (p.kind == "sendrecv")
    return {op_file(m, p.seq, p.recv_from)};
  std::vector<fs::path> all;
  for (int r = 0; r < m.nranks; ++r)
    if (r != rank)
      all.push_back(op_file(m, p.seq, r));
  return all;
}

// Completes the communicator's queued operations in order, as far as the other ranks' files
// allow: an operation's own file is written when the one before it has completed (so a rank that
// wrote op<seq> has read every op<seq - 1>), its output computed once every file it needs is
// there. The stream is released when nothing is queued on it any more.
void progress(FakeComm &comm) {
  auto &s = state();
  Remote &m = *comm.remote;
  while (!m.pending.empty()) {
    Pending &p = m.pending.front();
    if (!p.written) {
      // "exit_at_op" {"rank": R, "op": N}: rank R's process is killed as it reaches operation N
      // (a rank that crashes in the middle of a job).
      if (const json *e = find(s.scenario, {"exit_at_op"}))
        if (e->value("rank", -1) == comm.rank &&
            e->value("op", -1) == static_cast<long long>(p.seq)) {
          std::fprintf(stderr, "fake NCCL: rank %d killed at operation %llu (exit_at_op)\n",
                       comm.rank, static_cast<unsigned long long>(p.seq));
          std::fflush(stderr);
          raise(SIGKILL);
        }
      // "async_error_at_op" {"rank": R, "op": N, "error": code}: rank R's operation N never
      // starts and the communicator reports `code` (ncclRemoteError is what NCCL's network
      // transport reports when a peer's connection drops).
      if (const json *e = find(s.scenario, {"async_error_at_op"}))
        if (e->value("rank", -1) == comm.rank &&
            e->value("op", -1) == static_cast<long long>(p.seq)) {
          m.async_error = e->value("error", kRemoteError);
          return;
        }
      if (!put(op_file(m, p.seq, comm.rank), p.record)) {
        m.async_error = kSystemError;
        return;
      }
      p.written = true;
    }
    const auto files = needed(m, p, comm.rank);
    if (!std::all_of(files.begin(), files.end(), [](const fs::path &f) { return fs::exists(f); }))
      return; // a kernel that waits for its peers: NCCL's would spin on the GPU
    if (Result r = complete(comm, p); r != kSuccess) {
      // Nothing after it can be trusted: the stream stays held, the error is reported.
      std::fprintf(stderr, "fake NCCL: rank %d: operation %llu: the ranks disagree (%s)\n",
                   comm.rank, static_cast<unsigned long long>(p.seq), p.kind.c_str());
      m.async_error = r;
      m.aborted = true;
      return;
    }
    const Stream stream = p.stream;
    m.pending.pop_front();
    if (std::none_of(m.pending.begin(), m.pending.end(),
                     [&](const Pending &q) { return q.stream == stream; }))
      hold_fn()(stream, 0, nullptr);
  }
}

// Called by the fake libcuda with its own lock held, while this fake's calls take this lock and
// then the fake libcuda's: only tried here, so two threads never wait on each other (a wait
// that misses it progresses at its next poll).
void progress_all() {
  std::unique_lock<std::recursive_mutex> lock(state().mutex, std::try_to_lock);
  if (!lock.owns_lock())
    return;
  for (FakeComm *c : state().remotes)
    if (!c->remote->aborted)
      progress(*c);
}

// One operation of a communicator whose ranks are in several processes: `calls` are this rank's
// (one collective, or a send and a receive). As NCCL's, it returns at once: its time is added to
// the stream now, its data moves when the other ranks' data is there (progress), and until then
// the stream is held.
// Written by rank R's ncclSend as "watch_send_buffer" starts watching.
fs::path sending_file(const Remote &m, int rank) {
  return fs::path(m.dir) / ("sending.rank" + std::to_string(rank));
}

fs::path connection_file(const Remote &m, int from, int to) {
  return fs::path(m.dir) / ("connect.rank" + std::to_string(from) + ".to" + std::to_string(to));
}

// A blocking communicator's first send or receive with a peer connects the two ranks inside
// ncclGroupEnd, as NCCL sets up point-to-point connections when they are first used, waiting
// there for the peer to do the same (at most DLRIG_FAKE_NCCL_WAIT_S; then ncclSystemError). Faults:
// "exit_at_connect" {"rank": R} kills rank R's process as it starts to connect (a rank that dies
// while the others wait inside that call); "connect_never" {"rank": R} leaves R's side unmade, its
// process waiting too (the wrong interface, a firewall between the nodes).
Result connect(FakeComm &comm, int peer) {
  Remote &m = *comm.remote;
  if (!m.blocking || peer == comm.rank ||
      std::find(m.connected.begin(), m.connected.end(), peer) != m.connected.end())
    return kSuccess;
  const json &sc = state().scenario;
  if (const json *e = find(sc, {"exit_at_connect"}); e && e->value("rank", -1) == comm.rank) {
    // With "watch_send_buffer" on the peer, it dies only once the peer's ncclSend is watching.
    if (const json *w = find(sc, {"watch_send_buffer"}); w && w->value("rank", -1) == peer)
      (void)wait_for({sending_file(m, peer)});
    std::fprintf(stderr, "fake NCCL: rank %d killed connecting to rank %d (exit_at_connect)\n",
                 comm.rank, peer);
    std::fflush(stderr);
    raise(SIGKILL);
  }
  const json *never = find(sc, {"connect_never"});
  if (!(never && never->value("rank", -1) == comm.rank) &&
      !put(connection_file(m, comm.rank, peer), ""))
    return kSystemError;
  if (!wait_for({connection_file(m, peer, comm.rank)})) {
    std::fprintf(stderr, "fake NCCL: rank %d: the connection to rank %d was never made\n",
                 comm.rank, peer);
    return kSystemError;
  }
  m.connected.push_back(peer);
  return kSuccess;
}

Result execute_remote(FakeComm &comm, std::vector<Call *> &calls) {
  auto &s = state();
  Remote &m = *comm.remote;
  if (m.aborted)
    return kInvalidUsage;
  const int n = m.nranks;
  Call *snd = nullptr, *rcv = nullptr;
  for (Call *c : calls)
    (c->is_recv ? rcv : snd) = c;
  const std::string kind = calls[0]->kind;
  const json *rate = find(s.scenario, {"busbw_gbs", rate_kind(kind)});
  if (!rate)
    return kInvalidUsage;
  Pending p;
  p.kind = kind;
  double seconds = 0;
  if (kind == "sendrecv") {
    if (!snd || !rcv || calls.size() != 2)
      return kInvalidUsage;
    for (int peer : {snd->root_or_peer, rcv->root_or_peer})
      if (Result r = connect(comm, peer); r != kSuccess)
        return r;
    const std::size_t bytes = snd->count * 4;
    if (!s.is_memory_of(reinterpret_cast<std::uint64_t>(snd->send), bytes, comm.device) ||
        !s.is_memory_of(reinterpret_cast<std::uint64_t>(rcv->recv), rcv->count * 4, comm.device))
      return kInvalidArgument;
    p.record = record(*snd, snd->count);
    p.recv = rcv->recv;
    p.count = rcv->count;
    p.recv_from = rcv->root_or_peer;
    p.stream = snd->stream;
    seconds = static_cast<double>(bytes) / (rate->get<double>() * 1e9);
  } else {
    if (calls.size() != 1 || !snd)
      return kInvalidUsage;
    Call &c = *snd;
    const auto [send_n, recv_n, total_bytes] = elements_of(kind, c.count, n);
    if (!s.is_memory_of(reinterpret_cast<std::uint64_t>(c.send), send_n * 4, comm.device) ||
        !s.is_memory_of(reinterpret_cast<std::uint64_t>(c.recv), recv_n * 4, comm.device))
      return kInvalidArgument;
    p.record = record(c, send_n);
    p.recv = c.recv;
    p.count = c.count;
    p.root = c.root_or_peer;
    p.stream = c.stream;
    seconds = static_cast<double>(total_bytes) * bus_factor(kind, n) / (rate->get<double>() * 1e9) *
              slowdown(comm.rank);
  }
  if (!hold_fn() || s.advance(p.stream, seconds) != 0)
    return kUnhandledCudaError;
  p.seq = m.seq++;
  m.pending.push_back(std::move(p));
  const Stream stream = m.pending.back().stream;
  hold_fn()(stream, 1, progress_all);
  progress(comm);
  return kSuccess;
}

// The output of operation `p` from every rank's file (all present).
Result complete(FakeComm &comm, const Pending &p) {
  Remote &m = *comm.remote;
  const int n = m.nranks;
  if (p.kind == "sendrecv") {
    const fs::path from = op_file(m, p.seq, p.recv_from);
    Record r;
    if (!parse_record(slurp(from), r) || r.kind != "sendrecv" || r.root_or_peer != comm.rank ||
        r.count != p.count || r.data.size() != p.count)
      return kInvalidUsage;
    fs::remove(from); // its only reader
    std::memcpy(p.recv, r.data.data(), p.count * 4);
    if (wrong("sendrecv") && p.count > 0)
      p.recv[0] += 1;
    return kSuccess;
  }
  const std::string &kind = p.kind;
  const std::size_t count = p.count;
  const auto [send_n, recv_n, total_bytes] = elements_of(kind, count, n);
  std::vector<Record> in(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    Record &x = in[static_cast<std::size_t>(r)];
    if (!parse_record(slurp(op_file(m, p.seq, r)), x) || x.kind != kind || x.count != count ||
        x.root_or_peer != p.root || x.data.size() != send_n)
      return kInvalidUsage; // the ranks disagree on the operation
  }
  // Every rank wrote op<seq>, so all have finished reading op<seq - 1>.
  if (p.seq > 0)
    fs::remove(op_file(m, p.seq - 1, comm.rank));
  std::vector<float> out(recv_n);
  for (std::size_t i = 0; i < recv_n; ++i) {
    float v = 0;
    if (kind == "all_reduce")
      for (const Record &x : in)
        v += x.data[i];
    else if (kind == "all_reduce_max")
      for (std::size_t q = 0; q < in.size(); ++q)
        v = q == 0 ? in[q].data[i] : std::max(v, in[q].data[i]);
    else if (kind == "all_gather")
      v = in[i / count].data[i % count];
    else if (kind == "reduce_scatter")
      for (const Record &x : in)
        v += x.data[static_cast<std::size_t>(comm.rank) * count + i];
    else // broadcast
      v = in[static_cast<std::size_t>(p.root)].data[i];
    out[i] = v;
  }
  if (wrong(kind) && !out.empty())
    out[0] += 1;
  std::memcpy(p.recv, out.data(), recv_n * 4);
  return kSuccess;
}

// Runs the queued calls: collectives grouped per communicator clique and kind, in call order.
Result flush() {
  auto &s = state();
  std::vector<Call> calls;
  calls.swap(s.queued);
  std::map<FakeComm *, std::vector<Call *>> remote;
  for (Call &c : calls)
    if (c.comm->remote)
      remote[c.comm].push_back(&c);
  for (auto &[comm, list] : remote)
    if (Result r = execute_remote(*comm, list); r != kSuccess)
      return r;
  // "lose_gpu_at_op" {"gpu": G, "op": N}: in one process, GPU G falls off the bus at the N-th
  // group of calls (counted from 0): the fake libcuda answers every later call on it with its
  // "lost_error", and the other GPUs' streams are held, as their kernels would wait for its data
  // for ever (released by ncclCommAbort). With "when": "query" GPU G keeps answering until the
  // next cuEventQuery or cuStreamQuery on it (a GPU that fails once everything is queued).
  if (std::any_of(calls.begin(), calls.end(), [](const Call &c) { return !c.comm->remote; })) {
    const long long op = s.local_ops++;
    if (const json *lose = find(s.scenario, {"lose_gpu_at_op"});
        lose && lose->value("op", -1LL) == op) {
      const int gpu = lose->value("gpu", -1);
      const int at_query = lose->value("when", "") == "query" ? 1 : 0;
      if (!lose_fn() || lose_fn()(gpu, at_query) != 1)
        return kUnhandledCudaError;
      for (const Call &c : calls)
        if (!c.comm->remote && c.comm->device != gpu && hold_fn()(c.stream, 1, nullptr))
          s.held.push_back(c.stream);
      return kSuccess;
    }
  }
  std::vector<Call *> p2p;
  std::map<std::pair<Clique *, std::string>, std::vector<Call *>> by;
  std::vector<std::pair<Clique *, std::string>> order;
  for (Call &c : calls) {
    if (c.comm->remote)
      continue;
    if (c.kind == "sendrecv") {
      p2p.push_back(&c);
      continue;
    }
    auto key = std::make_pair(c.comm->clique, c.kind);
    if (!by.count(key))
      order.push_back(key);
    by[key].push_back(&c);
  }
  for (const auto &key : order) {
    auto &list = by[key];
    const std::size_t n = key.first->ranks.size();
    if (list.size() % n != 0)
      return kInvalidUsage; // a rank did not call
    for (std::size_t at = 0; at < list.size(); at += n) {
      std::vector<Call *> one(n, nullptr);
      for (std::size_t i = at; i < at + n; ++i) {
        auto r = static_cast<std::size_t>(list[i]->comm->rank);
        if (one[r])
          return kInvalidUsage; // the same rank twice in one operation
        one[r] = list[i];
      }
      if (Result res = execute(key.second, one); res != kSuccess)
        return res;
    }
  }
  return p2p.empty() ? kSuccess : execute_p2p(p2p);
}

Result submit(Call c) {
  auto &s = state();
  if (!c.comm || !c.comm->clique)
    return kInvalidArgument;
  s.queued.push_back(c);
  if (s.group_depth > 0)
    return kSuccess;
  if (c.comm->clique->ranks.size() > 1 || (c.comm->remote && c.comm->remote->nranks > 1)) {
    s.queued.clear();
    std::fprintf(stderr, "fake NCCL: %s outside a group on %zu ranks would wait forever\n",
                 g_symbol, c.comm->clique->ranks.size());
    return kInvalidUsage;
  }
  return flush();
}

namespace impl {

Result get_version(int *version) {
  FAKE_ENTER();
  if (!version)
    return kInvalidArgument;
  *version = state().scenario.value("version", 0);
  return kSuccess;
}

const char *get_error_string(Result r) {
  switch (r) {
  case kSuccess:
    return "no error";
  case kUnhandledCudaError:
    return "unhandled cuda error";
  case kSystemError:
    return "unhandled system error";
  case kInvalidArgument:
    return "invalid argument";
  case kInvalidUsage:
    return "invalid usage";
  case kRemoteError:
    return "remote process exited or there was a network error";
  default:
    return "unknown result code";
  }
}

// As NCCL with NCCL_DEBUG set: its version line, once, at the first communicator, on standard
// output unless NCCL_DEBUG_FILE names a file (opened with fopen "w", as NCCL's debug.cc does).
void debug_version_line() {
  static bool done = false;
  if (done || !std::getenv("NCCL_DEBUG"))
    return;
  done = true;
  const char *path = std::getenv("NCCL_DEBUG_FILE");
  FILE *f = path && *path ? std::fopen(path, "w") : stdout;
  if (!f)
    return;
  std::fprintf(f, "NCCL version %d (fake NCCL)\n", state().scenario.value("version", 0));
  std::fflush(f);
}

Result comm_init_all(Comm *comms, int count, const int *devices) {
  FAKE_ENTER();
  if (!comms || count <= 0 || !devices)
    return kInvalidArgument;
  debug_version_line();
  // "conf" {variable: value}: what NCCL's configuration files would set as it initialises
  // (setenv without overwriting: the environment wins, as in NCCL's src/misc/param.cc).
  if (const json *conf = find(state().scenario, {"conf"}))
    for (const auto &[name, value] : conf->items())
      setenv(name.c_str(), value.get<std::string>().c_str(), 0);
  auto *clique = new Clique; // lives as long as the process (other ranks may still use it)
  state().cliques.push_back(clique);
  for (int r = 0; r < count; ++r) {
    auto *c = new FakeComm{clique, r, devices[r]};
    clique->ranks.push_back(c);
    comms[r] = reinterpret_cast<Comm>(c);
  }
  return kSuccess;
}

// The id: "fake-nccl " and a token unique to this process and call, zero-padded.
Result get_unique_id(UniqueId *id) {
  FAKE_ENTER();
  if (!id)
    return kInvalidArgument;
  static int made = 0;
  std::memset(id->internal, 0, sizeof id->internal);
  std::snprintf(
      id->internal, sizeof id->internal, "fake-nccl %d-%d-%lld", static_cast<int>(getpid()), ++made,
      static_cast<long long>(std::chrono::steady_clock::now().time_since_epoch().count()));
  return kSuccess;
}

// "exit_at_init" {"rank": R}: rank R's process is killed as it enters ncclCommInitRank(Config)
// (a rank that dies before its communicator exists; the others wait inside NCCL's bootstrap).
void exit_at_init(int rank) {
  if (const json *e = find(state().scenario, {"exit_at_init"}))
    if (e->value("rank", -1) == rank) {
      std::fprintf(stderr, "fake NCCL: rank %d killed in ncclCommInitRank (exit_at_init)\n", rank);
      std::fflush(stderr);
      raise(SIGKILL);
    }
}

// This rank's file in the unique id's meeting folder: the communicator's Remote, and the rank's
// GPU (the current context's, from the fake libcuda).
Result join(int nranks, const UniqueId &id, int rank, std::unique_ptr<Remote> &m, int &device,
            bool write_file = true) {
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return kInvalidArgument;
  const std::string token(id.internal, strnlen(id.internal, sizeof id.internal));
  if (token.rfind("fake-nccl ", 0) != 0 || token.size() < 11 ||
      token.find_first_of("/.", 10) != std::string::npos) {
    std::fprintf(stderr, "fake NCCL: ncclCommInitRank: the unique id is not one ncclGetUniqueId "
                         "made\n");
    return kInvalidArgument;
  }
  const char *base = std::getenv("DLRIG_FAKE_NCCL_DIR");
  if (!base || !*base) {
    std::fprintf(stderr, "fake NCCL: ncclCommInitRank needs DLRIG_FAKE_NCCL_DIR\n");
    return kSystemError;
  }
  device = -1;
  using CurrentFn = int (*)();
  const char *cuda = std::getenv("DLRIG_CUDA_LIBRARY");
  if (void *h = cuda ? dlopen(cuda, RTLD_NOW | RTLD_NOLOAD) : nullptr)
    if (auto f = reinterpret_cast<CurrentFn>(dlsym(h, "dlrig_fake_cuda_current_device")))
      device = f();
  if (device < 0) {
    std::fprintf(stderr, "fake NCCL: ncclCommInitRank with no current GPU\n");
    return kUnhandledCudaError;
  }
  m = std::make_unique<Remote>();
  m->dir = (fs::path(base) / token.substr(10)).string();
  m->token = token;
  m->nranks = nranks;
  std::error_code ec;
  fs::create_directories(m->dir, ec);
  if (write_file &&
      !put(fs::path(m->dir) / ("rank" + std::to_string(rank)),
           std::to_string(nranks) + " " + std::to_string(device) + " " + std::to_string(getpid())))
    return kSystemError;
  m->joined_until = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(wait_seconds()));
  return kSuccess;
}

std::vector<fs::path> rank_files(const Remote &m) {
  std::vector<fs::path> all;
  for (int r = 0; r < m.nranks; ++r)
    all.push_back(fs::path(m.dir) / ("rank" + std::to_string(r)));
  return all;
}

// Every rank's file is there: their nranks agree and no two share a GPU (as NCCL).
Result check_meeting(const Remote &m, int rank) {
  const auto all = rank_files(m);
  std::map<int, int> on; // device -> rank
  for (int r = 0; r < m.nranks; ++r) {
    const fs::path &p = all[static_cast<std::size_t>(r)];
    int their_nranks = 0, their_device = -1;
    if (std::sscanf(slurp(p).c_str(), "%d %d", &their_nranks, &their_device) != 2 ||
        their_nranks != m.nranks) {
      std::fprintf(stderr, "fake NCCL: rank %d: %s says \"%s\", this rank nranks %d\n", rank,
                   p.c_str(), slurp(p).c_str(), m.nranks);
      return kInvalidArgument;
    }
    // One machine's processes see the same fake GPUs: as NCCL, one rank per GPU.
    if (auto [it, fresh] = on.emplace(their_device, r); !fresh) {
      std::fprintf(stderr,
                   "fake NCCL: Duplicate GPU detected: rank %d and rank %d both on CUDA "
                   "device %d\n",
                   it->second, r, their_device);
      return kInvalidUsage;
    }
  }
  return kSuccess;
}

void never_met(const Remote &m, int rank) {
  std::fprintf(stderr,
               "fake NCCL: rank %d of %d: the other ranks never met under unique id "
               "\"%s\" (a rank handed another id, or one that never came)\n",
               rank, m.nranks, m.token.c_str());
}

FakeComm *add_comm(std::unique_ptr<Remote> m, int rank, int device) {
  auto *clique = new Clique;
  auto *c = new FakeComm{clique, rank, device, std::move(m)};
  clique->ranks.push_back(c);
  state().remotes.push_back(c);
  return c;
}

// ncclCommInitRank, and ncclCommInitRankConfig blocking or not (see below).
Result init(Comm *comm, int nranks, UniqueId id, int rank, bool blocking) {
  FAKE_ENTER();
  if (!comm)
    return kInvalidArgument;
  exit_at_init(rank);
  debug_version_line();
  // "init_never_joins" {"rank": R}: rank R's init never reaches the others (its connections
  // cannot be made: the wrong interface, a firewall), its process alive: a non-blocking init stays
  // in progress, a blocking one waits (as every rank's then does) until DLRIG_FAKE_NCCL_WAIT_S.
  const json *stuck = find(state().scenario, {"init_never_joins"});
  const bool never_joins = stuck && stuck->value("rank", -1) == rank;
  std::unique_ptr<Remote> m;
  int device = -1;
  if (Result r = join(nranks, id, rank, m, device, !never_joins); r != kSuccess)
    return r;
  m->blocking = blocking;
  if (!blocking) {
    m->joining = true;
    m->async_error = kInProgress;
    *comm = reinterpret_cast<Comm>(add_comm(std::move(m), rank, device));
    return kInProgress;
  }
  if (!wait_for(rank_files(*m))) {
    never_met(*m, rank);
    return kSystemError;
  }
  if (Result r = check_meeting(*m, rank); r != kSuccess)
    return r;
  *comm = reinterpret_cast<Comm>(add_comm(std::move(m), rank, device));
  return kSuccess;
}

Result comm_init_rank(Comm *comm, int nranks, UniqueId id, int rank) {
  return init(comm, nranks, id, rank, true);
}

// ncclCommInitRankConfig: the config must be one NCCL_CONFIG_INITIALIZER made (magic, version
// >= 2.14, the size covering `blocking`), else ncclInvalidArgument. Blocking (the default): as
// ncclCommInitRank. Non-blocking (blocking 0): the communicator is returned at once with
// ncclInProgress, and ncclCommGetAsyncError answers ncclInProgress until every rank has joined
// (then ncclSuccess, or the meeting's error), ncclSystemError after DLRIG_FAKE_NCCL_WAIT_S.
Result comm_init_rank_config(Comm *comm, int nranks, UniqueId id, int rank, Config *config) {
  if (!config || config->magic != 0xcafebeef || config->version < 21400 ||
      config->size < offsetof(Config, blocking) + sizeof(int)) {
    std::fprintf(stderr, "fake NCCL: ncclConfig_t argument not initialized via "
                         "NCCL_CONFIG_INITIALIZER\n");
    return kInvalidArgument;
  }
  return init(comm, nranks, id, rank, config->blocking != 0);
}

// Ends the communicator's operations that wait (their streams released, as NCCL's aborted
// kernels return); it takes no further operation.
Result comm_abort(Comm comm) {
  FAKE_ENTER();
  FakeComm *c = reinterpret_cast<FakeComm *>(comm);
  if (!c)
    return kInvalidArgument;
  if (c->remote) {
    c->remote->aborted = true;
    for (const Pending &p : c->remote->pending)
      hold_fn()(p.stream, 0, nullptr);
    c->remote->pending.clear();
  } else {
    for (Stream st : state().held)
      hold_fn()(st, 0, nullptr);
    state().held.clear();
  }
  return kSuccess;
}

// The communicator's asynchronous error: an operation whose ranks disagreed, or what
// "async_error_at_op" {"rank": R, "op": N, "error": code} injects (see progress).
Result comm_get_async_error(Comm comm, Result *async_error) {
  FAKE_ENTER();
  FakeComm *c = reinterpret_cast<FakeComm *>(comm);
  if (!c || !async_error)
    return kInvalidArgument;
  if (c->remote && c->remote->joining) { // a non-blocking ncclCommInitRankConfig
    Remote &m = *c->remote;
    const auto files = rank_files(m);
    if (std::all_of(files.begin(), files.end(), [](const fs::path &f) { return fs::exists(f); })) {
      m.joining = false;
      m.async_error = check_meeting(m, c->rank);
    } else if (std::chrono::steady_clock::now() > m.joined_until) {
      m.joining = false;
      never_met(m, c->rank);
      m.async_error = kSystemError;
    }
  }
  *async_error = c->remote ? c->remote->async_error : kSuccess;
  return kSuccess;
}
Result comm_destroy(Comm comm) {
  FAKE_ENTER();
  if (!comm)
    return kInvalidArgument;
  return kSuccess; // the clique stays: other ranks may still use it
}

Result group_start() {
  FAKE_ENTER();
  ++state().group_depth;
  return kSuccess;
}

Result group_end() {
  FAKE_ENTER();
  auto &s = state();
  if (s.group_depth <= 0)
    return kInvalidUsage;
  if (--s.group_depth > 0)
    return kSuccess;
  return flush();
}

FakeComm *comm_of(Comm c) {
  return reinterpret_cast<FakeComm *>(c);
}

Result all_reduce(const void *send, void *recv, std::size_t count, DataType type, RedOp op,
                  Comm comm, Stream stream) {
  FAKE_ENTER();
  if (type != kFloat32 || (op != kSum && op != kMax))
    return kInvalidArgument;
  return submit({op == kMax ? "all_reduce_max" : "all_reduce", false,
                 static_cast<const float *>(send), static_cast<float *>(recv), count, 0,
                 comm_of(comm), stream});
}

Result all_gather(const void *send, void *recv, std::size_t send_count, DataType type, Comm comm,
                  Stream stream) {
  FAKE_ENTER();
  if (type != kFloat32)
    return kInvalidArgument;
  return submit({"all_gather", false, static_cast<const float *>(send), static_cast<float *>(recv),
                 send_count, 0, comm_of(comm), stream});
}

Result reduce_scatter(const void *send, void *recv, std::size_t recv_count, DataType type, RedOp op,
                      Comm comm, Stream stream) {
  FAKE_ENTER();
  if (type != kFloat32 || op != kSum)
    return kInvalidArgument;
  return submit({"reduce_scatter", false, static_cast<const float *>(send),
                 static_cast<float *>(recv), recv_count, 0, comm_of(comm), stream});
}

Result broadcast(const void *send, void *recv, std::size_t count, DataType type, int root,
                 Comm comm, Stream stream) {
  FAKE_ENTER();
  if (type != kFloat32 || !comm_of(comm) || root < 0 ||
      static_cast<std::size_t>(root) >=
          (comm_of(comm)->remote ? static_cast<std::size_t>(comm_of(comm)->remote->nranks)
                                 : comm_of(comm)->clique->ranks.size()))
    return kInvalidArgument;
  return submit({"broadcast", false, static_cast<const float *>(send), static_cast<float *>(recv),
                 count, root, comm_of(comm), stream});
}

// "watch_send_buffer" {"rank": R, "seconds": S}: rank R's ncclSend watches its buffer for S
// seconds before it returns, and kills its process, saying so, if the caller frees the buffer
// meanwhile (what NCCL would then read is freed memory): a caller that leaves a call behind inside
// NCCL must leave it its buffers too. A rank that "exit_at_connect" kills waits until this
// watch has started (so its death finds the peer inside ncclSend).
void watch_send_buffer(const void *buffer, std::size_t count, const FakeComm *comm) {
  const json *w = find(state().scenario, {"watch_send_buffer"});
  if (!w || !comm || w->value("rank", -1) != comm->rank)
    return;
  const Waiting waiting;
  if (comm->remote)
    (void)put(sending_file(*comm->remote, comm->rank), "");
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(w->value("seconds", 1.0));
  while (std::chrono::steady_clock::now() < until) {
    if (!state().is_memory_of(reinterpret_cast<std::uint64_t>(buffer), count * 4, comm->device)) {
      std::fprintf(stderr,
                   "fake NCCL: rank %d's send buffer was freed while its ncclSend ran "
                   "(watch_send_buffer)\n",
                   comm->rank);
      std::abort();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Result send(const void *buffer, std::size_t count, DataType type, int peer, Comm comm,
            Stream stream) {
  FAKE_ENTER();
  if (type != kFloat32)
    return kInvalidArgument;
  watch_send_buffer(buffer, count, comm_of(comm));
  return submit({"sendrecv", false, static_cast<const float *>(buffer), nullptr, count, peer,
                 comm_of(comm), stream});
}

Result recv(void *buffer, std::size_t count, DataType type, int peer, Comm comm, Stream stream) {
  FAKE_ENTER();
  if (type != kFloat32)
    return kInvalidArgument;
  return submit({"sendrecv", true, nullptr, static_cast<float *>(buffer), count, peer,
                 comm_of(comm), stream});
}

} // namespace impl

template <class T> T on_exception() {
  if constexpr (std::is_same_v<T, Result>)
    return kInternalError;
  else
    return T{};
}

} // namespace

#define FAKE_EXPORT(field, ret, params, args, name)                                                \
  extern "C" __attribute__((visibility("default"))) ret name params {                              \
    CalledAs called_as(#name);                                                                     \
    try {                                                                                          \
      return impl::field args;                                                                     \
    } catch (const std::exception &e) {                                                            \
      std::fprintf(stderr, "fake NCCL: %s: scenario value unusable: %s\n", #name, e.what());       \
      return on_exception<ret>();                                                                  \
    }                                                                                              \
  }
DLRIG_NCCL_ENTRY_POINTS(FAKE_EXPORT)
