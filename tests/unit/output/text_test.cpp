#include "dlrig/output/text.hpp"

#include <gtest/gtest.h>

namespace dlrig {
namespace {

TEST(Text, ValidUtf8IsKept) {
  for (std::string s : {"", "plain", "GeForce RTX 4090", "25 °C", "日本語", "\xF0\x9F\x98\x80"}) {
    EXPECT_TRUE(is_valid_utf8(s)) << s;
    EXPECT_EQ(valid_utf8(s), s);
  }
}

TEST(Text, InvalidBytesBecomeReplacementCharacters) {
  // One Latin-1 byte, as in PATH=/tmp/\xe9.
  EXPECT_FALSE(is_valid_utf8("/tmp/\xe9:/usr/bin"));
  EXPECT_EQ(valid_utf8("/tmp/\xe9:/usr/bin"), "/tmp/\xEF\xBF\xBD:/usr/bin");
  // Overlong '/', a UTF-16 surrogate, past U+10FFFF, a truncated sequence, a lone continuation.
  for (std::string bad : {"\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82", "\x80"}) {
    EXPECT_FALSE(is_valid_utf8(bad));
    auto fixed = valid_utf8(bad);
    EXPECT_TRUE(is_valid_utf8(fixed));
    EXPECT_NE(fixed.find("\xEF\xBF\xBD"), std::string::npos);
  }
  // The valid text around the bad byte survives.
  EXPECT_EQ(valid_utf8("a\xFF"
                       "b"),
            "a\xEF\xBF\xBD"
            "b");
}

TEST(Text, ControlCharactersAreEscapedForTheTerminal) {
  EXPECT_EQ(printable("\x1b]0;pwned\x07host"), "\\x1b]0;pwned\\x07host");
  EXPECT_EQ(printable("a\rb"), "a\\x0db");
  EXPECT_EQ(printable("del\x7f"), "del\\x7f");
  EXPECT_EQ(printable("c1 \xC2\x9B"
                      "2J"),
            "c1 \\x9b2J"); // U+009B, the one-byte CSI
  EXPECT_EQ(printable("bad \xE9 byte"), "bad \\xe9 byte");
  // Tabs, newlines, backslashes and non-ASCII letters are printable as they are.
  EXPECT_EQ(printable("a\tb\nc \\x1b °C"), "a\tb\nc \\x1b °C");
  auto once = printable("\x1b[2J\xE9");
  EXPECT_EQ(printable(once), once);
  EXPECT_EQ(once.find('\x1b'), std::string::npos);
}

} // namespace
} // namespace dlrig
