// What a call's output becomes on the operator's terminal.
//
// A terminal acts on some bytes instead of showing them: ESC and the other C0 controls, DEL, and
// the C1 controls U+0080..U+009F (a UTF-8 terminal takes them UTF-8 encoded, a terminal of an
// 8-bit charset as raw bytes). With them a target could print a forged audit line and hide the
// real one after it: conceal or colour away what follows, switch to the alternate screen, set a
// scroll region or another character set, move the cursor back over earlier lines, or open a
// string (OSC, DCS, APC, PM, SOS) that swallows every byte the runtime writes next. Rendered here,
// each such byte is shown as text instead: a C0 control or DEL in caret notation (ESC as ^[, DEL
// as ^?), as cat -v and less show them, and each byte of a C1 control or of a sequence that is
// not well-formed UTF-8 as \xNN. Kept as they are: printable ASCII, line feed, tab, carriage
// return, and well-formed UTF-8 when the terminal's charset is UTF-8. A carriage return moves the
// cursor within the current line only, and the call runner ends an open last line before the
// runtime writes its own, so CRLF text and progress lines keep working without reaching any line
// but the target's own.
//
// Each byte is decided on its own, so an escape sequence split across reads is rendered as the
// same bytes unsplit would be; only a UTF-8 sequence needs the bytes after it, and its first bytes
// are held until it is complete or proven malformed.
//
// Cost: one table lookup per byte of a run of text, copied whole, into a buffer the object keeps;
// the rendering is at most four times as long as the input. Not thread-safe: one object per
// stream.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string_view>

namespace tea::exec {

enum class Charset { ascii, utf8 };

// The charset a locale's name gives the terminal, as less(1) and ls(1) take it from the locale:
// the first of LC_ALL, LC_CTYPE and LANG that is set and not empty; UTF-8 when its codeset is
// UTF-8, otherwise ASCII alone. The C locale, or an 8-bit charset whose terminal takes the raw
// bytes 0x80..0x9f as controls, shows every byte above ASCII as \xNN.
Charset locale_charset(const char *lc_all, const char *lc_ctype, const char *lang);
// locale_charset of the runtime's own environment, read once.
Charset terminal_charset();

class TerminalText {
   public:
    explicit TerminalText(Charset charset) : charset_(charset) {}

    // What the terminal is shown for `bytes`: a view of this object's buffer, valid until the
    // next call. A UTF-8 sequence cut at the end is held for the next call.
    std::string_view render(std::string_view bytes);
    // A held sequence that never completed (the stream ended), escaped; the same kind of view.
    std::string_view finish();

    // The length of the character at the start of `bytes` (not empty, first byte 0x80 or above)
    // when it is well-formed UTF-8 and no C1 control: what a UTF-8 terminal may be given as it
    // is. 0 otherwise, a sequence cut short included.
    static std::size_t shown_utf8_length(std::string_view bytes);

   private:
    // Writes the held bytes as \xNN at `w`, forgets them, and returns where the writing ends.
    char *write_held(char *w);
    // The buffer, with room for at least `size` bytes.
    char *room(std::size_t size);

    Charset charset_;
    std::unique_ptr<char[]> buffer_;  // grown, never shrunk: a call's reads are all alike
    std::size_t capacity_ = 0;
    std::array<char, 4> held_{};
    std::size_t held_size_ = 0;
};

}  // namespace tea::exec
