#include "cli/report.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <tea/json_bytes.hpp>

#include "exec/terminal_text.hpp"
#include "util/console.hpp"

namespace tea::cli {

// A path as one line of the human list: control bytes (a newline in a file name) escaped, so
// a hostile name cannot forge lines of the report; so are C1 controls and bytes that are not
// well-formed UTF-8 (all bytes above ASCII when the locale is not UTF-8), with which a name would
// hide the report's lines on a terminal (exec/terminal_text.hpp).
std::string printable(const std::string &path) {
    const bool utf8 = exec::terminal_charset() == exec::Charset::utf8;
    std::string out;
    for (std::size_t i = 0; i < path.size();) {
        const auto u = static_cast<unsigned char>(path[i]);
        std::size_t shown = 0;
        if (u >= 0x20 && u < 0x7f && u != '\\') {
            shown = 1;
        } else if (u >= 0x80 && utf8) {
            shown = exec::TerminalText::shown_utf8_length(std::string_view{path}.substr(i));
        }
        if (shown > 0) {
            out.append(path, i, shown);
            i += shown;
            continue;
        }
        char buf[8];
        (void)std::snprintf(buf, sizeof buf, "\\x%02x", u);
        out += buf;
        ++i;
    }
    return out;
}

// The route's refusals, one line each, on stderr: what the target asked for and why it was not
// given it. Every field is the plugin's and may hold what a hostile target sent, so each is
// escaped as a path is.
void print_egress_refusals(const nlohmann::json &records) {
    if (!records.is_object() || !records.contains("refusals") || !records["refusals"].is_array() ||
        records["refusals"].empty()) {
        return;
    }
    const auto text = [](const nlohmann::json &doc, const char *key) {
        return doc.contains(key) && doc[key].is_string() ? printable(doc[key].get<std::string>())
                                                         : std::string{};
    };
    const auto number = [](const nlohmann::json &doc, const char *key) {
        return doc.contains(key) && doc[key].is_number_unsigned() ? doc[key].get<std::uint64_t>()
                                                                  : std::uint64_t{0};
    };
    console::err() << "tea-evaluate: egress: the proxy refused " << records["refusals"].size()
                   << " distinct request" << (records["refusals"].size() == 1 ? "" : "s") << ":\n";
    for (const auto &r : records["refusals"]) {
        auto line = console::err();  // written whole at the end of the iteration
        line << "  " << number(r, "status") << ' ' << text(r, "host") << ':' << number(r, "port")
             << "  (" << text(r, "reason");
        if (const auto address = text(r, "address"); !address.empty()) {
            line << "; resolved to " << address;
        }
        line << "; " << number(r, "count") << "x)\n";
    }
    if (const auto omitted = number(records, "omitted"); omitted > 0) {
        console::err() << "  ... and " << omitted << " more refused requests not kept\n";
    }
}

void print_audit(const audit::AuditResult &audit) {
    if (!audit.audited) {
        console::err() << "tea-evaluate: audit: none (" << printable(audit.why_not) << ")\n";
        return;
    }
    if (!audit.complete) {
        console::err() << "tea-evaluate: audit: INCOMPLETE, the list below may miss accesses ("
                       << printable(audit.reason) << ")\n";
    }
    if (audit.findings.empty()) {
        console::err() << "tea-evaluate: audit (" << audit.observer
                       << "): no path outside the grants" << (audit.complete ? "" : " was seen")
                       << '\n';
        return;
    }
    console::err() << "tea-evaluate: audit (" << audit.observer << "): " << audit.findings.size()
                   << " path" << (audit.findings.size() == 1 ? "" : "s")
                   << " outside the grants:\n";
    for (const auto &f : audit.findings) {
        auto line = console::err();  // written whole at the end of the iteration
        // A reason may quote what the target named (an interpreter, a link's text): escaped too.
        line << "  " << printable(f.path) << "  (" << printable(f.reason);
        for (std::size_t i = 0; i < f.syscalls.size(); ++i) {
            line << (i == 0 ? "; " : ", ") << f.syscalls[i];
        }
        line << ")\n";
    }
    if (audit.omitted > 0) {
        console::err() << "  ... and " << audit.omitted << " more accesses not kept\n";
    }
}

void print_problems(const std::vector<evaluation::Problem> &problems) {
    // Every problem quotes what the folder holds: escaped, so a hostile name cannot forge lines.
    for (const auto &problem : problems) {
        console::err() << printable(evaluation::to_string(problem)) << '\n';
    }
}

void print_last_lines(const std::filesystem::path &file, std::size_t max_lines) {
    constexpr std::streamoff kTailBytes = 8192;  // read from the file's end
    constexpr std::size_t kLineBytes = 500;      // shown of each line
    std::ifstream in{file, std::ios::binary | std::ios::ate};
    if (!in) {
        console::err() << "tea-evaluate: " << printable(file.string()) << " cannot be read\n";
        return;
    }
    const auto size = static_cast<std::streamoff>(in.tellg());
    const auto from = std::max<std::streamoff>(0, size - kTailBytes);
    in.seekg(from);
    std::string tail(static_cast<std::size_t>(size - from), '\0');
    in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
    tail.resize(static_cast<std::size_t>(in.gcount()));
    std::vector<std::string> lines;
    std::size_t start = 0;
    if (from > 0) {
        // The first line read is the end of a longer one: left out rather than shown in part.
        const auto first_end = tail.find('\n');
        start = first_end == std::string::npos ? tail.size() : first_end + 1;
    }
    while (start < tail.size()) {
        auto end = tail.find('\n', start);
        if (end == std::string::npos) end = tail.size();
        lines.push_back(tail.substr(start, end - start));
        start = end + 1;
    }
    if (lines.size() > max_lines) {
        lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(max_lines));
    }
    if (lines.empty()) {
        console::err() << "tea-evaluate: " << printable(file.string()) << " is empty\n";
        return;
    }
    console::err() << "tea-evaluate: the last " << lines.size() << " line"
                   << (lines.size() == 1 ? "" : "s") << " of " << printable(file.string()) << ":\n";
    for (const auto &line : lines) {
        // What the evaluator wrote may quote what a target left: escaped and indented, so that it
        // cannot forge or hide a line of the runtime's.
        console::err() << "  " << printable(line.substr(0, kLineBytes))
                       << (line.size() > kLineBytes ? " ..." : "") << '\n';
    }
}

}  // namespace tea::cli
