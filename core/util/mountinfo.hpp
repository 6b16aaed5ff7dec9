// The lines of /proc/<pid>/mountinfo (proc(5)): for each mount, its file system's device, what of
// that file system it shows, where it is mounted, its type and its super block's options.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace tea::mountinfo {

struct Mount {
    std::string device;           // major:minor of its file system
    std::filesystem::path root;   // what of its file system the mount shows
    std::filesystem::path point;  // where it is mounted
    std::string type;
    std::string super_options;
};

// mountinfo writes a space, a tab, a newline and a backslash of a path as \ooo.
inline std::string unescape(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 3 < text.size()) {
            const auto octal = text.substr(i + 1, 3);
            if (std::all_of(octal.begin(), octal.end(),
                            [](char c) { return c >= '0' && c <= '7'; })) {
                out += static_cast<char>((octal[0] - '0') * 64 + (octal[1] - '0') * 8 +
                                         (octal[2] - '0'));
                i += 3;
                continue;
            }
        }
        out += text[i];
    }
    return out;
}

inline std::vector<std::string_view> split(std::string_view text, char separator) {
    std::vector<std::string_view> out;
    std::size_t begin = 0;
    for (;;) {
        const auto end = text.find(separator, begin);
        out.push_back(text.substr(begin, end == std::string_view::npos ? end : end - begin));
        if (end == std::string_view::npos) {
            return out;
        }
        begin = end + 1;
    }
}

// Every well-formed line of `text`; a line without the fields it needs is skipped.
inline std::vector<Mount> parse(std::string_view text) {
    std::vector<Mount> mounts;
    for (const auto line : split(text, '\n')) {
        const auto fields = split(line, ' ');
        const auto dash = std::find(fields.begin(), fields.end(), "-");
        if (fields.size() < 5 || dash == fields.end() || fields.end() - dash < 4) {
            continue;
        }
        mounts.push_back({std::string{fields[2]}, unescape(fields[3]), unescape(fields[4]),
                          std::string{*(dash + 1)}, std::string{*(dash + 3)}});
    }
    return mounts;
}

}  // namespace tea::mountinfo
