#include "dlrig/info/report.hpp"

namespace dlrig {

const ProbeNote *unread(const Snapshot &s, std::string_view field) {
  for (const auto &n : s.notes)
    if (n.field == field)
      return &n;
  return nullptr;
}

std::string render_info(const Snapshot &s, Format f, std::size_t width) {
  std::vector<Table> tables;
  for (auto part : {info_host_tables, info_gpu_tables, info_nvidia_tables, info_software_tables}) {
    auto more = part(s);
    tables.insert(tables.end(), std::make_move_iterator(more.begin()),
                  std::make_move_iterator(more.end()));
  }
  std::string out;
  if (f == Format::markdown)
    out += "## dlrig info\n\n";
  out += render(tables, f, width);
  if (!s.notes.empty()) {
    Table notes{"Not known (" + std::to_string(s.notes.size()) + " readings)",
                {"field", "source", "reason"},
                {}};
    for (const auto &n : s.notes)
      notes.add({n.field, show(n.source), n.reason});
    out += "\n" + render({notes}, f, width);
  }
  return out;
}

Report snapshot_report(const Snapshot &s) {
  Report r;
  r.schema_version = s.schema_version;
  r.json = [&s] { return to_json(s); };
  return r;
}

Report info_report(const Snapshot &s) {
  Report r = snapshot_report(s);
  r.table = [&s](const TextStyle &t) { return render_info(s, Format::table, t.width); };
  r.markdown = [&s] { return render_info(s, Format::markdown); };
  r.csv = [&s] { return std::vector<Table>{info_pci_gpu_table(s)}; };
  return r;
}

} // namespace dlrig
