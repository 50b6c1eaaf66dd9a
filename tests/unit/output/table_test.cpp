#include "dlrig/output/table.hpp"

#include <gtest/gtest.h>

namespace dlrig {
namespace {

Table hostile() {
  Table t{"Host \x1b]0;pwned\x07", {"name", "value"}, {}};
  t.add({"hostname", "evil\x1b[2J\r"});
  t.add({"path", "/tmp/\xe9"});
  return t;
}

TEST(Table, NoControlCharacterReachesAnyFormat) {
  for (Format f : {Format::table, Format::markdown, Format::csv}) {
    auto out = render({hostile()}, f);
    EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
    EXPECT_EQ(out.find('\r'), std::string::npos) << out;
    EXPECT_EQ(out.find('\x07'), std::string::npos) << out;
    EXPECT_EQ(out.find('\xe9'), std::string::npos) << out;
    EXPECT_NE(out.find("evil\\x1b[2J\\x0d"), std::string::npos) << out;
  }
}

TEST(Table, CsvQuotesWhatNeedsIt) {
  Table t{"ignored", {"a", "b"}, {}};
  t.add({"x,y", "say \"hi\""});
  t.add({"two\nlines", "plain"});
  EXPECT_EQ(render({t}, Format::csv), "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n\"two\nlines\",plain\n");
}

} // namespace
} // namespace dlrig
