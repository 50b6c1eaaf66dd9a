#include "dlrig/output/table.hpp"

#include "dlrig/output/text.hpp"
#include "support/cli.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace dlrig {
namespace {

using test::lines_of;
using test::words_of;

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

TEST(Wrap, WordsBreakAtSpacesAndALongWordIsCut) {
  using V = std::vector<std::string>;
  EXPECT_EQ(wrap_words("the quick brown fox", 10, 10), (V{"the quick", "brown fox"}));
  EXPECT_EQ(wrap_words("the quick brown fox", 4, 20), (V{"the", "quick brown fox"}));
  EXPECT_EQ(wrap_words("abcdefghij k", 4, 4), (V{"abcd", "efgh", "ij k"}));
  EXPECT_EQ(wrap_words("one\ntwo three", 0, 0), (V{"one", "two three"})); // 0: no limit
  EXPECT_EQ(wrap_words("", 5, 5), (V{""}));
  EXPECT_EQ(wrap_words("a  b", 10, 10), (V{"a b"}));
  EXPECT_EQ(wrap_words("\xc3\xa9t\xc3\xa9 caf\xc3\xa9", 4, 4),
            (V{"\xc3\xa9t\xc3\xa9", "caf\xc3\xa9"}))
      << "columns are code points, not bytes";
}

// Over many generated texts (spaces, newlines, two- and three-byte characters, long words):
// no line is wider than asked, no character but the spaces at the breaks is lost or added, and
// no UTF-8 sequence is split.
TEST(Wrap, EveryLineFitsAndNothingButBreakSpacesIsLost) {
  const std::vector<std::string> pieces{
      "a", "bc", " ", " ", "\n", "\xc3\xa9", "\xe2\x80\x94", "longwordlongword", "x"};
  std::uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
  auto squeeze = [](const std::string &t) {
    std::string out;
    for (char c : t)
      if (c != ' ' && c != '\n')
        out += c;
    return out;
  };
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    for (std::uint32_t n = next() % 30; n > 0; --n)
      text += pieces[next() % pieces.size()];
    const std::size_t first = 1 + next() % 12, rest = 1 + next() % 12;
    const auto lines = wrap_words(text, first, rest);
    std::string joined;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      EXPECT_LE(display_width(lines[i]), i == 0 ? first : rest) << text;
      EXPECT_TRUE(is_valid_utf8(lines[i])) << text;
      joined += lines[i];
    }
    ASSERT_EQ(squeeze(joined), squeeze(text)) << text;
  }
}

TEST(Wrap, AfterALeadTheLinesHangAndFitTheWidth) {
  const std::string text = "An NVIDIA GPU is in the machine but CUDA cannot use it: NVML failed";
  EXPECT_EQ(wrap_after(text, 0, 10, 4), text);   // no terminal
  EXPECT_EQ(wrap_after(text, 200, 10, 4), text); // fits
  const auto out = wrap_after(text, 30, 10, 4);
  const auto lines = lines_of(out);
  ASSERT_GE(lines.size(), 3u) << out;
  EXPECT_LE(lines[0].size(), 20u) << out; // after the 10 columns of the lead
  for (std::size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].substr(0, 4), "    ") << out;
    EXPECT_LE(lines[i].size(), 30u) << out;
  }
  EXPECT_EQ(words_of(out), words_of(text));
}

Table wide() {
  Table t{"Options", {"#", "option", "price", "why"}, {}};
  t.add({"1", "2x NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "$8565 each (2025, stale)",
         "the cheapest that fits the model in memory at this batch"});
  t.add({"2", "8x NVIDIA RTX A6000", "$4438 each", "more memory, slower"});
  return t;
}

TEST(Table, WithoutATerminalWidthEveryRowIsOneLine) {
  const auto out = render_text(wide());
  EXPECT_EQ(out, render_text(wide(), 0));
  EXPECT_EQ(lines_of(out).size(), 5u) << out; // title, header, rule, two rows
}

TEST(Table, ToATerminalWidthColumnsNarrowAndCellsWrapKeepingEveryWord) {
  const Table t = wide();
  const auto natural = render_text(t);
  for (std::size_t width : {100u, 80u, 60u}) {
    const auto out = render_text(t, width);
    for (const auto &l : lines_of(out))
      EXPECT_LE(display_width(l), width) << out;
    EXPECT_GT(lines_of(out).size(), 5u) << out;
    // The same words in each column, read top to bottom: the first column's "1" and "2" stay
    // whole, and the rule is as wide as each column.
    EXPECT_EQ(words_of(out).size(), words_of(natural).size()) << out;
  }
  const auto out = render_text(t, 60);
  EXPECT_NE(out.find("\n  1  2x NVIDIA RTX PRO     $8565 each  the cheapest that\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\n     6000 Blackwell        (2025,      fits the model in\n"),
            std::string::npos)
      << out;
}

TEST(Table, AKeyValueTableKeepsItsKeysWholeAndWrapsTheValues) {
  Table t{"", {}, {}};
  t.add({"tokens per second", "4.5k"});
  t.add({"rate", "GEMM bf16: 990 TFLOP/s peak x 80 % (NVIDIA H100 SXM5 measured 794 TFLOP/s "
                 "bf16, the best of a shape sweep with torch 2.7)"});
  const auto out = render_text(t, 50);
  const auto lines = lines_of(out);
  EXPECT_EQ(lines[0], "  tokens per second  4.5k");
  EXPECT_EQ(lines[1].substr(0, 21), "  rate               ");
  ASSERT_GT(lines.size(), 3u) << out;
  for (std::size_t i = 2; i < lines.size(); ++i)
    EXPECT_EQ(lines[i].substr(0, 21), std::string(21, ' ')) << out; // under the value column
  for (const auto &l : lines)
    EXPECT_LE(l.size(), 50u) << out;
}

// On a terminal a CJK character, a fullwidth form or an emoji takes two columns and a combining
// accent none (Unicode's East Asian Width): counted as one each, a dataset folder named in Chinese
// pushed the columns after it out of line.
TEST(Text, WideCharactersTakeTwoColumnsAndCombiningMarksNone) {
  EXPECT_EQ(display_width("\u6570\u636e\u96c6"), 6u);              // 数据集
  EXPECT_EQ(display_width("\uff44\uff41\uff54\uff41"), 8u);        // fullwidth "data"
  EXPECT_EQ(display_width("\ud55c\uad6d\uc5b4"), 6u);              // Hangul
  EXPECT_EQ(display_width("\u3053\u3093\u306b\u3061\u306f"), 10u); // Hiragana
  EXPECT_EQ(display_width("\U0001F680 go"), 5u);                   // an emoji, a space, go
  EXPECT_EQ(display_width("e\u0301t\u00e9"), 3u); // a combining acute takes no column
  EXPECT_EQ(display_width("caf\u00e9 \u00b5s"), 7u);
  EXPECT_EQ(display_width("\xff\xfe"), 2u); // bytes that are no UTF-8: one each
}

TEST(Wrap, WideCharactersWrapByColumns) {
  using V = std::vector<std::string>;
  const std::string a = "\u8bad", b = "\u7ec3", c = "\u6570", d = "\u636e", e = "\u96c6";
  EXPECT_EQ(wrap_words(a + b + c + d + e, 4, 4), (V{a + b, c + d, e}));
  EXPECT_EQ(wrap_words(a + b + " " + c, 5, 5), (V{a + b, c}));
  // A line narrower than one wide character still takes one a line: the text moves on.
  EXPECT_EQ(wrap_words(a + b, 1, 1), (V{a, b}));
}

TEST(Table, CellsWithWideCharactersLineUp) {
  Table t{"", {"path", "files"}, {}};
  t.add({"/data/\u8bad\u7ec3\u96c6", "1"});
  t.add({"/data/train", "2"});
  t.add({"/data/\uff54\uff52\uff41\uff49\uff4e", "3"});
  std::vector<std::size_t> ends;
  for (const auto &line : lines_of(render_text(t)))
    if (!line.empty() && line.back() >= '1' && line.back() <= '3')
      ends.push_back(display_width(line));
  ASSERT_EQ(ends.size(), 3u) << render_text(t);
  EXPECT_EQ(ends[0], ends[1]) << render_text(t);
  EXPECT_EQ(ends[1], ends[2]) << render_text(t);
}

TEST(Table, ATableThatCannotFitEvenWrappedIsLeftAsItIs) {
  Table t{"", {"a", "b", "c"}, {}};
  t.add({"aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb", "cccccccccccccccccccc"});
  EXPECT_EQ(render_text(t, 30), render_text(t)); // its words alone need more than 30
}

TEST(Show, CountsAsPeopleSayThem) {
  const std::pair<double, const char *> cases[] = {{0, "0"},
                                                   {0.5, "0.5"},
                                                   {950, "950"},
                                                   {13'500, "13.5k"},
                                                   {1'281'167, "1.3M"},
                                                   {2e8, "200M"},
                                                   {25'557'032, "25.6M"},
                                                   {8'030'261'248, "8.03B"},
                                                   {7e10, "70B"},
                                                   {1.5e13, "15T"},
                                                   {1e16, "10000T"}};
  for (const auto &[v, shown] : cases)
    EXPECT_EQ(show_si(v), shown) << v;
}

} // namespace
} // namespace dlrig
