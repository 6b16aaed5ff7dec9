#include "report/html_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tea::report {
namespace {

TEST(HtmlText, MarkupCharactersBecomeEntities) {
    EXPECT_EQ(html_text("<a href=\"x\" onclick='y'>&</a>"),
              "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
}

TEST(HtmlText, BytesThatAreNotUtf8AreShownAsEscapes) {
    EXPECT_EQ(html_text("a\xff"
                        "b"),
              "a\\xffb");
    // An overlong '<' (0xc0 0xbc) and an encoded surrogate are not characters: never a '<'.
    EXPECT_EQ(html_text("\xc0\xbc"), "\\xc0\\xbc");
    EXPECT_EQ(html_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");
    EXPECT_EQ(html_text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
    EXPECT_EQ(html_text("\xe2\x82"), "\\xe2\\x82");                    // cut short
    EXPECT_EQ(html_text("caf\xc3\xa9"), "caf\xc3\xa9");                // well-formed stays
}

TEST(HtmlText, ControlsAndReorderingCharactersAreVisible) {
    EXPECT_EQ(html_text("a\nb\tc\x1b[0m"), "a\\x0ab\\x09c\\x1b[0m");
    EXPECT_EQ(html_text("a\nb\tc", true), "a\nb\tc");
    EXPECT_EQ(html_text("\x7f"), "\\x7f");
    EXPECT_EQ(html_text("\xc2\x85"), "\\u{0085}");                    // C1 control
    EXPECT_EQ(html_text("txt.\xe2\x80\xae" "exe"), "txt.\\u{202e}exe");  // right-to-left override
    EXPECT_EQ(html_text("a\xe2\x80\x8b"
                        "b"),
              "a\\u{200b}b");  // zero-width space
    // A backslash is doubled, so that record text reading "\x41" is not taken for an escape.
    EXPECT_EQ(html_text("\\x41"), "\\\\x41");
}

TEST(HtmlText, AnExcerptIsCutAtACharactersStartAndSaysWhatWasCut) {
    EXPECT_EQ(html_excerpt("abcdef", 10), "abcdef");
    EXPECT_EQ(html_excerpt("abcdef", 3), "abc … 3 more bytes");
    // "é" is two bytes: a cut through it moves back before it.
    EXPECT_EQ(html_excerpt("ab\xc3\xa9z", 3), "ab … 3 more bytes");
    EXPECT_EQ(html_excerpt("<<<<", 2), "&lt;&lt; … 2 more bytes");
}

}  // namespace
}  // namespace tea::report
