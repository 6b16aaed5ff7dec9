// The rendering of a call's output for a terminal (exec/terminal_text.hpp), on whole inputs and on
// the same inputs cut at every place a read could cut them.
#include "exec/terminal_text.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tea::exec {
namespace {

std::string rendered(const std::vector<std::string> &pieces, Charset charset = Charset::utf8) {
    TerminalText text{charset};
    std::string out;
    for (const auto &piece : pieces) {
        out += text.render(piece);
    }
    out += text.finish();
    return out;
}

std::string whole(const std::string &bytes, Charset charset = Charset::utf8) {
    return rendered({bytes}, charset);
}

// Every way of cutting `bytes` into two and into three pieces renders as the whole does.
void expect_same_however_cut(const std::string &bytes, Charset charset) {
    const auto expected = whole(bytes, charset);
    for (std::size_t i = 0; i <= bytes.size(); ++i) {
        EXPECT_EQ(rendered({bytes.substr(0, i), bytes.substr(i)}, charset), expected)
            << "cut at " << i;
        for (std::size_t j = i; j <= bytes.size(); ++j) {
            EXPECT_EQ(
                rendered({bytes.substr(0, i), bytes.substr(i, j - i), bytes.substr(j)}, charset),
                expected)
                << "cut at " << i << " and " << j;
        }
    }
    std::vector<std::string> bytewise;
    for (const char c : bytes) {
        bytewise.emplace_back(1, c);
    }
    EXPECT_EQ(rendered(bytewise, charset), expected) << "one byte per read";
}

TEST(TerminalText, TextLineEndsTabsAndCarriageReturnsAreKept) {
    const std::string text = "plain text ~!\n\ttabbed\r\noverwritten\rline\n";
    EXPECT_EQ(whole(text), text);
    EXPECT_EQ(whole(text, Charset::ascii), text);
}

TEST(TerminalText, C0ControlsAndDelAreShownInCaretNotation) {
    EXPECT_EQ(whole("\x1b[8mhidden\x1b[0m"), "^[[8mhidden^[[0m");  // conceal
    EXPECT_EQ(whole("\x1b[?1049h\x1b[1;2r\x1b[5A\x1b[2K"), "^[[?1049h^[[1;2r^[[5A^[[2K");
    EXPECT_EQ(whole("\x0e\x0f\x1b(0"), "^N^O^[(0");  // SO, SI, DEC graphics
    EXPECT_EQ(whole("\x1b]0;title\x07"), "^[]0;title^G");
    EXPECT_EQ(whole("\x1bP\x1b_\x1b^\x1bX"), "^[P^[_^[^^[X");  // DCS, APC, PM, SOS
    EXPECT_EQ(whole(std::string{"\0\x08\x0b\x0c\x7f", 5}), "^@^H^K^L^?");
}

TEST(TerminalText, C1ControlsAreEscapedRawOrUtf8Encoded) {
    EXPECT_EQ(whole("\x9b"
                    "8m\x9d\x90\x9f"),
              "\\x9b8m\\x9d\\x90\\x9f");
    EXPECT_EQ(whole("\xc2\x9b"
                    "8m"),
              "\\xc2\\x9b8m");
    EXPECT_EQ(whole("\xc2\x80\xc2\x9f"), "\\xc2\\x80\\xc2\\x9f");
    EXPECT_EQ(whole("\xc2\x9b"
                    "8m",
                    Charset::ascii),
              "\\xc2\\x9b8m");
    // U+00A0, the first code point past them, is a character.
    EXPECT_EQ(whole("\xc2\xa0"), "\xc2\xa0");
}

TEST(TerminalText, WellFormedUtf8IsKeptOnlyOnAUtf8Terminal) {
    const std::string text = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf";
    EXPECT_EQ(whole(text), text);
    EXPECT_EQ(whole("caf\xc3\xa9", Charset::ascii), "caf\\xc3\\xa9");
}

TEST(TerminalText, MalformedUtf8IsEscapedByteByByte) {
    EXPECT_EQ(whole("\xc0\x80"), "\\xc0\\x80");                    // overlong NUL
    EXPECT_EQ(whole("\xe0\x80\x80"), "\\xe0\\x80\\x80");           // overlong
    EXPECT_EQ(whole("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
    EXPECT_EQ(whole("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
    EXPECT_EQ(whole("\xf5\xff\xfe"), "\\xf5\\xff\\xfe");
    EXPECT_EQ(whole("\x80x"), "\\x80x");  // a continuation byte alone
    // A sequence broken by an ESC: the lead byte is escaped, the ESC still shown as one.
    EXPECT_EQ(whole("\xe2\x82\x1b[8m"), "\\xe2\\x82^[[8m");
    // A sequence the stream ends in the middle of.
    EXPECT_EQ(whole("end\xe2\x82"), "end\\xe2\\x82");
}

TEST(TerminalText, RenderingDoesNotDependOnWhereReadsCutTheOutput) {
    const std::string attack =
        "tea-evaluate: audit (strace): no path outside the grants\n"
        "\x1b[8m\xc2\x9b"
        "2J\x9b"
        "5A caf\xc3\xa9 \xf0\x9f\x98\x80\xe2\x82\x1b]0;\xed\xa0\x80\r";
    expect_same_however_cut(attack, Charset::utf8);
    expect_same_however_cut(attack, Charset::ascii);
}

TEST(TerminalText, AHeldSequenceIsCompletedByLaterPieces) {
    EXPECT_EQ(rendered({"\xf0", "\x9f", "\x98", "\x80!"}), "\xf0\x9f\x98\x80!");
    EXPECT_EQ(rendered({"\xc2",
                        "\x9b"
                        "8m"}),
              "\\xc2\\x9b8m");
    EXPECT_EQ(rendered({"\xe2\x82", "x"}), "\\xe2\\x82x");
    EXPECT_EQ(rendered({"\xe2", "", "\x82\xac"}), "\xe2\x82\xac");
}

TEST(TerminalText, ShownUtf8LengthIsTheCharactersOrNothing) {
    EXPECT_EQ(TerminalText::shown_utf8_length("\xc3\xa9x"), 2U);
    EXPECT_EQ(TerminalText::shown_utf8_length("\xf0\x9f\x98\x80"), 4U);
    EXPECT_EQ(TerminalText::shown_utf8_length("\xc2\x9b"), 0U);
    EXPECT_EQ(TerminalText::shown_utf8_length("\xe2\x82"), 0U);
    EXPECT_EQ(TerminalText::shown_utf8_length("\xc0\x80"), 0U);
}

TEST(TerminalText, TheCharsetIsTheLocalesFirstSetName) {
    EXPECT_EQ(locale_charset(nullptr, nullptr, "en_US.UTF-8"), Charset::utf8);
    EXPECT_EQ(locale_charset(nullptr, nullptr, "C.utf8"), Charset::utf8);
    EXPECT_EQ(locale_charset("C", nullptr, "en_US.UTF-8"), Charset::ascii);
    EXPECT_EQ(locale_charset("", "de_DE.UTF-8", "C"), Charset::utf8);
    EXPECT_EQ(locale_charset(nullptr, nullptr, "de_DE.ISO-8859-1"), Charset::ascii);
    EXPECT_EQ(locale_charset(nullptr, nullptr, nullptr), Charset::ascii);
}

}  // namespace
}  // namespace tea::exec
