#include "dlrig/core/text.hpp"

#include <gtest/gtest.h>

namespace dlrig {
namespace {

TEST(Text, LowerTrimJoinBasename) {
  EXPECT_EQ(lower("GeForce RTX"), "geforce rtx");
  EXPECT_EQ(trim("  x y\t\r\n"), "x y");
  EXPECT_EQ(trim(std::string_view("1\n\0", 3)), "1");
  EXPECT_EQ(trim("   "), "");
  EXPECT_EQ(join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(join({}, ", "), "");
  EXPECT_EQ(basename("/usr/lib/libcuda.so.1"), "libcuda.so.1");
  EXPECT_EQ(basename("a/b/"), "b");
  EXPECT_EQ(basename("name"), "name");
  EXPECT_EQ(basename("/"), "/");
}

TEST(Text, EditDistanceCountsASwapOnce) {
  EXPECT_EQ(edit_distance("4090", "4009"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("ABC", "abc"), 3u); // case-sensitive
}

TEST(Text, NearestNamesByRunsOfWords) {
  std::vector<std::string> names = {"GeForce RTX 4090", "GeForce RTX 3090", "H100 SXM5 80GB",
                                    "GeForce RTX 4090"};
  auto near = nearest_names(names, "rtx 4009", 2);
  ASSERT_EQ(near.size(), 2u);
  EXPECT_EQ(near[0], "GeForce RTX 4090");
  EXPECT_EQ(near[1], "GeForce RTX 3090"); // the repeated name counts once
}

} // namespace
} // namespace dlrig
