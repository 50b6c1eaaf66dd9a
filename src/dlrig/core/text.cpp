#include "dlrig/core/text.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace dlrig {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto &c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string excerpt(std::string_view text, std::size_t max) {
  std::string out(text.substr(0, max));
  for (char &c : out)
    if (c < 32 || c >= 127)
      c = '?';
  return text.size() > max ? out + "..." : out;
}

std::string group_digits(long long n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > (n < 0 ? 1 : 0); i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

std::string_view trim(std::string_view s) {
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) || c == '\0'; };
  while (!s.empty() && space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && space(s.back()))
    s.remove_suffix(1);
  return s;
}

std::string join(const std::vector<std::string> &parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i)
      out += sep;
    out += parts[i];
  }
  return out;
}

std::string basename(std::string_view path) {
  while (path.size() > 1 && path.back() == '/')
    path.remove_suffix(1);
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos || path.size() == 1 ? path
                                                                         : path.substr(slash + 1));
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1] ? 1u : 0u)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

namespace {
std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty())
        out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty())
    out.push_back(std::move(cur));
  return out;
}
} // namespace

std::vector<std::string> nearest_names(const std::vector<std::string> &names,
                                       std::string_view query, std::size_t n) {
  auto q = lower(trim(query));
  auto score = [&](const std::string &name) {
    auto l = lower(name);
    std::size_t best = edit_distance(q, l);
    auto ws = words(l);
    auto qn = std::max<std::size_t>(1, words(q).size());
    for (std::size_t i = 0; i + qn <= ws.size(); ++i) {
      std::string run;
      for (std::size_t k = 0; k < qn; ++k)
        run += (k ? " " : "") + ws[i + k];
      best = std::min(best, edit_distance(q, run));
    }
    return std::pair{best, edit_distance(q, l)};
  };
  std::vector<std::pair<std::pair<std::size_t, std::size_t>, std::string>> scored;
  for (const auto &name : names)
    if (std::none_of(scored.begin(), scored.end(), [&](const auto &s) { return s.second == name; }))
      scored.emplace_back(score(name), name);
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto &x, const auto &y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < n; ++i)
    out.push_back(scored[i].second);
  return out;
}

} // namespace dlrig
