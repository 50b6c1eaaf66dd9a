#include "dlrig/probe/probe.hpp"
#include "dlrig/core/clock.hpp"
#include "dlrig/platform/deadline_fs.hpp"

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

Snapshot probe_machine(const FileSystem &root, const Environment &env,
                       const ProbeOptions &options) {
  DeadlineFileSystem fs(root, options.file_timeout, options.read_budget);
  Snapshot snap;
  snap.context.tool_version = DLRIG_VERSION;
  snap.context.captured_at = utc_now();
  if (options.sysroot != "/")
    snap.context.sysroot = options.sysroot;
  ProbeContext ctx{fs, env, options, snap};
  probe_host(ctx);
  if (!options.host_only) {
    probe_pci_gpus(ctx);
    probe_pci_slots(ctx);
    if (!options.skip_nvml)
      probe_nvml(ctx);
    else
      snap.nvidia.nvml_status = "not-probed";
    probe_amd(ctx);
    probe_software(ctx);
  }
  for (const auto &path : fs.timed_out())
    ctx.note("probe", path,
             fmt::format("no answer within {} ms: the file blocks when read (some sysfs attributes "
                         "sleep in the kernel); what it holds is unknown",
                         options.file_timeout.count()));
  if (auto n = fs.skipped())
    ctx.note("probe", std::nullopt,
             fmt::format("{} more files not read: file reads had waited {} ms in all, the "
                         "probe's limit; what they hold is unknown",
                         n, options.read_budget.count()));
  return snap;
}

} // namespace dlrig
