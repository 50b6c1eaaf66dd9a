// `dlrig pick`: the workload as `fit` takes it, a goal and a budget in; the library's ranked
// options out. Exit codes: 0 an option reaches the goal within the budget, 1 none does, 64 usage
// (malformed --budget, unknown currency, contradictory flags), 65 a bad --prices file.
#include "commands.hpp"
#include "dlrig/bench/measured.hpp"
#include "dlrig/core/text.hpp"
#include "dlrig/pick/pick.hpp"
#include "dlrig/pick/report.hpp"
#include "dlrig/pick/upgrade.hpp"
#include "dlrig/platform/fs.hpp"
#include "workload.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dlrig::cli {
namespace {

struct PickArgs {
  WorkloadArgs w;
  std::string within, budget, max_per_hour, form, prices;
  double tokens_per_s = 0; // 0 = not given
  bool rent = false, new_only = false, used_only = false;
  int gpus_max = 8;
  bool this_machine = false;
  SnapshotSource src;
  OutputOptions out;
};

[[noreturn]] void usage(const std::string &message) {
  throw Failure(ExitCode::usage, message);
}

// The --prices file's text; a missing, unreadable or special file is named (a FIFO is refused,
// not waited on).
std::string read_prices(const std::string &path) {
  auto text = read_regular_file(path, 16'000'000, "prices CSV");
  if (!text)
    throw Failure(prefixed("--prices ", text.error()));
  return std::move(text).value();
}

// Whether the machine under `root` has an NVIDIA or AMD GPU on its PCI bus (a display or 3D
// controller; an integrated Intel one does not count): pick then also says what limits it, as
// with --from-this-machine. A few sysfs reads, no NVML.
bool has_gpu(const std::string &root) {
  const Sysroot fs(root);
  const std::string dir = "/sys/bus/pci/devices/";
  for (const auto &d : fs.list(dir)) {
    auto cls = fs.read(dir + d + "/class", 64);
    auto vendor = fs.read(dir + d + "/vendor", 64);
    if (!cls || !vendor)
      continue;
    const auto c = trim(*cls), v = trim(*vendor);
    if ((c.starts_with("0x0300") || c.starts_with("0x0302")) && (v == "0x10de" || v == "0x1002"))
      return true;
  }
  return false;
}

ExitCode run_pick(PickArgs &a, const Envelope &envelope) {
  const auto &kb = kb::builtin();
  pick::Request rq;
  fit::Run run = workload_run(a.w, kb);
  rq.model = workload_model(a.w, kb);
  if (!rq.model.not_modelled.empty())
    usage(fmt::format("pick cannot size {} ({}): {}", rq.model.arch.name,
                      rq.model.arch.hf_model_type, rq.model.not_modelled.front()));
  if (rq.model.weights_only)
    usage("pick needs the model's architecture: give a config.json (or a folder with one) next "
          "to the weights, a catalog name, or --params N --family F");
  if (!a.w.torch.empty())
    run = value_or_throw(fit::with_torch(run, a.w.torch, kb), ErrorKind::usage);
  rq.model = fit::as_transformers_builds(std::move(rq.model), run);
  if (run.gpus != 1 || run.nodes != 1)
    usage("pick chooses the GPU count of one machine: leave out --gpus/--nodes (cap it with "
          "--gpus-max)");
  std::vector<std::string> assumptions;

  // The goal.
  const bool train = run.mode == fit::Mode::train;
  if (!a.within.empty()) {
    if (!train)
      usage("--within is the training job's deadline; for serving give --tokens-per-s");
    if (!run.dataset_tokens && !run.samples)
      usage("--within needs the job's size: give --dataset-tokens N or --samples N (and "
            "--epochs E)");
    rq.goal.within_s = value_or_throw(pick::parse_duration(a.within));
  }
  if (a.tokens_per_s > 0) {
    if (train)
      usage("--tokens-per-s is a serving goal: give --mode infer (for training, --within)");
    rq.goal.tokens_per_s = a.tokens_per_s;
  }
  if ((run.dataset_tokens || run.samples) && run.epochs == 0) {
    run.epochs = 1;
    assumptions.push_back("one epoch (give --epochs)");
  }
  if (!train && run.max_tokens == 0) {
    run.max_tokens = 256;
    assumptions.push_back("256 new tokens per request, decode timed at their mean context (give "
                          "--max-tokens)");
  }

  // The budget.
  auto &b = rq.budget;
  b.rent = a.rent;
  b.new_only = a.new_only;
  b.used_only = a.used_only;
  b.gpus_max = a.gpus_max;
  if (a.new_only && a.used_only)
    usage("--new and --used exclude each other: give one, or neither for both");
  if (!a.form.empty())
    b.form = value_or_throw(pick::parse_form(a.form));
  if (b.form == pick::Form::cloud)
    b.rent = true;
  if (b.rent && (a.new_only || a.used_only))
    usage("--new/--used are for buying; --rent (or --form cloud) rents");
  if (b.rent && b.form && *b.form != pick::Form::cloud)
    usage(fmt::format("--rent with --form {}: renting is --form cloud", pick::name(*b.form)));
  if (!a.max_per_hour.empty() && !b.rent)
    usage("--max-per-hour caps a rental: add --rent");
  std::optional<std::string> currency;
  auto money = [&](const std::string &text, const char *flag) {
    auto m = value_or_throw(pick::parse_money(text, flag));
    if (!m.currency.empty()) {
      if (currency && *currency != m.currency)
        usage(fmt::format("--budget and --max-per-hour are in different currencies ({} and {})",
                          *currency, m.currency));
      currency = m.currency;
    }
    return m.amount;
  };
  if (!a.budget.empty())
    b.total = money(a.budget, "--budget");
  if (!a.max_per_hour.empty())
    b.per_hour = money(a.max_per_hour, "--max-per-hour");
  if (b.rent && b.total && !train)
    usage("--rent --budget is the whole job's spend, and serving has no end: give "
          "--max-per-hour");
  if (b.rent && b.total && !run.dataset_tokens && !run.samples)
    usage("--rent --budget is the whole job's spend: give the job's size (--dataset-tokens or "
          "--samples), or cap the rate with --max-per-hour");

  // Prices: the built-in ones, with --prices replacing what it prices. Rows in another currency
  // than the budget's are converted at the ECB reference rates of data/fx.csv.
  const auto &fx = pick::builtin_fx();
  auto known = pick::fx_currencies(fx);
  rq.prices = pick::builtin_prices();
  b.currency = currency.value_or("USD");
  if (!a.prices.empty()) {
    auto user = value_or_throw(pick::parse_prices(read_prices(a.prices), a.prices, kb),
                               ErrorKind::bad_input);
    for (const auto &p : user)
      if (p.currency != b.currency &&
          std::find(known.begin(), known.end(), p.currency) == known.end())
        throw Failure(
            Error{fmt::format("{}:{}: column currency: no exchange rate for {} in "
                              "data/fx.csv (known: {}); give the row in one of them, "
                              "or the budget in {}",
                              a.prices, p.line, p.currency, fmt::join(known, ", "), p.currency),
                  ErrorKind::bad_input});
    rq.prices = pick::override_prices(std::move(rq.prices), user);
  }
  for (const auto &c : pick::currencies(rq.prices))
    if (std::find(known.begin(), known.end(), c) == known.end())
      known.push_back(c);
  std::sort(known.begin(), known.end());
  if (std::find(known.begin(), known.end(), b.currency) == known.end())
    usage(fmt::format("unknown currency {}: known are {} (data/fx.csv, ECB reference rates; or "
                      "give --prices FILE with prices in {})",
                      b.currency, fmt::join(known, ", "), b.currency));

  // This machine's stored `dlrig bench` results (never another machine's: not with --from or
  // --sysroot): a GPU it measured is timed at its measured GEMM rates in every option.
  const bool this_machine = a.this_machine || !a.src.from.empty() || has_gpu(a.src.probe.sysroot);
  if (this_machine && a.src.from.empty() && a.src.probe.sysroot == "/") {
    auto stored = bench::load_stored();
    rq.host = bench::measured_host_rates(stored);
    if (stored.problem)
      assumptions.push_back(bench::unread_results(stored));
  }
  rq.run = value_or_throw(fit::resolve_run(rq.model, run, &assumptions), ErrorKind::usage);
  rq.today = envelope.time.substr(0, 10);
  auto result = pick::pick(rq);
  result.assumptions.insert(result.assumptions.begin(), assumptions.begin(), assumptions.end());
  // --from-this-machine (or --from a snapshot): what limits that machine, and the cheapest fix.
  std::optional<pick::UpgradeAdvice> advice;
  if (this_machine) {
    advice = pick::upgrade_advice(rq, obtain_snapshot(a.src), result);
    print(pick::pick_report(result, &*advice), with_source(envelope, a.src), a.out);
  } else {
    print(pick::pick_report(result), envelope, a.out);
  }
  return result.nothing_fits ? ExitCode::warnings : ExitCode::ok;
}

} // namespace

Runner setup_pick(CLI::App &sub) {
  auto a = std::make_shared<PickArgs>();
  add_workload_options(sub, a->w);
  sub.add_option("--within", a->within,
                 "Goal, training: the whole job (--dataset-tokens/--samples x --epochs) within "
                 "this time (24h, 90min, 2d)")
      ->type_name("DURATION");
  add_ranged_option<double>(sub, "--tokens-per-s", a->tokens_per_s,
                            "Goal, serving: tokens per second of each stream (--concurrency "
                            "streams)",
                            "N", 0.001, 1e7);
  sub.add_option("--budget", a->budget,
                 "Most to spend: the GPUs' price when buying, the whole job when renting "
                 "(3000USD, $3,000, 2500EUR, €2500, £2000; other currencies are converted at the "
                 "ECB reference rates of data/fx.csv)")
      ->type_name("MONEY");
  sub.add_flag("--rent", a->rent, "Rent (cloud) instead of buying");
  sub.add_option("--max-per-hour", a->max_per_hour, "With --rent: most to pay per hour (4USD)")
      ->type_name("MONEY");
  sub.add_flag("--new", a->new_only, "Buy new only");
  sub.add_flag("--used", a->used_only, "Buy used only");
  add_ranged_option<int>(sub, "--gpus-max", a->gpus_max, "At most this many GPUs", "N", 1, 8);
  sub.add_option("--form", a->form, "desktop | workstation | server | laptop-egpu | cloud")
      ->type_name("FORM");
  sub.add_option("--prices", a->prices,
                 "A CSV of prices in data/prices.csv's columns, replacing the built-in price of "
                 "each GPU and kind it lists")
      ->type_name("FILE")
      ->check(non_empty());
  sub.add_flag("--from-this-machine", a->this_machine,
               "Also say what limits this machine (or the --from snapshot) for the workload: GPU "
               "memory, speed, the link, RAM, CPU, disk, with the cheapest fix (automatic on a "
               "machine with an NVIDIA or AMD GPU)");
  add_snapshot_options(sub, a->src);
  add_output_options(sub, a->out, false);
  return [a](const Envelope &run) { return run_pick(*a, run); };
}

} // namespace dlrig::cli
