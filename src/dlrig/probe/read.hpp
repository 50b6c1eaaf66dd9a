#pragma once
// The probe's one read–parse–note step. A field read from a file is unknown (nullopt) when the
// file is missing, unreadable or does not parse, and the reason goes into a ProbeNote whose source
// is the file's path, with one policy everywhere:
//   - missing file: a note only when the file was expected (IfMissing::note); a file whose
//     absence is itself an answer (a device without a PCIe link) is IfMissing::skip and silent;
//   - there but unreadable: always a note, with the reader's reason;
//   - read but garbage: always a note, with the parser's reason.
#include "dlrig/core/result.hpp"
#include "dlrig/probe/probe.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace dlrig::probe {

// What a missing file means for the field read from it.
class IfMissing {
public:
  // Expected: its absence is noted, with why (what the absence means, e.g. "not provided by this
  // amdgpu driver/GPU"), or the reader's own message when why is empty.
  static IfMissing note(std::string why = {}) { return IfMissing(true, std::move(why)); }
  // Optional: its absence leaves the field unknown without a note.
  static IfMissing skip() { return IfMissing(false, {}); }

  bool noted() const { return noted_; }
  const std::string &why() const { return why_; }

private:
  IfMissing(bool noted, std::string why) : noted_(noted), why_(std::move(why)) {}
  bool noted_;
  std::string why_;
};

// The bytes of path (at most max_bytes) for field; nullopt, and a note as above, when there are
// none.
std::optional<std::string> read_text(const ProbeContext &ctx, const std::string &path,
                                     const std::string &field, const IfMissing &if_missing,
                                     std::size_t max_bytes = 64 * 1024);

// read_text, then parse (std::string_view -> Result<T>): the value, or nullopt and a note with
// the parser's reason.
template <class Parse>
auto read_parsed(const ProbeContext &ctx, const std::string &path, const std::string &field,
                 Parse parse, const IfMissing &if_missing, std::size_t max_bytes = 64 * 1024)
    -> std::optional<std::decay_t<decltype(parse(std::string_view()).value())>> {
  auto text = read_text(ctx, path, field, if_missing, max_bytes);
  if (!text)
    return std::nullopt;
  auto v = parse(*text);
  if (!v) {
    ctx.note(field, path, v.error().message);
    return std::nullopt;
  }
  return std::move(v).value();
}

} // namespace dlrig::probe
