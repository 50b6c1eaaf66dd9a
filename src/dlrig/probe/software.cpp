#include "dlrig/platform/cublaslt.hpp"
#include "dlrig/platform/nccl.hpp"
#include "dlrig/platform/vendor_library.hpp"
#include "dlrig/probe/software_probe.hpp"

namespace dlrig {

std::string join_path(const std::string &dir, const std::string &name) {
  if (dir.empty() || dir.back() == '/')
    return dir + name;
  return dir + "/" + name;
}

std::string parent_path(const std::string &path) {
  auto end = path.size();
  while (end > 1 && path[end - 1] == '/')
    --end;
  auto slash = path.rfind('/', end - 1);
  if (slash == std::string::npos || slash == 0)
    return "/";
  return path.substr(0, slash);
}

std::string base_name(const std::string &path) {
  auto end = path.size();
  while (end > 1 && path[end - 1] == '/')
    --end;
  auto slash = path.rfind('/', end - 1);
  return path.substr(slash == std::string::npos ? 0 : slash + 1,
                     end - (slash == std::string::npos ? 0 : slash + 1));
}

bool path_under(const std::string &path, const std::string &dir) {
  if (dir == "/")
    return !path.empty() && path.front() == '/';
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

namespace {

// cuBLASLt and NCCL where `dlrig bench` looks for them (platform/vendor_library.hpp), listed
// through the sysroot: doctor's cuda.cublaslt-not-found and dist.nccl-not-found read them.
void probe_bench_libraries(const ProbeContext &ctx) {
  auto &sw = ctx.snapshot.software;
  auto files = [&](const LibrarySearch &search) {
    std::optional<std::string> override_path;
    if (auto it = ctx.env.find(search.env_name); it != ctx.env.end() && !it->second.empty())
      override_path = it->second;
    return library_files(ctx.snapshot, override_path, search, ctx.fs);
  };
  sw.cublaslt_files = files(cublaslt::library_search());
  sw.nccl_files = files(nccl::library_search());
}

} // namespace

void probe_software(const ProbeContext &ctx) {
  probe_software_kernel(ctx);
  probe_software_cuda(ctx);
  probe_software_python(ctx);
  probe_software_env(ctx);
  probe_bench_libraries(ctx); // after the toolkits, the loader's path and the environments
}

} // namespace dlrig
