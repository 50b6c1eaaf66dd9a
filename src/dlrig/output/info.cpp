#include "dlrig/output/info.hpp"

namespace dlrig {

std::string render_info(const Snapshot& s, Format f) {
  std::vector<Table> tables;
  for (auto part : {info_host_tables, info_gpu_tables, info_nvidia_tables, info_software_tables}) {
    auto more = part(s);
    tables.insert(tables.end(), more.begin(), more.end());
  }
  std::string out;
  if (f == Format::markdown)
    out += "## dlrig info\n\n";
  out += render(tables, f);
  if (!s.notes.empty()) {
    Table notes{"Not known (" + std::to_string(s.notes.size()) + " readings)", {"field", "source", "reason"}, {}};
    for (const auto& n : s.notes)
      notes.add({n.field, show(n.source), n.reason});
    out += "\n" + render({notes}, f);
  }
  return out;
}

} // namespace dlrig
