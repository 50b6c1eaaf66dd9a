#include "dlrig/pick/pick.hpp"

#include "dlrig/core/text.hpp"
#include "dlrig/fit/memory.hpp"
#include "dlrig/fit/time.hpp"
#include "dlrig/kb/kb.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace dlrig::pick {
namespace {

// The ranked options fit's changes are searched for when they do not fit (the table shows 10).
constexpr std::size_t kSuggestWithin = 10;
constexpr int kSuggestMax = 3;

bool transformer(const fit::ModelInput &m) {
  return m.arch.family != model::ModelFamily::cnn && m.arch.family != model::ModelFamily::unet;
}

// The GPU counts a GPU is bought in, and where they sit.
std::vector<std::pair<int, Form>> purchase_shapes(const kb::GpuSpec &g) {
  if (g.form_factor == "desktop")
    return {{1, Form::desktop}, {2, Form::desktop}, {4, Form::workstation}};
  if (g.form_factor == "workstation")
    return {
        {1, Form::workstation}, {2, Form::workstation}, {4, Form::workstation}, {8, Form::server}};
  if (g.form_factor == "pcie-server")
    return {{1, Form::server}, {2, Form::server}, {4, Form::server}, {8, Form::server}};
  if (g.form_factor == "sxm") // HGX boards carry 4 or 8
    return {{4, Form::server}, {8, Form::server}};
  return {};
}

int status_rank(Status s) {
  switch (s) {
  case Status::ok:
    return 0;
  case Status::over_budget:
    return 1;
  case Status::too_slow:
    return 2;
  case Status::no_fit:
    return 3;
  case Status::no_run:
    return 4;
  case Status::unknown:
    return 5;
  case Status::unpriced:
    return 6;
  }
  return 7;
}

std::string constraint_of(Status s) {
  switch (s) {
  case Status::no_fit:
    return "memory";
  case Status::no_run:
    return "precision";
  case Status::too_slow:
    return "speed";
  case Status::over_budget:
    return "budget";
  case Status::unpriced:
    return "price";
  default:
    return "";
  }
}

// The newest price of a kind for a GPU in the budget's currency (the lowest among the newest).
const Price *price_for(const std::vector<Price> &prices, const std::string &gpu, PriceKind kind,
                       const std::string &currency, std::string_view today) {
  const Price *best = nullptr;
  int best_age = 0;
  for (const auto &p : prices) {
    if (p.gpu != gpu || p.kind != kind || p.currency != currency)
      continue;
    const int age = age_days(p.date, today).value_or(1 << 20);
    if (!best || age < best_age || (age == best_age && p.amount < best->amount)) {
      best = &p;
      best_age = age;
    }
  }
  return best;
}

PriceUse use_of(const Price &p, double amount, std::string_view today) {
  PriceUse u;
  u.amount = amount;
  u.kind = p.kind;
  u.date = p.date;
  u.seller = p.seller;
  u.source = p.source;
  u.currency = p.currency;
  u.original_amount = p.original_amount;
  u.original_currency = p.original_currency;
  if (u.original_amount && p.amount > 0)
    *u.original_amount *= amount / p.amount; // per option, as `amount`
  u.age_days = age_days(p.date, today);
  u.stale = !u.age_days || *u.age_days > kStaleDays;
  return u;
}

// Fills the money side and the status of an evaluated option.
void price_option(Option &o, const Request &rq) {
  const auto &b = rq.budget;
  if (!o.price) {
    o.status = Status::unpriced;
    o.constraint = "price";
    o.why =
        fmt::format("no {}price for the {}", o.acquire == Acquire::buy_used ? "used " : "", o.gpu);
    return;
  }
  if (o.acquire == Acquire::rent) {
    o.per_hour = o.price->amount;
    if (o.job_s) {
      o.job_cost = *o.per_hour * *o.job_s / 3600;
      o.goal_cost = o.job_cost;
      o.goal_cost_unit = "per job";
    } else if (rq.run.mode == fit::Mode::infer) {
      o.goal_cost = o.per_hour;
      o.goal_cost_unit = "per hour";
    } else if (o.tokens_per_s && *o.tokens_per_s > 0) {
      o.goal_cost = *o.per_hour / (*o.tokens_per_s * 3600) * 1e6;
      o.goal_cost_unit = "per 1M tokens";
    } else if (o.samples_per_s && *o.samples_per_s > 0) {
      o.goal_cost = *o.per_hour / (*o.samples_per_s * 3600) * 1e3;
      o.goal_cost_unit = "per 1k samples";
    }
  } else {
    o.upfront = o.price->amount * o.count;
    o.goal_cost = o.upfront;
    o.goal_cost_unit = "to buy";
  }
  if (o.status != Status::ok)
    return; // memory or speed already decided
  const bool over = o.acquire == Acquire::rent
                        ? (b.total && o.job_cost && *o.job_cost > *b.total) ||
                              (b.per_hour && o.per_hour && *o.per_hour > *b.per_hour)
                        : (b.total && o.upfront && *o.upfront > *b.total);
  if (over) {
    o.status = Status::over_budget;
    o.constraint = "budget";
    o.why = "over the budget";
    return;
  }
  // The tightest margin among what is known.
  std::vector<std::pair<double, std::string>> margins;
  if (o.memory_bytes && *o.memory_bytes > 0 && o.device_bytes)
    margins.push_back(
        {(static_cast<double>(*o.memory_bytes) - static_cast<double>(*o.device_bytes)) /
             static_cast<double>(*o.memory_bytes),
         "memory"});
  if (rq.goal.within_s && o.job_s)
    margins.push_back({*rq.goal.within_s / *o.job_s - 1, "speed"});
  if (rq.goal.tokens_per_s && o.stream_tokens_per_s)
    margins.push_back({*o.stream_tokens_per_s / *rq.goal.tokens_per_s - 1, "speed"});
  const auto cost = o.acquire == Acquire::rent ? (b.total ? o.job_cost : o.per_hour) : o.upfront;
  const auto cap = o.acquire == Acquire::rent ? (b.total ? b.total : b.per_hour) : b.total;
  if (cost && cap && *cost > 0)
    margins.push_back({*cap / *cost - 1, "budget"});
  if (!margins.empty())
    o.constraint = std::min_element(margins.begin(), margins.end())->second;
}

} // namespace

std::string_view name(Acquire a) {
  switch (a) {
  case Acquire::buy_new:
    return "buy new";
  case Acquire::buy_used:
    return "buy used";
  case Acquire::rent:
    return "rent";
  case Acquire::owned:
    return "owned";
  }
  return "?";
}

std::string_view name(Form f) {
  switch (f) {
  case Form::desktop:
    return "desktop";
  case Form::workstation:
    return "workstation";
  case Form::server:
    return "server";
  case Form::laptop_egpu:
    return "laptop-egpu";
  case Form::cloud:
    return "cloud";
  }
  return "?";
}

Result<Form> parse_form(std::string_view s) {
  for (Form f : {Form::desktop, Form::workstation, Form::server, Form::laptop_egpu, Form::cloud})
    if (name(f) == s)
      return f;
  return make_error(ErrorKind::usage,
                    "--form: unknown value \"" + std::string(s) +
                        "\" (accepted: desktop, workstation, server, laptop-egpu, cloud)");
}

std::string_view name(Status s) {
  switch (s) {
  case Status::ok:
    return "ok";
  case Status::no_fit:
    return "does-not-fit";
  case Status::no_run:
    return "does-not-run";
  case Status::too_slow:
    return "too-slow";
  case Status::over_budget:
    return "over-budget";
  case Status::unpriced:
    return "no-price";
  case Status::unknown:
    return "unknown";
  }
  return "?";
}

fit::GpuTarget behind_link(fit::GpuTarget t, std::string_view link, const kb::KnowledgeBase &kb) {
  const auto *l = kb.find_link(link);
  if (!l)
    return t;
  const auto rate =
      l->measured_h2d_bytes_per_s ? l->measured_h2d_bytes_per_s : l->theoretical_bytes_per_s;
  if (!rate)
    return t;
  t.host_link_bytes_per_s = rate;
  t.host_link = l->name + (l->measured_h2d_bytes_per_s ? ", measured" : ", theoretical");
  return t;
}

fit::GpuTarget target(const kb::GpuSpec &spec, bool egpu, const kb::KnowledgeBase &kb) {
  fit::GpuTarget t = fit::gpu_target(spec);
  return egpu ? behind_link(std::move(t), "Thunderbolt 4", kb) : t;
}

std::string speed_text(const Option &o) {
  if (o.stream_tokens_per_s)
    return fmt::format("{:.1f} tokens/s per stream", *o.stream_tokens_per_s);
  if (o.job_s)
    return fmt::format("the job in {:.1f} h", *o.job_s / 3600);
  if (o.tokens_per_s)
    return fmt::format("{:.0f} tokens/s", *o.tokens_per_s);
  if (o.samples_per_s)
    return fmt::format("{:.0f} samples/s", *o.samples_per_s);
  return "n/a";
}

std::optional<double> seconds_per_goal(const Option &o) {
  if (o.stream_tokens_per_s && *o.stream_tokens_per_s > 0)
    return 1 / *o.stream_tokens_per_s;
  if (o.job_s)
    return o.job_s;
  if (o.samples_per_s && *o.samples_per_s > 0)
    return 1 / *o.samples_per_s;
  return std::nullopt;
}

std::vector<LinkCost> link_costs(const fit::ModelInput &model, const fit::Run &run,
                                 fit::GpuTarget slot, const std::vector<fit::GpuTarget> &docked,
                                 int count, const Goal &goal, const fit::HostRates &host) {
  slot.host_link.clear();
  slot.host_link_bytes_per_s.reset();
  std::vector<LinkCost> out;
  auto cost = [&](const fit::GpuTarget &g, std::string label) {
    const Option o = evaluate(model, run, g, count, goal, host);
    LinkCost c{std::move(label), g.host_link_bytes_per_s, speed_text(o), seconds_per_goal(o), {},
               o.load_s};
    if (!out.empty() && c.seconds && out.front().seconds && *out.front().seconds > 0)
      c.slower = *c.seconds / *out.front().seconds - 1;
    out.push_back(std::move(c));
  };
  cost(slot, slot.pcie_gen && slot.pcie_lanes
                 ? fmt::format("an internal PCIe {}.0 x{} slot", *slot.pcie_gen, *slot.pcie_lanes)
                 : "an internal slot");
  for (const auto &d : docked)
    cost(d, d.host_link_bytes_per_s
                ? fmt::format("{} at {:.1f} GB/s", d.host_link.empty() ? "the dock" : d.host_link,
                              *d.host_link_bytes_per_s / 1e9)
                : "the dock");
  return out;
}

Option evaluate(const fit::ModelInput &model, const fit::Run &base, const fit::GpuTarget &gpu,
                int count, const Goal &goal, const fit::HostRates &host) {
  Option o;
  o.gpu = gpu.name;
  o.count = count;
  o.memory_bytes = gpu.memory_bytes;
  // How the GPUs share the work: serving shards a transformer by tensor parallelism; training
  // keeps the user's strategy, and when plain DDP does not fit, shards with FSDP.
  std::vector<std::pair<fit::Run, std::string>> layouts;
  fit::Run r = base;
  r.gpus = count;
  if (base.mode == fit::Mode::infer) {
    if (count > 1 && transformer(model) && base.tp * base.pp == 1)
      r.tp = count;
    layouts.push_back({r, count > 1 ? fmt::format("tensor parallel {}", r.tp) : "one GPU"});
  } else {
    layouts.push_back({r, count > 1 ? std::string(fit::name(r.strategy)) : "one GPU"});
    // FSDP shards parameters, gradients and optimizer states: a transformer's memory.
    if (count > 1 && transformer(model) && base.strategy == fit::Strategy::ddp &&
        base.tp * base.pp == 1) {
      fit::Run f = r;
      f.strategy = fit::Strategy::fsdp;
      layouts.push_back({f, "fsdp"});
    }
  }
  bool resolved_any = false;
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    auto resolved = fit::resolve_run(model, layouts[i].first, nullptr);
    if (!resolved) {
      if (!resolved_any)
        o.why = resolved.error().message;
      continue;
    }
    resolved_any = true;
    o.why.clear();
    const auto mem = fit::estimate_memory(model, *resolved, gpu);
    o.run = *resolved;
    o.layout = layouts[i].second;
    o.device_bytes = mem.device;
    o.fits = gpu.memory_bytes ? std::optional<bool>(mem.device <= *gpu.memory_bytes) : std::nullopt;
    if (o.fits.value_or(false) || i + 1 == layouts.size())
      break;
  }
  if (!resolved_any) {
    o.run = r;
    o.status = Status::unknown;
    return o;
  }
  if (auto why = fit::cannot_run_on(o.run, gpu); !why.empty()) {
    o.status = Status::no_run;
    o.constraint = "precision";
    o.why = std::move(why);
    return o;
  }
  if (!o.fits) {
    o.status = Status::unknown;
    o.why = "the GPU's memory is unknown";
    return o;
  }
  // Timed whether or not it fits: for a run that does not fit, what it would take with the
  // memory; and the accuracy tests time published runs whose memory tricks fit does not model.
  const auto t = fit::estimate_time(model, o.run, gpu, host);
  o.bottleneck = t.bottleneck;
  o.time_basis = t.basis;
  o.tokens_per_s = t.tokens_per_s;
  o.samples_per_s = t.samples_per_s;
  o.job_s = t.seconds_total;
  o.stream_tokens_per_s = t.decode_tokens_per_s_per_stream;
  o.load_s = t.load_s;
  if (!*o.fits) {
    o.status = Status::no_fit;
    o.constraint = "memory";
    o.why = fmt::format(
        "short by {:.1f} GB",
        (static_cast<double>(*o.device_bytes) - static_cast<double>(*gpu.memory_bytes)) / 1e9);
    return o;
  }
  o.status = Status::ok;
  // An option whose speed the catalog cannot give is not ranked with those it can (even without
  // a goal: its cost buys an unknown amount of work).
  const bool timed = base.mode == fit::Mode::infer ? o.stream_tokens_per_s.has_value()
                                                   : o.samples_per_s.has_value();
  if (!timed) {
    o.status = Status::unknown;
    o.why = t.notes.empty() ? "time unknown" : t.notes.front();
    return o;
  }
  if (goal.within_s && o.job_s && *o.job_s > *goal.within_s) {
    o.status = Status::too_slow;
    o.constraint = "speed";
    o.why = fmt::format("the job takes {:.1f} h", *o.job_s / 3600);
  }
  if (goal.tokens_per_s && o.stream_tokens_per_s && *o.stream_tokens_per_s < *goal.tokens_per_s) {
    o.status = Status::too_slow;
    o.constraint = "speed";
    o.why = fmt::format("{:.1f} tokens/s per stream", *o.stream_tokens_per_s);
  }
  return o;
}

PickResult pick(const Request &rq) {
  const auto &kb = kb::builtin();
  const Sizing &sizing = rq.sizing ? *rq.sizing : builtin_sizing();
  PickResult res;
  res.model = rq.model;
  res.run = rq.run;
  res.goal = rq.goal;
  res.budget = rq.budget;
  const auto &b = rq.budget;
  const bool rent_only = b.rent || (b.form && *b.form == Form::cloud);
  // Every price in the budget's currency.
  const auto &fx = rq.fx ? *rq.fx : builtin_fx();
  const std::vector<Price> prices =
      in_currency(rq.prices, b.currency, fx, rq.today, &res.conversions);
  const auto usd = conversion(fx, "USD", b.currency, rq.today);

  // A GPU this machine measured keeps its measured GEMM rates in every option; this machine's
  // CPU decode rate says nothing about another machine's.
  fit::HostRates gemm_only;
  gemm_only.gpu_gemm = rq.host.gpu_gemm;
  // One evaluation per (GPU, count, eGPU): buying new, used and renting share it.
  std::map<std::tuple<std::string, int, bool>, Option> cache;
  auto evaluated = [&](const kb::GpuSpec &spec, int count, bool egpu) -> const Option & {
    auto key = std::make_tuple(spec.name, count, egpu);
    auto it = cache.find(key);
    if (it != cache.end())
      return it->second;
    return cache
        .emplace(key, evaluate(rq.model, rq.run, target(spec, egpu, kb), count, rq.goal, gemm_only))
        .first->second;
  };
  auto form_ok = [&](Form f) { return !b.form || *b.form == f; };

  std::vector<Option> buy, rent;
  for (const auto &spec : kb.gpus) {
    if (!spec.memory_bytes)
      continue;
    std::vector<std::tuple<int, Form, bool>> shapes;
    for (auto [n, f] : purchase_shapes(spec))
      shapes.emplace_back(n, f, false);
    // A card in a Thunderbolt dock is the same price as in a desktop: offered when asked for.
    if (b.form == Form::laptop_egpu &&
        (spec.form_factor == "desktop" || spec.form_factor == "workstation"))
      shapes.emplace_back(1, Form::laptop_egpu, true);
    for (auto [n, form, egpu] : shapes) {
      if (n > b.gpus_max || !form_ok(form))
        continue;
      for (Acquire a : {Acquire::buy_new, Acquire::buy_used}) {
        if ((a == Acquire::buy_new && b.used_only) || (a == Acquire::buy_used && b.new_only))
          continue;
        const Price *p = nullptr;
        if (a == Acquire::buy_new) {
          p = price_for(prices, spec.name, PriceKind::street_new, b.currency, rq.today);
          if (!p)
            p = price_for(prices, spec.name, PriceKind::msrp, b.currency, rq.today);
        } else {
          p = price_for(prices, spec.name, PriceKind::used, b.currency, rq.today);
          if (!p)
            continue; // an unpriced used option says nothing the new one does not
        }
        const std::string label =
            fmt::format("{}x {}{}", n, spec.name, egpu ? " (Thunderbolt eGPU)" : "");
        if (!p) { // listed once, unsized: an option without a price cannot be ranked
          if (n == std::get<0>(shapes.front())) {
            Option o;
            o.gpu = spec.name;
            o.count = n;
            o.form = form;
            o.acquire = a;
            o.name = label;
            o.memory_bytes = spec.memory_bytes;
            price_option(o, rq);
            buy.push_back(std::move(o));
          }
          continue;
        }
        Option o = evaluated(spec, n, egpu);
        o.form = form;
        o.acquire = a;
        o.name = label;
        o.price = use_of(*p, p->amount, rq.today);
        price_option(o, rq);
        buy.push_back(std::move(o));
      }
    }
    // Rentals by the GPU-hour (marketplaces rent 1 to 8 GPUs of a kind).
    if (form_ok(Form::cloud))
      for (PriceKind k : {PriceKind::cloud_on_demand, PriceKind::cloud_spot}) {
        const Price *p = price_for(prices, spec.name, k, b.currency, rq.today);
        if (!p)
          continue;
        for (int n : {1, 2, 4, 8}) {
          if (n > b.gpus_max)
            continue;
          Option o = evaluated(spec, n, false);
          o.form = Form::cloud;
          o.acquire = Acquire::rent;
          o.name =
              fmt::format("{}x {} ({}{})", n, spec.name, p->seller.empty() ? "cloud" : p->seller,
                          k == PriceKind::cloud_spot ? ", spot" : "");
          o.price = use_of(*p, p->amount * n, rq.today);
          price_option(o, rq);
          rent.push_back(std::move(o));
        }
      }
  }
  // Cloud instances of cloud.csv (priced per instance-hour, in USD).
  if (usd && b.currency != "USD" && form_ok(Form::cloud) &&
      std::none_of(res.conversions.begin(), res.conversions.end(),
                   [](const Conversion &c) { return c.from == "USD"; }))
    res.conversions.push_back(*usd);
  if (form_ok(Form::cloud) && usd)
    for (const auto &c : kb.cloud) {
      const auto *spec = c.gpu.empty() ? nullptr : kb.find_gpu(c.gpu);
      if (!spec || !spec->memory_bytes || !c.price_usd_per_hour || c.gpu_count > b.gpus_max)
        continue;
      Option o = evaluated(*spec, c.gpu_count, false);
      o.form = Form::cloud;
      o.acquire = Acquire::rent;
      o.instance = c.instance;
      o.name = fmt::format("{} {} ({}x {})", c.provider, c.instance, c.gpu_count, c.gpu_model);
      Price p;
      p.kind = PriceKind::cloud_on_demand;
      p.date = c.price_date;
      p.seller = c.provider + " " + c.price_region;
      p.source = c.source;
      p.currency = b.currency;
      p.amount = *c.price_usd_per_hour * usd->factor;
      if (b.currency != "USD") {
        p.original_amount = *c.price_usd_per_hour;
        p.original_currency = "USD";
      }
      o.price = use_of(p, p.amount, rq.today);
      price_option(o, rq);
      rent.push_back(std::move(o));
    }

  auto rank = [](std::vector<Option> &v) {
    std::stable_sort(v.begin(), v.end(), [](const Option &x, const Option &y) {
      const int sx = status_rank(x.status), sy = status_rank(y.status);
      if (sx != sy)
        return sx < sy;
      if (x.goal_cost.has_value() != y.goal_cost.has_value())
        return x.goal_cost.has_value();
      if (x.goal_cost && *x.goal_cost != *y.goal_cost)
        return *x.goal_cost < *y.goal_cost;
      return x.count < y.count;
    });
  };
  rank(buy);
  rank(rent);
  res.options = rent_only ? std::move(rent) : std::move(buy);
  res.alternatives = rent_only ? std::vector<Option>{} : std::move(rent);
  auto &opts = res.options;

  // What decides: why the nearest cheaper option was turned down (memory, speed or the budget);
  // "price" when the cheapest priced option already reaches the goal.
  auto best = std::find_if(opts.begin(), opts.end(),
                           [](const Option &o) { return o.status == Status::ok; });
  const bool over_budget = std::any_of(
      opts.begin(), opts.end(), [](const Option &o) { return o.status == Status::over_budget; });
  const Option *nearest = nullptr;
  for (const auto &o : opts) {
    const bool turned_down = o.status == Status::no_fit || o.status == Status::too_slow ||
                             o.status == Status::over_budget;
    if (!turned_down || !o.goal_cost)
      continue;
    if (best != opts.end() && !(best->goal_cost && *o.goal_cost < *best->goal_cost))
      continue;
    if (!nearest || *o.goal_cost > *nearest->goal_cost)
      nearest = &o;
  }
  res.decided_by = best == opts.end() && over_budget ? "budget"
                   : nearest                         ? constraint_of(nearest->status)
                                                     : "price";
  if (best == opts.end()) {
    res.nothing_fits = true;
    for (std::size_t i = 0; i < opts.size(); ++i)
      if (opts[i].status == Status::over_budget) {
        res.cheapest_reaching_goal = i;
        break;
      }
  }

  // fit's cheapest change for the options that do not fit among the first shown (a search over
  // fit's changes: the costliest step of a pick, so only where a reader sees it).
  int searched = 0;
  for (std::size_t i = 0; i < opts.size() && i < kSuggestWithin && searched < kSuggestMax; ++i) {
    auto &o = opts[i];
    if (o.status != Status::no_fit)
      continue;
    ++searched;
    const auto *spec = kb.find_gpu(o.gpu);
    for (const auto &s : fit::suggest(rq.model, o.run, fit::gpu_target(*spec)))
      if (s.fits && s.extra_gpus == 0) {
        o.fix = s.change + " (" + s.flags + ")";
        break;
      }
  }

  // The whole machine and buy-versus-rent for the top purchase options.
  int planned = 0;
  for (auto &o : opts) {
    if (o.acquire == Acquire::rent || planned >= rq.machine_options)
      continue;
    if (o.status != Status::ok && !(res.nothing_fits && o.status == Status::over_budget))
      continue;
    ++planned;
    const auto *spec = kb.find_gpu(o.gpu);
    MachineInput in;
    in.gpu = spec;
    in.count = o.count;
    in.egpu = o.form == Form::laptop_egpu;
    in.images = !transformer(rq.model);
    in.samples_per_s = o.samples_per_s;
    if (in.egpu) {
      const auto slot = target(*spec, false, kb);
      in.egpu_links = link_costs(rq.model, rq.run, slot,
                                 {target(*spec, true, kb), behind_link(slot, "OCuLink", kb)},
                                 o.count, rq.goal, gemm_only);
    }
    if (rq.run.mode == fit::Mode::train && o.samples_per_s) {
      in.bytes_per_sample = in.images ? sizing["bytes_per_image"]
                                      : 4.0 * static_cast<double>(o.run.seq); // int32 token ids
      if (rq.run.samples && in.images)
        in.dataset_bytes = *rq.run.samples * sizing["bytes_per_image"];
    }
    o.machine = plan_machine(in, sizing);
    // Break-even against the cheapest on-demand rental of the same GPU.
    const Price *r = price_for(prices, o.gpu, PriceKind::cloud_on_demand, b.currency, rq.today);
    if (r && o.upfront) {
      o.break_even_days = *o.upfront / (r->amount * o.count) / 24;
      o.break_even_with =
          fmt::format("{} at {}/GPU-hour ({})", o.gpu, show_money(r->amount, b.currency),
                      r->seller.empty() ? r->source : r->seller);
    }
  }

  // No goal and no budget: the cheapest option that fits in each tier.
  if (!rq.goal.any() && !b.any()) {
    auto cheapest = [&](const std::vector<Option> &v, auto pred) -> std::optional<Option> {
      for (const auto &o : v)
        if (o.status == Status::ok && pred(o))
          return o;
      return std::nullopt;
    };
    if (!rent_only) {
      res.tiers.push_back({"one consumer GPU", cheapest(opts, [&](const Option &o) {
                             return o.count == 1 && o.form == Form::desktop &&
                                    kb.find_gpu(o.gpu)->form_factor == "desktop";
                           })});
      res.tiers.push_back({"workstation", cheapest(opts, [](const Option &o) {
                             return o.form == Form::workstation ||
                                    (o.form == Form::desktop && o.count > 1);
                           })});
      res.tiers.push_back(
          {"server", cheapest(opts, [](const Option &o) { return o.form == Form::server; })});
    }
    res.tiers.push_back({"cloud", cheapest(rent_only ? opts : res.alternatives,
                                           [](const Option &) { return true; })});
  }

  // Stale prices among what is shown first.
  for (std::size_t i = 0; i < opts.size() && i < 10; ++i)
    if (opts[i].price && opts[i].price->stale)
      res.stale_prices.push_back(fmt::format(
          "{}: {} {} {}", opts[i].name, show_money(opts[i].price->amount, b.currency),
          opts[i].price->date.empty() ? "undated" : opts[i].price->date,
          opts[i].price->age_days ? fmt::format("({} days old)", *opts[i].price->age_days)
                                  : std::string()));

  if (best != opts.end())
    res.summary = fmt::format("{}: {} {} — decided by {}", best->name,
                              best->goal_cost ? show_money(*best->goal_cost, b.currency) : "n/a",
                              best->goal_cost_unit, res.decided_by);
  else if (res.cheapest_reaching_goal)
    res.summary = fmt::format("nothing reaches the goal within the budget; the cheapest that "
                              "would: {} for {}",
                              opts[*res.cheapest_reaching_goal].name,
                              show_money(*opts[*res.cheapest_reaching_goal].goal_cost, b.currency));
  else {
    // Not even ignoring the budget: the fastest option that fits, and what it reaches.
    const Option *fastest = nullptr;
    auto work = [](const Option &o) {
      return o.stream_tokens_per_s ? *o.stream_tokens_per_s : o.samples_per_s.value_or(0);
    };
    for (const auto &o : opts)
      if (o.fits.value_or(false) && (!fastest || work(o) > work(*fastest)))
        fastest = &o;
    res.summary = fastest ? fmt::format("no option of the catalog reaches the goal; the fastest "
                                        "that fits, {}, {}",
                                        fastest->name, fastest->why)
                          : "no option of the catalog reaches the goal or fits the model";
  }
  return res;
}

std::string show_money(double v, std::string_view currency) {
  std::string n = v >= 1e6   ? fmt::format("{:.2f}M", v / 1e6)
                  : v >= 100 ? fmt::format("{:.0f}", v)
                  : v >= 0.1 ? fmt::format("{:.2f}", v)
                             : fmt::format("{:.2g}", v);
  return currency == "USD" ? "$" + n : n + " " + std::string(currency);
}

Result<Money> parse_money(std::string_view text, std::string_view flag) {
  std::string s;
  for (char c : text)
    if (c != ',' && c != ' ' && c != '_')
      s += c;
  Money m;
  // A currency sign before or after the amount ($3000, 3000€, £2,500); ¥ is both the yen and
  // the yuan, so it is refused with the two codes.
  if (s.find("\xc2\xa5") != std::string::npos) // ¥
    return make_error(ErrorKind::usage, std::string(flag) + " \"" + std::string(text) +
                                            "\": ¥ is both the yen and the yuan: write JPY or CNY "
                                            "after the amount (300000JPY, 20000CNY)");
  static constexpr std::pair<std::string_view, std::string_view> signs[] = {
      {"$", "USD"},
      {"\xe2\x82\xac", "EUR"},
      {"\xc2\xa3", "GBP"},
      {"\xe2\x82\xb9", "INR"},
      {"\xe2\x82\xa9", "KRW"}};
  for (const auto &[sign, code] : signs) {
    if (s.starts_with(sign))
      s.erase(0, sign.size());
    else if (s.ends_with(sign))
      s.erase(s.size() - sign.size());
    else
      continue;
    m.currency = code;
    break;
  }
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.'))
    ++i;
  std::string num = s.substr(0, i), rest = s.substr(i);
  double mult = 1;
  if (!rest.empty() && (rest.front() == 'k' || rest.front() == 'K') &&
      (rest.size() == 1 || rest.size() == 4)) { // 3k, 3kUSD
    mult = 1e3;
    rest.erase(0, 1);
  }
  auto bad = [&] {
    return make_error(ErrorKind::usage,
                      std::string(flag) + " \"" + std::string(text) +
                          "\": expected an amount and a currency such as 3000USD, $3,000, "
                          "2500€ or 2.5kUSD");
  };
  auto amount = parse_ranged(num, 0.0, std::numeric_limits<double>::max()); // not ".", not 1e400
  if (!amount)
    return bad();
  m.amount = *amount * mult;
  if (!(m.amount > 0) || !std::isfinite(m.amount))
    return bad();
  if (!rest.empty()) {
    std::string cur = rest;
    for (char &c : cur)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (cur.size() != 3 ||
        !std::all_of(cur.begin(), cur.end(), [](char c) { return c >= 'A' && c <= 'Z'; }))
      return bad();
    if (!m.currency.empty() && cur != m.currency)
      return bad();
    m.currency = cur;
  }
  return m;
}

Result<double> parse_duration(std::string_view text) {
  const std::string s = lower(trim(text));
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.'))
    ++i;
  const std::string num = s.substr(0, i), unit(trim(std::string_view(s).substr(i)));
  // The units and their English words, singular and plural (36 hours, 2days, 1 week).
  static const std::pair<const char *, double> units[] = {
      {"s", 1},         {"sec", 1},       {"secs", 1},     {"second", 1},  {"seconds", 1},
      {"min", 60},      {"mins", 60},     {"m", 60},       {"minute", 60}, {"minutes", 60},
      {"h", 3600},      {"hr", 3600},     {"hrs", 3600},   {"hour", 3600}, {"hours", 3600},
      {"d", 86400},     {"day", 86400},   {"days", 86400}, {"w", 604800},  {"wk", 604800},
      {"week", 604800}, {"weeks", 604800}};
  double mult = 0;
  for (auto [u, f] : units)
    if (unit == u)
      mult = f;
  auto n = parse_ranged(num, 0.0, std::numeric_limits<double>::max()); // not ".", not 1e400
  if (!n || !(*n > 0) || mult == 0 || !std::isfinite(*n * mult))
    return make_error(ErrorKind::usage, "--within \"" + std::string(text) +
                                            "\": expected a duration such as 24h, 90min, 2d or "
                                            "1w");
  return *n * mult;
}

} // namespace dlrig::pick
