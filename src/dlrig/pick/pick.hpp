#pragma once
// `dlrig pick` as a pure function: a workload (fit's model and run), a goal and a budget in; every
// GPU model x count of the catalog, each cloud instance and rental, sized by fit's memory model,
// timed by fit's time model (fit::estimate_time: no second model), priced from pick's price data,
// and ranked by what reaching the goal costs. No I/O: prices, sizing rules and the date come in.
#include "dlrig/core/snapshot.hpp"
#include "dlrig/fit/fit.hpp"
#include "dlrig/fit/time.hpp"
#include "dlrig/pick/data.hpp"
#include "dlrig/pick/machine.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::pick {

// How the hardware is had: bought new (street price, else launch MSRP), bought used, or rented.
// owned: this machine as it is (pick's upgrade advice), neither bought nor rented.
enum class Acquire { buy_new, buy_used, rent, owned };
std::string_view name(Acquire a);

// Where the GPUs sit. desktop: 1-2 cards in a tower; workstation: up to 4 (pro or blower cards);
// server: pcie-server and SXM parts, up to 8; laptop-egpu: one card in a Thunderbolt dock;
// cloud: rented.
enum class Form { desktop, workstation, server, laptop_egpu, cloud };
std::string_view name(Form f);
Result<Form> parse_form(std::string_view s);

struct Goal {
  std::optional<double> within_s;     // train: the job (run.epochs x the dataset) within this
  std::optional<double> tokens_per_s; // serve: each stream at least this many tokens/s
  bool any() const { return within_s || tokens_per_s; }
};

struct Budget {
  std::optional<double> total;    // buy: the GPUs' price; rent: the whole job's spend
  std::optional<double> per_hour; // rent: at most this per hour
  std::string currency = "USD";
  bool rent = false;      // rank rentals (else purchases)
  bool new_only = false;  // --new
  bool used_only = false; // --used
  int gpus_max = 8;
  std::optional<Form> form;
  bool any() const { return total || per_hour; }
};

struct Request {
  fit::ModelInput model;
  fit::Run run; // resolved (fit::resolve_run) for one GPU; pick sets the count per option
  Goal goal;
  Budget budget;
  std::vector<Price> prices;      // builtin_prices(), with --prices applied
  std::string today;              // YYYY-MM-DD, for the age of each price
  const Sizing *sizing = nullptr; // nullptr: builtin_sizing()
  // Exchange rates: prices in another currency than the budget's are converted (nullptr:
  // builtin_fx()).
  const std::vector<FxRate> *fx = nullptr;
  // Non-GPU parts the upgrade advice prices (nullptr: builtin_part_prices()).
  const std::vector<PartPrice> *part_prices = nullptr;
  int machine_options = 3; // how many purchase options get the whole-machine rules
  // This machine's stored `dlrig bench` results (empty: none). Every option of a GPU `host`
  // measured uses its GEMM rates; the rest (the CPU's decode rate) only the machine's own
  // evaluation (`--from-this-machine`).
  fit::HostRates host;
};

enum class Status {
  ok,          // fits, reaches the goal, within the budget
  no_fit,      // fit's verdict: does not fit these GPUs
  no_run,      // fit's verdict: does not run on these GPUs (fit::cannot_run_on)
  too_slow,    // fits, misses the goal
  over_budget, // fits and reaches the goal, costs more than the budget allows
  unpriced,    // no price of this kind for this GPU
  unknown      // memory or time unknown (the catalog lacks a figure)
};
std::string_view name(Status s);

// The price an option uses, and how old it is.
struct PriceUse {
  double amount = 0; // per GPU (buy) or per hour of the whole option (rent)
  PriceKind kind = PriceKind::street_new;
  std::string date, seller, source, currency;
  std::optional<int> age_days;
  bool stale = false; // older than kStaleDays, or undated
  // When the price was converted from another currency: what the row said.
  std::optional<double> original_amount;
  std::string original_currency;
};

struct Option {
  std::string name;     // "2x GeForce RTX 4090", "AWS p5.48xlarge"
  std::string gpu;      // the catalog GPU
  int count = 1;        // GPUs
  std::string instance; // a cloud.csv instance; empty for per-GPU prices
  Form form = Form::desktop;
  Acquire acquire = Acquire::buy_new;
  fit::Run run;       // as evaluated (count, and the parallelism pick chose)
  std::string layout; // how the GPUs share the work ("ddp", "fsdp", "tensor parallel 2"); empty:
                      // not sized

  // Memory: fit's verdict at the device level; nullopt: not sized (an option without a price).
  std::optional<bool> fits;
  std::optional<std::uint64_t> device_bytes;
  std::optional<std::uint64_t> memory_bytes;
  std::string fix; // when it does not fit: fit's cheapest change that fits on these GPUs

  // Time (fit::estimate_time).
  std::optional<double> tokens_per_s, samples_per_s; // training, all GPUs
  std::optional<double> stream_tokens_per_s;         // serving, one stream
  std::optional<double> job_s;                       // the whole training job
  std::optional<double> load_s; // serving: the weights over the host link, once at load
  std::string bottleneck;
  std::vector<std::string> time_basis;

  // Money.
  std::optional<PriceUse> price;
  std::optional<double> upfront;  // buy: count x price per GPU
  std::optional<double> per_hour; // rent: the whole option
  std::optional<double> job_cost; // rent: per_hour x job hours
  // What reaching the goal costs: buy -> upfront; rent -> job_cost, or (no job size) the cost of
  // a million tokens / a thousand samples, or (serving) per_hour.
  std::optional<double> goal_cost;
  std::string goal_cost_unit; // "USD", "USD per job", "USD/h", "USD per 1M tokens"

  Status status = Status::unknown;
  std::string constraint; // memory | speed | budget | price: the tightest margin, or what failed
  std::string why;        // the status in words
  MachinePlan machine;    // purchase options at the top only
  std::optional<double> break_even_days; // buy vs rent, 24/7
  std::string break_even_with;           // the rental compared
};

struct Tier {
  std::string tier;             // "one consumer GPU", "workstation", "server", "cloud"
  std::optional<Option> option; // the cheapest that fits; nullopt: none
};

struct PickResult {
  fit::ModelInput model;
  fit::Run run;
  Goal goal;
  Budget budget;
  std::vector<Option> options;      // ranked: ok first, then by goal cost
  std::vector<Option> alternatives; // the other way to have it (rentals when buying and back)
  std::vector<Tier> tiers;          // no goal and no budget: the cheapest per tier
  std::string decided_by;           // memory | speed | budget | price
  std::string summary;              // one sentence
  // Nothing reaches the goal within the budget: the cheapest option that reaches it ignoring the
  // budget (index into options), or none at all.
  bool nothing_fits = false;
  std::optional<std::size_t> cheapest_reaching_goal;
  std::vector<std::string> assumptions;
  std::vector<std::string> stale_prices; // "GeForce RTX 3090 used $650 (2026, 329 days)"
  // The exchange rates applied to prices in another currency than the budget's (empty: none).
  std::vector<Conversion> conversions;
};

PickResult pick(const Request &request);

// A catalog GPU as pick sizes it: in a slot, or (egpu) behind a Thunderbolt 4 dock, whose
// measured host-to-device rate (links.csv) replaces the slot's.
fit::GpuTarget target(const kb::GpuSpec &spec, bool egpu, const kb::KnowledgeBase &kb);

// `gpu` behind a link of data/links.csv ("Thunderbolt 4", "OCuLink"): its measured host-to-device
// rate replaces the slot's. The link's theoretical rate when none was measured; unchanged when the
// data lacks the link.
fit::GpuTarget behind_link(fit::GpuTarget gpu, std::string_view link, const kb::KnowledgeBase &kb);

// What a dock's link costs this workload: fit's time for `slot` (the card in an internal slot of
// its own generation and width: the host link cleared) first, then for each of `docked`, with how
// much slower each is than the slot.
std::vector<LinkCost> link_costs(const fit::ModelInput &model, const fit::Run &run,
                                 fit::GpuTarget slot, const std::vector<fit::GpuTarget> &docked,
                                 int count, const Goal &goal, const fit::HostRates &host = {});

// An option's speed in words ("the job in 12.3 h", "45.1 tokens/s per stream"), and in seconds per
// unit of the goal (the job, a stream's token, a sample: lower is faster); nullopt when untimed.
std::string speed_text(const Option &o);
std::optional<double> seconds_per_goal(const Option &o);

// One GPU model x count evaluated (memory and time; no price): what pick() does per option,
// exposed for the accuracy tests.
// `host`: measured rates (`dlrig bench`) the time model uses where they apply.
Option evaluate(const fit::ModelInput &model, const fit::Run &run, const fit::GpuTarget &gpu,
                int count, const Goal &goal, const fit::HostRates &host = {});

// Parsers for the command line ("3000USD", "$3,000", "2.5k EUR"; "24h", "90min", "2d").
struct Money {
  double amount = 0;
  std::string currency; // empty: not given (USD assumed by the caller)
};
// An amount as printed: "$1300", "$2.99", "$0.0046", "$1.30M" in USD; "1300 EUR" otherwise.
std::string show_money(double amount, std::string_view currency);
Result<Money> parse_money(std::string_view s, std::string_view flag = "--budget");
Result<double> parse_duration(std::string_view s);

} // namespace dlrig::pick
