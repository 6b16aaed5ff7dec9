// The fenced blocks of a page of docs/, and the HTML comment that marks one for a test:
//
//   <!-- test: run -->
//   ```sh
//   tea-evaluate check .tea
//   ```
//
// The comment is invisible on the rendered page, so a reader sees the commands and outputs as they
// are, and the test reads the same bytes the reader copies. A command example that no test runs
// says so on the line above instead:
//
//   <!-- illustration -->
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace tea::test {

struct FencedBlock {
    int line = 0;          // the opening fence's line, 1-based
    std::string language;  // the first word after the fence ("" when none)
    std::string marker;    // what follows "test:" in the comment on the line above ("" unmarked)
    bool illustration = false;  // the line above is "<!-- illustration -->"
    std::string text;           // the lines inside, with the fence's indentation taken off
};

// Every fenced block of the page, in order. An unterminated fence is refused (a test that would
// read the rest of the page as one block would check nothing the reader sees).
std::vector<FencedBlock> fenced_blocks(const std::filesystem::path &page);

// Whether the block shows commands a reader would type: a shell block (sh, bash, shell, console)
// or one with a line that starts with the prompt "$ ".
bool is_command_example(const FencedBlock &block);

// The lines of text, without their line feeds.
std::vector<std::string> lines_of(const std::string &text);

// Whether `line` is what `pattern` shows, where "…" in the pattern stands for any text.
bool shows_line(const std::string &pattern, const std::string &line);

// Whether every line of `shown` is a line of `actual`, in the same order, other lines allowed
// between them. Otherwise *missing is the first shown line not found.
bool shows_in_order(const std::string &shown, const std::string &actual, std::string *missing);

// Whether `actual` has exactly the lines of `shown`, line for line. Otherwise *why says where
// they part.
bool shows_exactly(const std::string &shown, const std::string &actual, std::string *why);

}  // namespace tea::test
