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

void probe_software(const ProbeContext &ctx) {
  probe_software_kernel(ctx);
  probe_software_cuda(ctx);
  probe_software_python(ctx);
  probe_software_env(ctx);
}

} // namespace dlrig
