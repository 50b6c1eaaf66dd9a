// Fuzzes reading a snapshot document (what --from hands dlrig): an error or a snapshot that
// writes back out, never a crash.
#include "dlrig/core/snapshot.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  if (auto snap = dlrig::snapshot_from_json(text))
    (void)dlrig::to_json(*snap).dump();
  return 0;
}
