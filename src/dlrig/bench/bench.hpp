#pragma once
// The benchmark harness: one registry, one runner (docs/bench.md; the method is
// shared/reference/benchmarking.md §5: warm-up, samples until the spread is small, median and
// spread, verified results, the environment with every result).
//
// Adding a family is one file: define a function returning std::vector<Benchmark> and list it in
// registry() (registry.cpp). A Benchmark is a table entry:
//   id        "cpu.gemm.sgemm": stable, family + "." + case
//   family    "cpu.gemm": `dlrig bench cpu.gemm` runs every entry of the family
//   summary   one line for --list
//   needs     what it needs, in words for --list ("all cores", "--data PATH", "1 GPU")
//   can_run   (Context) -> nullopt, or the reason it is skipped here ("no CUDA device")
//   configs   (Context) -> the parameter sweep for ctx.tier (each Config has a label)
//   run       (Config, Context, Sampler&) -> Outcome: the benchmark times its operation itself,
//             one sample per pass, `while (s.more()) { ... s.add(seconds); }`; the Sampler is the
//             runner's stopping rule (untimed warm-up first, then until RSD < 1 % or the tier's
//             time cap). It returns the work per sample (FLOP or bytes, its convention stated in
//             `work_unit`'s formula), its verification (nullopt = verified, else what was
//             wrong) and, when known, the peak the rate is a share of.
// The runner catches every exception of a benchmark: one failing benchmark never stops the others.
#include "dlrig/core/json.hpp"
#include "dlrig/core/result.hpp"
#include "dlrig/core/snapshot.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::bench {

// --quick (whole host suite under a minute on 2 cores), standard (default), --long (sustained).
enum class Tier { quick, standard, sustained };
const char *tier_name(Tier t);

// What a benchmark may know about the run and the machine.
struct Context {
  const Snapshot *snapshot = nullptr; // the probe's view of this machine (environment, peaks)
  Tier tier = Tier::standard;
  int hardware_threads = 1; // logical CPUs this process may use
  // DLRIG_BENCH_SMALL=1: every sweep shrinks to its smallest sizes (CLI tests, README).
  bool small = false;
  // Test hook DLRIG_BENCH_CORRUPT=1: each benchmark damages its result before verifying it, so
  // that verification must fail (exit 2). Never set in normal use.
  bool corrupt = false;
  std::optional<std::string> data; // --data PATH
  // Test hook DLRIG_BENCH_EXPECT=ID=MIN[,ID=MIN]: an expectation of MIN (in the benchmark's rate
  // unit) for that id, replacing the family's own, so the tests can prove that exit 1 works.
  std::map<std::string, double> test_expectations;
};

// One point of a sweep.
struct Config {
  std::string label;          // "n=512 threads=2"
  std::vector<double> params; // the family's own parameters, in its order
};

// ---- statistics and the stopping rule (pure) ----
struct Summary {
  std::size_t n = 0;
  double median = 0, mean = 0, min = 0, max = 0, stdev = 0;
  double q1 = 0, q3 = 0;
  double iqr() const { return q3 - q1; }
  double rsd() const { return mean > 0 ? stdev / mean : 0; } // coefficient of variation
};
// Median, quartiles (linear interpolation between order statistics, R type 7), sample stdev.
// Empty input gives n = 0 and zeros.
Summary summarize(std::vector<double> samples);

struct StopRule {
  double target_rsd = 0.01;    // stop once the relative standard deviation is under this...
  std::size_t min_samples = 5; // ...with at least this many samples
  std::size_t max_samples = 1000;
  double max_seconds = 2; // or once the timed samples add up to this
  // or once this much wall-clock time has passed since the first sample was asked for (--long:
  // the card heats by the clock, and a GPU sample's flush, hold and readings lie outside its
  // timed interval, so timed seconds alone would run a "60 s" configuration for minutes).
  std::optional<double> max_wall_seconds;
};
StopRule stop_rule(Tier t);
// True when no more samples are needed. Pure: a function of the samples so far.
bool enough(const std::vector<double> &samples, const StopRule &rule);

// The runner's side of a run: the benchmark asks more() before each timed pass and add()s its
// seconds. warm_up() is called by the benchmark once, untimed, before the first sample.
// `interrupted` (Ctrl-C) ends the sampling at the next more() once there is one sample, so a
// --long configuration does not run on for its minute; cut_short() then says so.
class Sampler {
public:
  explicit Sampler(StopRule rule, std::function<bool()> interrupted = {})
      : rule_(rule), interrupted_(std::move(interrupted)),
        started_(std::chrono::steady_clock::now()) {}
  bool more() const {
    if (rule_.max_wall_seconds && !samples_.empty() &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() >=
            *rule_.max_wall_seconds)
      return false;
    if (enough(samples_, rule_))
      return false;
    if (fault_ && fault_())
      return false;
    if (interrupted_ && !samples_.empty() && interrupted_()) {
      cut_short_ = true;
      return false;
    }
    return true;
  }
  // Ends the sampling once `fault` says a fault made the configuration's result worthless (an
  // Xid on a GPU it uses): the run returns and its bracket fails it (gpu::watching_faults).
  void end_on_fault(std::function<bool()> fault) { fault_ = std::move(fault); }
  void add(double seconds) { samples_.push_back(seconds); }
  const std::vector<double> &samples() const { return samples_; }
  // True when `interrupted` ended the sampling before the stopping rule was met.
  bool cut_short() const { return cut_short_; }

private:
  StopRule rule_;
  std::function<bool()> interrupted_, fault_;
  std::chrono::steady_clock::time_point started_;
  std::vector<double> samples_;
  mutable bool cut_short_ = false;
};

// The floor a result is expected to reach on this machine (docs/bench.md, "Expectations"); a
// result below it makes `dlrig bench` exit 1. A family derives it from facts it can cite (the
// DRAM's channels and speed, the storage interface, the CPU's peak); unknown facts give no
// expectation, never a guessed one.
struct Expectation {
  double min_rate = 0;  // in the benchmark's rate unit
  bool on_best = false; // compare rate.best (STREAM's figure), else rate.median
  std::string basis;    // "50 % of the DRAM peak 51.2 GB/s (2 channels x 3200 MT/s x 8 B)"
  std::string source;   // where the facts and the fraction come from (URLs)
};

struct Outcome {
  double work = 0;                               // per sample, in work_unit
  std::string work_unit;                         // "FLOP" or "B"
  std::string rate_unit;                         // "GFLOP/s", "GB/s" (rate = work / seconds / 1e9)
  double rate_scale = 1e9;                       // the divisor above; 1 for "images/s"
  std::optional<std::string> verification_error; // nullopt: verified
  std::optional<double> peak;                    // in rate_unit; nullopt when unknown
  std::optional<std::string> peak_assumption;    // how the peak was derived
  Json details = Json::object();                 // family-specific (library config, threads...)
  std::optional<Expectation> expectation;        // nullopt: none known here
};

// Thrown by a benchmark's run for a configuration this machine cannot run although the benchmark
// as a whole can (cuBLASLt answers NOT_SUPPORTED for that shape or GPU): the record is skipped
// with the reason, not failed.
struct Skip : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Benchmark {
  std::string id, family, summary, needs;
  std::function<std::optional<std::string>(const Context &)> can_run;
  std::function<std::vector<Config>(const Context &)> configs;
  std::function<Outcome(const Config &, const Context &, Sampler &)> run;
};

// Every registered benchmark, in --list order.
const std::vector<Benchmark> &registry();

// Families (registry.cpp lists them).
std::vector<Benchmark> cpu_gemm_benchmarks();
std::vector<Benchmark> cpu_stream_benchmarks();
std::vector<Benchmark> data_decode_benchmarks();  // data_decode.cpp
std::vector<Benchmark> storage_read_benchmarks(); // storage_read.cpp
std::vector<Benchmark> gpu_benchmarks();          // gpu_families.cpp (CUDA driver API)
std::vector<Benchmark> gpu_gemm_benchmarks();     // gpu_gemm.cpp (cuBLASLt)
std::vector<Benchmark> nccl_benchmarks();         // gpu_nccl.cpp (NCCL)
// storage.read's floor for sequential reads from the device class of the snapshot's mount
// (nvme: 0.6 GB/s, the SATA III interface; sata-ssd: 0.3 GB/s, SATA II); others: none.
std::optional<Expectation> storage_expectation(const std::optional<std::string> &device_class);

// ---- work formulas ----
// GEMM C = A·B with A m×k, B k×n: 2·m·n·k floating-point operations (one multiply and one add
// per term of each of the m·n dot products of length k).
double gemm_flop(double m, double n, double k);
// STREAM bytes per pass over n doubles ("copy", "scale": 16·n; "add", "triad": 24·n): reads plus
// writes, write-allocate traffic not counted (https://www.cs.virginia.edu/stream/ref.html).
double stream_bytes(const std::string &kernel, double n);
// cpu.stream's floor on an all-threads run: half the DRAM's theoretical peak (GB/s), on STREAM's
// best pass; nullopt when the peak is unknown (docs/bench.md, "Expectations").
std::optional<Expectation> stream_expectation(double dram_peak_gbs);
// Theoretical CPU peak in GFLOP/s: cores × Hz × FLOP per cycle per core, or nullopt when the
// frequency or the ISA is unknown. `flop_per_cycle` comes from cpu_flop_per_cycle().
std::optional<double> cpu_peak_gflops(std::optional<int> cores, std::optional<double> hz,
                                      std::optional<double> flop_per_cycle);
// FLOP per cycle per core for single (double_precision=false) or double precision from the ISA
// flags, with the assumption in words: AVX-512 with 2 FMA units: 64 SP / 32 DP; AVX2+FMA with 2
// FMA units: 32 SP / 16 DP; otherwise nullopt (not guessed).
struct FlopPerCycle {
  std::optional<double> value;
  std::string assumption;
};
FlopPerCycle cpu_flop_per_cycle(const std::vector<std::string> &isa, bool double_precision);
// ---- what else the machine did while a configuration ran (host_load.cpp) ----
struct CpuTicks {
  unsigned long long busy = 0, steal = 0, total = 0; // /proc/stat's aggregate line, clock ticks
};
// The "cpu " line of /proc/stat; nullopt when it is not there or short.
std::optional<CpuTicks> parse_proc_stat(const std::string &text);
// utime + stime of /proc/self/stat (every thread of the process), in clock ticks.
std::optional<unsigned long long> parse_self_stat(const std::string &text);
struct HostLoadMark {
  CpuTicks machine;
  unsigned long long self = 0;
  int cpus = 0;
};
std::optional<HostLoadMark> host_load_mark(); // now; nullopt where /proc cannot say
struct HostLoad {
  double other_cpus = 0; // CPU time of every other process, in CPUs (1.5: one and a half)
  double steal_cpus = 0; // time the hypervisor gave to other guests, in CPUs
  int cpus = 0;
  double seconds = 0;
};
std::optional<HostLoad> host_load_between(const HostLoadMark &a, const HostLoadMark &b);
// "other processes used 1.6 of 2 CPUs while this ran: its rate may be low" when others used at
// least half a CPU and a tenth of the machine, or steal took a quarter CPU and a twentieth;
// nullopt otherwise and over less than 0.1 s.
std::optional<std::string> host_load_note(const HostLoad &l);
// details.host_load; with_note: the note too (families whose work runs on the CPU: a GPU's
// rate does not fall with the host's load).
Json host_load_json(const HostLoad &l, bool with_note);

// ---- results and the runner ----
enum class Status { measured, skipped, failed, wrong };
const char *status_name(Status s);

struct Record {
  std::string id, family, config;
  Status status = Status::measured;
  std::optional<std::string> reason; // skipped / failed / wrong: why
  Summary seconds;                   // per sample
  double work = 0;
  std::string work_unit, rate_unit;
  std::optional<double> rate_median, rate_best, rate_worst; // work / seconds
  std::optional<double> peak, share_of_peak;
  std::optional<std::string> peak_assumption;
  Json details = Json::object();
  std::optional<Expectation> expectation;
  std::optional<bool> below_expectation; // measured and compared: true when below the floor
};
Json to_json(const Record &r);

// Which benchmarks `names` select: an id, a family, or a prefix of ids ending at a dot ("cpu").
// An unknown name is an error naming it and the nearest ids.
dlrig::Result<std::vector<const Benchmark *>> select(const std::vector<std::string> &names);

struct RunOptions {
  Context ctx;
  // Called on stderr's behalf: one line per configuration as it starts and ends.
  std::function<void(const std::string &)> progress;
  // Called with each record as soon as it is complete (the store writes it in its own
  // transaction, so an interrupted run keeps every earlier result).
  std::function<void(const Record &)> on_record;
  // Asked before each configuration (true stops the run there: SIGINT; records so far are kept)
  // and before each sample once there is one (true ends that configuration's sampling: its
  // result is kept with details.interrupted).
  std::function<bool()> stop;
};
std::vector<Record> run_all(const std::vector<const Benchmark *> &which, const RunOptions &o);

} // namespace dlrig::bench
