// Fuzzes the sysfs value parsers and the pci.ids lookup.
#include "dlrig/probe/parse.hpp"
#include "dlrig/probe/pci_ids.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace dlrig::probe;
  std::string_view text(reinterpret_cast<const char *>(data), size);
  (void)parse_u64(text);
  (void)parse_i64(text);
  (void)parse_hex_id(text);
  if (auto s = parse_link_speed(text))
    (void)pcie_link_gbps(*s, parse_link_width(text).value_or(1));
  (void)parse_numa_node(text);
  (void)parse_net_speed(text);
  (void)parse_ib_rate(text);
  (void)parse_ib_state(text);
  (void)parse_khz(text);
  if (auto d = parse_dpm(text))
    (void)d->max_hz();
  (void)pci_ids_lookup(text, 0x10de, 0x2684);
  (void)pci_ids_short_name(text);
  return 0;
}
