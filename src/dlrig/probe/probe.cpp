#include "dlrig/probe/probe.hpp"
#include "dlrig/core/clock.hpp"

#include <chrono>
#include <ctime>
#include <fmt/format.h>

extern char **environ;

namespace dlrig {

Environment current_environment() {
  Environment env;
  for (char **e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos)
      env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

Snapshot probe_machine(const FileSystem &fs, const Environment &env, const ProbeOptions &options) {
  Snapshot snap;
  snap.context.tool_version = DLRIG_VERSION;
  snap.context.captured_at = utc_now();
  if (options.sysroot != "/")
    snap.context.sysroot = options.sysroot;
  ProbeContext ctx{fs, env, options, snap};
  probe_host(ctx);
  probe_pci_gpus(ctx);
  if (!options.skip_nvml)
    probe_nvml(ctx);
  else
    snap.nvidia.nvml_status = "not-probed";
  probe_amd(ctx);
  probe_software(ctx);
  return snap;
}

} // namespace dlrig
