// Fuzzes the reader of `dlrig watch --replay FILE` (a recording someone sends: CSV or JSON lines):
// any bytes give samples or an error naming a line, never a crash or a hang; the samples it
// accepts go through what replay and the diagnoses do with them (the summary and its printers,
// the window's diagnoses, the sample table).
#include "dlrig/monitor/diagnose.hpp"
#include "dlrig/monitor/view.hpp"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::vector<dlrig::monitor::Sample> samples;
  try {
    samples = dlrig::monitor::read_recording(text);
  } catch (const std::exception &) {
    return 0;
  }
  auto summary = dlrig::monitor::summarize(samples);
  (void)dlrig::monitor::render_summary(summary);
  constexpr auto replace = dlrig::Json::error_handler_t::replace;
  (void)dlrig::monitor::to_json(summary).dump(-1, ' ', false, replace);
  std::vector<dlrig::monitor::Sample> window;
  for (const auto &s : samples) {
    dlrig::monitor::add_to_window(window, s, 60, 0.1);
    auto findings = dlrig::monitor::diagnose(window);
    (void)dlrig::monitor::render_sample(s, findings, false);
    (void)dlrig::monitor::json_line(s, findings);
  }
  return 0;
}
