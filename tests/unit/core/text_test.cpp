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

TEST(Text, GroupDigitsEveryThree) {
  EXPECT_EQ(group_digits(0), "0");
  EXPECT_EQ(group_digits(980), "980");
  EXPECT_EQ(group_digits(1980), "1,980");
  EXPECT_EQ(group_digits(172119424), "172,119,424");
  EXPECT_EQ(group_digits(-1234567), "-1,234,567");
  EXPECT_EQ(group_digits(-123), "-123");
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
