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
// output is off by one]; "errors" {symbol: ncclResult_t}; "conf" {variable: value} set at
// ncclCommInitAll unless the environment has it (NCCL's configuration files). It fails closed: no
// or an unreadable scenario fails ncclCommInitAll; a collective without a rate is ncclInvalidUsage;
// a buffer that is not the rank's GPU memory is ncclInvalidArgument.
#include "dlrig/platform/nccl_entry_points.hpp"

#include "fake_common/fake_library.hpp"

#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

using namespace dlrig::nccl;
using dlrig::fake::CalledAs;
using dlrig::fake::find;
using dlrig::fake::g_symbol;
using nlohmann::json;

namespace {

struct Clique;
struct FakeComm {
  Clique *clique = nullptr;
  int rank = 0, device = 0;
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
  std::recursive_mutex mutex;
};

State &state() {
  static State s;
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

double bus_factor(const std::string &kind, int n) {
  if (kind == "all_reduce")
    return 2.0 * (n - 1) / n;
  if (kind == "all_gather" || kind == "reduce_scatter")
    return static_cast<double>(n - 1) / n;
  return 1;
}

bool wrong(const std::string &kind) {
  if (const json *w = find(state().scenario, {"wrong"}))
    for (const auto &k : *w)
      if (k == kind)
        return true;
  return false;
}

// Carries out one collective: `calls` holds one call per rank, in rank order.
Result execute(const std::string &kind, std::vector<Call *> &calls) {
  auto &s = state();
  const int n = static_cast<int>(calls.size());
  const json *rate = find(s.scenario, {"busbw_gbs", kind.c_str()});
  if (!rate)
    return kInvalidUsage;
  const std::size_t count = calls[0]->count;
  std::size_t send_n = count, recv_n = count, total_bytes = count * 4;
  if (kind == "all_gather") {
    recv_n = count * static_cast<std::size_t>(n);
    total_bytes = recv_n * 4;
  } else if (kind == "reduce_scatter") {
    send_n = count * static_cast<std::size_t>(n);
    total_bytes = send_n * 4;
  }
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

// Runs the queued calls: collectives grouped per communicator clique and kind, in call order.
Result flush() {
  auto &s = state();
  std::vector<Call> calls;
  calls.swap(s.queued);
  std::vector<Call *> p2p;
  std::map<std::pair<Clique *, std::string>, std::vector<Call *>> by;
  std::vector<std::pair<Clique *, std::string>> order;
  for (Call &c : calls) {
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
  if (c.comm->clique->ranks.size() > 1) {
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
  default:
    return "unknown result code";
  }
}

Result comm_init_all(Comm *comms, int count, const int *devices) {
  FAKE_ENTER();
  if (!comms || count <= 0 || !devices)
    return kInvalidArgument;
  // "conf" {variable: value}: what NCCL's configuration files would set as it initialises
  // (setenv without overwriting: the environment wins, as in NCCL's src/misc/param.cc).
  if (const json *conf = find(state().scenario, {"conf"}))
    for (const auto &[name, value] : conf->items())
      setenv(name.c_str(), value.get<std::string>().c_str(), 0);
  auto *clique = new Clique; // lives as long as its communicators (dlrig keeps them)
  for (int r = 0; r < count; ++r) {
    auto *c = new FakeComm{clique, r, devices[r]};
    clique->ranks.push_back(c);
    comms[r] = reinterpret_cast<Comm>(c);
  }
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
  if (type != kFloat32 || op != kSum)
    return kInvalidArgument;
  return submit({"all_reduce", false, static_cast<const float *>(send), static_cast<float *>(recv),
                 count, 0, comm_of(comm), stream});
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
      static_cast<std::size_t>(root) >= comm_of(comm)->clique->ranks.size())
    return kInvalidArgument;
  return submit({"broadcast", false, static_cast<const float *>(send), static_cast<float *>(recv),
                 count, root, comm_of(comm), stream});
}

Result send(const void *buffer, std::size_t count, DataType type, int peer, Comm comm,
            Stream stream) {
  FAKE_ENTER();
  if (type != kFloat32)
    return kInvalidArgument;
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
