#include "dlrig/pick/data.hpp"

#include "dlrig/core/embedded.hpp"
#include "dlrig/core/exit_code.hpp"
#include "dlrig/kb/csv.hpp"
#include "dlrig/kb/row.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <stdexcept>

namespace dlrig::pick {
namespace {

using kb::detail::Row;
using kb::detail::RowError;

constexpr std::pair<PriceKind, std::string_view> kKinds[] = {
    {PriceKind::msrp, "msrp"},
    {PriceKind::street_new, "street_new"},
    {PriceKind::used, "used"},
    {PriceKind::cloud_on_demand, "cloud_on_demand"},
    {PriceKind::cloud_spot, "cloud_spot"}};

// Runs `body` over every record, turning row errors into a bad-input error. pick's files (and a
// --prices file) are documented in docs/pick.md, not with the knowledge base's.
template <class T, class Body>
Result<std::vector<T>> rows(std::string_view text, std::string_view file,
                            const std::vector<std::string_view> &columns, Body body) {
  auto table = kb::parse_csv(text, file);
  if (!table)
    return table.error();
  try {
    kb::detail::require_columns(*table, file, columns, "docs/pick.md");
    std::vector<T> out;
    for (const auto &rec : table->records)
      body(Row(*table, rec, file), out);
    return out;
  } catch (const RowError &e) {
    return make_error(ErrorKind::bad_input, e.what());
  }
}

bool digits(std::string_view s, std::size_t n) {
  return s.size() == n &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit((unsigned char)c); });
}

// YYYY, YYYY-MM or YYYY-MM-DD -> days since 0000-03-01 (a civil-calendar day number).
std::optional<long> day_number(std::string_view d) {
  int y = 0, m = 1, day = 1;
  if (d.size() < 4 || !digits(d.substr(0, 4), 4))
    return std::nullopt;
  y = std::stoi(std::string(d.substr(0, 4)));
  if (d.size() > 4) {
    if (d.size() < 7 || d[4] != '-' || !digits(d.substr(5, 2), 2))
      return std::nullopt;
    m = std::stoi(std::string(d.substr(5, 2)));
    if (d.size() > 7) {
      if (d.size() != 10 || d[7] != '-' || !digits(d.substr(8, 2), 2))
        return std::nullopt;
      day = std::stoi(std::string(d.substr(8, 2)));
    }
  }
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  const int month_days[] = {31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12 || day < 1 || day > month_days[m - 1])
    return std::nullopt;
  // Howard Hinnant's days_from_civil.
  y -= m <= 2;
  const long era = (y >= 0 ? y : y - 399) / 400;
  const long yoe = y - era * 400;
  const long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe;
}

template <class T>
Result<std::vector<T>> load_embedded(std::string_view name,
                                     Result<std::vector<T>> (*parse)(std::string_view,
                                                                     std::string_view)) {
  auto text = embedded_file(name);
  if (!text)
    return make_error("data/" + std::string(name) + " was not embedded");
  return parse(*text, "data/" + std::string(name));
}

} // namespace

std::string_view name(PriceKind k) {
  for (const auto &[kind, n] : kKinds)
    if (kind == k)
      return n;
  return "?";
}

bool is_rental(PriceKind k) {
  return k == PriceKind::cloud_on_demand || k == PriceKind::cloud_spot;
}

Result<std::vector<Price>> parse_prices(std::string_view text, std::string_view file,
                                        const kb::KnowledgeBase &kb) {
  return rows<Price>(
      text, file, {"gpu", "kind", "price", "currency", "date", "source"},
      [&](const Row &r, std::vector<Price> &out) {
        Price p;
        p.file = std::string(file);
        p.line = r.line();
        p.gpu = kb::detail::trim(r.required("gpu"));
        if (!kb.find_gpu(p.gpu))
          r.fail("gpu", "\"" + p.gpu +
                            "\" is not a GPU of the catalog (see `dlrig kb gpus`; the "
                            "name must be written as there)");
        const auto kind = kb::detail::trim(r.required("kind"));
        auto k = std::find_if(std::begin(kKinds), std::end(kKinds),
                              [&](const auto &e) { return e.second == kind; });
        if (k == std::end(kKinds))
          r.fail("kind",
                 "\"" + kind + "\" is not msrp, street_new, used, cloud_on_demand or cloud_spot");
        p.kind = k->first;
        auto amount = r.number("price");
        if (!amount || *amount <= 0 || *amount > 1e7)
          r.fail("price", "must be a positive number up to 10000000 (per GPU to buy, per "
                          "GPU-hour to rent)");
        p.amount = *amount;
        p.currency = kb::detail::trim(r.required("currency"));
        if (!(p.currency.size() == 3 && std::all_of(p.currency.begin(), p.currency.end(),
                                                    [](char c) { return c >= 'A' && c <= 'Z'; })))
          r.fail("currency", "\"" + p.currency + "\" is not a currency code such as USD");
        p.date = kb::detail::trim(r.str("date"));
        if (!p.date.empty() && !day_number(p.date))
          r.fail("date", "\"" + p.date + "\" is not YYYY, YYYY-MM or YYYY-MM-DD");
        p.source = kb::detail::trim(r.required("source"));
        // seller and notes are optional columns (Row::str throws for a column the header lacks).
        try {
          p.seller = kb::detail::trim(r.str("seller"));
          p.notes = r.str("notes");
        } catch (const RowError &) {
        }
        out.push_back(std::move(p));
      });
}

std::vector<Price> msrp_prices(const kb::KnowledgeBase &kb) {
  std::vector<Price> out;
  for (const auto &g : kb.gpus) {
    if (!g.launch_price_usd || *g.launch_price_usd <= 0)
      continue;
    Price p;
    p.gpu = g.name;
    p.kind = PriceKind::msrp;
    p.amount = *g.launch_price_usd;
    p.currency = "USD";
    p.date = g.launch_year ? std::to_string(*g.launch_year) : "";
    p.seller = "launch MSRP";
    p.source = g.source;
    p.file = "data/gpus.csv";
    out.push_back(std::move(p));
  }
  return out;
}

const std::vector<Price> &builtin_prices() {
  static const std::vector<Price> prices = [] {
    const auto &kb = kb::builtin();
    auto text = embedded_file("prices.csv");
    if (!text)
      throw Failure(ExitCode::internal, "data/prices.csv was not embedded");
    auto rows = parse_prices(*text, "data/prices.csv", kb);
    if (!rows)
      throw Failure(ExitCode::internal, rows.error().message);
    auto out = msrp_prices(kb);
    out.insert(out.end(), rows->begin(), rows->end());
    return out;
  }();
  return prices;
}

std::vector<Price> override_prices(std::vector<Price> base, const std::vector<Price> &user) {
  std::set<std::pair<std::string, PriceKind>> given;
  for (const auto &p : user)
    given.insert({p.gpu, p.kind});
  std::erase_if(base, [&](const Price &p) { return given.count({p.gpu, p.kind}) > 0; });
  base.insert(base.end(), user.begin(), user.end());
  return base;
}

std::optional<int> age_days(std::string_view date, std::string_view today) {
  auto a = day_number(date),
       b = day_number(today.substr(0, std::min<std::size_t>(10, today.size())));
  if (!a || !b)
    return std::nullopt;
  return static_cast<int>(*b - *a);
}

Result<std::vector<Platform>> parse_platforms(std::string_view text, std::string_view file) {
  return rows<Platform>(text, file,
                        {"platform", "cpu_lanes", "pcie_gen", "max_gpus", "source", "notes"},
                        [](const Row &r, std::vector<Platform> &out) {
                          Platform p;
                          p.name = r.required("platform");
                          auto lanes = r.integer("cpu_lanes");
                          if (!lanes || *lanes < 4 || *lanes > 256)
                            r.fail("cpu_lanes", "must be 4 to 256 PCIe lanes");
                          p.cpu_lanes = *lanes;
                          auto gen = r.integer("pcie_gen");
                          if (!gen || *gen < 3 || *gen > 6)
                            r.fail("pcie_gen", "must be a PCIe generation, 3 to 6");
                          p.pcie_gen = *gen;
                          auto n = r.integer("max_gpus");
                          if (!n || *n < 1 || *n > 16)
                            r.fail("max_gpus", "must be 1 to 16");
                          p.max_gpus = *n;
                          p.source = r.required("source");
                          p.notes = r.str("notes");
                          out.push_back(std::move(p));
                        });
}

Result<std::vector<SizingConstant>> parse_sizing(std::string_view text, std::string_view file) {
  std::set<std::string> seen;
  return rows<SizingConstant>(text, file, {"rule", "value", "unit", "source", "notes"},
                              [&](const Row &r, std::vector<SizingConstant> &out) {
                                SizingConstant c;
                                c.rule = r.required("rule");
                                if (!seen.insert(c.rule).second)
                                  r.fail("rule", "\"" + c.rule + "\" appears twice");
                                auto v = r.number("value");
                                if (!v || *v <= 0)
                                  r.fail("value", "must be a positive number");
                                c.value = *v;
                                c.unit = r.required("unit");
                                c.source = r.required("source");
                                c.notes = r.str("notes");
                                out.push_back(std::move(c));
                              });
}

const SizingConstant &Sizing::at(std::string_view rule) const {
  for (const auto &c : constants)
    if (c.rule == rule)
      return c;
  throw std::out_of_range("data/sizing.csv has no rule " + std::string(rule));
}

const Sizing &builtin_sizing() {
  static const Sizing sizing = [] {
    Sizing s;
    auto p = load_embedded<Platform>("platforms.csv", parse_platforms);
    auto c = load_embedded<SizingConstant>("sizing.csv", parse_sizing);
    if (!p)
      throw Failure(ExitCode::internal, p.error().message);
    if (!c)
      throw Failure(ExitCode::internal, c.error().message);
    s.platforms = std::move(*p);
    s.constants = std::move(*c);
    return s;
  }();
  return sizing;
}

std::vector<std::string> currencies(const std::vector<Price> &prices) {
  std::set<std::string> s;
  for (const auto &p : prices)
    s.insert(p.currency);
  return {s.begin(), s.end()};
}

} // namespace dlrig::pick

namespace dlrig::pick {
namespace {

bool currency_code(const std::string &c) {
  return c.size() == 3 &&
         std::all_of(c.begin(), c.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; });
}

constexpr std::pair<Part, std::string_view> kParts[] = {
    {Part::ram_ddr4, "ram_ddr4"},
    {Part::ram_ddr5, "ram_ddr5"},
    {Part::nvme_ssd, "nvme_ssd"},
    {Part::psu, "psu"},
    {Part::egpu_thunderbolt, "egpu_thunderbolt"},
    {Part::egpu_oculink, "egpu_oculink"},
    {Part::board_lanes, "board_lanes"}};

} // namespace

Result<std::vector<FxRate>> parse_fx(std::string_view text, std::string_view file) {
  std::set<std::string> seen;
  return rows<FxRate>(text, file, {"currency", "per_eur", "date", "source", "notes"},
                      [&](const Row &r, std::vector<FxRate> &out) {
                        FxRate f;
                        f.currency = kb::detail::trim(r.required("currency"));
                        if (!currency_code(f.currency))
                          r.fail("currency",
                                 "\"" + f.currency + "\" is not a currency code such as USD");
                        if (!seen.insert(f.currency).second)
                          r.fail("currency", "\"" + f.currency + "\" appears twice");
                        auto v = r.number("per_eur");
                        if (!v || *v <= 0 || *v > 1e6)
                          r.fail("per_eur", "must be a positive number (units per 1 EUR)");
                        f.per_eur = *v;
                        f.date = kb::detail::trim(r.required("date"));
                        if (f.date.size() != 10 || !day_number(f.date))
                          r.fail("date", "\"" + f.date + "\" is not YYYY-MM-DD");
                        f.source = kb::detail::trim(r.required("source"));
                        f.notes = r.str("notes");
                        out.push_back(std::move(f));
                      });
}

const std::vector<FxRate> &builtin_fx() {
  static const std::vector<FxRate> fx = [] {
    auto r = load_embedded<FxRate>("fx.csv", parse_fx);
    if (!r)
      throw Failure(ExitCode::internal, r.error().message);
    return std::move(*r);
  }();
  return fx;
}

std::vector<std::string> fx_currencies(const std::vector<FxRate> &fx) {
  std::set<std::string> s;
  for (const auto &f : fx)
    s.insert(f.currency);
  return {s.begin(), s.end()};
}

std::optional<Conversion> conversion(const std::vector<FxRate> &fx, std::string_view from,
                                     std::string_view to, std::string_view today) {
  Conversion c;
  c.from = std::string(from);
  c.to = std::string(to);
  if (from == to)
    return c;
  auto find = [&](std::string_view cur) -> const FxRate * {
    for (const auto &f : fx)
      if (f.currency == cur)
        return &f;
    return nullptr;
  };
  const auto *a = find(from), *b = find(to);
  if (!a || !b)
    return std::nullopt;
  c.factor = b->per_eur / a->per_eur;
  // The older of the two rates dates the conversion; EUR itself carries the day's date.
  const auto &older = a->date < b->date ? *a : *b;
  c.date = older.date;
  c.source = from == "EUR" ? b->source : a->source;
  if (!today.empty()) {
    c.age_days = age_days(c.date, today);
    c.stale = !c.age_days || *c.age_days > kStaleFxDays;
  }
  return c;
}

std::vector<Price> in_currency(const std::vector<Price> &prices, std::string_view currency,
                               const std::vector<FxRate> &fx, std::string_view today,
                               std::vector<Conversion> *used) {
  std::vector<Price> out;
  out.reserve(prices.size());
  std::map<std::string, std::optional<Conversion>> rate; // by the row's currency
  for (const auto &p : prices) {
    if (p.currency == currency) {
      out.push_back(p);
      continue;
    }
    auto it = rate.find(p.currency);
    if (it == rate.end()) {
      it = rate.emplace(p.currency, conversion(fx, p.currency, currency, today)).first;
      if (it->second && used)
        used->push_back(*it->second);
    }
    if (!it->second)
      continue;
    Price c = p;
    c.original_amount = p.amount;
    c.original_currency = p.currency;
    c.amount = p.amount * it->second->factor;
    c.currency = std::string(currency);
    out.push_back(std::move(c));
  }
  return out;
}

std::string_view name(Part p) {
  for (const auto &[part, n] : kParts)
    if (part == p)
      return n;
  return "?";
}

Result<std::vector<PartPrice>> parse_part_prices(std::string_view text, std::string_view file) {
  return rows<PartPrice>(
      text, file,
      {"part", "capacity_gb", "watts", "kind", "price", "currency", "date", "seller", "source",
       "notes"},
      [&](const Row &r, std::vector<PartPrice> &out) {
        PartPrice p;
        p.line = r.line();
        const auto part = kb::detail::trim(r.required("part"));
        auto k = std::find_if(std::begin(kParts), std::end(kParts),
                              [&](const auto &e) { return e.second == part; });
        if (k == std::end(kParts))
          r.fail("part", "\"" + part +
                             "\" is not ram_ddr4, ram_ddr5, nvme_ssd, psu, egpu_thunderbolt, "
                             "egpu_oculink or board_lanes");
        p.part = k->first;
        p.capacity_gb = r.number("capacity_gb");
        const bool sized =
            p.part == Part::ram_ddr4 || p.part == Part::ram_ddr5 || p.part == Part::nvme_ssd;
        if (sized && (!p.capacity_gb || *p.capacity_gb < 1 || *p.capacity_gb > 100000))
          r.fail("capacity_gb", "a RAM kit or SSD needs its size in GB (1 to 100000)");
        p.watts = r.number("watts");
        if (p.part == Part::psu && (!p.watts || *p.watts < 200 || *p.watts > 3000))
          r.fail("watts", "a PSU needs its rating in W (200 to 3000)");
        if (kb::detail::trim(r.required("kind")) != "street_new")
          r.fail("kind", "parts are priced street_new");
        auto amount = r.number("price");
        if (!amount || *amount <= 0 || *amount > 1e7)
          r.fail("price", "must be a positive number (per kit, drive or unit)");
        p.amount = *amount;
        p.currency = kb::detail::trim(r.required("currency"));
        if (!currency_code(p.currency))
          r.fail("currency", "\"" + p.currency + "\" is not a currency code such as USD");
        p.date = kb::detail::trim(r.str("date"));
        if (!p.date.empty() && !day_number(p.date))
          r.fail("date", "\"" + p.date + "\" is not YYYY, YYYY-MM or YYYY-MM-DD");
        p.seller = kb::detail::trim(r.str("seller"));
        p.source = kb::detail::trim(r.required("source"));
        p.notes = r.str("notes");
        out.push_back(std::move(p));
      });
}

const std::vector<PartPrice> &builtin_part_prices() {
  static const std::vector<PartPrice> prices = [] {
    auto r = load_embedded<PartPrice>("part_prices.csv", parse_part_prices);
    if (!r)
      throw Failure(ExitCode::internal, r.error().message);
    return std::move(*r);
  }();
  return prices;
}

std::optional<PartQuote> quote_part(const std::vector<PartPrice> &prices, Part part,
                                    std::string_view currency, const std::vector<FxRate> &fx,
                                    std::string_view today, double min_capacity_gb,
                                    double min_watts) {
  // Rows big enough; else the biggest of the part (a kit of the right size costs at least that).
  std::vector<const PartPrice *> rows_of, big;
  for (const auto &p : prices)
    if (p.part == part && conversion(fx, p.currency, currency)) {
      rows_of.push_back(&p);
      if (p.capacity_gb.value_or(1e300) >= min_capacity_gb && p.watts.value_or(1e300) >= min_watts)
        big.push_back(&p);
    }
  if (rows_of.empty())
    return std::nullopt;
  if (big.empty()) {
    auto largest = *std::max_element(rows_of.begin(), rows_of.end(), [](auto *a, auto *b) {
      return a->capacity_gb.value_or(0) + a->watts.value_or(0) <
             b->capacity_gb.value_or(0) + b->watts.value_or(0);
    });
    big.push_back(largest);
  }
  const PartPrice *best = nullptr;
  int best_age = 0;
  double best_amount = 0;
  for (const auto *p : big) {
    const int age = age_days(p->date, today).value_or(1 << 20);
    const double amount = p->amount * conversion(fx, p->currency, currency)->factor;
    if (!best || age < best_age || (age == best_age && amount < best_amount)) {
      best = p;
      best_age = age;
      best_amount = amount;
    }
  }
  PartQuote q;
  q.part = part;
  q.amount = best_amount;
  q.capacity_gb = best->capacity_gb;
  q.currency = std::string(currency);
  q.date = best->date;
  q.seller = best->seller;
  q.source = best->source;
  if (best->currency != currency) {
    q.original_amount = best->amount;
    q.original_currency = best->currency;
  }
  q.age_days = age_days(best->date, today);
  q.stale = !q.age_days || *q.age_days > kStaleDays;
  return q;
}

} // namespace dlrig::pick
