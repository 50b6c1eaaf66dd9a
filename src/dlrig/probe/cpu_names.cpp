#include "dlrig/probe/cpu_names.hpp"
#include "dlrig/core/text.hpp"

#include <charconv>
#include <fmt/format.h>

namespace dlrig::probe {

namespace {

std::optional<int> hex_code(std::string_view s) {
  if (s.size() < 3 || s.substr(0, 2) != "0x")
    return std::nullopt;
  int v = 0;
  auto [end, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), v, 16);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0 || v > 0xfff)
    return std::nullopt;
  return v;
}

} // namespace

CpuNames decode_arm_cpu(const kb::KnowledgeBase &kb, std::string_view implementer,
                        const std::vector<std::pair<std::string, int>> &parts) {
  CpuNames out;
  auto impl = hex_code(implementer);
  if (!impl)
    return out;
  const auto *vendor = kb.arm_cpu(*impl, std::nullopt);
  std::string vendor_name =
      vendor ? vendor->vendor : fmt::format("Arm implementer 0x{:02x}", *impl);
  out.vendor = vendor_name;
  std::vector<std::string> names;
  for (const auto &[code, count] : parts) {
    auto part = hex_code(code);
    const auto *row = part ? kb.arm_cpu(*impl, part) : nullptr;
    std::string name = row ? row->core : fmt::format("{} part {}", vendor_name, code);
    names.push_back(parts.size() == 1 ? name : fmt::format("{}x {}", count, name));
  }
  if (!names.empty())
    out.model = join(names, " + ");
  return out;
}

} // namespace dlrig::probe
