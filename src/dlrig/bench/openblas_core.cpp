// Which kernels OpenBLAS runs, and choosing them (openblas_core.hpp).
#include "dlrig/bench/openblas_core.hpp"

#include "dlrig/bench/openblas.hpp"
#include "dlrig/platform/dynlib.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace dlrig::bench {
namespace {

// OpenBLAS's x86-64 cores by the widest vector instructions their kernels use (README,
// "Supported CPUs"; DYNAMIC_ARCH's list and its fallback to an older model:
// https://github.com/OpenMathLib/OpenBLAS/blob/develop/README.md).
struct Core {
  std::string_view name;
  int level; // 0 SSE, 1 AVX, 2 AVX2 + FMA, 3 AVX-512
};
constexpr Core kCores[] = {
    {"Prescott", 0},   {"Core2", 0},       {"Penryn", 0},      {"Dunnington", 0},
    {"Nehalem", 0},    {"Atom", 0},        {"Nano", 0},        {"Opteron", 0},
    {"Barcelona", 0},  {"Bobcat", 0},      {"Sandybridge", 1}, {"Bulldozer", 1},
    {"Piledriver", 1}, {"Steamroller", 1}, {"Excavator", 1},   {"Haswell", 2},
    {"Zen", 2},        {"SkylakeX", 3},    {"Cooperlake", 3},  {"SapphireRapids", 3}};
constexpr std::string_view kLevel[] = {"SSE", "AVX", "AVX2 and FMA", "AVX-512"};

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  for (std::size_t at = 0; at < s.size();) {
    auto end = s.find(' ', at);
    if (end == std::string_view::npos)
      end = s.size();
    if (end > at)
      out.push_back(s.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

const Core *find_core(std::string_view name) {
  for (const auto &c : kCores)
    if (iequal(name, c.name))
      return &c;
  return nullptr;
}

const Core *core_in(std::string_view config) {
  for (auto w : words(config))
    if (const Core *c = find_core(w))
      return c;
  return nullptr;
}

bool dynamic_arch(std::string_view config) {
  for (auto w : words(config))
    if (w == "DYNAMIC_ARCH")
      return true;
  return false;
}

// "0.3.21" from "OpenBLAS 0.3.21 ...", else "".
std::string_view version(std::string_view config) {
  auto w = words(config);
  return w.size() >= 2 && w[0] == "OpenBLAS" ? w[1] : std::string_view{};
}

// The CPU's level from its ISA flags; -1 when unknown (or SSE only: nothing older to fall to).
int isa_level(const std::vector<std::string> &isa) {
  auto has = [&](const char *f) { return std::find(isa.begin(), isa.end(), f) != isa.end(); };
  return has("avx512f") ? 3 : has("avx2") && has("fma") ? 2 : has("avx") ? 1 : -1;
}

// The core for a CPU of that level: the newest OpenBLAS 0.3.21's OPENBLAS_CORETYPE accepts
// (its force_coretype matches corename[1..24], so Cooperlake, the 25th, is refused, and
// SapphireRapids came in 0.3.22: https://github.com/OpenMathLib/OpenBLAS/blob/v0.3.21/driver/
// others/dynamic.c).
std::string_view core_for_level(int level, std::string_view vendor) {
  switch (level) {
  case 3:
    return "SkylakeX";
  case 2:
    return vendor == "AuthenticAMD" || vendor == "HygonGenuine" ? "Zen" : "Haswell";
  case 1:
    return "Sandybridge";
  }
  return "";
}

// The core dlrig would name for a CPU at `cpu` level that runs `detected`; "" when none.
std::string_view better_core(const Core *detected, int cpu, std::string_view vendor) {
  if (!detected || cpu < 0 || detected->level >= cpu)
    return "";
  return core_for_level(cpu, vendor);
}

std::optional<std::string> env(const char *name) {
  const char *v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

} // namespace

const Openblas &openblas() {
  static const Openblas found = [] {
    Openblas o;
    std::vector<std::string> names;
    if (const char *env = std::getenv("DLRIG_OPENBLAS_LIBRARY"); env && *env) {
      names.push_back(env); // the user's choice, and only it
    } else {
      names.push_back("libopenblas.so.0");
#ifdef DLRIG_OPENBLAS_BUILD_LIBRARY
      names.push_back(DLRIG_OPENBLAS_BUILD_LIBRARY);
#endif
    }
    static DynamicLibrary kept; // loaded until exit: OpenBLAS's threads outlive any caller
    std::string tried;
    for (const auto &name : names) {
      auto lib = DynamicLibrary::open({name});
      if (!lib) {
        tried += (tried.empty() ? "" : "; ") + lib.error().message;
        continue;
      }
      o.sgemm = reinterpret_cast<decltype(o.sgemm)>(lib->symbol({"cblas_sgemm"}));
      o.dgemm = reinterpret_cast<decltype(o.dgemm)>(lib->symbol({"cblas_dgemm"}));
      o.set_num_threads =
          reinterpret_cast<decltype(o.set_num_threads)>(lib->symbol({"openblas_set_num_threads"}));
      o.get_config = reinterpret_cast<decltype(o.get_config)>(lib->symbol({"openblas_get_config"}));
      o.sbgemm = lib->symbol({"cblas_sbgemm"});
      if (!o.sgemm || !o.dgemm || !o.set_num_threads || !o.get_config) {
        o = Openblas{};
        tried += (tried.empty() ? "" : "; ") + lib->path() +
                 " lacks cblas_sgemm, cblas_dgemm, openblas_set_num_threads or "
                 "openblas_get_config (not an OpenBLAS)";
        continue;
      }
      o.path = lib->path();
      kept = std::move(lib).value();
      return o;
    }
    o.error = "OpenBLAS did not load (" + tried +
              "); install Debian's libopenblas0 (scripts/deps.sh) or point "
              "DLRIG_OPENBLAS_LIBRARY at a libopenblas.so";
    return o;
  }();
  return found;
}

std::string openblas_config() {
  const auto &o = openblas();
  const char *c = o.get_config ? o.get_config() : nullptr;
  return c ? c : "";
}

std::optional<std::string> openblas_core_name(std::string_view config) {
  const Core *c = core_in(config);
  return c ? std::optional<std::string>(c->name) : std::nullopt;
}

std::optional<std::string> openblas_core_for(std::string_view config,
                                             const std::vector<std::string> &isa,
                                             std::string_view vendor) {
  if (!dynamic_arch(config))
    return std::nullopt;
  auto core = better_core(core_in(config), isa_level(isa), vendor);
  return core.empty() ? std::nullopt : std::optional<std::string>(core);
}

std::optional<std::string> openblas_core_note(std::string_view config,
                                              const std::vector<std::string> &isa,
                                              std::string_view vendor) {
  const Core *core = core_in(config);
  const int cpu = isa_level(isa);
  auto better = better_core(core, cpu, vendor);
  if (better.empty())
    return std::nullopt;
  if (!dynamic_arch(config))
    return fmt::format("OpenBLAS runs its {} kernels ({}) on a CPU with {}: it was built for that "
                       "core alone (no DYNAMIC_ARCH), so OPENBLAS_CORETYPE cannot change it; an "
                       "OpenBLAS built with DYNAMIC_ARCH=1 or TARGET={} runs kernels for this "
                       "CPU, and this rate is below what it can do",
                       core->name, kLevel[core->level], kLevel[cpu], better);
  return fmt::format("OpenBLAS runs its {} kernels ({}) on a CPU with {}: its DYNAMIC_ARCH "
                     "detection did not recognise this CPU model (a VM that hides it, or a newer "
                     "model) and fell back to an older core; OPENBLAS_CORETYPE={} selects kernels "
                     "for this CPU, and this rate is below what it can do",
                     core->name, kLevel[core->level], kLevel[cpu], better);
}

OpenblasCoreEnv OpenblasCoreEnv::read() {
  OpenblasCoreEnv e;
  e.coretype = env("OPENBLAS_CORETYPE");
  e.chosen_from = env(kOpenblasCoreFromVar);
  e.auto_core = env("DLRIG_OPENBLAS_AUTO_CORE").value_or("1") != "0";
  e.test_detected = env("DLRIG_BENCH_OPENBLAS_DETECTED");
  return e;
}

std::optional<OpenblasCoreSwitch> openblas_core_switch(std::string_view config,
                                                       const std::vector<std::string> &isa,
                                                       std::string_view vendor,
                                                       const OpenblasCoreEnv &env) {
  if (env.coretype || env.chosen_from || !env.auto_core || !dynamic_arch(config))
    return std::nullopt;
  const Core *detected = env.test_detected ? find_core(*env.test_detected) : core_in(config);
  const int cpu = isa_level(isa);
  auto core = better_core(detected, cpu, vendor);
  if (core.empty())
    return std::nullopt;
  auto ver = version(config);
  OpenblasCoreSwitch s;
  s.core = core;
  s.detected = detected->name;
  s.message =
      fmt::format("OpenBLAS{}{} runs its {} kernels ({}) on this CPU with {}{}: running "
                  "again with OPENBLAS_CORETYPE={} (DLRIG_OPENBLAS_AUTO_CORE=0 turns "
                  "this off)",
                  ver.empty() ? "" : " ", ver, detected->name, kLevel[detected->level], kLevel[cpu],
                  env.test_detected ? " (test hook DLRIG_BENCH_OPENBLAS_DETECTED)" : "", core);
  return s;
}

std::optional<std::string> openblas_core_selected(std::string_view config,
                                                  const std::vector<std::string> &isa,
                                                  const OpenblasCoreEnv &env) {
  if (!env.chosen_from || !env.coretype)
    return std::nullopt;
  auto ver = version(config);
  const int cpu = isa_level(isa);
  std::string s = fmt::format("OPENBLAS_CORETYPE={} set by dlrig: OpenBLAS{}{} detected {}{}",
                              *env.coretype, ver.empty() ? "" : " ", ver, *env.chosen_from,
                              cpu < 0 ? "" : fmt::format(" on a CPU with {}", kLevel[cpu]));
  const Core *now = core_in(config);
  if (!now || !iequal(now->name, *env.coretype))
    s += fmt::format("; OpenBLAS runs {} all the same: the setting did not take effect",
                     now ? fmt::format("its {} kernels", now->name) : "an unknown core");
  return s;
}

} // namespace dlrig::bench
