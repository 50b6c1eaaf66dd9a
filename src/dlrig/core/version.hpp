#pragma once
// Version strings, one reading for the whole library: drivers ("550.54.15"), CUDA ("12.4",
// "12.x"), torch ("2.5.1+cu124"), NVML ("12.550.54.15").
#include <optional>
#include <string_view>
#include <vector>

namespace dlrig {

// The numeric components, each read in full ("550.100" is {550, 100}, newer than 550.54). A
// component that is a wildcard ("x" or "*") ends the list with wildcard = true; parsing stops at
// the first component that is not a number (a suffix such as "+cu124" or "rc1" after the digits of
// a component ends it too). Components beyond 9 digits are clamped to 999999999.
struct Version {
  std::vector<long> parts;
  bool wildcard = false; // "12.x": any 12
};
Version parse_version(std::string_view text);

// <0, 0, >0 as a is older, the same as, or newer than b. Missing components count as 0 ("12" ==
// "12.0"). A wildcard matches whatever the other side has from there on: "12.x" is neither newer
// nor older than 12.4 (0), and older than 13.0. Text that holds no number compares as 0.0.
int compare_versions(std::string_view a, std::string_view b);

} // namespace dlrig
