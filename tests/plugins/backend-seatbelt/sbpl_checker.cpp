#include "sbpl_checker.hpp"

#include <algorithm>

namespace tea::seatbelt::test {

namespace {

class Reader {
   public:
    explicit Reader(std::string_view text) : text_(text) {}

    std::vector<Sexp> all() {
        std::vector<Sexp> out;
        for (skip(); at_ < text_.size(); skip()) {
            out.push_back(one());
        }
        return out;
    }

   private:
    [[noreturn]] void fail(const std::string &what) const {
        throw SbplError(what + " at offset " + std::to_string(at_));
    }
    void skip() {
        while (at_ < text_.size()) {
            const char c = text_[at_];
            if (c == ';') {
                while (at_ < text_.size() && text_[at_] != '\n') {
                    ++at_;
                }
            } else if (c == ' ' || c == '\n' || c == '\t') {
                ++at_;
            } else {
                return;
            }
        }
    }
    Sexp one() {
        const char c = text_[at_];
        if (c == '(') {
            ++at_;
            Sexp list;
            for (skip(); at_ < text_.size() && text_[at_] != ')'; skip()) {
                list.items.push_back(one());
            }
            if (at_ >= text_.size()) {
                fail("an unclosed list");
            }
            ++at_;
            return list;
        }
        if (c == ')') {
            fail("a ')' that closes nothing");
        }
        if (c == '"') {
            const auto end = text_.find('"', at_ + 1);
            if (end == std::string_view::npos) {
                fail("an unterminated string");
            }
            Sexp s{Sexp::Kind::string, std::string{text_.substr(at_ + 1, end - at_ - 1)}, {}};
            if (s.text.find('\\') != std::string::npos) {
                fail("a backslash in a string");
            }
            at_ = end + 1;
            return s;
        }
        const auto start = at_;
        while (at_ < text_.size() && text_[at_] != ' ' && text_[at_] != '\n' && text_[at_] != '(' &&
               text_[at_] != ')' && text_[at_] != '"' && text_[at_] != ';') {
            ++at_;
        }
        return Sexp{Sexp::Kind::symbol, std::string{text_.substr(start, at_ - start)}, {}};
    }

    std::string_view text_;
    std::size_t at_ = 0;
};

bool is_path_kind(const std::string &s) {
    return s == "literal" || s == "subpath" || s == "path-literal";
}

// A (kind "path") list, or "" when it is not one.
Filter path_filter(const Sexp &s) {
    if (s.kind == Sexp::Kind::list && s.items.size() == 2 &&
        s.items[0].kind == Sexp::Kind::symbol && is_path_kind(s.items[0].text) &&
        s.items[1].kind == Sexp::Kind::string) {
        return Filter{s.items[0].text, s.items[1].text, ""};
    }
    return {};
}

Filter filter_of(const Sexp &s) {
    if (auto f = path_filter(s); !f.kind.empty()) {
        return f;
    }
    // (remote unix-socket (path-literal "p")), (local unix-socket (subpath "p"))
    if (s.kind == Sexp::Kind::list && s.items.size() == 3 &&
        s.items[0].kind == Sexp::Kind::symbol && s.items[1].kind == Sexp::Kind::symbol &&
        s.items[1].text == "unix-socket") {
        auto f = path_filter(s.items[2]);
        if (f.kind.empty()) {
            throw SbplError("a unix-socket filter without a path");
        }
        f.wrapper = s.items[0].text + " unix-socket";
        return f;
    }
    if (s.kind != Sexp::Kind::list) {
        throw SbplError("a rule's filter is not a list");
    }
    return {};
}

bool inside(std::string_view path, std::string_view dir) {
    return path.size() >= dir.size() && path.substr(0, dir.size()) == dir &&
           (path.size() == dir.size() || dir == "/" || path[dir.size()] == '/');
}

bool operations_overlap(const std::string &a, const std::string &b) {
    if (a == b || a == "default" || b == "default") {
        return true;
    }
    auto covers = [](const std::string &wide, const std::string &narrow) {
        return !wide.empty() && wide.back() == '*' &&
               narrow.compare(0, wide.size() - 1, wide, 0, wide.size() - 1) == 0;
    };
    return covers(a, b) || covers(b, a);
}

bool any_overlap(const Rule &a, const Rule &b) {
    for (const auto &x : a.operations) {
        for (const auto &y : b.operations) {
            if (operations_overlap(x, y)) {
                return true;
            }
        }
    }
    return false;
}

bool filter_matches(const Filter &f, std::string_view path) {
    if (f.kind == "subpath") {
        return inside(path, f.path);
    }
    return f.kind == "literal" || f.kind == "path-literal" ? path == f.path : false;
}

}  // namespace

std::vector<Sexp> parse_sbpl(std::string_view text) {
    return Reader{text}.all();
}

std::vector<Rule> rules_of(std::string_view profile) {
    const auto forms = parse_sbpl(profile);
    if (forms.empty() || forms[0].kind != Sexp::Kind::list || forms[0].items.size() != 2 ||
        forms[0].items[0].text != "version" || forms[0].items[1].text != "1") {
        throw SbplError("the profile does not begin with (version 1)");
    }
    std::vector<Rule> rules;
    for (std::size_t i = 1; i < forms.size(); ++i) {
        const auto &f = forms[i];
        if (f.kind != Sexp::Kind::list || f.items.size() < 2 ||
            f.items[0].kind != Sexp::Kind::symbol ||
            (f.items[0].text != "allow" && f.items[0].text != "deny")) {
            throw SbplError("top-level form " + std::to_string(i) + " is no allow or deny rule");
        }
        Rule r;
        r.allow = f.items[0].text == "allow";
        std::size_t k = 1;
        for (; k < f.items.size() && f.items[k].kind == Sexp::Kind::symbol; ++k) {
            r.operations.push_back(f.items[k].text);
        }
        if (r.operations.empty()) {
            throw SbplError("rule " + std::to_string(i) + " names no operation");
        }
        bool any_path = false;
        for (; k < f.items.size(); ++k) {
            auto filter = filter_of(f.items[k]);
            any_path = any_path || !filter.kind.empty();
            if (!filter.kind.empty()) {
                r.filters.push_back(std::move(filter));
            }
        }
        r.path_free = !any_path && k > 1 + r.operations.size();
        rules.push_back(std::move(r));
    }
    return rules;
}

bool allowed(const std::vector<Rule> &rules, std::string_view operation, std::string_view path) {
    bool decision = false;
    for (const auto &r : rules) {
        const bool op =
            std::any_of(r.operations.begin(), r.operations.end(), [&](const std::string &o) {
                return operations_overlap(o, std::string{operation}) &&
                       (o == operation || o == "default" || o.back() == '*');
            });
        if (!op || r.path_free) {
            continue;
        }
        const bool matches = r.filters.empty() ||
                             std::any_of(r.filters.begin(), r.filters.end(),
                                         [&](const Filter &f) { return filter_matches(f, path); });
        if (matches) {
            decision = r.allow;
        }
    }
    return decision;
}

std::vector<std::string> reopened(const std::vector<Rule> &rules,
                                  const std::vector<std::string> &granted_back) {
    std::vector<std::string> out;
    for (std::size_t d = 0; d < rules.size(); ++d) {
        const auto &deny = rules[d];
        if (deny.allow || deny.filters.empty()) {
            continue;  // the base (deny default), which everything after it narrows
        }
        for (std::size_t a = d + 1; a < rules.size(); ++a) {
            const auto &allow = rules[a];
            if (!allow.allow || allow.path_free || !any_overlap(deny, allow)) {
                continue;
            }
            if (allow.filters.empty()) {
                out.push_back("rule " + std::to_string(a) + " allows every path after rule " +
                              std::to_string(d) + "'s deny");
                continue;
            }
            for (const auto &closed : deny.filters) {
                for (const auto &open : allow.filters) {
                    const bool within = inside(open.path, closed.path);
                    const bool wider = open.kind == "subpath" && inside(closed.path, open.path);
                    const bool exception = within && !wider &&
                                           std::find(granted_back.begin(), granted_back.end(),
                                                     open.path) != granted_back.end();
                    if ((within || wider) && !exception) {
                        out.push_back("rule " + std::to_string(a) + " allows " + open.path +
                                      " after rule " + std::to_string(d) + " denied " +
                                      closed.path);
                    }
                }
            }
        }
    }
    return out;
}

}  // namespace tea::seatbelt::test
