// Fuzzes the whole doctor on a snapshot document (what --from hands dlrig): load, every check
// (each isolated, as `dlrig doctor` runs them) and every printer (text, colour text, markdown,
// JSON). A snapshot the loader accepts never crashes a check or a printer.
#include "dlrig/core/snapshot.hpp"
#include "dlrig/doctor/report.hpp"
#include "dlrig/kb/kb.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto snap = dlrig::snapshot_from_json(text);
  if (!snap)
    return 0;
  dlrig::doctor::DoctorOptions options;
  options.data_path = "/data";
  auto report = dlrig::doctor::run_doctor(*snap, dlrig::kb::builtin(), options);
  (void)dlrig::doctor::render_text(report, false);
  (void)dlrig::doctor::render_text(report, true);
  (void)dlrig::doctor::render_markdown(report);
  (void)dlrig::doctor::to_json(report).dump(2);
  (void)report.exit_code();
  return 0;
}
