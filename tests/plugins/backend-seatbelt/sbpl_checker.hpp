// A small reader of the SBPL the Seatbelt backend writes, for its tests: the profile parsed as
// S-expressions, its rules listed, the decision SBPL takes for an operation on a path (the last
// matching rule wins), and every allow that re-opens what an earlier deny closed.
//
// It reads the subset the backend writes: (version 1), then (allow|deny OPERATION... FILTER...)
// where a filter is (literal|subpath|path-literal "PATH"), optionally inside (remote unix-socket
// ...) or (local unix-socket ...), or another list it keeps as text ((target same-sandbox),
// (local ip "localhost:8080")). Strings have no escapes: the backend refuses every path that
// would need one, so a backslash here is an error.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tea::seatbelt::test {

struct SbplError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Sexp {
    enum class Kind { list, symbol, string } kind = Kind::list;
    std::string text;  // a symbol's or a string's
    std::vector<Sexp> items;
};

// Every top-level form; throws SbplError naming the offset of what does not parse.
std::vector<Sexp> parse_sbpl(std::string_view text);

struct Filter {
    std::string kind;     // literal, subpath, path-literal, or "" for one not on a path
    std::string path;     // its string
    std::string wrapper;  // "remote unix-socket", "local unix-socket" or ""
};

struct Rule {
    bool allow = false;
    std::vector<std::string> operations;
    std::vector<Filter> filters;  // empty: the rule matches every path
    bool path_free = false;       // it has filters, none of them on a path
};

// The rules, after (version 1); throws SbplError for anything else at the top level.
std::vector<Rule> rules_of(std::string_view profile);

// SBPL's decision for `operation` on `path`: the last matching rule's, deny when none matches.
bool allowed(const std::vector<Rule> &rules, std::string_view operation, std::string_view path);

// Each allow that follows a deny of an overlapping operation and reaches into what the deny
// names (a path inside it, or one that holds it, or no path at all), and is not one of
// `granted_back` (paths the profile means to open again inside a closed one, exactly).
std::vector<std::string> reopened(const std::vector<Rule> &rules,
                                  const std::vector<std::string> &granted_back);

}  // namespace tea::seatbelt::test
