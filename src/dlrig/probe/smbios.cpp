// SMBIOS memory-device records (smbios.hpp).
#include "dlrig/probe/smbios.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace dlrig::probe {
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

} // namespace

std::optional<std::string> memory_type_name(std::uint8_t code) {
  // DSP0134 3.7.0, 7.18.2 "Memory Device — Type".
  static constexpr std::pair<std::uint8_t, const char *> kTypes[] = {
      {0x12, "DDR"},    {0x13, "DDR2"},   {0x18, "DDR3"},   {0x1A, "DDR4"}, {0x1B, "LPDDR"},
      {0x1C, "LPDDR2"}, {0x1D, "LPDDR3"}, {0x1E, "LPDDR4"}, {0x20, "HBM"},  {0x21, "HBM2"},
      {0x22, "DDR5"},   {0x23, "LPDDR5"}, {0x24, "HBM3"}};
  for (const auto &[c, name] : kTypes)
    if (c == code)
      return std::string(name);
  return std::nullopt;
}

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
  d.memory_type = memory_type_name(r[0x12]);
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

std::vector<Dimm> read_dimms(const FileSystem &fs, const std::string &dir) {
  std::vector<Dimm> out;
  for (const auto &name : fs.list(dir)) {
    if (name.rfind("17-", 0) != 0)
      continue;
    auto raw = fs.read(dir + "/" + name + "/raw", 4096);
    if (!raw)
      continue;
    const std::vector<std::uint8_t> bytes(raw->begin(), raw->end());
    if (auto d = parse_type17(bytes))
      out.push_back(*d);
  }
  return out;
}

} // namespace dlrig::probe
