// Fuzzes the procfs parsers: any bytes give a value or an error, never a crash or a hang.
#include "dlrig/probe/parse.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace dlrig::probe;
  std::string_view text(reinterpret_cast<const char *>(data), size);
  (void)parse_meminfo(text);
  if (auto c = parse_cpuinfo(text))
    (void)pytorch_isa(c->flags);
  if (auto mounts = parse_mounts(text))
    for (const auto &m : *mounts)
      (void)tmpfs_size_option(m.options);
  (void)tmpfs_size_option(text);
  (void)parse_limits(text);
  (void)parse_os_release(text);
  (void)parse_cpulist_count(text);
  return 0;
}
