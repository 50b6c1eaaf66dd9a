// SMBIOS type-17 records and the DRAM's theoretical bandwidth (dram.hpp).
#include "dlrig/bench/dram.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

namespace dlrig::bench {
namespace {

std::uint32_t le(const std::vector<std::uint8_t> &r, std::size_t at, int bytes) {
  std::uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | r[at + static_cast<std::size_t>(i)];
  return v;
}

// String number n (1-based) of the structure's string set; "" for 0 or a missing one.
std::string string_at(const std::vector<std::uint8_t> &r, std::size_t formatted, unsigned n) {
  if (n == 0)
    return "";
  std::size_t at = formatted;
  for (unsigned i = 1; at < r.size(); ++i) {
    std::size_t end = at;
    while (end < r.size() && r[end] != 0)
      ++end;
    if (end == at) // the double NUL: no more strings
      return "";
    if (i == n)
      return std::string(r.begin() + static_cast<std::ptrdiff_t>(at),
                         r.begin() + static_cast<std::ptrdiff_t>(end));
    at = end + 1;
  }
  return "";
}

std::string lower(std::string s) {
  for (auto &c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The lower-cased alphanumeric runs of a string: "CPU1_DIMM_A1" -> {"cpu1", "dimm", "a1"}.
std::vector<std::string> tokens(const std::string &text) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : lower(text) + " ") {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      cur += ch;
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  return out;
}

// `word` followed by digits in one token ("cpu1") or as two tokens ("proc", "1").
std::optional<int> labelled(const std::vector<std::string> &t, const std::string &word) {
  auto digits = [](const std::string &s) {
    return !s.empty() && s.size() <= 4 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].rfind(word, 0) == 0 && digits(t[i].substr(word.size())))
      return std::stoi(t[i].substr(word.size()));
    if (t[i] == word && i + 1 < t.size() && digits(t[i + 1]))
      return std::stoi(t[i + 1]);
  }
  return std::nullopt;
}

// The DRAM peak of `in` (installed modules): channels x MT/s x bytes per transfer; unknown when a
// module lacks its channel, speed or width.
DramPeak peak_of(const std::vector<const Dimm *> &in) {
  DramPeak p;
  // Per channel (of its socket, where named): the slowest module's speed and its data width.
  std::map<std::pair<std::string, int>, std::pair<double, int>> channels;
  for (const Dimm *d : in) {
    if (!d->channel || !d->configured_mts || !d->data_width_bits) {
      p.assumption =
          fmt::format("DRAM peak unknown: the module at \"{}\"/\"{}\" does not state its {}",
                      d->bank_locator, d->device_locator,
                      !d->channel          ? "channel in its locators"
                      : !d->configured_mts ? "speed"
                                           : "data width");
      return p;
    }
    auto [it, fresh] = channels.try_emplace({*d->channel, d->socket_label.value_or(-1)},
                                            *d->configured_mts, *d->data_width_bits);
    if (!fresh)
      it->second.first = std::min(it->second.first, *d->configured_mts);
  }
  double total = 0, mts = 1e300;
  int width = 0;
  for (const auto &[name, c] : channels) {
    total += c.first * 1e6 * c.second / 8.0;
    mts = std::min(mts, c.first);
    width = c.second;
  }
  p.bytes_per_s = total;
  p.channels = static_cast<int>(channels.size());
  p.mts = mts;
  p.assumption = fmt::format("DRAM peak = channels x MT/s x bytes per transfer = {} x {:.0f} MT/s "
                             "x {} B = {:.1f} GB/s (SMBIOS type 17: {} modules installed)",
                             p.channels, mts, width / 8, total / 1e9, in.size());
  return p;
}

} // namespace

std::optional<int> socket_of(const std::string &bank, const std::string &device) {
  auto t = tokens(bank + " " + device);
  for (const char *word : {"socket", "proc", "cpu", "p"})
    if (auto n = labelled(t, word))
      return n;
  return labelled(t, "node");
}

std::optional<std::string> channel_of(const std::string &bank, const std::string &device) {
  for (const std::string &text : {bank, device}) {
    std::string s = lower(text);
    auto at = s.find("channel");
    if (at == std::string::npos)
      continue;
    std::size_t i = at + 7;
    while (i < s.size() && (s[i] == ' ' || s[i] == '_' || s[i] == '-'))
      ++i;
    std::size_t id = i;
    while (i < s.size() && std::isalnum(static_cast<unsigned char>(s[i])))
      ++i;
    if (i == id)
      continue;
    // "channela-dimm0" names channel "a"; "p0 channel a" keeps the socket before it.
    std::string key = s.substr(0, at) + "channel " + s.substr(id, i - id);
    return key;
  }
  return std::nullopt;
}

std::optional<Dimm> parse_type17(const std::vector<std::uint8_t> &r) {
  if (r.size() < 0x17 || r[0] != 17 || r[1] < 0x17 || r[1] > r.size())
    return std::nullopt;
  const std::size_t len = r[1];
  Dimm d;
  auto width = le(r, 0x0A, 2);
  if (width != 0 && width != 0xFFFF)
    d.data_width_bits = static_cast<int>(width);
  auto size = le(r, 0x0C, 2);
  d.installed = size != 0 && size != 0xFFFF;
  d.device_locator = string_at(r, len, r[0x10]);
  d.bank_locator = string_at(r, len, r[0x11]);
  std::optional<double> speed, configured;
  auto s = le(r, 0x15, 2);
  if (s == 0xFFFF && len >= 0x58)
    s = le(r, 0x54, 4);
  if (s != 0 && s != 0xFFFF)
    speed = s;
  if (len >= 0x22) {
    auto c = le(r, 0x20, 2);
    if (c == 0xFFFF && len >= 0x5C)
      c = le(r, 0x58, 4);
    if (c != 0 && c != 0xFFFF)
      configured = c;
  }
  d.configured_mts = configured ? configured : speed;
  d.channel = channel_of(d.bank_locator, d.device_locator);
  d.socket_label = socket_of(d.bank_locator, d.device_locator);
  return d;
}

DramPeak dram_peak(const std::vector<Dimm> &dimms) {
  std::vector<const Dimm *> in;
  for (const auto &d : dimms)
    if (d.installed)
      in.push_back(&d);
  if (in.empty()) {
    DramPeak p;
    p.assumption = "DRAM peak unknown: no SMBIOS memory-device records readable "
                   "(/sys/firmware/dmi/entries/17-*/raw needs root, and VMs often have none)";
    return p;
  }
  return peak_of(in);
}

DramPeak node_dram_peak(const std::vector<Dimm> &dimms, int node_rank, int nodes,
                        std::optional<int> sockets) {
  DramPeak machine = dram_peak(dimms);
  auto unknown = [&](const std::string &why) {
    DramPeak p;
    p.assumption = "per node: the node's share of the DRAM peak is unknown: " + why + " (" +
                   machine.assumption + " for the machine)";
    return p;
  };
  if (!machine.bytes_per_s)
    return unknown("the machine's peak is unknown");
  if (!sockets)
    return unknown("the socket count is unknown");
  if (nodes != *sockets)
    return unknown(
        fmt::format("{} NUMA nodes on {} sockets, so a node is not a socket", nodes, *sockets));
  std::set<int> labels;
  for (const auto &d : dimms) {
    if (d.installed && !d.socket_label)
      return unknown(fmt::format("the module at \"{}\"/\"{}\" does not name its socket",
                                 d.bank_locator, d.device_locator));
    if (d.socket_label)
      labels.insert(*d.socket_label);
  }
  if (static_cast<int>(labels.size()) != *sockets)
    return unknown(
        fmt::format("the memory records name {} sockets, the CPU has {}", labels.size(), *sockets));
  if (node_rank < 0 || node_rank >= *sockets)
    return unknown("the node is not among the machine's nodes");
  const int label = *std::next(labels.begin(), node_rank);
  std::vector<const Dimm *> in;
  for (const auto &d : dimms)
    if (d.installed && d.socket_label == label)
      in.push_back(&d);
  if (in.empty())
    return unknown(fmt::format("its socket (label {}) has no module installed", label));
  DramPeak p = peak_of(in);
  if (p.bytes_per_s)
    p.assumption = fmt::format(
        "node peak = its socket's channels: {}; assumes NUMA node = socket ({} nodes, {} "
        "sockets; node rank {} = the socket labelled {} in the SMBIOS locators)",
        p.assumption, nodes, *sockets, node_rank, label);
  return p;
}

std::vector<Dimm> read_dimms(const std::string &root) {
  std::vector<Dimm> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.rfind("17-", 0) != 0)
      continue;
    std::ifstream in(it->path() / "raw", std::ios::binary);
    std::vector<std::uint8_t> raw((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    if (auto d = parse_type17(raw))
      out.push_back(*d);
  }
  return out;
}

} // namespace dlrig::bench
