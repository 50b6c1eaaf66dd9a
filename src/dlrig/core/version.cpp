#include "dlrig/core/version.hpp"

#include <algorithm>
#include <cctype>

namespace dlrig {

Version parse_version(std::string_view v) {
  Version out;
  std::size_t i = 0;
  while (i < v.size()) {
    if (v[i] == 'x' || v[i] == 'X' || v[i] == '*') {
      out.wildcard = true;
      break;
    }
    if (!std::isdigit(static_cast<unsigned char>(v[i])))
      break;
    long n = 0;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) {
      n = std::min(999'999'999L, n * 10 + (v[i] - '0'));
      ++i;
    }
    out.parts.push_back(n);
    if (i + 1 < v.size() && v[i] == '.')
      ++i;
    else
      break;
  }
  return out;
}

int compare_versions(std::string_view a, std::string_view b) {
  auto va = parse_version(a), vb = parse_version(b);
  for (std::size_t i = 0;; ++i) {
    if ((i >= va.parts.size() && va.wildcard) || (i >= vb.parts.size() && vb.wildcard))
      return 0;
    if (i >= va.parts.size() && i >= vb.parts.size())
      return 0;
    long x = i < va.parts.size() ? va.parts[i] : 0, y = i < vb.parts.size() ? vb.parts[i] : 0;
    if (x != y)
      return x < y ? -1 : 1;
  }
}

} // namespace dlrig
