#include "dlrig/kb/report.hpp"

namespace dlrig::kb {

Report kb_report(const KbView &v) {
  Report r;
  r.schema_version = kKbSchemaVersion;
  r.json = [&v] { return v.json; };
  r.table = [&v](bool) { return render(v.tables, Format::table); };
  r.markdown = [&v] { return render(v.tables, Format::markdown); };
  r.csv = [&v] { return v.tables; };
  return r;
}

} // namespace dlrig::kb
