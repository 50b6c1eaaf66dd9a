#include "dlrig/pick/report.hpp"

#include "dlrig/fit/report.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dlrig::pick {
namespace {

// How many ranked options the human table shows (JSON has every one).
constexpr std::size_t kShown = 10;
constexpr std::size_t kShownRentals = 3;

std::string currency_of(const Option &o) {
  return o.price ? o.price->currency : "USD";
}

std::string gb(double bytes) {
  return fmt::format("{:.1f} GB", bytes / 1e9);
}

std::string workload(const PickResult &r) {
  const auto &run = r.run;
  std::string what = fmt::format("{} ({} parameters), {}", r.model.arch.name,
                                 show_si(static_cast<double>(r.model.params)), fit::name(run.mode));
  if (run.qlora)
    what += ", QLoRA";
  else if (run.lora_rank > 0)
    what += fmt::format(", LoRA r{}", run.lora_rank);
  what += fmt::format(", {}", fit::name(run.precision));
  if (run.quant != fit::Quant::none)
    what += fmt::format(", weights {}", fit::name(run.quant));
  if (const auto &q = r.model.arch.stored_quant)
    what += ", stored " + model::describe(*q);
  what += fmt::format(", batch {}", run.batch);
  if (run.seq > 0)
    what += fmt::format(", seq {}", run.seq);
  if (run.mode == fit::Mode::infer && run.max_tokens > 0)
    what += fmt::format(", +{} new tokens", run.max_tokens);
  if (run.mode == fit::Mode::infer && run.concurrency > 1)
    what += fmt::format(", {} concurrent", run.concurrency);
  return what;
}

std::string goal_text(const PickResult &r) {
  std::string g;
  const auto &run = r.run;
  if (run.mode == fit::Mode::train) {
    if (run.dataset_tokens)
      g = show_si(*run.dataset_tokens) + " tokens";
    else if (run.samples)
      g = show_si(*run.samples) + " samples";
    if (!g.empty())
      g += fmt::format(" x {:g} epoch{}", run.epochs, run.epochs == 1 ? "" : "s");
    if (r.goal.within_s)
      g += fmt::format("{}within {}", g.empty() ? "" : " ", fit::show_duration(*r.goal.within_s));
  } else if (r.goal.tokens_per_s) {
    g = fmt::format("{:g} tokens/s per stream", *r.goal.tokens_per_s);
    if (run.concurrency > 1)
      g += fmt::format(" for {} streams", run.concurrency);
  }
  if (!g.empty())
    return g;
  return r.tiers.empty() ? "none (the cheapest options that fit)"
                         : "none (the cheapest option per tier)";
}

std::string budget_text(const Budget &b) {
  std::string s = b.rent        ? "renting"
                  : b.used_only ? "buying used"
                  : b.new_only  ? "buying new"
                                : "buying";
  if (b.total)
    s += fmt::format(", at most {}{}", show_money(*b.total, b.currency),
                     b.rent ? " for the job" : "");
  if (b.per_hour)
    s += fmt::format(", at most {} per hour", show_money(*b.per_hour, b.currency));
  if (b.form)
    s += fmt::format(", form {}", name(*b.form));
  if (b.gpus_max < 8)
    s += fmt::format(", up to {} GPUs", b.gpus_max);
  return s;
}

std::string rate_text(const Conversion &c) {
  return fmt::format("1 {} = {:.6g} {} (ECB reference rate of {}{}{})", c.from, c.factor, c.to,
                     c.date, c.age_days ? fmt::format(", {} days old", *c.age_days) : "",
                     c.stale ? ", stale" : "");
}

Json conversions_json(const std::vector<Conversion> &v) {
  Json a = Json::array();
  for (const auto &c : v)
    a.push_back({{"from", c.from},
                 {"to", c.to},
                 {"factor", c.factor},
                 {"date", c.date},
                 {"age_days", c.age_days},
                 {"stale", c.stale},
                 {"source", c.source}});
  return a;
}

// A fix's price: null where there is no fix; {"amount": null, ...} where its price is unknown.
Json part_price_json(const UpgradeLine &l) {
  if (l.fix.empty())
    return nullptr;
  Json j{{"for", l.priced.empty() ? Json(nullptr) : Json(l.priced)},
         {"quantity", l.quantity},
         {"amount", l.total()}};
  if (l.price) {
    const auto &p = *l.price;
    j["currency"] = p.currency;
    j["each"] = p.amount;
    j["date"] = p.date.empty() ? Json(nullptr) : Json(p.date);
    j["age_days"] = p.age_days;
    j["stale"] = p.stale;
    j["seller"] = p.seller;
    j["source"] = p.source;
    j["original_amount"] = p.original_amount;
    j["original_currency"] = p.original_amount ? Json(p.original_currency) : Json(nullptr);
  }
  return j;
}

std::string speed_cell(const Option &o) {
  if (o.stream_tokens_per_s)
    return fmt::format("{:.1f} tok/s/stream", *o.stream_tokens_per_s);
  if (o.tokens_per_s)
    return fmt::format("{:.0f} tok/s", *o.tokens_per_s);
  if (o.samples_per_s)
    return fmt::format("{:.0f} samples/s", *o.samples_per_s);
  return kUnknown;
}

std::string fits_cell(const Option &o) {
  if (!o.fits || !o.device_bytes)
    return kUnknown;
  if (!*o.fits)
    return "no: " + o.why + (o.fix.empty() ? "" : "; fits with " + o.fix);
  return fmt::format("yes ({} free)", gb(static_cast<double>(*o.memory_bytes) -
                                         static_cast<double>(*o.device_bytes)));
}

std::string price_cell(const Option &o) {
  if (!o.price)
    return kUnknown;
  const auto &p = *o.price;
  std::string when = p.date.empty() ? "undated" : p.date;
  if (p.original_amount)
    when += ", from " + show_money(*p.original_amount, p.original_currency);
  return fmt::format("{}{} ({}{})", show_money(p.amount, p.currency),
                     o.acquire == Acquire::rent ? "/h" : " each", when, p.stale ? ", stale" : "");
}

std::string cost_cell(const Option &o) {
  if (!o.goal_cost)
    return kUnknown;
  return show_money(*o.goal_cost, currency_of(o)) + " " + o.goal_cost_unit;
}

std::string status_cell(const Option &o) {
  if (o.status == Status::ok)
    return "ok";
  std::string s(name(o.status));
  if (o.status == Status::too_slow || o.status == Status::unknown || o.status == Status::no_run)
    s += o.why.empty() ? "" : ": " + o.why;
  return s;
}

Table options_table(const std::string &title, const std::vector<Option> &v, std::size_t shown) {
  Table t;
  t.title = title;
  t.header = {"#",     "option", "how",   "status", "fits (free memory)",
              "speed", "job",    "price", "cost",   "limit"};
  for (std::size_t i = 0; i < v.size() && i < shown; ++i) {
    const auto &o = v[i];
    // A run that does not fit has no speed to show (JSON keeps what it would take).
    const bool runs = o.status != Status::no_fit && o.status != Status::no_run;
    t.add({std::to_string(i + 1), o.name, std::string(name(o.acquire)), status_cell(o),
           fits_cell(o), runs ? speed_cell(o) : "-",
           runs && o.job_s ? fit::show_duration(*o.job_s) : kUnknown, price_cell(o), cost_cell(o),
           o.constraint.empty() ? kUnknown : o.constraint});
  }
  return t;
}

Json option_json(const Option &o) {
  Json j;
  j["name"] = o.name;
  j["gpu"] = o.gpu;
  j["count"] = o.count;
  j["instance"] = o.instance.empty() ? Json(nullptr) : Json(o.instance);
  j["form"] = name(o.form);
  j["acquire"] = name(o.acquire);
  j["layout"] = o.layout.empty() ? Json(nullptr) : Json(o.layout);
  j["status"] = name(o.status);
  j["why"] = o.why;
  j["constraint"] = o.constraint.empty() ? Json(nullptr) : Json(o.constraint);
  j["memory"] = {{"fits", o.fits},
                 {"device_bytes", o.device_bytes},
                 {"gpu_memory_bytes", o.memory_bytes},
                 {"fix", o.fix.empty() ? Json(nullptr) : Json(o.fix)}};
  j["time"] = {{"tokens_per_s", o.tokens_per_s},
               {"samples_per_s", o.samples_per_s},
               {"stream_tokens_per_s", o.stream_tokens_per_s},
               {"job_seconds", o.job_s},
               {"load_seconds", o.load_s},
               {"bottleneck", o.bottleneck.empty() ? Json(nullptr) : Json(o.bottleneck)},
               {"basis", o.time_basis}};
  if (o.price)
    j["price"] = {{"amount", o.price->amount},
                  {"per", o.acquire == Acquire::rent ? "hour (whole option)" : "GPU"},
                  {"currency", o.price->currency},
                  {"kind", name(o.price->kind)},
                  {"date", o.price->date.empty() ? Json(nullptr) : Json(o.price->date)},
                  {"age_days", o.price->age_days},
                  {"stale", o.price->stale},
                  {"seller", o.price->seller},
                  {"source", o.price->source},
                  {"original_amount", o.price->original_amount},
                  {"original_currency",
                   o.price->original_amount ? Json(o.price->original_currency) : Json(nullptr)}};
  else
    j["price"] = nullptr;
  j["cost"] = {{"upfront", o.upfront},
               {"per_hour", o.per_hour},
               {"job", o.job_cost},
               {"goal", o.goal_cost},
               {"goal_unit", o.goal_cost_unit.empty() ? Json(nullptr) : Json(o.goal_cost_unit)}};
  j["break_even"] = o.break_even_days
                        ? Json{{"days_24_7", *o.break_even_days}, {"rental", o.break_even_with}}
                        : Json(nullptr);
  Json rules = Json::array();
  for (const auto &r : o.machine.rules)
    rules.push_back(
        {{"id", r.id}, {"advice", r.advice}, {"source", r.source}, {"warning", r.warning}});
  Json links = Json::array();
  for (const auto &l : o.machine.egpu_links)
    links.push_back({{"link", l.link},
                     {"host_to_device_bytes_per_s", l.bytes_per_s},
                     {"speed", l.speed},
                     {"seconds_per_goal", l.seconds},
                     {"slower_than_slot", l.slower},
                     {"load_seconds", l.load_s}});
  j["machine"] = o.machine.rules.empty()
                     ? Json(nullptr)
                     : Json{{"platform",
                             o.machine.platform.empty() ? Json(nullptr) : Json(o.machine.platform)},
                            {"cpu_cores", o.machine.cpu_cores},
                            {"ram_bytes", o.machine.ram_bytes},
                            {"psu_w", o.machine.psu_w > 0 ? Json(o.machine.psu_w) : Json(nullptr)},
                            {"read_bytes_per_s", o.machine.read_bytes_per_s},
                            {"egpu_links", links},
                            {"rules", rules}};
  return j;
}

} // namespace

Json to_json(const PickResult &r, const UpgradeAdvice *advice) {
  Json j;
  j["model"] = {{"name", r.model.arch.name},
                {"family", std::string(fit::family_name(r.model.arch.family))},
                {"params", r.model.params}};
  j["workload"] = workload(r);
  j["goal"] = {{"within_seconds", r.goal.within_s},
               {"tokens_per_s_per_stream", r.goal.tokens_per_s},
               {"dataset_tokens", r.run.dataset_tokens},
               {"samples", r.run.samples},
               {"epochs", r.run.epochs > 0 ? Json(r.run.epochs) : Json(nullptr)},
               {"concurrency", r.run.concurrency}};
  j["budget"] = {{"total", r.budget.total},
                 {"per_hour", r.budget.per_hour},
                 {"currency", r.budget.currency},
                 {"rent", r.budget.rent},
                 {"new_only", r.budget.new_only},
                 {"used_only", r.budget.used_only},
                 {"gpus_max", r.budget.gpus_max},
                 {"form", r.budget.form ? Json(name(*r.budget.form)) : Json(nullptr)}};
  j["summary"] = r.summary;
  j["decided_by"] = r.decided_by;
  j["nothing_fits"] = r.nothing_fits;
  j["cheapest_reaching_goal"] =
      r.cheapest_reaching_goal ? Json(r.options[*r.cheapest_reaching_goal].name) : Json(nullptr);
  Json opts = Json::array(), alts = Json::array(), tiers = Json::array();
  for (std::size_t i = 0; i < r.options.size(); ++i) {
    auto o = option_json(r.options[i]);
    o["rank"] = i + 1;
    opts.push_back(std::move(o));
  }
  for (const auto &o : r.alternatives)
    alts.push_back(option_json(o));
  for (const auto &t : r.tiers)
    tiers.push_back(
        {{"tier", t.tier}, {"option", t.option ? option_json(*t.option) : Json(nullptr)}});
  j["options"] = opts;
  j["alternatives"] = alts;
  j["tiers"] = tiers;
  j["stale_prices"] = r.stale_prices;
  j["exchange_rates"] = conversions_json(r.conversions);
  j["assumptions"] = r.assumptions;
  if (advice) {
    Json lines = Json::array();
    for (const auto &l : advice->lines)
      lines.push_back({{"part", l.part},
                       {"has", l.has},
                       {"needs", l.needs},
                       {"limits", l.limits},
                       {"fix", l.fix.empty() ? Json(nullptr) : Json(l.fix)},
                       {"price", part_price_json(l)}});
    j["this_machine"] = {{"machine", advice->machine},
                         {"verdict", advice->verdict},
                         {"as_is", advice->as_is ? option_json(*advice->as_is) : Json(nullptr)},
                         {"parts", lines},
                         {"free_slots", advice->free_slots},
                         {"exchange_rates", conversions_json(advice->conversions)},
                         {"slot_check", advice->slot_check}};
  } else {
    j["this_machine"] = nullptr;
  }
  return j;
}

std::vector<Table> to_tables(const PickResult &r, const UpgradeAdvice *advice) {
  std::vector<Table> out;
  Table head;
  head.add({"workload", workload(r)});
  head.add({"goal", goal_text(r)});
  head.add({"budget", budget_text(r.budget)});
  for (const auto &c : r.conversions)
    head.add({"exchange rate", rate_text(c)});
  head.add({"answer", r.summary});
  out.push_back(head);

  if (!r.tiers.empty()) {
    Table t;
    t.title = "Cheapest option per tier";
    t.header = {"tier", "option", "how", "fits (free memory)", "speed", "price", "cost"};
    for (const auto &tier : r.tiers) {
      if (!tier.option) {
        t.add({tier.tier, "none fits", "", "", "", "", ""});
        continue;
      }
      const auto &o = *tier.option;
      t.add({tier.tier, o.name, std::string(name(o.acquire)), fits_cell(o), speed_cell(o),
             price_cell(o), cost_cell(o)});
    }
    out.push_back(t);
  }

  out.push_back(options_table(fmt::format("Options, best first ({} of {}; --json lists every one)",
                                          std::min(kShown, r.options.size()), r.options.size()),
                              r.options, kShown));
  if (!r.alternatives.empty() && r.tiers.empty()) {
    std::vector<Option> ok;
    for (const auto &o : r.alternatives)
      if (o.status == Status::ok)
        ok.push_back(o);
    if (!ok.empty())
      out.push_back(
          options_table("Renting instead (cheapest that reach the goal)", ok, kShownRentals));
  }

  for (const auto &o : r.options) {
    if (o.machine.rules.empty())
      continue;
    Table m;
    m.title = "The whole machine for " + o.name;
    m.header = {"rule", "advice", "source"};
    for (const auto &rule : o.machine.rules)
      m.add({rule.id + (rule.warning ? " (!)" : ""), rule.advice, rule.source});
    if (o.break_even_days)
      m.add({"buy vs rent",
             fmt::format("{} buys {:.0f} days of 24/7 rental of {}",
                         show_money(*o.upfront, currency_of(o)), *o.break_even_days,
                         o.break_even_with),
             "data/prices.csv"});
    out.push_back(m);
  }

  if (advice) {
    Table t;
    t.title = "This machine (" + advice->machine + "): " + advice->verdict;
    t.header = {"part", "has", "needs", "limits", "cheapest fix", "price"};
    for (const auto &l : advice->lines)
      t.add({l.part, l.has, l.needs, l.limits ? "yes" : "no", l.fix.empty() ? "-" : l.fix,
             price_text(l)});
    out.push_back(t);
  }

  const bool stale_rate = std::any_of(r.conversions.begin(), r.conversions.end(),
                                      [](const Conversion &c) { return c.stale; });
  // A fix priced in another currency than the options: the rate it was converted at.
  std::vector<Conversion> fix_rates;
  if (advice)
    for (const auto &c : advice->conversions)
      if (std::none_of(r.conversions.begin(), r.conversions.end(),
                       [&](const Conversion &x) { return x.from == c.from && x.to == c.to; }))
        fix_rates.push_back(c);
  if (!r.stale_prices.empty() || !r.assumptions.empty() || stale_rate || !fix_rates.empty()) {
    Table n;
    n.title = "Notes";
    for (const auto &s : r.stale_prices)
      n.add({"stale or undated price", s});
    for (const auto &c : r.conversions)
      if (c.stale)
        n.add({"stale exchange rate", rate_text(c) + ": " + c.source});
    for (const auto &c : fix_rates)
      n.add({c.stale ? "stale exchange rate" : "exchange rate", rate_text(c) + ": " + c.source});
    for (const auto &s : r.assumptions)
      n.add({"assumed", s});
    out.push_back(n);
  }
  return out;
}

Report pick_report(const PickResult &r, const UpgradeAdvice *advice) {
  Report rep;
  rep.schema_version = kPickSchemaVersion;
  rep.json = [&r, advice] { return to_json(r, advice); };
  rep.table = [&r, advice](const TextStyle &s) {
    return render(to_tables(r, advice), Format::table, s.width);
  };
  rep.markdown = [&r, advice] { return render(to_tables(r, advice), Format::markdown); };
  return rep;
}

} // namespace dlrig::pick
