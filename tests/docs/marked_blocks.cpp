#include "docs/marked_blocks.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tea::test {
namespace {

constexpr std::string_view kAnyText = "…";
constexpr std::string_view kMarkerOpen = "<!-- test:";
constexpr std::string_view kMarkerClose = "-->";
constexpr std::string_view kIllustration = "<!-- illustration -->";

std::string trimmed(std::string_view s) {
    const auto first = s.find_first_not_of(" \t");
    if (first == std::string_view::npos) {
        return {};
    }
    const auto last = s.find_last_not_of(" \t");
    return std::string{s.substr(first, last - first + 1)};
}

// The backticks that open or close a fence, or 0 when the line is no fence.
std::size_t fence_length(const std::string &line) {
    const auto text = trimmed(line);
    std::size_t n = 0;
    while (n < text.size() && text[n] == '`') {
        ++n;
    }
    return n >= 3 ? n : 0;
}

std::string marker_of(const std::string &line) {
    const auto text = trimmed(line);
    if (!text.starts_with(kMarkerOpen) || !text.ends_with(kMarkerClose)) {
        return {};
    }
    return trimmed(std::string_view{text}.substr(
        kMarkerOpen.size(), text.size() - kMarkerOpen.size() - kMarkerClose.size()));
}

}  // namespace

std::vector<std::string> lines_of(const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in{text};
    for (std::string line; std::getline(in, line);) {
        out.push_back(line);
    }
    return out;
}

std::vector<FencedBlock> fenced_blocks(const std::filesystem::path &page) {
    std::ifstream in{page};
    if (!in) {
        throw std::runtime_error("cannot read " + page.string());
    }
    std::stringstream whole;
    whole << in.rdbuf();
    const auto lines = lines_of(whole.str());
    std::vector<FencedBlock> blocks;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const auto opening = fence_length(lines[i]);
        if (opening == 0) {
            continue;
        }
        FencedBlock block;
        block.line = static_cast<int>(i + 1);
        const auto indent = lines[i].find('`');
        block.language = trimmed(std::string_view{lines[i]}.substr(indent + opening));
        block.language = block.language.substr(0, block.language.find(' '));
        block.marker = i > 0 ? marker_of(lines[i - 1]) : std::string{};
        block.illustration = i > 0 && trimmed(lines[i - 1]) == kIllustration;
        std::size_t j = i + 1;
        for (; j < lines.size(); ++j) {
            if (fence_length(lines[j]) >= opening &&
                trimmed(lines[j]).find_first_not_of('`') == std::string::npos) {
                break;
            }
            // The fence's indentation belongs to the list it sits in, not to the block.
            const auto &l = lines[j];
            std::size_t strip = 0;
            while (strip < indent && strip < l.size() && l[strip] == ' ') {
                ++strip;
            }
            block.text += l.substr(strip) + "\n";
        }
        if (j == lines.size()) {
            throw std::runtime_error(page.string() + ":" + std::to_string(block.line) +
                                     ": the fence is never closed");
        }
        blocks.push_back(std::move(block));
        i = j;
    }
    return blocks;
}

bool is_command_example(const FencedBlock &block) {
    if (block.language == "sh" || block.language == "bash" || block.language == "shell" ||
        block.language == "console") {
        return true;
    }
    const auto lines = lines_of(block.text);
    return std::any_of(lines.begin(), lines.end(),
                       [](const std::string &line) { return line.starts_with("$ "); });
}

bool shows_line(const std::string &pattern, const std::string &line) {
    std::vector<std::string> pieces;
    for (std::size_t from = 0;;) {
        const auto at = pattern.find(kAnyText, from);
        pieces.push_back(pattern.substr(from, at - from));
        if (at == std::string::npos) {
            break;
        }
        from = at + kAnyText.size();
    }
    if (pieces.size() == 1) {
        return pattern == line;
    }
    const auto &head = pieces.front();
    const auto &tail = pieces.back();
    if (line.size() < head.size() + tail.size() || !line.starts_with(head) ||
        !line.ends_with(tail)) {
        return false;
    }
    std::size_t at = head.size();
    const std::size_t end = line.size() - tail.size();
    for (std::size_t k = 1; k + 1 < pieces.size(); ++k) {
        at = line.find(pieces[k], at);
        if (at == std::string::npos || at + pieces[k].size() > end) {
            return false;
        }
        at += pieces[k].size();
    }
    return true;
}

bool shows_in_order(const std::string &shown, const std::string &actual, std::string *missing) {
    const auto actual_lines = lines_of(actual);
    std::size_t next = 0;
    for (const auto &pattern : lines_of(shown)) {
        while (next < actual_lines.size() && !shows_line(pattern, actual_lines[next])) {
            ++next;
        }
        if (next == actual_lines.size()) {
            *missing = pattern;
            return false;
        }
        ++next;
    }
    return true;
}

bool shows_exactly(const std::string &shown, const std::string &actual, std::string *why) {
    const auto want = lines_of(shown);
    const auto got = lines_of(actual);
    for (std::size_t i = 0; i < want.size() || i < got.size(); ++i) {
        if (i >= want.size() || i >= got.size() || !shows_line(want[i], got[i])) {
            *why = "line " + std::to_string(i + 1) + ": the page shows '" +
                   (i < want.size() ? want[i] : "(nothing)") + "', the binary printed '" +
                   (i < got.size() ? got[i] : "(nothing)") + "'";
            return false;
        }
    }
    return true;
}

}  // namespace tea::test
