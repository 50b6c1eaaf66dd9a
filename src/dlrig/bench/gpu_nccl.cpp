// nccl.{all_reduce,all_gather,reduce_scatter,broadcast,sendrecv}: NCCL collectives across every
// local GPU from one process (docs/bench.md, "nccl.*"). NCCL is loaded at run time
// (platform/nccl.hpp), preferably the copy the user's PyTorch loads; one communicator per GPU from
// ncclCommInitAll, every rank's call inside one ncclGroupStart/End. Sizes are swept; each sample
// times kIterations back-to-back operations with CUDA events on every GPU's stream (the slowest
// GPU's interval); the result is verified on sampled elements of every rank's output.
// Formulas: nccl-tests' (benchmarking.md §1.3): algbw = S / t with S the bytes nccl-tests counts
// for the collective, busbw = algbw x 2(n-1)/n (all_reduce), (n-1)/n (all_gather,
// reduce_scatter), 1 (broadcast, sendrecv). The rate the harness keeps is busbw; algbw is in the
// details. NVML's clocks, power, temperature and clock-event reasons are read for every rank's GPU
// once per sample while the operations run (StateLog, as the other GPU families); the algorithm
// and protocol NCCL_ALGO / NCCL_PROTO request are recorded per collective (nccl_request).
// As one rank of a multi-process job (join_nccl_job, docs/bench.md "Multi-node"): this process
// drives one GPU, its communicator from ncclCommInitRankConfig (non-blocking; ncclCommInitRank
// before NCCL 2.14) with the unique id of the rendezvous, a
// fixed number of samples (every rank must issue the same collectives), its own GPU's events.
// While a job's collectives run the rank polls its GPU (cuEventQuery) instead of blocking, and
// watches NCCL's asynchronous error and the rendezvous's connections (JobLinks): a rank that
// ended or failed stops the job on every rank (ncclCommAbort) instead of leaving the others
// inside a collective that never completes.
#include "dlrig/bench/gpu.hpp"
#include "dlrig/bench/ranks.hpp"
#include "dlrig/core/exit_code.hpp"
#include "dlrig/core/text.hpp"
#include "dlrig/platform/nccl.hpp"
#include "dlrig/platform/process.hpp"

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

namespace dlrig::bench {

namespace gpu {
namespace {
// Pieces of `text` between `sep`s, empty ones dropped (strtok's view, as NCCL splits).
std::vector<std::string_view> pieces(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = std::min(text.find(sep, at), text.size());
    if (end > at)
      out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}
} // namespace

NcclRequest nccl_request(std::string_view setting, std::string_view function, int version) {
  const NcclRequest unknown{std::nullopt, false};
  // NCCL's ncclFuncStr (src/init.cc): the functions its tuner chooses for.
  static constexpr std::string_view kFunctions[] = {"Broadcast", "Reduce", "AllGather",
                                                    "ReduceScatter", "AllReduce"};
  const auto entries = pieces(setting, ';');
  if (entries.empty())
    return unknown; // NCCL 2.24 keeps its defaults, older versions disable everything
  const bool prefixes = version >= 22400; // NCCL 2.24.3 added "function:list" entries
  if (!prefixes)
    return setting.find_first_of(":;") == std::string_view::npos
               ? NcclRequest{std::string(setting), true}
               : unknown;
  NcclRequest out;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto parts = pieces(entries[i], ':');
    if (parts.empty() || parts.size() > 2 || (parts.size() == 1 && i > 0))
      return unknown;
    const bool all = parts.size() == 1;
    if (!all && std::none_of(std::begin(kFunctions), std::end(kFunctions),
                             [&](std::string_view f) { return same_name(f, parts[0]); }))
      return unknown;
    if (all || same_name(parts[0], function))
      out.requested = std::string(parts.back());
  }
  return out;
}
} // namespace gpu

namespace {

using namespace gpu;

struct Nccl {
  nccl::Library lib;
  std::vector<int> devices;          // the GPUs the communicators span, in rank order
  std::vector<nccl::Comm> comms;     // one per rank; empty until first use
  std::optional<std::string> failed; // ncclCommInitAll's failure, kept for later benchmarks
  // NCCL_ALGO and NCCL_PROTO in the environment before NCCL was loaded: NCCL adds what its
  // configuration files set (setenv without overwriting) when it initialises, so a value there
  // only afterwards came from such a file.
  std::optional<std::string> algo_env, proto_env;
  // One rank of a multi-process job (join_nccl_job); nullopt: every local GPU from this process.
  std::optional<RankSpec> job;
  int job_gpu = 0; // the GPU this rank drives (rank_gpu)
  nccl::UniqueId id{};
  JobLinks links; // the rendezvous's connections to the other ranks
  // Why the job stopped (stop_job); every later benchmark fails with it.
  std::optional<std::string> stopped;
  // The Skip being thrown was decided before anything was queued (run): in a job every rank
  // throws it, in one process no communicator waits on it.
  bool skip_before_queueing = false;
  // The job's communicator is non-blocking (ncclCommInitRankConfig, NCCL 2.14+): a call may
  // answer ncclInProgress and finish in the background (settle).
  bool nonblocking = false;
  // The job's ranks and this process's first (the whole communicator from one process: 0).
  int world() const { return job ? job->nranks : static_cast<int>(devices.size()); }
  int first() const { return job ? job->rank : 0; }
};

std::optional<std::string> env_text(const char *name) {
  const char *v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

// NCCL writes its log (NCCL_DEBUG) to standard output unless NCCL_DEBUG_FILE names a file, which
// mixes it into dlrig's results: on an H100 with NCCL_DEBUG=WARN, "NCCL version 2.28.9+cuda13.0"
// came ahead of `--json`'s document, which no longer parsed. Where standard error is a terminal or
// a pipe, NCCL's log is sent there (NCCL_DEBUG_FILE=/dev/stderr); NCCL opens that file with
// fopen(..., "w"), which would empty a regular file, so then dlrig only says what to set.
void nccl_log_off_stdout() {
  if (!std::getenv("NCCL_DEBUG") || std::getenv("NCCL_DEBUG_FILE"))
    return;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) == 0 && !S_ISREG(st.st_mode)) {
    setenv("NCCL_DEBUG_FILE", "/dev/stderr", 0);
    return;
  }
  fmt::print(stderr, "bench: NCCL_DEBUG is set, so NCCL writes its log to standard output, among "
                     "dlrig's results; set NCCL_DEBUG_FILE (for example nccl.%h.%p.log) to keep "
                     "them apart\n");
}

Nccl &nccl_lib(const Context &ctx) {
  static Nccl *n = [&] {
    nccl_log_off_stdout();
    auto algo = env_text("NCCL_ALGO"), proto = env_text("NCCL_PROTO");
    const char *env = std::getenv("DLRIG_NCCL_LIBRARY");
    auto override_path = env && *env ? std::optional<std::string>(env) : std::nullopt;
    return new Nccl{nccl::Library::open(nccl::candidates(ctx.snapshot, override_path)),
                    {},
                    {},
                    {},
                    algo,
                    proto};
  }();
  return *n;
}

// One NCCL call (nc_call, below): an error is thrown as nccl::Error; a job's non-blocking
// communicator's ncclInProgress is waited for.
#define DLRIG_NC(ctx, field, ...)                                                                  \
  nc_call(nccl_lib(ctx), nccl_lib(ctx).lib.api().field __VA_OPT__(, ) __VA_ARGS__)

// Every communicator aborted (NCCL's kernels still waiting return, its resources are freed) and
// forgotten: the next configuration makes new ones, unless the job stopped.
void abort_all(Nccl &n) {
  for (nccl::Comm c : n.comms)
    if (c && n.lib.api().comm_abort)
      (void)n.lib.api().comm_abort(c);
  n.comms.clear();
}

// A job stops here: the communicator aborted (NCCL's kernels that wait for a rank that will never
// join return, and its resources are freed), the reason kept for every later benchmark, the other
// ranks told (rank 0 passes it on to the rest). Throws the reason.
// `after`: what became of this rank's NCCL call.
[[noreturn]] void stop_job(Nccl &n, const std::string &why,
                           const std::string &after = "this rank aborted its NCCL communicator") {
  if (!n.stopped) {
    n.stopped = why;
    abort_all(n);
    n.failed = fmt::format("the job stopped: {}; {}", why, after);
    n.links.tell("abort " + why);
  }
  throw std::runtime_error(*n.failed);
}

// One process, after a configuration failed: what it queued on the other GPUs may wait for ever
// for a GPU that failed (NCCL answers a CUDA error, ncclUnhandledCudaError, without naming the
// GPU). Every GPU of the communicators is asked (a sticky error marks it lost, so the next
// configurations skip it) and the communicators are aborted; the next configuration makes new
// ones. Returns the GPUs found lost now (Runtime's words).
std::vector<std::string> release(Nccl &n) {
  std::vector<std::string> lost;
  if (n.comms.empty())
    return lost;
  Runtime &rt = Runtime::get();
  for (int g : n.devices) {
    const bool before = rt.devices()[static_cast<std::size_t>(g)].lost.has_value();
    try {
      rt.use(g);
    } catch (const std::exception &) {
    }
    if (const auto &why = rt.devices()[static_cast<std::size_t>(g)].lost; why && !before)
      lost.push_back(*why);
  }
  abort_all(n);
  return lost;
}

// The communicators can no longer complete what was queued (a rank or a GPU is gone, NCCL
// reported an error): each is aborted, so that NCCL's kernels waiting on the other GPUs return, and
// `why` is thrown. In a job the job stops (stop_job); in one process the next configuration makes
// new communicators over the GPUs still usable.
[[noreturn]] void abandon(Nccl &n, const std::string &why) {
  if (n.job)
    stop_job(n, why);
  (void)release(n);
  throw std::runtime_error(why + "; the communicators were aborted (ncclCommAbort)");
}

// NCCL's asynchronous state of the communicators (ncclCommGetAsyncError; a query that fails
// counts as its answer): the first error, if any; `pending` is set while a non-blocking call is
// still in progress on one of them.
std::optional<nccl::Result> async_error(Nccl &n, bool &pending) {
  pending = false;
  for (nccl::Comm c : n.comms) {
    if (!c)
      continue;
    nccl::Result e = nccl::kSuccess;
    if (nccl::Result r = n.lib.api().comm_get_async_error(c, &e); r != nccl::kSuccess)
      e = r;
    if (e == nccl::kInProgress)
      pending = true;
    else if (e != nccl::kSuccess)
      return e;
  }
  return std::nullopt;
}

// A pause between two polls: 10 us at first, doubling up to 1 ms.
void back_off(std::chrono::microseconds &pause) {
  std::this_thread::sleep_for(pause);
  pause = std::min(pause * 2, std::chrono::microseconds(1000));
}

// Between two polls: what the other ranks sent or whether their connection closed (JobLinks; a
// rank gone or failed abandons the communicators), then the pause.
void between_polls(Nccl &n, std::chrono::microseconds &pause) {
  if (auto why = n.links.lost())
    abandon(n, *why);
  back_off(pause);
}

// Waits until a non-blocking communicator's calls have finished (ncclCommGetAsyncError leaves
// ncclInProgress), polling as await does and watching the other ranks meanwhile: NCCL sets up a
// job's connections in the background (the bootstrap in ncclCommInitRankConfig, a first
// collective's in ncclGroupEnd) and would wait there for ever for a rank that died. An error, or
// a rank gone, stops the job (abandon).
// Why a communicator's creation that outlived the job's limit stops it.
std::string never_connected(const Nccl &n, const std::string &call,
                            std::chrono::steady_clock::duration limit) {
  return fmt::format("rank {}: {} did not finish within {} s although every rank had met at the "
                     "rendezvous: NCCL's own connections between the ranks are not being made; "
                     "check that the ranks reach each other on the network interface NCCL picks "
                     "(NCCL_SOCKET_IFNAME, a firewall between the nodes) and what NCCL_DEBUG=WARN "
                     "reports; DLRIG_RENDEZVOUS_TIMEOUT_S sets the limit",
                     n.first(), call,
                     std::chrono::duration_cast<std::chrono::seconds>(limit).count());
}

void settle(Nccl &n, const std::string &call,
            std::optional<std::chrono::steady_clock::duration> limit = std::nullopt) {
  auto pause = std::chrono::microseconds(10);
  const auto began = std::chrono::steady_clock::now();
  for (;;) {
    bool pending = false;
    if (auto e = async_error(n, pending))
      abandon(n, fmt::format("rank {}: {} failed: NCCL reported {} (ncclCommGetAsyncError)",
                             n.first(), call, n.lib.result_text(*e)));
    if (!pending)
      return;
    if (limit && std::chrono::steady_clock::now() - began > *limit)
      abandon(n, never_connected(n, call, *limit));
    between_polls(n, pause);
  }
}

// A call into a job's blocking communicator (an NCCL before 2.14 has no other) that can wait
// inside NCCL for ever when a rank died or cannot connect: ncclCommInitRank's bootstrap, and the
// ncclGroupEnd of a first point-to-point call, which connects the two ranks then (collectives'
// connections are made by the init). `f` runs on a thread of its own with this rank's GPU current
// (NCCL takes the calling thread's, and a group is the calling thread's) while this one watches the
// other ranks and the job's limit, as settle does. A thread inside NCCL's call cannot be
// interrupted, and its communicator is not aborted under it, so on a loss the rank tells the others
// and leaves the call behind (it ends with the process): `f` must own or copy everything it uses,
// as the caller's frame unwinds meanwhile, and `leave` is called first, to give up (not free)
// what the call may still touch (its device buffers and stream). What `f` throws is thrown here.
void watched(Nccl &n, const std::string &call, cuda::Context context, std::function<void()> f,
             const std::function<void()> &leave = {}) {
  struct Call {
    std::atomic<bool> done{false};
    std::exception_ptr error;
  };
  auto state = std::make_shared<Call>();
  std::thread([state, f = std::move(f), context,
               set_current = Runtime::get().driver().api().ctx_set_current] {
    (void)set_current(context);
    try {
      f();
    } catch (...) {
      state->error = std::current_exception();
    }
    state->done.store(true, std::memory_order_release);
  }).detach();
  const auto began = std::chrono::steady_clock::now();
  auto pause = std::chrono::microseconds(10);
  while (!state->done.load(std::memory_order_acquire)) {
    std::optional<std::string> why = n.links.lost();
    if (!why && std::chrono::steady_clock::now() - began > n.job->timeout)
      why = never_connected(n, call, n.job->timeout);
    if (why) {
      n.comms.clear(); // left to the thread inside NCCL, not aborted
      if (leave)
        leave();
      thread_left_behind(); // the process ends without exit handlers under that thread
      stop_job(n, *why,
               fmt::format("this rank's {} could not be interrupted (NCCL before 2.14 has no "
                           "non-blocking communicator) and ends with the process",
                           call));
    }
    back_off(pause);
  }
  if (state->error)
    std::rethrow_exception(state->error);
}

// A job's communicator from an NCCL before 2.14, through the blocking ncclCommInitRank (watched).
// Nothing has run yet when it is left behind.
nccl::Comm init_rank_watched(Nccl &n, cuda::Context context) {
  const auto &init = n.lib.api().comm_init_rank;
  if (!init)
    throw nccl::Error(nccl::kInvalidUsage, init.name(),
                      n.lib.path() + " does not export " + init.name());
  auto comm = std::make_shared<nccl::Comm>(nullptr);
  watched(n, init.name(), context,
          [comm, init, nranks = n.job->nranks, id = n.id, rank = n.job->rank, &lib = n.lib] {
            if (const nccl::Result r = init(comm.get(), nranks, id, rank); r != nccl::kSuccess)
              throw nccl::Error(r, init.name(),
                                std::string(init.name()) + ": " + lib.result_text(r));
          });
  return *comm;
}

template <class Entry, class... Args> void nc_call(Nccl &n, const Entry &e, Args... args) {
  if (!e)
    throw nccl::Error(nccl::kInvalidUsage, e.name(), n.lib.path() + " does not export " + e.name());
  const nccl::Result r = e(args...);
  if (r == nccl::kInProgress && n.nonblocking)
    return settle(n, e.name());
  if (r != nccl::kSuccess)
    throw nccl::Error(r, e.name(), std::string(e.name()) + ": " + n.lib.result_text(r));
}

// Work queued on a GPU: an event, else everything on a stream.
struct Queued {
  Device *device = nullptr;
  cuda::Event event = nullptr;
  cuda::Stream stream = nullptr;
};

// Waits until every GPU's queued work is done (cuEventQuery, cuStreamQuery), polling instead of
// blocking: a collective never completes when one of its GPUs or ranks is gone (NCCL's kernel
// spins on the others), so meanwhile it watches each GPU's answer (a sticky error marks that GPU
// lost), NCCL's asynchronous error on every communicator (what its network transport reports when
// a peer goes away) and, in a job, what the other ranks send or whether their connection closed
// (JobLinks). Any of these abandons the communicators. Polls every 10 us at first, backing off to
// 1 ms.
void await(Nccl &n, std::vector<Queued> left) {
  Runtime &rt = Runtime::get();
  const cuda::Driver &d = rt.driver();
  const auto &api = d.api();
  auto pause = std::chrono::microseconds(10);
  for (;;) {
    for (auto q = left.begin(); q != left.end();) {
      try {
        rt.use(q->device->ordinal);
      } catch (const std::exception &e) { // lost meanwhile (an Xid, a sticky error)
        abandon(n, fmt::format("GPU {} ({}) was lost while a collective ran: {}",
                               q->device->ordinal, q->device->name, e.what()));
      }
      const char *name = q->event ? api.event_query.name() : api.stream_query.name();
      if (q->event ? !api.event_query : !api.stream_query)
        throw cuda::Error(cuda::kErrorNotFound, name,
                          d.library_path() + " does not export " + name + " (driver too old?)");
      const cuda::Result r = q->event ? api.event_query(q->event) : api.stream_query(q->stream);
      if (r == cuda::kSuccess) {
        q = left.erase(q);
        continue;
      }
      if (r != cuda::kErrorNotReady) {
        const std::string what = std::string(name) + ": " + d.error_text(r);
        try {
          rt.guarded(*q->device, [&] { throw cuda::Error(r, name, what); });
        } catch (const cuda::Error &) {
        }
        abandon(n, fmt::format("GPU {} ({}) answered {} while a collective ran", q->device->ordinal,
                               q->device->name, what));
      }
      ++q;
    }
    if (left.empty())
      return;
    bool pending = false;
    if (auto e = async_error(n, pending))
      abandon(n, fmt::format("{}: NCCL reported {} on its communicator "
                             "(ncclCommGetAsyncError)",
                             n.job ? fmt::format("rank {}", n.first()) : std::string("NCCL"),
                             n.lib.result_text(*e)));
    between_polls(n, pause);
  }
}

// Every rank's `values`, reduced element-wise with ncclMax over the job: one ncclAllReduce on this
// rank's GPU, waited for as await does.
std::vector<float> job_max(const Context &ctx, Nccl &n, std::vector<float> values) {
  Device &gpu = Runtime::get().use(n.devices.front());
  Stream stream;
  const std::size_t bytes = values.size() * 4;
  DeviceBuffer send(bytes), recv(bytes);
  DLRIG_CU(memcpy_htod, send.ptr(), static_cast<const void *>(values.data()), bytes);
  DLRIG_NC(ctx, group_start);
  DLRIG_NC(ctx, all_reduce, reinterpret_cast<const void *>(send.ptr()),
           reinterpret_cast<void *>(recv.ptr()), values.size(), nccl::kFloat32, nccl::kMax,
           n.comms.front(), reinterpret_cast<nccl::Stream>(stream.get()));
  DLRIG_NC(ctx, group_end);
  await(n, {{&gpu, nullptr, stream.get()}});
  DLRIG_CU(memcpy_dtoh, static_cast<void *>(values.data()), recv.ptr(), bytes);
  return values;
}

// The communicators over every usable GPU, created once (ncclCommInitAll needs every GPU's
// context; dlrig's primary contexts are the ones the CUDA runtime inside NCCL uses).
Nccl &communicators(const Context &ctx) {
  Nccl &n = nccl_lib(ctx);
  if (n.failed)
    throw std::runtime_error(*n.failed);
  Runtime &rt = Runtime::get();
  if (n.job) {
    if (!n.comms.empty())
      return n;
    const int g = n.job_gpu;
    if (const auto usable = rt.usable(); std::find(usable.begin(), usable.end(), g) == usable.end())
      throw std::runtime_error(fmt::format("rank {}: GPU {} is no longer usable", n.job->rank, g));
    n.devices = {g};
    rt.use(g); // NCCL takes the current GPU
    nccl::Comm comm = nullptr;
    // Non-blocking where NCCL offers it (2.14+), so that a rank that dies before or while the
    // ranks connect stops this one (settle) instead of leaving it inside NCCL's bootstrap.
    const auto &api = n.lib.api();
    n.nonblocking = api.comm_init_rank_config && api.comm_get_async_error && api.comm_abort;
    try {
      if (n.nonblocking) {
        nccl::Config config;
        config.blocking = 0;
        const nccl::Result r =
            api.comm_init_rank_config(&comm, n.job->nranks, n.id, n.job->rank, &config);
        if (r != nccl::kSuccess && r != nccl::kInProgress)
          throw nccl::Error(r, api.comm_init_rank_config.name(),
                            std::string(api.comm_init_rank_config.name()) + ": " +
                                n.lib.result_text(r));
        n.comms = {comm};
        // Bounded as the rendezvous is: ranks that met but cannot connect (the wrong interface,
        // a firewall) would otherwise wait here for ever.
        settle(n, api.comm_init_rank_config.name(), n.job->timeout);
      } else {
        n.comms = {init_rank_watched(n, rt.devices()[static_cast<std::size_t>(g)].context)};
      }
    } catch (const nccl::Error &e) {
      n.failed = fmt::format("rank {} of {}: {}", n.job->rank, n.job->nranks, e.what());
      throw std::runtime_error(*n.failed);
    }
    return n;
  }
  if (!n.comms.empty() && n.devices == rt.usable())
    return n;
  n.devices = rt.usable();
  for (int g : n.devices)
    rt.use(g);
  n.comms.assign(n.devices.size(), nullptr);
  try {
    DLRIG_NC(ctx, comm_init_all, n.comms.data(), static_cast<int>(n.devices.size()),
             static_cast<const int *>(n.devices.data()));
  } catch (const nccl::Error &e) {
    n.comms.clear();
    n.failed = e.what();
    throw;
  }
  return n;
}

std::optional<std::string> can_run(const Context &ctx) {
  if (auto why = needs_gpus(1)) // the driver first: NCCL is loaded after it
    return why;
  Nccl &n = nccl_lib(ctx);
  if (auto why = needs_gpus(n.job ? 1 : 2))
    return why;
  if (!n.lib.ready())
    return n.lib.error();
  return std::nullopt;
}

enum class Op { all_reduce, all_gather, reduce_scatter, broadcast, sendrecv };

struct Collective {
  Op op;
  const char *name, *what;
  const char *function; // NCCL's name in NCCL_ALGO / NCCL_PROTO; nullptr: none (send/receive)
};
const Collective kCollectives[] = {
    {Op::all_reduce, "all_reduce", "ncclAllReduce (sum, float32)", "AllReduce"},
    {Op::all_gather, "all_gather", "ncclAllGather (float32)", "AllGather"},
    {Op::reduce_scatter, "reduce_scatter", "ncclReduceScatter (sum, float32)", "ReduceScatter"},
    {Op::broadcast, "broadcast", "ncclBroadcast from rank 0 (float32)", "Broadcast"},
    {Op::sendrecv, "sendrecv", "ncclSend/ncclRecv to the next rank in a ring (float32)", nullptr},
};

// details.nccl_algorithm / nccl_protocol (docs/bench.md, "nccl.*"): what `variable` (NCCL_ALGO,
// NCCL_PROTO) requests for this collective, read after NCCL initialised; `before`: its value
// before NCCL was loaded. NCCL's own choice per call is not captured (docs/bench.md: it prints it
// only into its debug log), so "chosen_by": "NCCL" means its tuner chose, unseen.
Json tuning(const char *variable, const std::optional<std::string> &before, const Collective &c,
            int version) {
  Json j = {{"variable", variable}};
  const auto now = env_text(variable);
  if (!now) {
    j.update(
        {{"setting", nullptr}, {"set_in", nullptr}, {"requested", nullptr}, {"chosen_by", "NCCL"}});
    return j;
  }
  j["setting"] = *now;
  j["set_in"] = before ? "environment"
                       : "an NCCL configuration file (NCCL_CONF_FILE or ~/.nccl.conf, or "
                         "/etc/nccl.conf)";
  if (!c.function) {
    j.update({{"requested", nullptr}, {"chosen_by", nullptr}});
    j["note"] = fmt::format("{} names only Broadcast, Reduce, AllGather, ReduceScatter and "
                            "AllReduce: whether it applies to send/receive is not known",
                            variable);
    return j;
  }
  const NcclRequest r = nccl_request(*now, c.function, version);
  j["requested"] = r.requested ? Json(*r.requested) : Json(nullptr);
  j["chosen_by"] = !r.understood ? Json(nullptr) : r.requested ? Json(variable) : Json("NCCL");
  if (!r.understood)
    j["note"] = fmt::format("{}={} is not understood here (NCCL {}): what it requests for {} is "
                            "unknown",
                            variable, *now, nccl::version_text(version), c.function);
  return j;
}

// nccl-tests' busbw factor for n ranks (benchmarking.md §1.3, nccl-tests doc/PERFORMANCE.md).
double bus_factor(Op op, int n) {
  switch (op) {
  case Op::all_reduce:
    return 2.0 * (n - 1) / n;
  case Op::all_gather:
  case Op::reduce_scatter:
    return static_cast<double>(n - 1) / n;
  case Op::broadcast:
  case Op::sendrecv:
    return 1;
  }
  return 1;
}

constexpr double kMiB = 1024.0 * 1024.0;
constexpr int kIterations = 5; // operations per timed sample
constexpr int kChecked = 64;   // sampled elements per rank

std::vector<Config> configs(const Context &ctx) {
  std::vector<double> mib;
  if (ctx.small)
    mib = {1};
  else if (ctx.tier == Tier::quick)
    mib = {1, 64};
  else if (ctx.tier == Tier::sustained)
    mib = {1, 16, 256, 1024, 4096};
  else
    mib = {1, 4, 16, 64, 256, 1024};
  const auto usable = static_cast<int>(Runtime::get().usable().size()); // the driver first
  const Nccl &job = nccl_lib(ctx);
  const int n = job.job ? job.job->nranks : usable;
  std::vector<Config> out;
  for (double m : mib) {
    // S a multiple of 4 n bytes, so every rank's share is whole float32 elements.
    const double unit = 4.0 * n;
    const double bytes = std::floor(m * kMiB / unit) * unit;
    out.push_back({fmt::format("{} {} {}", n, job.job ? "ranks" : "GPUs",
                               m >= 1024 ? fmt::format("{:.0f} GiB", m / 1024)
                                         : fmt::format("{:.0f} MiB", m)),
                   {bytes}});
  }
  return out;
}

// Rank r's input element i: small integers, so every sum is exact in float32.
float input(int rank, std::uint64_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(i % 13 + 1));
}

// Samples per configuration of a multi-process job: fixed, so that every rank issues the same
// number of collectives (the stopping rule would stop each rank at its own count); nccl-tests'
// default is 20 iterations.
constexpr int kJobSamples = 20;

Outcome run(const Collective &c, const Config &cfg, const Context &ctx, Sampler &s) {
  Runtime &rt = Runtime::get();
  Nccl &n = communicators(ctx);
  const int ranks = n.world();                           // every rank of the communicator
  const auto local = static_cast<int>(n.devices.size()); // this process's
  const int first = n.first();                           // the global rank of local 0
  const auto bytes = static_cast<std::uint64_t>(cfg.params.at(0));
  const std::uint64_t elements = bytes / 4;     // S in float32 elements
  const std::uint64_t share = elements / ranks; // per rank for all_gather / reduce_scatter
  // Elements each rank sends and receives (nccl-tests' S conventions).
  const std::uint64_t send_n = c.op == Op::all_gather ? share : elements;
  const std::uint64_t recv_n = c.op == Op::reduce_scatter ? share : elements;

  // A size whose buffers do not fit a GPU's free memory is skipped, not shrunk (the size is what
  // is measured). In a job every rank skips it together, or the others would wait inside its
  // collectives: the ranks vote first (ncclMax over "rank + 1" of a rank that lacks memory).
  std::optional<std::string> short_of;
  for (int l = 0; l < local && !short_of; ++l)
    short_of = lacks_free_memory(
        rt.use(n.devices[static_cast<std::size_t>(l)]), static_cast<double>(send_n + recv_n) * 4,
        fmt::format("the send and receive buffers ({} and {} B)", send_n * 4, recv_n * 4));
  if (n.job) {
    const float lacking = job_max(ctx, n, {short_of ? static_cast<float>(first + 1) : 0.0f}).at(0);
    if (lacking > 0 && !short_of)
      short_of = fmt::format("rank {} has too little free device memory for this size (its own "
                             "output says how much); every rank of the job skips it",
                             static_cast<int>(lacking) - 1);
  }
  n.skip_before_queueing = short_of.has_value();
  if (short_of)
    throw Skip(*short_of);

  struct Rank {
    Device *device = nullptr;
    std::unique_ptr<DeviceBuffer> send, recv;
    std::unique_ptr<Stream> stream;
    std::unique_ptr<Event> start, end;
    std::unique_ptr<StateLog> log; // NVML's readings of this GPU while the samples run
  };
  std::vector<Rank> rank(static_cast<std::size_t>(local));
  for (int l = 0; l < local; ++l) {
    const int r = first + l;
    Rank &k = rank[static_cast<std::size_t>(l)];
    k.device = &rt.use(n.devices[static_cast<std::size_t>(l)]);
    k.log = std::make_unique<StateLog>(*k.device);
    rt.guarded(*k.device, [&] {
      k.send = std::make_unique<DeviceBuffer>(send_n * 4);
      k.recv = std::make_unique<DeviceBuffer>(recv_n * 4);
      k.stream = std::make_unique<Stream>();
      k.start = std::make_unique<Event>();
      k.end = std::make_unique<Event>();
      std::vector<float> host(send_n);
      for (std::uint64_t i = 0; i < send_n; ++i)
        host[i] = input(r, i);
      DLRIG_CU(memcpy_htod, k.send->ptr(), static_cast<const void *>(host.data()), send_n * 4);
      DLRIG_CU(memset_d8_async, k.recv->ptr(), static_cast<unsigned char>(0), recv_n * 4,
               k.stream->get());
      DLRIG_CU(stream_synchronize, k.stream->get());
    });
  }
  // What one group queues on each local GPU, copied out: `one` holds its own copy, as a call left
  // behind inside NCCL (watched) outlives this frame.
  struct Queue {
    int r = 0; // global rank
    const void *send = nullptr;
    void *recv = nullptr;
    nccl::Comm comm = nullptr;
    nccl::Stream stream = nullptr;
  };
  std::vector<Queue> queues;
  for (int l = 0; l < local; ++l) {
    const Rank &k = rank[static_cast<std::size_t>(l)];
    queues.push_back({first + l, reinterpret_cast<const void *>(k.send->ptr()),
                      reinterpret_cast<void *>(k.recv->ptr()), n.comms[static_cast<std::size_t>(l)],
                      reinterpret_cast<nccl::Stream>(k.stream->get())});
  }
  auto one = [&n, queues, op = c.op, elements, share, ranks] {
    const auto &api = n.lib.api();
    nc_call(n, api.group_start);
    for (const Queue &q : queues) {
      switch (op) {
      case Op::all_reduce:
        nc_call(n, api.all_reduce, q.send, q.recv, static_cast<std::size_t>(elements),
                nccl::kFloat32, nccl::kSum, q.comm, q.stream);
        break;
      case Op::all_gather:
        nc_call(n, api.all_gather, q.send, q.recv, static_cast<std::size_t>(share), nccl::kFloat32,
                q.comm, q.stream);
        break;
      case Op::reduce_scatter:
        nc_call(n, api.reduce_scatter, q.send, q.recv, static_cast<std::size_t>(share),
                nccl::kFloat32, nccl::kSum, q.comm, q.stream);
        break;
      case Op::broadcast:
        nc_call(n, api.broadcast, q.send, q.recv, static_cast<std::size_t>(elements),
                nccl::kFloat32, 0, q.comm, q.stream);
        break;
      case Op::sendrecv:
        nc_call(n, api.send, q.send, static_cast<std::size_t>(elements), nccl::kFloat32,
                (q.r + 1) % ranks, q.comm, q.stream);
        nc_call(n, api.recv, q.recv, static_cast<std::size_t>(elements), nccl::kFloat32,
                (q.r + ranks - 1) % ranks, q.comm, q.stream);
        break;
      }
    }
    nc_call(n, api.group_end);
  };
  // One sample: a start event on every GPU's stream, kIterations operations, an end event; the
  // slowest GPU's interval over kIterations.
  auto sample = [&]() -> double {
    for (const Rank &k : rank) {
      rt.use(k.device->ordinal);
      DLRIG_CU(event_record, k.start->get(), k.stream->get());
    }
    for (int i = 0; i < kIterations; ++i)
      one();
    for (const Rank &k : rank) {
      rt.use(k.device->ordinal);
      DLRIG_CU(event_record, k.end->get(), k.stream->get());
    }
    // NVML's view of every GPU while the operations run.
    for (const Rank &k : rank)
      k.log->read();
    std::vector<Queued> ends;
    for (const Rank &k : rank)
      ends.push_back({k.device, k.end->get(), nullptr});
    await(n, ends);
    double slowest = 0;
    for (const Rank &k : rank) {
      rt.use(k.device->ordinal);
      slowest = std::max(slowest, elapsed(*k.start, *k.end));
    }
    return slowest / kIterations;
  };
  // Warm-up (NCCL sets up its channels on the first call). On a job's blocking communicator a
  // first point-to-point call connects the ranks inside ncclGroupEnd: watched.
  if (n.job && !n.nonblocking)
    watched(n, n.lib.api().group_end.name(), rank.front().device->context, one, [&rank] {
      // Still NCCL's: never freed, kept where the process can still reach them.
      static auto *left = new std::vector<std::shared_ptr<void>>;
      for (Rank &k : rank) {
        left->push_back(std::move(k.send));
        left->push_back(std::move(k.recv));
        left->push_back(std::move(k.stream));
      }
    });
  else
    one();
  std::vector<Queued> streams;
  for (const Rank &k : rank)
    streams.push_back({k.device, nullptr, k.stream->get()});
  await(n, streams);
  // A job's samples: each the slowest rank's (nccl-tests' -a 3; its default averages the ranks):
  // every rank times its own GPU, then one ncclAllReduce(ncclMax) over the samples, after the
  // timed loop, gives every rank the job's time per sample.
  std::optional<double> this_rank_median;
  if (n.job) {
    std::vector<double> mine;
    for (int i = 0; i < (ctx.small ? 5 : kJobSamples); ++i)
      mine.push_back(sample());
    this_rank_median = summarize(mine).median;
    const std::vector<float> times = job_max(ctx, n, std::vector<float>(mine.begin(), mine.end()));
    for (float t : times)
      s.add(static_cast<double>(t));
  } else
    while (s.more())
      s.add(sample());

  // Verification on sampled elements of every rank's output.
  Outcome o;
  for (int l = 0; l < local && !o.verification_error; ++l) {
    const int r = first + l;
    const Rank &k = rank[static_cast<std::size_t>(l)];
    rt.use(k.device->ordinal);
    for (int j = 0; j < kChecked && !o.verification_error; ++j) {
      const std::uint64_t i = j == 0   ? 0
                              : j == 1 ? recv_n - 1
                                       : pattern_word(0x6e63636c + r, j) % recv_n;
      float got = 0;
      DLRIG_CU(memcpy_dtoh, static_cast<void *>(&got), k.recv->ptr() + i * 4, std::size_t{4});
      if (ctx.corrupt && l == 0 && j == 0)
        got += 1;
      double want = 0;
      switch (c.op) {
      case Op::all_reduce:
        for (int q = 0; q < ranks; ++q)
          want += input(q, i);
        break;
      case Op::all_gather:
        want = input(static_cast<int>(i / share), i % share);
        break;
      case Op::reduce_scatter:
        for (int q = 0; q < ranks; ++q)
          want += input(q, static_cast<std::uint64_t>(r) * share + i);
        break;
      case Op::broadcast:
        want = input(0, i);
        break;
      case Op::sendrecv:
        want = input((r + ranks - 1) % ranks, i);
        break;
      }
      if (static_cast<double>(got) != want)
        o.verification_error = fmt::format("rank {} (GPU {}) element {}: {} instead of {}", r,
                                           k.device->ordinal, i, got, want);
    }
  }

  const double factor = bus_factor(c.op, ranks);
  o.work = static_cast<double>(bytes) * factor;
  o.work_unit = "B";
  o.rate_unit = "GB/s busbw";
  o.peak_assumption = "busbw against the GPUs' link is not looked up yet";
  const Summary sum = summarize(s.samples());
  const auto &lib = nccl_lib(ctx).lib;
  Json gpus = Json::array();
  std::vector<std::string> hot;       // the GPUs that lowered their clocks
  bool unknown = false, read = false; // a GPU whose throttling NVML could not say; any reading
  for (const Rank &k : rank) {
    Json g = {{"gpu", k.device->ordinal}, {"name", k.device->name}};
    k.log->into(g);
    if (g["throttled"].is_boolean() && g["throttled"].get<bool>())
      hot.push_back(fmt::format("GPU {}", k.device->ordinal));
    unknown |= !g["throttled"].is_boolean();
    read |= !g["gpu_state_samples"].is_null();
    gpus.push_back(std::move(g));
  }
  o.details = {{"collective", c.name},
               {"ranks", ranks},
               {"gpus", gpus},
               {"bytes", bytes},
               {"bytes_convention", "S as nccl-tests counts it: the whole array (all_gather and "
                                    "reduce_scatter: n x each rank's share)"},
               {"busbw_factor", factor},
               {"rate", "busbw = algbw x busbw_factor"},
               {"iterations_per_sample", kIterations},
               {"timing", "CUDA events on every GPU's stream, the slowest GPU's interval"},
               {"nccl_version", nccl::version_text(lib.version())},
               {"nccl_library", lib.path()},
               {"nccl_found_in", lib.origin()},
               {"verified_elements_per_rank", kChecked},
               {"nccl_algorithm", tuning("NCCL_ALGO", n.algo_env, c, lib.version())},
               {"nccl_protocol", tuning("NCCL_PROTO", n.proto_env, c, lib.version())}};
  // Every GPU's readings are in gpus[]; throttled: one GPU that lowered its clocks slows the
  // collective (null when NVML could not say for one and none was seen lowering them).
  o.details["throttled"] = !hot.empty() ? Json(true) : unknown ? Json(nullptr) : Json(false);
  if (!hot.empty())
    o.details["gpu_state_note"] =
        fmt::format("{} lowered {} clocks for heat or a hardware slowdown during the collective "
                    "(details.gpus): every rank waits for the slowest GPU",
                    join(hot, " and "), hot.size() == 1 ? "its" : "their");
  else if (!read)
    o.details["gpu_state_note"] = gpus.at(0).value("gpu_state_note", "");
  if (sum.n > 0 && sum.median > 0)
    o.details["algbw_gbs_median"] = static_cast<double>(bytes) / sum.median / 1e9;
  if (n.job) {
    o.details["processes"] = n.job->nranks;
    o.details["this_rank"] = n.job->rank;
    o.details["rank_source"] = n.job->source;
    o.details["rendezvous"] = fmt::format("{}:{}", n.job->host, n.job->port);
    o.details["samples_fixed"] = ctx.small ? 5 : kJobSamples;
    o.details["timing"] = "CUDA events on each rank's GPU; each sample is the slowest rank's "
                          "(the ranks' times reduced with ncclMax after the timed loop; "
                          "nccl-tests -a 3)";
    o.details["this_rank_median_s"] = this_rank_median ? Json(*this_rank_median) : Json(nullptr);
  }
  return o;
}

Benchmark bench_of(const Collective &c) {
  return {std::string("nccl.") + c.name,
          "nccl",
          std::string(c.what) + " across every local GPU, busbw (nccl-tests), verified",
          "2 GPUs, NCCL",
          can_run,
          configs,
          [&c](const Config &cfg, const Context &ctx, Sampler &s) {
            Nccl &n = nccl_lib(ctx);
            try {
              return run(c, cfg, ctx, s);
            } catch (const Skip &e) {
              if (std::exchange(n.skip_before_queueing, false))
                throw; // nothing queued; in a job every rank skips this size
              if (!n.job) {
                (void)release(n);
                throw;
              }
              // A rank that cannot run a configuration the others run (out of memory, a lost
              // GPU) would leave them waiting inside its collectives: it stops the job.
              if (!n.stopped)
                stop_job(n, fmt::format("rank {} could not run nccl.{} {}: {}", n.job->rank, c.name,
                                        cfg.label, e.what()));
              throw;
            } catch (const std::exception &e) {
              if (!n.job) {
                const auto lost = release(n);
                if (lost.empty())
                  throw;
                throw std::runtime_error(fmt::format("{} ({}); the communicators were aborted "
                                                     "(ncclCommAbort)",
                                                     e.what(), join(lost, "; ")));
              }
              if (!n.stopped)
                stop_job(n, fmt::format("rank {} failed nccl.{} {}: {}", n.job->rank, c.name,
                                        cfg.label, e.what()));
              throw;
            }
          }};
}

} // namespace

namespace {
// The GPU a rank drives: LOCAL_RANK's, else the rank modulo the usable GPUs.
int rank_gpu(const RankSpec &spec, const Runtime &rt) {
  const std::vector<int> usable = rt.usable();
  if (usable.empty())
    throw Failure(ExitCode::unavailable,
                  fmt::format("rank {} of {}: no usable GPU", spec.rank, spec.nranks));
  const int g = spec.local_rank ? *spec.local_rank
                                : usable[static_cast<std::size_t>(spec.rank) % usable.size()];
  if (std::find(usable.begin(), usable.end(), g) == usable.end())
    throw Failure(ExitCode::bad_input,
                  fmt::format("rank {}: LOCAL_RANK {} names no usable GPU of this machine ({} "
                              "usable)",
                              spec.rank, g, usable.size()));
  return g;
}

// The rendezvous's name for a GPU: "BUS_ID@BOOT_ID", or "unknown" without either.
std::string gpu_identity(const Device &d) {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string boot;
  std::getline(f, boot);
  boot = std::string(trim(boot));
  const bool plain = !boot.empty() && !d.bus_id.empty() &&
                     std::none_of(boot.begin(), boot.end(),
                                  [](unsigned char c) { return std::isspace(c) || c == '@'; });
  return plain ? d.bus_id + "@" + boot : "unknown";
}
} // namespace

void join_nccl_job(const Context &ctx, const RankSpec &spec, const std::string &plan) {
  // The driver first: NCCL runs on it (and the fake NCCL finds the fake libcuda loaded).
  Runtime &rt = Runtime::get();
  if (auto why = rt.unavailable())
    throw Failure(ExitCode::unavailable,
                  fmt::format("rank {} of {}: {}", spec.rank, spec.nranks, *why));
  const int g = rank_gpu(spec, rt);
  Nccl &n = nccl_lib(ctx);
  if (!n.lib.ready())
    throw Failure(ExitCode::unavailable,
                  fmt::format("rank {} of {}: {}", spec.rank, spec.nranks, n.lib.error()));
  std::optional<UniqueId> mine;
  if (spec.rank == 0) {
    nccl::UniqueId id{};
    try {
      DLRIG_NC(ctx, get_unique_id, &id);
    } catch (const nccl::Error &e) {
      throw Failure(ExitCode::unavailable, fmt::format("rank 0: {}", e.what()));
    }
    mine.emplace();
    std::memcpy(mine->data(), id.internal, mine->size());
  }
  auto got = rendezvous(spec, plan, gpu_identity(rt.devices()[static_cast<std::size_t>(g)]), mine);
  if (!got)
    throw Failure(got.error().kind == ErrorKind::bad_input || got.error().kind == ErrorKind::usage
                      ? ExitCode::bad_input
                      : ExitCode::unavailable,
                  got.error().message);
  std::memcpy(n.id.internal, got->id.data(), got->id.size());
  n.links = std::move(got->links);
  n.job = spec;
  n.job_gpu = g;
  // The communicator now: every rank calls ncclCommInitRank right after the rendezvous, and a
  // job whose communicator NCCL refuses has nothing to run.
  try {
    communicators(ctx);
  } catch (const std::exception &e) {
    throw Failure(ExitCode::unavailable, e.what());
  }
}

std::optional<std::string> end_nccl_job(const Context &ctx, bool completed) {
  Nccl &n = nccl_lib(ctx);
  if (!n.job)
    return std::nullopt;
  if (n.stopped)
    return n.stopped;
  if (completed) {
    n.links.tell("done");
    return std::nullopt;
  }
  try {
    stop_job(n, fmt::format("rank {} was interrupted before the end of its run", n.job->rank));
  } catch (const std::exception &) {
  }
  return n.stopped;
}

std::vector<Benchmark> nccl_benchmarks() {
  std::vector<Benchmark> out;
  for (const Collective &c : kCollectives)
    out.push_back(bench_of(c));
  return gpu::watching_faults(std::move(out));
}

} // namespace dlrig::bench
