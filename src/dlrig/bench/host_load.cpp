// What else the machine did while a benchmark configuration ran (bench.hpp, HostLoad): the CPU time
// every process but this one used, and the time the hypervisor took (steal), from /proc/stat's
// aggregate line and /proc/self/stat, in CPUs (proc(5):
// https://man7.org/linux/man-pages/man5/proc.5.html).
#include "dlrig/bench/bench.hpp"
#include "dlrig/platform/fs.hpp"

#include <fmt/format.h>

#include <sstream>
#include <unistd.h>

namespace dlrig::bench {

std::optional<CpuTicks> parse_proc_stat(const std::string &text) {
  std::istringstream in(text);
  std::string label;
  if (!(in >> label) || label != "cpu")
    return std::nullopt;
  // user nice system idle iowait irq softirq steal (guest and guest_nice are inside user, nice)
  unsigned long long v[8] = {};
  for (auto &x : v)
    if (!(in >> x))
      return std::nullopt;
  CpuTicks t;
  t.busy = v[0] + v[1] + v[2] + v[5] + v[6];
  t.steal = v[7];
  t.total = t.busy + v[3] + v[4] + v[7];
  return t;
}

std::optional<unsigned long long> parse_self_stat(const std::string &text) {
  // pid (comm) state ...: comm may hold spaces and parentheses, so fields count from the last ')'.
  auto close = text.rfind(')');
  if (close == std::string::npos)
    return std::nullopt;
  std::istringstream in(text.substr(close + 1));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15; ++i) { // field 3 is state; 14 utime, 15 stime
    if (!(in >> field))
      return std::nullopt;
    try {
      if (i == 14)
        utime = std::stoull(field);
      else if (i == 15)
        stime = std::stoull(field);
    } catch (const std::exception &) {
      return std::nullopt;
    }
  }
  return utime + stime;
}

std::optional<HostLoadMark> host_load_mark() {
  const Sysroot live("/");
  auto machine = parse_proc_stat(live.read("/proc/stat").value_or(""));
  auto self = parse_self_stat(live.read("/proc/self/stat").value_or(""));
  long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (!machine || !self || cpus <= 0)
    return std::nullopt;
  return HostLoadMark{*machine, *self, static_cast<int>(cpus)};
}

std::optional<HostLoad> host_load_between(const HostLoadMark &a, const HostLoadMark &b) {
  if (b.machine.total <= a.machine.total || b.machine.busy < a.machine.busy || b.self < a.self ||
      b.machine.steal < a.machine.steal)
    return std::nullopt;
  const double total = static_cast<double>(b.machine.total - a.machine.total);
  const double cpus = b.cpus;
  const double busy = static_cast<double>(b.machine.busy - a.machine.busy);
  const double self = static_cast<double>(b.self - a.self);
  HostLoad l;
  l.cpus = b.cpus;
  l.other_cpus = std::max(0.0, (busy - self) / total * cpus);
  l.steal_cpus = static_cast<double>(b.machine.steal - a.machine.steal) / total * cpus;
  l.seconds = total / cpus / static_cast<double>(::sysconf(_SC_CLK_TCK));
  return l;
}

Json host_load_json(const HostLoad &l, bool with_note) {
  Json j{{"other_cpus", l.other_cpus},
         {"steal_cpus", l.steal_cpus},
         {"logical_cpus", l.cpus},
         {"seconds", l.seconds},
         {"source", "/proc/stat (all CPUs) less /proc/self/stat (this process), over the "
                    "configuration"}};
  if (auto note = with_note ? host_load_note(l) : std::nullopt)
    j["note"] = *note;
  return j;
}

std::optional<std::string> host_load_note(const HostLoad &l) {
  // Measured over at least a tick per CPU; below, one tick of anything reads as a load.
  if (l.seconds < 0.1)
    return std::nullopt;
  const bool others = l.other_cpus >= std::max(0.5, 0.1 * l.cpus);
  const bool steal = l.steal_cpus >= std::max(0.25, 0.05 * l.cpus);
  if (!others && !steal)
    return std::nullopt;
  std::string what;
  if (others)
    what = fmt::format("other processes used {:.1f} of {} CPUs", l.other_cpus, l.cpus);
  if (steal)
    what += fmt::format("{}the hypervisor took {:.1f} CPUs (steal)", others ? " and " : "",
                        l.steal_cpus);
  return what + " while this ran: its rate may be low";
}

} // namespace dlrig::bench
