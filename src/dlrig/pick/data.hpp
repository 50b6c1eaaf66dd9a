#pragma once
// `pick`'s own data: prices (data/prices.csv, plus each catalog GPU's launch MSRP from gpus.csv
// and each cloud instance of cloud.csv), platforms (data/platforms.csv) and the whole-machine
// sizing constants (data/sizing.csv). Every row carries its source; parsers are pure and their
// errors name the file, the line and the column.
#include "dlrig/core/result.hpp"
#include "dlrig/kb/kb.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::pick {

enum class PriceKind { msrp, street_new, used, cloud_on_demand, cloud_spot };
std::string_view name(PriceKind k);
bool is_rental(PriceKind k); // cloud_on_demand, cloud_spot: per GPU-hour

// One price: per GPU to buy, per GPU-hour to rent.
struct Price {
  std::string gpu; // a gpus.csv name
  PriceKind kind = PriceKind::street_new;
  double amount = 0;
  std::string currency; // ISO 4217 code, upper case ("USD")
  std::string date;     // YYYY, YYYY-MM or YYYY-MM-DD; empty = undated
  std::string seller;   // "Lambda", "RunPod secure", "retail"; may be empty
  std::string source;   // where the figure comes from (a URL or a document)
  std::string notes;
  std::string file; // "data/prices.csv", "data/gpus.csv" or the --prices file
  std::size_t line = 0;
  // Set when the row was converted from another currency (in_currency): what the row said.
  std::optional<double> original_amount;
  std::string original_currency;
};

// Parses a prices CSV (columns gpu, kind, price, currency, date, source; seller and notes
// optional). Every gpu must be a catalog GPU of `kb`; kind one of PriceKind's names; price a
// positive number; currency three upper-case letters; date blank or YYYY[-MM[-DD]]; source not
// blank. Errors (bad_input) name the file, the line and the column.
Result<std::vector<Price>> parse_prices(std::string_view text, std::string_view file,
                                        const kb::KnowledgeBase &kb);

// The built-in prices: data/prices.csv and every catalog GPU's launch MSRP (gpus.csv
// launch_price_usd, dated by its launch year).
const std::vector<Price> &builtin_prices();
std::vector<Price> msrp_prices(const kb::KnowledgeBase &kb);

// `base` with every (gpu, kind) that `user` prices replaced by the user's rows.
std::vector<Price> override_prices(std::vector<Price> base, const std::vector<Price> &user);

// Days from a price's date to `today` (YYYY-MM-DD); a bare year or month counts from its first
// day. nullopt when either date is missing or malformed.
std::optional<int> age_days(std::string_view date, std::string_view today);
// A price older than this is flagged stale (GPU prices moved ~2x within a year: the hyperscalers'
// mid-2025 cut, links.md §3).
inline constexpr int kStaleDays = 365;

// A desktop, workstation or server platform: the CPU's PCIe lanes.
struct Platform {
  std::string name;
  int cpu_lanes = 0;
  int pcie_gen = 0;
  int max_gpus = 0; // GPUs a typical board of the platform holds
  std::string source, notes;
};

// A whole-machine sizing constant ("psu_cpu_w" = 300 W) with its source.
struct SizingConstant {
  std::string rule;
  double value = 0;
  std::string unit, source, notes;
};

struct Sizing {
  std::vector<Platform> platforms; // in the order of the file (smallest first)
  std::vector<SizingConstant> constants;
  // The constant named `rule`; throws std::out_of_range for a name the data lacks (a build
  // error of the data, caught by the data tests).
  const SizingConstant &at(std::string_view rule) const;
  double operator[](std::string_view rule) const { return at(rule).value; }
};

Result<std::vector<Platform>> parse_platforms(std::string_view text, std::string_view file);
Result<std::vector<SizingConstant>> parse_sizing(std::string_view text, std::string_view file);
const Sizing &builtin_sizing();

// The currencies the prices are in ("USD").
std::vector<std::string> currencies(const std::vector<Price> &prices);

// An exchange rate: units of `currency` per 1 EUR, as the ECB quotes its euro foreign exchange
// reference rates (data/fx.csv, one day's rates, each row sourced).
struct FxRate {
  std::string currency; // ISO 4217, upper case
  double per_eur = 0;
  std::string date; // YYYY-MM-DD of the reference rate
  std::string source, notes;
};
// A rate older than this is flagged stale: the ECB publishes every working day, and a quarter is
// long enough for the euro to move several percent against the dollar or the yen.
inline constexpr int kStaleFxDays = 90;

// Parses an exchange-rate CSV (currency, per_eur, date, source, notes). Errors (bad_input) name
// the file, the line and the column.
Result<std::vector<FxRate>> parse_fx(std::string_view text, std::string_view file);
const std::vector<FxRate> &builtin_fx();
std::vector<std::string> fx_currencies(const std::vector<FxRate> &fx);

// What one unit of `from` is worth in `to`, with the rates' date and source.
struct Conversion {
  std::string from, to;
  double factor = 1; // amount in `to` = amount in `from` x factor
  std::string date, source;
  std::optional<int> age_days;
  bool stale = false;
};
// nullopt when either currency has no rate in `fx`; factor 1 for from == to.
std::optional<Conversion> conversion(const std::vector<FxRate> &fx, std::string_view from,
                                     std::string_view to, std::string_view today = "");

// `prices` in `currency`: every row in another currency converted at `fx` (its original amount
// and currency kept), rows whose currency has no rate left out. Each conversion applied is
// appended to `used` once.
std::vector<Price> in_currency(const std::vector<Price> &prices, std::string_view currency,
                               const std::vector<FxRate> &fx, std::string_view today,
                               std::vector<Conversion> *used = nullptr);

// A part `pick --from-this-machine` may name as the fix, other than a GPU (data/part_prices.csv).
enum class Part { ram_ddr4, ram_ddr5, nvme_ssd, psu, egpu_thunderbolt, egpu_oculink, board_lanes };
std::string_view name(Part p);

// One sourced, dated price of a part: per kit or drive of `capacity_gb` for RAM and SSDs.
struct PartPrice {
  Part part = Part::ram_ddr5;
  std::optional<double> capacity_gb; // RAM kit or drive size; nullopt for the rest
  std::optional<double> watts;       // a PSU's rating
  double amount = 0;
  std::string currency, date, seller, source, notes;
  std::size_t line = 0;
};
Result<std::vector<PartPrice>> parse_part_prices(std::string_view text, std::string_view file);
const std::vector<PartPrice> &builtin_part_prices();

// The price of a part as the advice prints it, converted to `currency`.
struct PartQuote {
  Part part = Part::ram_ddr5;
  double amount = 0;                 // in the advice's currency
  std::optional<double> capacity_gb; // of the priced kit or drive
  std::string currency, date, seller, source;
  std::optional<double> original_amount; // when converted: what the row said, in
  std::string original_currency;         // this currency
  std::optional<int> age_days;
  bool stale = false; // older than kStaleDays, or undated
};
// The newest price of `part` (the lowest of the newest) at least `min_capacity_gb` (or `min_watts`)
// where the rows carry one, else the largest; nullopt when no row prices it or its currency has no
// rate.
std::optional<PartQuote> quote_part(const std::vector<PartPrice> &prices, Part part,
                                    std::string_view currency, const std::vector<FxRate> &fx,
                                    std::string_view today, double min_capacity_gb = 0,
                                    double min_watts = 0);

} // namespace dlrig::pick
