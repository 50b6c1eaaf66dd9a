#include "dlrig/probe/parse.hpp"
#include "dlrig/core/text.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <set>
#include <utility>

namespace dlrig::probe {

namespace {

// Shows a short, printable excerpt of bad input in an error message.
std::string excerpt(std::string_view s) {
  s = trim(s);
  std::string out;
  for (char c : s.substr(0, 40))
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > 40)
    out += "...";
  return out.empty() ? "empty" : "\"" + out + "\"";
}

// Splits into lines without copying; the last line may lack its newline.
template <class F> void for_each_line(std::string_view text, F &&f) {
  while (!text.empty()) {
    auto nl = text.find('\n');
    f(text.substr(0, nl));
    if (nl == std::string_view::npos)
      break;
    text.remove_prefix(nl + 1);
  }
}

std::vector<std::string_view> split_blanks(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t'))
      ++i;
    auto start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t')
      ++i;
    if (i > start)
      out.push_back(s.substr(start, i - start));
  }
  return out;
}

Result<double> parse_double(std::string_view text) {
  auto t = trim(text);
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size() || !std::isfinite(v))
    return make_error("expected a number, found " + excerpt(text));
  return v;
}

// "Key:   value" -> (Key, value); nullopt without a colon.
std::optional<std::pair<std::string_view, std::string_view>> key_value(std::string_view line) {
  auto colon = line.find(':');
  if (colon == std::string_view::npos)
    return std::nullopt;
  return std::pair{trim(line.substr(0, colon)), trim(line.substr(colon + 1))};
}

} // namespace

Result<std::string> parse_trimmed(std::string_view text) {
  auto t = trim(text);
  if (t.empty())
    return make_error("empty");
  return std::string(t);
}

Result<std::uint64_t> parse_u64(std::string_view text) {
  auto t = trim(text);
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty())
    return make_error("empty value");
  if (ec == std::errc::result_out_of_range)
    return make_error("number out of range: " + excerpt(text));
  if (ec != std::errc() || p != t.data() + t.size())
    return make_error("expected a whole number, found " + excerpt(text));
  return v;
}

Result<std::int64_t> parse_i64(std::string_view text) {
  auto t = trim(text);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty())
    return make_error("empty value");
  if (ec != std::errc() || p != t.data() + t.size())
    return make_error("expected a whole number, found " + excerpt(text));
  return v;
}

Result<std::uint32_t> parse_hex_u32(std::string_view text) {
  auto t = trim(text);
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))
    t.remove_prefix(2);
  std::uint32_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, 16);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size())
    return make_error("expected a hexadecimal id, found " + excerpt(text));
  return v;
}

Result<std::string> parse_hex_id(std::string_view text) {
  auto t = trim(text);
  DLRIG_TRY(auto value, parse_hex_u32(t));
  (void)value;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))
    t.remove_prefix(2);
  std::string out = "0x";
  for (char c : t)
    out += static_cast<char>(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
  return out;
}

// --- meminfo
// ---------------------------------------------------------------------------------------

Result<Meminfo> parse_meminfo(std::string_view text) {
  Meminfo m;
  int read = 0;
  for_each_line(text, [&](std::string_view line) {
    line = trim(line);
    // The per-node file prefixes every line with "Node N ".
    if (line.substr(0, 5) == "Node ") {
      auto fields = split_blanks(line);
      if (fields.size() < 3)
        return;
      line = line.substr(static_cast<std::size_t>(fields[2].data() - line.data()));
    }
    auto kv = key_value(line);
    if (!kv)
      return;
    auto fields = split_blanks(kv->second);
    if (fields.size() != 2 || fields[1] != "kB")
      return;
    auto kb = parse_u64(fields[0]);
    if (!kb || *kb > std::numeric_limits<std::uint64_t>::max() / 1024)
      return;
    ++read;
    std::uint64_t bytes = *kb * 1024;
    const auto key = kv->first;
    if (key == "MemTotal")
      m.total_bytes = bytes;
    else if (key == "MemAvailable")
      m.available_bytes = bytes;
    else if (key == "MemFree")
      m.free_bytes = bytes;
    else if (key == "SwapTotal")
      m.swap_total_bytes = bytes;
    else if (key == "SwapFree")
      m.swap_free_bytes = bytes;
  });
  if (read == 0)
    return make_error("no \"Key: value kB\" line in " + excerpt(text));
  return m;
}

// --- cpuinfo
// ---------------------------------------------------------------------------------------

Result<Cpuinfo> parse_cpuinfo(std::string_view text) {
  Cpuinfo c;
  int processors = 0;
  std::set<std::string> physical_ids;
  std::set<std::pair<std::string, std::string>> cores;
  std::string physical, core;
  bool have_physical = false, have_core = false, flags_read = false;
  auto end_block = [&] {
    if (have_physical)
      physical_ids.insert(physical);
    if (have_physical && have_core)
      cores.emplace(physical, core);
    have_physical = have_core = false;
  };
  for_each_line(text, [&](std::string_view line) {
    auto kv = key_value(line);
    if (!kv)
      return;
    auto [key, value] = *kv;
    if (key == "processor") {
      if (!parse_u64(value)) // arm's "Processor : AArch64 ..." banner is no processor entry
        return;
      end_block();
      ++processors;
    } else if (key == "vendor_id" && !c.vendor && !value.empty()) {
      c.vendor = std::string(value);
    } else if (key == "CPU implementer" && !c.vendor && !value.empty()) {
      c.vendor = std::string(value);
    } else if (key == "CPU part" && !value.empty()) {
      std::string_view code = value; // clang 14 cannot capture a structured binding
      auto it = std::find_if(c.parts.begin(), c.parts.end(),
                             [code](const auto &p) { return p.first == code; });
      if (it == c.parts.end())
        c.parts.emplace_back(std::string(value), 1);
      else
        ++it->second;
    } else if (key == "model name" && !c.model && !value.empty()) {
      c.model = std::string(value);
    } else if (key == "physical id") {
      physical = std::string(value);
      have_physical = true;
    } else if (key == "core id") {
      core = std::string(value);
      have_core = true;
    } else if ((key == "flags" || key == "Features") && !flags_read) {
      for (auto f : split_blanks(value))
        c.flags.emplace_back(f);
      flags_read = true;
    }
  });
  end_block();
  if (processors == 0)
    return make_error("no \"processor\" entry in " + excerpt(text));
  c.logical = processors;
  if (!physical_ids.empty())
    c.sockets = static_cast<int>(physical_ids.size());
  if (!cores.empty())
    c.cores = static_cast<int>(cores.size());
  return c;
}

std::vector<std::string> pytorch_isa(const std::vector<std::string> &flags) {
  // x86: AVX2 and AVX-512 select PyTorch's CPU kernel variants (ATen's DEFAULT/AVX2/AVX512
  // dispatch); bf16/VNNI/AMX/FP16 enable oneDNN's low-precision paths. arm: NEON, SVE, bf16, i8mm.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 15> kWanted{{
      {"avx2", "avx2"},
      {"fma", "fma"},
      {"avx512f", "avx512f"},
      {"avx512bw", "avx512bw"},
      {"avx512_vnni", "avx512_vnni"},
      {"avx512_bf16", "avx512_bf16"},
      {"avx512_fp16", "avx512_fp16"},
      {"avx_vnni", "avx_vnni"},
      {"amx_tile", "amx_tile"},
      {"amx_bf16", "amx_bf16"},
      {"amx_int8", "amx_int8"},
      {"asimd", "neon"},
      {"sve", "sve"},
      {"sve2", "sve2"},
      {"bf16", "bf16"},
  }};
  std::vector<std::string> out;
  for (auto [flag, name] : kWanted)
    if (std::find(flags.begin(), flags.end(), flag) != flags.end())
      out.emplace_back(name);
  if (std::find(flags.begin(), flags.end(), "i8mm") != flags.end())
    out.emplace_back("i8mm");
  return out;
}

Result<int> parse_cpulist_count(std::string_view text) {
  auto t = trim(text);
  if (t.empty())
    return make_error("empty cpu list");
  long long count = 0;
  while (!t.empty()) {
    auto comma = t.find(',');
    auto part = t.substr(0, comma);
    auto dash = part.find('-');
    DLRIG_TRY(auto lo, parse_u64(part.substr(0, dash)));
    auto hi = lo;
    if (dash != std::string_view::npos) {
      DLRIG_TRY(auto h, parse_u64(part.substr(dash + 1)));
      hi = h;
    }
    if (hi < lo || hi - lo > 1'000'000)
      return make_error("bad range in cpu list " + excerpt(text));
    count += static_cast<long long>(hi - lo + 1);
    if (count > 1'000'000)
      return make_error("cpu list too long: " + excerpt(text));
    if (comma == std::string_view::npos)
      break;
    t.remove_prefix(comma + 1);
  }
  return static_cast<int>(count);
}

// --- mounts
// ----------------------------------------------------------------------------------------

namespace {
// /proc/mounts escapes blank, tab, newline and backslash as \ooo octal.
std::string unescape_octal(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      auto oct = s.substr(i + 1, 3);
      if (oct.size() == 3 &&
          std::all_of(oct.begin(), oct.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out += static_cast<char>((oct[0] - '0') * 64 + (oct[1] - '0') * 8 + (oct[2] - '0'));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}
} // namespace

Result<std::vector<MountEntry>> parse_mounts(std::string_view text) {
  std::vector<MountEntry> out;
  for_each_line(text, [&](std::string_view line) {
    auto f = split_blanks(line);
    if (f.size() < 4 || f[1].empty() || f[1][0] != '/')
      return;
    out.push_back(MountEntry{unescape_octal(f[0]), unescape_octal(f[1]), std::string(f[2]),
                             std::string(f[3])});
  });
  if (out.empty())
    return make_error("no \"DEVICE MOUNTPOINT TYPE OPTIONS\" line in " + excerpt(text));
  return out;
}

OptU64 tmpfs_size_option(std::string_view options) {
  while (!options.empty()) {
    auto comma = options.find(',');
    auto opt = options.substr(0, comma);
    if (opt.substr(0, 5) == "size=") {
      auto v = opt.substr(5);
      if (v.empty() || v.back() == '%')
        return std::nullopt;
      std::uint64_t scale = 1;
      switch (v.back()) {
      case 'k':
      case 'K':
        scale = 1ull << 10;
        break;
      case 'm':
      case 'M':
        scale = 1ull << 20;
        break;
      case 'g':
      case 'G':
        scale = 1ull << 30;
        break;
      case 't':
      case 'T':
        scale = 1ull << 40;
        break;
      default:
        break;
      }
      if (scale != 1)
        v.remove_suffix(1);
      auto n = parse_u64(v);
      if (!n || *n > std::numeric_limits<std::uint64_t>::max() / scale)
        return std::nullopt;
      return *n * scale;
    }
    if (comma == std::string_view::npos)
      break;
    options.remove_prefix(comma + 1);
  }
  return std::nullopt;
}

bool is_pseudo_fstype(std::string_view t) {
  static constexpr std::string_view kPseudo[] = {
      "proc",       "sysfs",       "cgroup",   "cgroup2",    "devpts",
      "devtmpfs",   "mqueue",      "debugfs",  "tracefs",    "securityfs",
      "pstore",     "bpf",         "configfs", "fusectl",    "hugetlbfs",
      "autofs",     "binfmt_misc", "efivarfs", "rpc_pipefs", "nsfs",
      "squashfs",   "selinuxfs",   "ramfs",    "nfsd",       "fuse.gvfsd-fuse",
      "fuse.portal"};
  return std::find(std::begin(kPseudo), std::end(kPseudo), t) != std::end(kPseudo);
}

bool is_network_fstype(std::string_view t) {
  static constexpr std::string_view kNet[] = {
      "nfs",    "nfs4", "cifs",      "smb3",       "smbfs", "lustre",    "gpfs",
      "beegfs", "ceph", "glusterfs", "fuse.sshfs", "9p",    "fuse.s3fs", "fuse.juicefs"};
  return std::find(std::begin(kNet), std::end(kNet), t) != std::end(kNet);
}

// --- limits
// ----------------------------------------------------------------------------------------

namespace {
Result<Limit> limit_row(std::string_view rest) {
  auto f = split_blanks(rest);
  if (f.size() < 2)
    return make_error("expected soft and hard values, found " + excerpt(rest));
  Limit l;
  auto one = [](std::string_view v, OptU64 &value, OptBool &unlimited) -> Result<bool> {
    if (v == "unlimited") {
      unlimited = true;
      return true;
    }
    DLRIG_TRY(auto n, parse_u64(v));
    value = n;
    unlimited = false;
    return true;
  };
  DLRIG_TRY(auto s_ok, one(f[0], l.soft, l.soft_unlimited));
  DLRIG_TRY(auto h_ok, one(f[1], l.hard, l.hard_unlimited));
  (void)s_ok;
  (void)h_ok;
  return l;
}
} // namespace

Result<ProcessLimits> parse_limits(std::string_view text) {
  ProcessLimits out;
  bool header = false;
  std::string bad;
  for_each_line(text, [&](std::string_view line) {
    if (line.substr(0, 5) == "Limit")
      header = true;
    for (auto [name, slot] : {std::pair{std::string_view("Max locked memory"), &out.memlock},
                              std::pair{std::string_view("Max open files"), &out.open_files}}) {
      if (line.substr(0, name.size()) == name) {
        auto l = limit_row(line.substr(name.size()));
        if (l)
          *slot = *l;
        else
          bad = std::string(name) + ": " + l.error().message;
      }
    }
  });
  if (!header && !out.memlock && !out.open_files)
    return make_error("not a limits table: " + excerpt(text));
  if (!out.memlock && !out.open_files)
    return make_error(bad.empty() ? "no \"Max locked memory\" or \"Max open files\" row" : bad);
  return out;
}

// --- PCI
// -------------------------------------------------------------------------------------------

Result<double> parse_link_speed(std::string_view text) {
  auto t = trim(text);
  auto gt = t.find("GT/s");
  if (gt == std::string_view::npos)
    return make_error("not a link speed: " + excerpt(text));
  auto v = parse_double(t.substr(0, gt));
  if (!v || *v <= 0 || *v > 256)
    return make_error("not a link speed: " + excerpt(text));
  return *v;
}

Result<std::optional<double>> parse_slot_speed(std::string_view text) {
  const auto t = trim(text);
  if (t == "Unknown" || t.find(" MHz ") != std::string_view::npos)
    return std::optional<double>{};
  auto v = parse_link_speed(t);
  if (!v)
    return v.error();
  return std::optional<double>{*v};
}

Result<std::string> parse_slot_address(std::string_view text) {
  const auto t = trim(text);
  auto hex = [](std::string_view part, std::size_t min, std::size_t max) {
    return part.size() >= min && part.size() <= max &&
           std::all_of(part.begin(), part.end(),
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  };
  const auto c1 = t.find(':');
  const auto c2 = c1 == std::string_view::npos ? c1 : t.find(':', c1 + 1);
  if (c1 != std::string_view::npos && hex(t.substr(0, c1), 4, 8)) {
    if (c2 == std::string_view::npos && hex(t.substr(c1 + 1), 2, 2))
      return std::string(t) + ":";
    if (c2 != std::string_view::npos && hex(t.substr(c1 + 1, c2 - c1 - 1), 2, 2) &&
        hex(t.substr(c2 + 1), 2, 2))
      return std::string(t) + ".";
  }
  return make_error("not a slot address (domain:bus:device, e.g. 0000:0c:00): " + excerpt(text));
}

Result<int> parse_link_width(std::string_view text) {
  auto v = parse_u64(text);
  if (!v)
    return v.error();
  if (*v == 0 || *v > 32)
    return make_error("not a link width: " + excerpt(text));
  return static_cast<int>(*v);
}

Result<std::optional<int>> parse_numa_node(std::string_view text) {
  auto v = parse_i64(text);
  if (!v)
    return v.error();
  if (*v == -1)
    return std::optional<int>{};
  if (*v < 0 || *v > 4096)
    return make_error("not a NUMA node: " + excerpt(text));
  return std::optional<int>{static_cast<int>(*v)};
}

// --- os-release
// ------------------------------------------------------------------------------------

Result<std::map<std::string, std::string>> parse_os_release(std::string_view text) {
  std::map<std::string, std::string> out;
  for_each_line(text, [&](std::string_view line) {
    line = trim(line);
    if (line.empty() || line[0] == '#')
      return;
    auto eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return;
    auto key = line.substr(0, eq);
    if (!std::all_of(key.begin(), key.end(), [](char c) {
          return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        }))
      return;
    auto v = line.substr(eq + 1);
    std::string value;
    if (!v.empty() && (v[0] == '"' || v[0] == '\'')) {
      char q = v[0];
      for (std::size_t i = 1; i < v.size() && v[i] != q; ++i) {
        if (v[i] == '\\' && i + 1 < v.size())
          ++i;
        value += v[i];
      }
    } else {
      value = std::string(v);
    }
    out[std::string(key)] = value;
  });
  if (out.empty())
    return make_error("no KEY=value line in " + excerpt(text));
  return out;
}

// --- network
// ---------------------------------------------------------------------------------------

Result<std::uint64_t> parse_net_speed(std::string_view text) {
  auto v = parse_i64(text);
  if (!v)
    return v.error();
  if (*v <= 0)
    return make_error("no link speed (" + excerpt(text) + "): link down or not reported");
  if (*v > 100'000'000)
    return make_error("implausible link speed " + excerpt(text));
  return static_cast<std::uint64_t>(*v) * 1'000'000ull;
}

Result<std::uint64_t> parse_ib_rate(std::string_view text) {
  auto t = trim(text);
  auto f = split_blanks(t);
  if (f.size() < 2)
    return make_error("not a port rate: " + excerpt(text));
  auto v = parse_double(f[0]);
  if (!v || *v < 0 || *v > 100000)
    return make_error("not a port rate: " + excerpt(text));
  double scale = f[1].substr(0, 2) == "Gb" ? 1e9 : f[1].substr(0, 2) == "Mb" ? 1e6 : 0;
  if (scale == 0)
    return make_error("unknown rate unit in " + excerpt(text));
  return static_cast<std::uint64_t>(std::llround(*v * scale));
}

Result<std::string> parse_ib_state(std::string_view text) {
  auto t = trim(text);
  auto colon = t.find(':');
  auto name = trim(colon == std::string_view::npos ? t : t.substr(colon + 1));
  if (name.empty() || !std::all_of(name.begin(), name.end(),
                                   [](char c) { return (c >= 'A' && c <= 'Z') || c == '_'; }))
    return make_error("not a port state: " + excerpt(text));
  return std::string(name);
}

// --- cpufreq, dpm
// ----------------------------------------------------------------------------------

Result<double> parse_khz(std::string_view text) {
  auto v = parse_u64(text);
  if (!v)
    return v.error();
  if (*v == 0 || *v > 100'000'000)
    return make_error("implausible frequency " + excerpt(text) + " kHz");
  return static_cast<double>(*v) * 1e3;
}

double DpmLevels::max_hz() const {
  return hz.empty() ? 0.0 : *std::max_element(hz.begin(), hz.end());
}

Result<DpmLevels> parse_dpm(std::string_view text) {
  DpmLevels d;
  for_each_line(text, [&](std::string_view line) {
    auto kv = key_value(line);
    if (!kv || !parse_u64(kv->first))
      return;
    auto v = kv->second;
    bool current = !v.empty() && v.back() == '*';
    if (current)
      v = trim(v.substr(0, v.size() - 1));
    double scale = 0;
    for (auto [unit, s] : {std::pair{std::string_view("Mhz"), 1e6},
                           {"MHz", 1e6},
                           {"GHz", 1e9},
                           {"Ghz", 1e9},
                           {"KHz", 1e3}}) {
      if (v.size() > unit.size() && v.substr(v.size() - unit.size()) == unit) {
        scale = s;
        v.remove_suffix(unit.size());
        break;
      }
    }
    auto n = parse_double(v);
    if (scale == 0 || !n || *n < 0)
      return;
    d.hz.push_back(*n * scale);
    if (current)
      d.current_hz = *n * scale;
  });
  if (d.hz.empty())
    return make_error("no \"N: <clock>Mhz\" level in " + excerpt(text));
  return d;
}

} // namespace dlrig::probe
