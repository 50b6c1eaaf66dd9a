#include "dlrig/core/version.hpp"

#include <gtest/gtest.h>

namespace dlrig {
namespace {

TEST(Version, WildcardIsNeitherNewerNorOlder) {
  // "Is 12.x newer than 12.4?": the two old copies read "12.x" as 12.0 (older than 12.4) by two
  // different parses. A wildcard matches any minor: the same as 12.4, older than 13.0.
  EXPECT_EQ(compare_versions("12.x", "12.4"), 0);
  EXPECT_EQ(compare_versions("12.4", "12.x"), 0);
  EXPECT_LT(compare_versions("12.x", "13.0"), 0);
  EXPECT_GT(compare_versions("12.x", "11.8"), 0);
  EXPECT_TRUE(parse_version("12.x").wildcard);
  EXPECT_EQ(parse_version("12.x").parts, (std::vector<long>{12}));
}

TEST(Version, NumericPerComponent) {
  // What kb's lookups relied on: "550.54.14" < "550.100".
  EXPECT_LT(compare_versions("550.54.14", "550.100"), 0);
  EXPECT_GT(compare_versions("12.10", "12.9"), 0);
  EXPECT_EQ(compare_versions("525.60.13", "525.60.13"), 0);
}

TEST(Version, MissingComponentsAreZero) {
  // What both callers relied on: "12" == "12.0", "12.4" < "12.4.1".
  EXPECT_EQ(compare_versions("12", "12.0"), 0);
  EXPECT_EQ(compare_versions("12.4", "12.4.0"), 0);
  EXPECT_LT(compare_versions("12.4", "12.4.1"), 0);
}

TEST(Version, SuffixesEndAComponent) {
  // What doctor relied on: a local version or a build tag does not count.
  EXPECT_EQ(compare_versions("2.5.1+cu124", "2.5.1"), 0);
  EXPECT_LT(compare_versions("2.5.0+cu121", "2.5.1+cu118"), 0);
  EXPECT_EQ(parse_version("2.5.1+cu124").parts, (std::vector<long>{2, 5, 1}));
  EXPECT_EQ(parse_version("550.54.15").parts, (std::vector<long>{550, 54, 15}));
  EXPECT_TRUE(parse_version("abc").parts.empty());
  EXPECT_EQ(compare_versions("abc", "0"), 0);
}

TEST(Version, HugeComponentsDoNotOverflow) {
  EXPECT_EQ(parse_version("99999999999999999999999.1").parts[0], 999'999'999L);
}

} // namespace
} // namespace dlrig
