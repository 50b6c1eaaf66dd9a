#include "dlrig/probe/read.hpp"

namespace dlrig::probe {

std::optional<std::string> read_text(const ProbeContext &ctx, const std::string &path,
                                     const std::string &field, const IfMissing &if_missing,
                                     std::size_t max_bytes) {
  auto text = ctx.fs.read(path, max_bytes);
  if (text)
    return std::move(text).value();
  if (ctx.fs.exists(path))
    ctx.note(field, path, text.error().message);
  else if (if_missing.noted())
    ctx.note(field, path, if_missing.why().empty() ? text.error().message : if_missing.why());
  return std::nullopt;
}

} // namespace dlrig::probe
