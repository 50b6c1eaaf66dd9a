#include "dlrig/kb/csv.hpp"

#include <gtest/gtest.h>

namespace dlrig::kb {
namespace {

TEST(Csv, ReadsQuotedFieldsWithCommasQuotesAndLineBreaks) {
  auto t = parse_csv("a,b,c\n1,\"x, y\",\"say \"\"hi\"\"\"\n2,\"two\nlines\",\n", "f.csv");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->records.size(), 2u);
  EXPECT_EQ(t->records[0].fields[1], "x, y");
  EXPECT_EQ(t->records[0].fields[2], "say \"hi\"");
  EXPECT_EQ(t->records[1].fields[1], "two\nlines");
  EXPECT_EQ(t->records[1].fields[2], "");
  EXPECT_EQ(t->records[1].line, 3u);
  EXPECT_EQ(t->column("c"), 2);
  EXPECT_EQ(t->column("zz"), -1);
}

TEST(Csv, CountsLinesAcrossCrlfAndBlankLines) {
  auto t = parse_csv("a,b\r\n1,2\r\n\r\n3,4", "f.csv");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->records.size(), 2u);
  EXPECT_EQ(t->records[1].line, 4u);
  EXPECT_EQ(t->records[1].fields[1], "4");
}

TEST(Csv, WrongFieldCountNamesFileAndLine) {
  auto t = parse_csv("a,b\n1,2\n1,2,3\n", "data/x.csv");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message, "data/x.csv:3: 3 fields, the header has 2");
}

TEST(Csv, UnterminatedQuoteIsAnError) {
  auto t = parse_csv("a,b\n1,\"open\n", "data/x.csv");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("data/x.csv:2:"), std::string::npos) << t.error().message;
  EXPECT_NE(t.error().message.find("never closed"), std::string::npos);
}

TEST(Csv, StrayQuotesAreErrors) {
  EXPECT_FALSE(parse_csv("a,b\n1,\"x\"y\n", "f"));
  EXPECT_FALSE(parse_csv("a,b\n1,x\"y\n", "f"));
  EXPECT_FALSE(parse_csv("", "f"));
}

} // namespace
} // namespace dlrig::kb
