// Bytes from the records as HTML. Every string a report shows came from a target or from a
// record a target's output fed (paths, names, output, reasons), so each is hostile input: it is
// escaped here, and nowhere is record text written into a page unescaped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tea::report {

// `bytes` as HTML text or as an attribute's value (between double quotes): the markup characters
// as entities; and as a visible escape (\xNN or \u{NNNN}) every byte that is not well-formed
// UTF-8, every control character (line breaks and tabs are kept when keep_breaks), and the
// characters that reorder or hide text (bidirectional controls, zero-width marks), with which a
// name could make the page say what its bytes do not.
std::string html_text(std::string_view bytes, bool keep_breaks = false);

// At most `limit` bytes of `bytes`, cut at a character's start, escaped as html_text; what was
// cut is said after it (" … 1234 more bytes").
std::string html_excerpt(std::string_view bytes, std::size_t limit, bool keep_breaks = false);

}  // namespace tea::report
