#include "strace_parser.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <map>
#include <tea/path_components.hpp>
#include <unordered_map>
#include <utility>

namespace tea::strace {

namespace {

// Calls the audit needs. Metadata probes (stat, access, statx) are deliberately absent: they are
// not reported, and they are among the most frequent calls, each costing a ptrace stop.
constexpr std::string_view kTracedSyscalls =
    "?open,openat,openat2,?creat,execve,execveat,?readlink,readlinkat,?getdents,getdents64,"
    "?mkdir,mkdirat,?mknod,mknodat,?unlink,unlinkat,?rmdir,?rename,?renameat,renameat2,"
    "?link,linkat,?symlink,symlinkat,truncate,chdir,fchdir,clone,clone3,?fork,?vfork,seccomp";

// PID_MAX_LIMIT on 64-bit Linux; a larger number in the pid column is not strace's.
constexpr long kMaxPid = 4L * 1024 * 1024;
constexpr std::size_t kMaxReasons = 8;
constexpr std::size_t kMaxArgs = 8;
// Names the parser keeps of what the call made; past it, it forgets (see remember_name).
constexpr std::size_t kMaxNames = std::size_t{1} << 18;
constexpr std::string_view kUnfinished = "<unfinished ...>";
constexpr std::string_view kDetached = " <detached ...>";
// What strace prints for a call whose number it could not read ("???(", spelled so that no
// compiler reads a trigraph in it).
constexpr std::string_view kUnnamedCall = "?\?\?(";
constexpr std::string_view kPidChanged = "<pid changed to ";

// Prefix and suffix tests against a literal; the literal's length is a constant, so the compiler
// turns the comparison into a few loads instead of a call.
template <std::size_t N>
bool has_prefix(std::string_view s, const char (&lit)[N]) {
    return s.size() >= N - 1 && std::memcmp(s.data(), lit, N - 1) == 0;
}

template <std::size_t N>
bool has_suffix(std::string_view s, const char (&lit)[N]) {
    return s.size() >= N - 1 && std::memcmp(s.data() + s.size() - (N - 1), lit, N - 1) == 0;
}

template <std::size_t N>
bool equals(std::string_view s, const char (&lit)[N]) {
    return s.size() == N - 1 && std::memcmp(s.data(), lit, N - 1) == 0;
}

enum class Sys : std::uint8_t {
    Ignored,
    Open,
    Openat,
    Openat2,
    Creat,
    Execve,
    Execveat,
    Readlink,
    Readlinkat,
    Getdents,
    Mkdir,
    Mkdirat,
    Unlink,
    Unlinkat,
    Rename,
    Renameat,
    Link,
    Linkat,
    Symlink,
    Symlinkat,
    Truncate,
    Chdir,
    Fchdir,
    Clone,
    Fork,
    Seccomp,
};

Sys classify(std::string_view n) {
    // openat dominates every real trace, so it is tested first.
    if (equals(n, "openat")) return Sys::Openat;
    switch (n.empty() ? '\0' : n.front()) {
        case 'o':
            if (equals(n, "open")) return Sys::Open;
            if (equals(n, "openat2")) return Sys::Openat2;
            break;
        case 'c':
            if (equals(n, "clone") || equals(n, "clone3")) return Sys::Clone;
            if (equals(n, "chdir")) return Sys::Chdir;
            if (equals(n, "creat")) return Sys::Creat;
            break;
        case 'e':
            if (equals(n, "execve")) return Sys::Execve;
            if (equals(n, "execveat")) return Sys::Execveat;
            break;
        case 'r':
            if (equals(n, "readlink")) return Sys::Readlink;
            if (equals(n, "readlinkat")) return Sys::Readlinkat;
            if (equals(n, "rename")) return Sys::Rename;
            if (equals(n, "renameat") || equals(n, "renameat2")) return Sys::Renameat;
            if (equals(n, "rmdir")) return Sys::Unlink;
            break;
        case 'g':
            if (equals(n, "getdents64") || equals(n, "getdents")) return Sys::Getdents;
            break;
        case 'm':
            if (equals(n, "mkdir") || equals(n, "mknod")) return Sys::Mkdir;
            if (equals(n, "mkdirat") || equals(n, "mknodat")) return Sys::Mkdirat;
            break;
        case 'u':
            if (equals(n, "unlink")) return Sys::Unlink;
            if (equals(n, "unlinkat")) return Sys::Unlinkat;
            break;
        case 'l':
            if (equals(n, "link")) return Sys::Link;
            if (equals(n, "linkat")) return Sys::Linkat;
            break;
        case 's':
            if (equals(n, "symlink")) return Sys::Symlink;
            if (equals(n, "symlinkat")) return Sys::Symlinkat;
            if (equals(n, "seccomp")) return Sys::Seccomp;
            break;
        case 't':
            if (equals(n, "truncate")) return Sys::Truncate;
            break;
        case 'f':
            if (equals(n, "fchdir")) return Sys::Fchdir;
            if (equals(n, "fork")) return Sys::Fork;
            break;
        case 'v':
            if (equals(n, "vfork")) return Sys::Fork;
            break;
        default:
            break;
    }
    return Sys::Ignored;
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_octal(char c) {
    return c >= '0' && c <= '7';
}
bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || is_digit(c) || c == '_';
}
bool is_errno_char(char c) {
    return (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Byte classes for the scanners: most bytes of a line are plain and skipped by one table load.
enum CharClass : std::uint8_t {
    kPlain = 0,
    kArgSpecial = 1,     // starts or ends a nested part of an argument list
    kStringSpecial = 2,  // '"' or '\\' inside a string
    kAnnotSpecial = 4,   // '>' or '\\' inside an fd annotation
};

constexpr std::array<std::uint8_t, 256> make_classes() {
    std::array<std::uint8_t, 256> t{};
    for (const char c : std::string_view("\"<([{)]},/")) {
        t[static_cast<unsigned char>(c)] |= kArgSpecial;
    }
    t[static_cast<unsigned char>('"')] |= kStringSpecial;
    t[static_cast<unsigned char>('\\')] |= kStringSpecial | kAnnotSpecial;
    t[static_cast<unsigned char>('>')] |= kAnnotSpecial;
    return t;
}
constexpr std::array<std::uint8_t, 256> kClasses = make_classes();

std::uint8_t char_class(char c) {
    return kClasses[static_cast<unsigned char>(c)];
}

// Decodes the escape at in[i] == '\\' (\" \\ \n \t \r \v \f \a \b, octal \o..\ooo, hex \xNN)
// into out and returns the bytes it spans, or 0 for an escape strace does not write, so that a
// garbled line is never read as a different path.
std::size_t decode_escape(std::string_view in, std::size_t i, std::string &out) {
    if (i + 1 >= in.size()) return 0;
    const char c = in[i + 1];
    switch (c) {
        case '"':
        case '\\':
        case '\'':
            out.push_back(c);
            return 2;
        case 'n':
            out.push_back('\n');
            return 2;
        case 't':
            out.push_back('\t');
            return 2;
        case 'r':
            out.push_back('\r');
            return 2;
        case 'v':
            out.push_back('\v');
            return 2;
        case 'f':
            out.push_back('\f');
            return 2;
        case 'a':
            out.push_back('\a');
            return 2;
        case 'b':
            out.push_back('\b');
            return 2;
        case 'x': {
            if (in.size() - i < 4) return 0;
            const int hi = hex_value(in[i + 2]);
            const int lo = hex_value(in[i + 3]);
            if (hi < 0 || lo < 0) return 0;
            out.push_back(static_cast<char>(static_cast<unsigned char>(hi * 16 + lo)));
            return 4;
        }
        default: {
            // strace writes the fewest octal digits unless a digit follows, so read up to three.
            unsigned value = 0;
            std::size_t n = 0;
            while (n < 3 && i + 1 + n < in.size() && is_octal(in[i + 1 + n])) {
                value = value * 8 + static_cast<unsigned>(in[i + 1 + n] - '0');
                ++n;
            }
            if (n == 0 || value > 255) return 0;
            out.push_back(static_cast<char>(static_cast<unsigned char>(value)));
            return 1 + n;
        }
    }
}

// Decodes an escaped text (an fd annotation) into its exact bytes.
bool unescape(std::string_view in, std::string &out) {
    out.clear();
    std::size_t i = 0;
    while (i < in.size()) {
        const void *bs = std::memchr(in.data() + i, '\\', in.size() - i);
        if (bs == nullptr) {
            out.append(in.substr(i));
            return true;
        }
        const auto k = static_cast<std::size_t>(static_cast<const char *>(bs) - in.data());
        out.append(in.substr(i, k - i));
        const std::size_t used = decode_escape(in, k, out);
        if (used == 0) return false;
        i = k + used;
    }
    return true;
}

// An fd annotation that names a file by absolute path (not "pipe:[...]" or "socket:[...]").
bool decode_absolute(std::string_view raw, std::string &out) {
    return unescape(raw, out) && !out.empty() && out.front() == '/';
}

// A quoted string argument: "..." optionally followed by strace's "..." when it cut the string.
enum class StrResult : std::uint8_t { NotString, Ok, Truncated, Malformed };

// One pass: finds the closing quote and decodes on the way.
StrResult decode_string(std::string_view arg, std::string &out) {
    if (arg.empty() || arg.front() != '"') return StrResult::NotString;
    out.clear();
    std::size_t i = 1;
    std::size_t run = 1;
    while (i < arg.size()) {
        const char c = arg[i];
        if ((char_class(c) & kStringSpecial) == 0) {
            ++i;
            continue;
        }
        out.append(arg.data() + run, i - run);
        if (c == '"') {
            const std::string_view rest = arg.substr(i + 1);
            if (rest.empty()) return StrResult::Ok;
            if (equals(rest, "...")) return StrResult::Truncated;
            return StrResult::Malformed;
        }
        const std::size_t used = decode_escape(arg, i, out);
        if (used == 0) return StrResult::Malformed;
        i += used;
        run = i;
    }
    return StrResult::Malformed;
}

// Index just past the string starting at s[i] == '"' (and strace's "..." after it), or npos.
std::size_t skip_string(std::string_view s, std::size_t i) {
    ++i;
    while (i < s.size()) {
        const char c = s[i];
        // Most bytes are neither an escape nor the closing quote: one table lookup passes them.
        if ((char_class(c) & kStringSpecial) != 0) {
            if (c == '\\') {
                i += 2;
                continue;
            }
            if (c == '"') {
                ++i;
                if (has_prefix(s.substr(i), "...")) i += 3;
                return i;
            }
        }
        ++i;
    }
    return std::string_view::npos;
}

// Index just past the fd annotation starting at s[i] == '<', or npos. strace escapes '<' and '>'
// inside it, so the first unescaped '>' ends it.
std::size_t skip_annotation(std::string_view s, std::size_t i) {
    ++i;
    while (i < s.size()) {
        const char c = s[i];
        if ((char_class(c) & kAnnotSpecial) != 0) {
            if (c == '\\') {
                i += 2;
                continue;
            }
            if (c == '>') return i + 1;
        }
        ++i;
    }
    return std::string_view::npos;
}

std::size_t skip_comment(std::string_view s, std::size_t i) {
    const std::size_t end = s.find("*/", i + 2);
    return end == std::string_view::npos ? end : end + 2;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
}

bool parse_int(std::string_view s, long long &value) {
    bool negative = false;
    std::size_t i = 0;
    if (!s.empty() && s[0] == '-') {
        negative = true;
        i = 1;
    }
    unsigned long long acc = 0;
    if (s.size() > i + 2 && s[i] == '0' && s[i + 1] == 'x') {
        i += 2;
        if (i >= s.size()) return false;
        for (; i < s.size(); ++i) {
            const int h = hex_value(s[i]);
            if (h < 0) return false;
            if (acc > (~0ULL >> 4)) return false;
            acc = acc * 16 + static_cast<unsigned>(h);
        }
    } else {
        if (i >= s.size()) return false;
        for (; i < s.size(); ++i) {
            if (!is_digit(s[i])) return false;
            const auto d = static_cast<unsigned>(s[i] - '0');
            if (acc > (~0ULL - d) / 10) return false;
            acc = acc * 10 + d;
        }
    }
    // Return values above LLONG_MAX (strace prints some unsigned) are clamped rather than
    // wrapped, which would be undefined.
    constexpr auto kMax = static_cast<unsigned long long>(std::numeric_limits<long long>::max());
    if (acc > kMax) acc = kMax;
    value = negative ? -static_cast<long long>(acc) : static_cast<long long>(acc);
    return true;
}

// One parsed call line: NAME(ARG, ARG, ...) = RESULT [ERRNO (message)] [/* comment */]
struct Call {
    std::string_view name;
    std::string_view args_text;
    std::array<std::string_view, kMaxArgs> args{};
    std::size_t nargs = 0;
    bool known = false;
    long long value = -1;
    std::string_view error;
    std::string_view ret_annotation;  // escaped, without the angle brackets
    bool has_ret_annotation = false;
    long long ns_pid = -1;  // the "/* N in strace's PID NS */" translation of the return value
};

bool parse_result_tail(std::string_view s, std::size_t j, Call &c) {
    while (j < s.size()) {
        if (s[j] == ' ') {
            ++j;
            continue;
        }
        if (has_prefix(s.substr(j), "/*")) {
            const std::size_t end = skip_comment(s, j);
            if (end == std::string_view::npos) return false;
            const std::string_view body = trim(s.substr(j + 2, end - j - 4));
            constexpr std::string_view kNs = " in strace's PID NS";
            if (body.size() > kNs.size() && body.substr(body.size() - kNs.size()) == kNs) {
                long long v = 0;
                if (!parse_int(body.substr(0, body.size() - kNs.size()), v)) return false;
                c.ns_pid = v;
            }
            j = end;
        } else if (s[j] == '(') {
            int depth = 0;
            std::size_t k = j;
            for (; k < s.size(); ++k) {
                if (s[k] == '(') ++depth;
                if (s[k] == ')' && --depth == 0) break;
            }
            if (k >= s.size()) return false;
            // "-1 (errno 123)": strace had no name for the error.
            if (c.error.empty() && c.value < 0) c.error = s.substr(j + 1, k - j - 1);
            j = k + 1;
        } else if (s[j] >= 'A' && s[j] <= 'Z') {
            std::size_t k = j;
            while (k < s.size() && is_errno_char(s[k])) ++k;
            if (c.error.empty()) c.error = s.substr(j, k - j);
            j = k;
        } else if (equals(s.substr(j), "<unavailable>")) {
            return true;
        } else {
            return false;
        }
    }
    return true;
}

// Splits the arguments at the top level and reads the result. Returns false on text that is
// not a call line strace would write.
bool parse_call(std::string_view s, std::size_t paren, Call &c) {
    // Field by field: zeroing the whole struct (its argument array) costs more than the parse.
    c.nargs = 0;
    c.known = false;
    c.value = -1;
    c.error = {};
    c.ret_annotation = {};
    c.has_ret_annotation = false;
    c.ns_pid = -1;
    c.name = s.substr(0, paren);
    std::size_t i = paren + 1;
    std::size_t arg_start = i;
    int depth = 0;
    bool closed = false;
    auto push_arg = [&](std::size_t end) {
        if (c.nargs < kMaxArgs) c.args[c.nargs] = trim(s.substr(arg_start, end - arg_start));
        ++c.nargs;
    };
    while (i < s.size()) {
        const char ch = s[i];
        if ((char_class(ch) & kArgSpecial) == 0) {
            ++i;
            continue;
        }
        if (ch == '"') {
            i = skip_string(s, i);
            if (i == std::string_view::npos) return false;
            continue;
        }
        if (ch == '<') {
            i = skip_annotation(s, i);
            if (i == std::string_view::npos) return false;
            continue;
        }
        if (ch == '/' && i + 1 < s.size() && s[i + 1] == '*') {
            i = skip_comment(s, i);
            if (i == std::string_view::npos) return false;
            continue;
        }
        if (ch == '[' || ch == '{' || ch == '(') {
            ++depth;
        } else if (ch == ']' || ch == '}') {
            if (depth == 0) return false;
            --depth;
        } else if (ch == ')') {
            if (depth == 0) {
                closed = true;
                break;
            }
            --depth;
        } else if (ch == ',' && depth == 0) {
            push_arg(i);
            arg_start = i + 1;
        }
        ++i;
    }
    if (!closed) return false;
    c.args_text = s.substr(paren + 1, i - paren - 1);
    if (c.nargs > 0 || !trim(c.args_text).empty()) push_arg(i);
    if (c.nargs > kMaxArgs) c.nargs = kMaxArgs;

    std::size_t j = i + 1;
    while (j < s.size() && s[j] == ' ') ++j;
    if (j + 1 >= s.size() || s[j] != '=' || s[j + 1] != ' ') return false;
    j += 2;
    if (j >= s.size()) return false;
    if (s[j] == '?') {
        c.known = false;
        c.value = -1;
        return parse_result_tail(s, j + 1, c);
    }
    std::size_t k = j;
    if (s[k] == '-') ++k;
    while (k < s.size() && (is_digit(s[k]) || s[k] == 'x' || hex_value(s[k]) >= 0)) ++k;
    if (!parse_int(s.substr(j, k - j), c.value)) return false;
    c.known = true;
    if (k < s.size() && s[k] == '<') {
        const std::size_t end = skip_annotation(s, k);
        if (end == std::string_view::npos) return false;
        c.ret_annotation = s.substr(k + 1, end - k - 2);
        c.has_ret_annotation = true;
        k = end;
    }
    return parse_result_tail(s, k, c);
}

// A dirfd or fd argument: AT_FDCWD or a number, each optionally followed by <path>.
struct FdArg {
    bool valid = false;
    bool at_fdcwd = false;
    std::string_view annotation;  // escaped
    bool has_annotation = false;
};

FdArg parse_fd_arg(std::string_view arg) {
    FdArg f;
    std::size_t i = 0;
    constexpr std::string_view kAtFdcwd = "AT_FDCWD";
    if (has_prefix(arg, "AT_FDCWD")) {
        f.at_fdcwd = true;
        i = kAtFdcwd.size();
    } else {
        if (i < arg.size() && arg[i] == '-') ++i;
        const std::size_t start = i;
        while (i < arg.size() && is_digit(arg[i])) ++i;
        if (i == start) return f;
    }
    if (i == arg.size()) {
        f.valid = true;
        return f;
    }
    // The annotation must end the argument exactly: text after it is not strace's.
    if (arg[i] != '<' || skip_annotation(arg, i) != arg.size()) return f;
    f.annotation = arg.substr(i + 1, arg.size() - i - 2);
    f.has_annotation = true;
    f.valid = true;
    return f;
}

// Calls fn on each '|'-separated token of a flags argument.
template <typename Fn>
void for_each_flag(std::string_view flags, Fn fn) {
    while (!flags.empty()) {
        const std::size_t bar = flags.find('|');
        fn(trim(flags.substr(0, bar)));
        if (bar == std::string_view::npos) break;
        flags.remove_prefix(bar + 1);
    }
}

bool has_flag(std::string_view flags, std::string_view flag) {
    bool found = false;
    for_each_flag(flags, [&](std::string_view token) { found = found || token == flag; });
    return found;
}

// The value of "flags=" inside a struct or keyword argument list.
std::string_view keyword_flags(std::string_view text) {
    const std::size_t at = text.find("flags=");
    if (at == std::string_view::npos) return {};
    std::size_t end = at + 6;
    while (end < text.size() && text[end] != ',' && text[end] != '}' && text[end] != ' ') ++end;
    return text.substr(at + 6, end - at - 6);
}

AccessKind open_kind(std::string_view flags) {
    bool path = false;
    bool create = false;
    bool write = false;
    for_each_flag(flags, [&](std::string_view token) {
        if (!has_prefix(token, "O_")) return;
        const std::string_view name = token.substr(2);
        path = path || equals(name, "PATH");
        create = create || equals(name, "CREAT") || equals(name, "TMPFILE");
        write = write || equals(name, "WRONLY") || equals(name, "RDWR") || equals(name, "TRUNC");
    });
    // O_PATH yields a handle that reads no data; it is reported apart from reads so that the
    // judge can treat it as the metadata probe it is.
    if (path) return AccessKind::Other;
    if (create) return AccessKind::Create;
    if (write) return AccessKind::Write;
    return AccessKind::Read;
}

// Lexical normalisation: empty and "." components dropped, ".." removes the previous one (and
// stays at the root). Symbolic links are not followed; the kernel's own path, when strace
// decoded one, is preferred to this everywhere.
void append_components(std::string &out, std::string_view p) {
    std::size_t i = 0;
    while (i < p.size()) {
        while (i < p.size() && p[i] == '/') ++i;
        if (i >= p.size()) break;
        const void *slash = std::memchr(p.data() + i, '/', p.size() - i);
        const std::size_t j =
            slash == nullptr
                ? p.size()
                : static_cast<std::size_t>(static_cast<const char *>(slash) - p.data());
        const std::string_view comp = p.substr(i, j - i);
        if (equals(comp, "..")) {
            if (out.size() > 1) {
                const std::size_t k = out.rfind('/');
                out.resize(k == 0 ? 1 : k);
            }
        } else if (comp != ".") {
            if (out.size() > 1) out.push_back('/');
            out.append(comp);
        }
        i = j;
    }
}

// True for an absolute path that normalisation would leave as it is.
bool is_normal_absolute(std::string_view p) {
    if (p.empty() || p.front() != '/') return false;
    if (p.size() == 1) return true;
    if (p.back() == '/') return false;
    for (std::size_t i = 0; i + 1 < p.size(); ++i) {
        if (p[i] != '/') continue;
        const char next = p[i + 1];
        if (next == '/') return false;
        if (next == '.') {
            const std::size_t end = std::min(p.find('/', i + 1), p.size());
            const std::size_t len = end - (i + 1);
            if (len == 1 || (len == 2 && p[i + 2] == '.')) return false;
        }
    }
    return true;
}

void join_normalize(std::string &out, std::string_view base, std::string_view rel) {
    if (is_normal_absolute(rel)) {
        out.assign(rel);
        return;
    }
    out.assign(1, '/');
    if (rel.empty() || rel.front() != '/') append_components(out, base);
    append_components(out, rel);
}

// The name the kernel gives a descriptor of no file: "pipe:[12]", "socket:[9]",
// "anon_inode:[eventfd]". Anything else not absolute is not a name strace prints.
bool is_object_name(std::string_view name) {
    std::size_t i = 0;
    while (i < name.size() && is_name_char(name[i])) ++i;
    return i > 0 && i < name.size() && name[i] == ':';
}

// A printable excerpt of a line for a lossy reason.
std::string excerpt(std::string_view line) {
    constexpr std::size_t kMax = 120;
    std::string out;
    for (std::size_t i = 0; i < line.size() && i < kMax; ++i) {
        const auto c = static_cast<unsigned char>(line[i]);
        if (c >= 0x20 && c < 0x7f) {
            out.push_back(static_cast<char>(c));
        } else {
            constexpr std::string_view kHex = "0123456789abcdef";
            out += "\\x";
            out.push_back(kHex[c >> 4]);
            out.push_back(kHex[c & 15]);
        }
    }
    if (line.size() > kMax) out += "...";
    return out;
}

}  // namespace

std::string_view traced_syscalls() {
    return kTracedSyscalls;
}

std::vector<std::string> strace_command(const std::string &strace, const std::string &trace_file) {
    // -qq: no attach/exit chatter; signal=none: no signal lines, which carry no file access.
    return {strace,
            "-f",
            "--seccomp-bpf",
            "--decode-pids=pidns",
            "--decode-fds=path",
            "-qq",
            "-e",
            "signal=none",
            "-e",
            "trace=" + std::string{kTracedSyscalls},
            "-o",
            trace_file,
            "--"};
}

std::string_view to_string(AccessKind kind) {
    switch (kind) {
        case AccessKind::Read:
            return "read";
        case AccessKind::Write:
            return "write";
        case AccessKind::Create:
            return "create";
        case AccessKind::Remove:
            return "remove";
        case AccessKind::Exec:
            return "exec";
        case AccessKind::List:
            return "list";
        case AccessKind::ReadLink:
            return "readlink";
        case AccessKind::ChangeDir:
            return "chdir";
        case AccessKind::Other:
            return "other";
    }
    return "other";
}

// The working directory a set of tasks shares: one per process, and one for all the tasks that
// a clone with CLONE_FS (every thread) joined, since a chdir in one moves them all.
struct FsContext {
    std::string cwd;
    std::string cwd_raw;  // the escaped AT_FDCWD annotation it was last synced from
    bool known = false;
    // The kernel's own path (an AT_FDCWD annotation, an fchdir's decoded fd, the plan's
    // directory), not one a chdir named lexically, which may go through a link.
    bool physical = false;
    std::uint64_t seq = 0;  // line of the last change, to pick the newer of two observations
};

// A descriptor table; tasks that a clone with CLONE_FILES joined share one. A sibling sharing the
// table can replace the descriptor an open returned before strace reads its path at the open's
// return, so an open in a shared table is not judged by that path alone.
struct FdTable {
    bool shared = false;
};

// What the trace shows a name to be, at the physical path the kernel placed it: a symbolic link
// the call made (with its text), or a file that is no link (one the call created or wrote).
struct NameState {
    bool is_link = false;
    std::string text;
    std::uint64_t seq = 0;  // the trace line that made it so (set by remember_name)
};

// An operation on a process whose working directory is not known yet: a child that shows up
// in the trace before its parent's clone returns. They are replayed in order once the
// directory is known.
struct Deferred {
    enum class Op : std::uint8_t { Event, Chdir, SetCwd };
    Op op = Op::Event;
    bool from_resync = false;
    std::uint64_t seq = 0;
    AccessEvent ev;
    std::string path;
};

struct Proc {
    std::shared_ptr<FsContext> fs;
    std::shared_ptr<FdTable> files;
    std::shared_ptr<const std::string> image;
    std::string pending;  // the text of an unfinished call, without the marker
    bool has_pending = false;
    bool exec_superseded = false;
    std::uint64_t pending_seq = 0;
    std::uint64_t last_seq = 0;  // the last line of this pid
    std::vector<Deferred> deferred;
    std::size_t deferred_chdirs = 0;
};

struct Parser::State {
    std::string initial_cwd;
    ParserLimits limits;
    const EventSink *sink = nullptr;

    std::string carry;
    bool skipping = false;
    bool finished = false;
    std::uint64_t seq = 0;
    std::uint64_t event_count = 0;

    std::unordered_map<int, Proc> procs;
    bool root_assigned = false;
    int cached_pid = -1;
    Proc *cached = nullptr;
    std::size_t pending_bytes = 0;
    std::size_t deferred_total = 0;

    std::uint64_t problem_count = 0;
    std::vector<std::string> reasons;

    // Names the trace shows made, by physical path (see NameState), with an index by last
    // component for the changes made through a path that may go through a link.
    std::map<std::string, NameState, std::less<>> names;
    std::unordered_map<std::string, std::vector<std::string>> names_by_base;
    std::size_t remembered = 0;

    // Scratch buffers reused for every line, so a steady trace allocates nothing per line.
    AccessEvent ev;
    std::string non_file_name;
    bool emitted_now = false;  // path_event emitted ev (rather than holding or dropping it)
    std::string ev_base;       // the directory ev.path_asked was made absolute against
    bool ev_base_physical = false;
    std::string joined;
    std::string tmp_annotation;
    std::string tmp_cwd;
    std::string tmp_base;
    std::string_view exec_argv;
    Call call;

    void problem(std::string reason) {
        ++problem_count;
        if (reasons.size() < kMaxReasons) {
            reasons.push_back("line " + std::to_string(seq) + ": " + std::move(reason));
        }
    }

    void emit(const AccessEvent &e) {
        ++event_count;
        if (sink != nullptr && *sink) (*sink)(e);
    }

    // ---- processes -------------------------------------------------------------------------

    Proc *find(int pid) {
        if (pid == cached_pid) return cached;
        const auto it = procs.find(pid);
        if (it == procs.end()) return nullptr;
        cached_pid = pid;
        cached = &it->second;
        return cached;
    }

    Proc *get(int pid) {
        if (Proc *p = find(pid)) return p;
        if (procs.size() >= limits.max_processes) {
            problem("more than " + std::to_string(limits.max_processes) + " processes; pid " +
                    std::to_string(pid) + " is not tracked");
            return nullptr;
        }
        Proc &p = procs[pid];
        p.fs = std::make_shared<FsContext>();
        // A task whose clone has not returned yet may share a table: presumed shared until the
        // clone tells.
        p.files = std::make_shared<FdTable>(FdTable{root_assigned});
        p.last_seq = seq;
        if (!root_assigned) {
            // The first process strace shows is the one it started, in the observer's
            // directory; every later one is a child whose directory its clone tells.
            root_assigned = true;
            if (!initial_cwd.empty() && initial_cwd.front() == '/') {
                join_normalize(p.fs->cwd, "/", initial_cwd);
                p.fs->known = true;
                p.fs->physical = true;  // the runtime's own choice of directory
            }
        }
        cached_pid = pid;
        cached = &p;
        return &p;
    }

    void forget(int pid) {
        const auto it = procs.find(pid);
        if (it == procs.end()) return;
        pending_bytes -= it->second.has_pending ? it->second.pending.size() : 0;
        if (!it->second.deferred.empty()) {
            problem("pid " + std::to_string(pid) + " ended before its working directory was known");
            flush_unresolved(it->second);
        }
        procs.erase(it);
        if (cached_pid == pid) {
            cached_pid = -1;
            cached = nullptr;
        }
    }

    // ---- working directories ---------------------------------------------------------------

    void set_image(Proc &p, const std::string &path) {
        p.image = std::make_shared<const std::string>(path);
    }

    void begin_event(int pid, const Proc &p, const Call &c, AccessKind kind) {
        ev.pid = pid;
        ev.syscall.assign(c.name);
        ev.kind = kind;
        ev.result = c.known ? c.value : -1;
        if (!c.known) {
            ev.error.assign(c.error.empty() ? std::string_view("?") : c.error);
        } else if (!c.error.empty()) {
            ev.error.assign(c.error);
        } else if (c.value < 0) {
            ev.error.assign("?");
        } else {
            ev.error.clear();
        }
        ev.success = ev.error.empty();
        if (p.image) {
            ev.image.assign(*p.image);
        } else {
            ev.image.clear();
        }
        ev.path_asked.clear();
        ev.path_lexical.clear();
        ev.path_resolved.clear();
        ev.argv.clear();
        ev.argv_truncated = false;
        if (kind == AccessKind::Exec) parse_argv(exec_argv);
    }

    void push_deferred(int pid, Proc &p, Deferred d) {
        if (deferred_total >= limits.max_deferred_events) {
            problem("too many accesses waiting for the working directory of pid " +
                    std::to_string(pid) + "; one was dropped");
            return;
        }
        if (d.op != Deferred::Op::Event && !d.from_resync) ++p.deferred_chdirs;
        ++deferred_total;
        p.deferred.push_back(std::move(d));
    }

    // Applies the held operations in order from the directory the process started with.
    void replay(Proc &p, const std::string &start) {
        std::string cur = start;
        std::uint64_t last = p.fs->seq;
        for (Deferred &d : p.deferred) {
            last = std::max(last, d.seq);
            switch (d.op) {
                case Deferred::Op::SetCwd:
                    cur = d.path;
                    break;
                case Deferred::Op::Event: {
                    join_normalize(d.ev.path_lexical, cur, d.ev.path_asked);
                    const bool kernel_path =
                        !d.ev.path_resolved.empty() && d.ev.path_resolved.front() == '/';
                    if (d.ev.path_resolved.empty()) d.ev.path_resolved = d.ev.path_lexical;
                    // Placed late, without the names the call made: left to the runtime. The
                    // task's table may be shared (its clone had not returned). Except an exec of
                    // a file the call wrote before the exec and left alone since: that file ran
                    // (a child that execs before its parent's clone returns is common under load,
                    // and the runtime would find a built-and-removed program gone). A name
                    // changed after the exec, even one written again, proves nothing of it.
                    const bool ran_written =
                        d.ev.kind == AccessKind::Exec && written_before(d.ev.path_lexical, d.seq);
                    if (d.ev.success && !ran_written &&
                        (d.ev.kind == AccessKind::Exec ||
                         d.ev.path_resolved != d.ev.path_lexical)) {
                        d.ev.path_named = d.ev.path_lexical;
                    }
                    emit(d.ev);
                    // A file it opened to write, by the kernel's own path, is the call's: as
                    // note_open keeps it for an event placed at once, dated by its own line.
                    if (d.ev.success && kernel_path &&
                        (d.ev.kind == AccessKind::Create || d.ev.kind == AccessKind::Write) &&
                        !has_suffix(d.ev.path_resolved, " (deleted)")) {
                        remember_written_at(d.ev.path_resolved, d.seq);
                    }
                    break;
                }
                case Deferred::Op::Chdir:
                    join_normalize(d.ev.path_lexical, cur, d.ev.path_asked);
                    d.ev.path_resolved = d.ev.path_lexical;
                    emit(d.ev);
                    if (d.ev.success) cur = d.ev.path_resolved;
                    break;
            }
        }
        deferred_total -= p.deferred.size();
        p.deferred.clear();
        p.deferred_chdirs = 0;
        p.fs->cwd = std::move(cur);
        p.fs->cwd_raw.clear();
        p.fs->known = true;
        p.fs->physical = false;
        p.fs->seq = last;
    }

    void flush_unresolved(Proc &p) {
        for (Deferred &d : p.deferred) {
            if (d.op == Deferred::Op::SetCwd) continue;
            // path_resolved stays only when it is the kernel's.
            if (d.op == Deferred::Op::Chdir) d.ev.path_resolved.clear();
            emit(d.ev);
        }
        deferred_total -= p.deferred.size();
        p.deferred.clear();
        p.deferred_chdirs = 0;
    }

    bool cwd_ready(const Proc &p) const { return p.fs->known && p.deferred.empty(); }

    // The directory became known at this point of the trace (an AT_FDCWD annotation, an absolute
    // chdir, an fchdir).
    void set_cwd(int pid, Proc &p, const std::string &path, bool from_resync,
                 bool physical = true) {
        if (p.deferred.empty()) {
            p.fs->cwd = path;
            p.fs->cwd_raw.clear();
            p.fs->known = true;
            p.fs->physical = physical;
            p.fs->seq = seq;
            return;
        }
        // A resync with no directory change held before it tells the directory every held
        // operation ran in.
        const bool resolves = from_resync && p.deferred_chdirs == 0;
        Deferred d;
        d.op = Deferred::Op::SetCwd;
        d.from_resync = from_resync;
        d.seq = seq;
        d.path = path;
        push_deferred(pid, p, std::move(d));
        if (resolves) replay(p, path);
    }

    // Keeps the tracked directory in step with the kernel's: strace prints the directory of
    // every AT_FDCWD it decodes, which also corrects a lexical guess after a chdir through a
    // symbolic link.
    void resync(int pid, Proc &p, std::string_view raw) {
        if (p.fs->known && p.deferred.empty() && raw == p.fs->cwd_raw) return;
        if (!unescape(raw, tmp_cwd) || tmp_cwd.empty() || tmp_cwd.front() != '/') return;
        if (p.fs->known && p.deferred.empty() && tmp_cwd == p.fs->cwd) {
            p.fs->cwd_raw.assign(raw);
            p.fs->physical = true;
            return;
        }
        set_cwd(pid, p, tmp_cwd, true);
        if (p.deferred.empty()) p.fs->cwd_raw.assign(raw);
    }

    // ---- names the call made ---------------------------------------------------------------

    // Whether ev.path_asked names one entry of a directory whose path the kernel gave, so that
    // ev.path_lexical is the entry's physical path, not one through a link.
    [[nodiscard]] bool physical_name() const {
        if (!ev_base_physical || ev.path_lexical.empty() || ev.path_lexical == "/") return false;
        std::string_view a = ev.path_asked;
        while (a.size() > 1 && a.back() == '/') a.remove_suffix(1);
        if (!a.empty() && a.front() == '/') a.remove_prefix(1);
        return !a.empty() && a.find('/') == std::string_view::npos && a != "." && a != "..";
    }

    static std::string_view last_component(std::string_view path) {
        const std::size_t slash = path.rfind('/');
        return slash == std::string_view::npos ? path : path.substr(slash + 1);
    }

    void erase_subtree(const std::string &path) {
        names.erase(path);
        // '0' follows '/': the range holds exactly the paths beneath.
        names.erase(names.lower_bound(path + '/'), names.lower_bound(path + '0'));
    }

    void remember_name(const std::string &path, NameState state) {
        state.seq = seq;
        if (const auto it = names.find(path); it != names.end()) {
            it->second = std::move(state);
            return;
        }
        // Knowledge dropped is knowledge the runtime checks on the host or lists instead.
        if (names.size() >= kMaxNames) return;
        if (remembered >= 4 * kMaxNames) {
            names.clear();
            names_by_base.clear();
            remembered = 0;
        }
        names.emplace(path, std::move(state));
        names_by_base[std::string(last_component(path))].push_back(path);
        ++remembered;
    }

    // A file the call wrote at trace line `at`, learnt late (a replayed event): kept unless the
    // name changed after that line.
    void remember_written_at(const std::string &path, std::uint64_t at) {
        if (const auto it = names.find(path); it != names.end() && it->second.seq > at) return;
        remember_name(path, NameState{});
        if (const auto it = names.find(path); it != names.end()) it->second.seq = at;
    }

    // Whether `path` names a file the call wrote (no link) and has not changed since trace line
    // `before`.
    bool written_before(const std::string &path, std::uint64_t before) const {
        const auto it = names.find(path);
        return it != names.end() && !it->second.is_link && it->second.seq < before;
    }

    // A name removed or replaced. Through a path that may go through a link, any name the call
    // made with the same last component may be the one changed, so all of them are forgotten.
    void forget_name(const std::string &path, bool physical) {
        if (physical) {
            erase_subtree(path);
            return;
        }
        const auto it = names_by_base.find(std::string(last_component(path)));
        if (it == names_by_base.end()) return;
        for (const std::string &known : it->second) erase_subtree(known);
        names_by_base.erase(it);
    }

    void rename_names(const std::string &from, bool from_physical, const std::string &to,
                      bool to_physical, bool exchange) {
        if (exchange || !from_physical || !to_physical) {
            forget_name(from, from_physical);
            forget_name(to, to_physical);
            return;
        }
        std::vector<std::pair<std::string, NameState>> moved;
        if (const auto it = names.find(from); it != names.end()) moved.emplace_back("", it->second);
        for (auto it = names.lower_bound(from + '/'), end = names.lower_bound(from + '0');
             it != end; ++it) {
            moved.emplace_back(it->first.substr(from.size()), it->second);
        }
        erase_subtree(from);
        erase_subtree(to);
        for (auto &[suffix, state] : moved) remember_name(to + suffix, std::move(state));
    }

    // What an asked path names once the links the call made are followed, as far as the trace
    // tells: the path reached, whether its last name is a file the call made or wrote (no link),
    // or why it cannot be told.
    struct Named {
        std::string path;
        bool established = false;
        std::string unverified;
    };

    Named follow_names(std::string_view base, std::string_view asked) const {
        Named out;
        const bool absolute = !asked.empty() && asked.front() == '/';
        if (!absolute && base.empty()) {
            out.unverified = "relative to a directory strace did not decode";
            return out;
        }
        std::vector<std::string> rest;  // the components still to walk, the next one last
        tea::path_components::push_reversed(rest, asked);
        std::string cur{absolute ? std::string_view{"/"} : base};
        // Whether cur holds no name the call found in place: one of those may be a link, which
        // ".." climbs out of where the link leads, not lexically.
        bool physical = absolute || ev_base_physical;
        int links = 0;
        while (!rest.empty()) {
            std::string comp = std::move(rest.back());
            rest.pop_back();
            if (comp == ".") continue;
            if (comp == "..") {
                if (!physical) {
                    // Left to the runtime, which climbs on the host where the host shows it.
                    out.path = cur + "/..";
                    for (auto it = rest.rbegin(); it != rest.rend(); ++it) out.path += "/" + *it;
                    out.established = false;
                    return out;
                }
                const std::size_t slash = cur.rfind('/');
                cur.resize(slash == 0 ? 1 : slash);
                continue;
            }
            std::string next = cur == "/" ? std::string{} : cur;
            next += '/';
            next += comp;
            const auto it = names.find(next);
            if (it != names.end() && it->second.is_link) {
                // The kernel's own limit on links followed in one lookup.
                if (++links > 40) {
                    out.unverified = "more than 40 links on the way";
                    return out;
                }
                const std::string &text = it->second.text;
                tea::path_components::push_reversed(rest, text);
                if (!text.empty() && text.front() == '/') {
                    cur = "/";
                    physical = true;
                }
                out.established = false;
                continue;
            }
            out.established = it != names.end();
            physical = physical && out.established;
            cur = std::move(next);
        }
        out.path = std::move(cur);
        return out;
    }

    // Whether no name on ev's lexical path is one the call made, and the asked path climbs no
    // "..": then it names its lexical path, with no walk (and no allocation).
    [[nodiscard]] bool names_untouched() const {
        const std::string_view asked = ev.path_asked;
        if (asked == ".." || has_prefix(asked, "../") ||
            asked.find("/..") != std::string_view::npos) {
            return false;
        }
        if (names.empty()) return true;
        const std::string_view path = ev.path_lexical;
        for (std::size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
            const std::string_view prefix = path.substr(0, slash);
            if (names.find(prefix) != names.end()) return false;
            if (slash == std::string_view::npos) return true;
        }
    }

    // What the judge needs beside ev's paths. An exec returns no descriptor, so what it ran is
    // what its path named: the trace's own links are followed here, and the rest (names the call
    // found in place) is left to the runtime (path_named). An open in a descriptor table another
    // task shares may have had its descriptor swapped before strace read its path, so when that
    // path is not the one asked for, the asked path is judged too. A refused write returns no
    // descriptor either: where a link the target planted leads is judged.
    void verify(const Proc &p, bool fd_named, bool through_dirfd) {
        ev.path_named.clear();
        ev.unverified.clear();
        if (ev.path_lexical.empty()) return;
        const bool exec = ev.kind == AccessKind::Exec && ev.success;
        // strace names an exec's directory descriptor at the call's entry; a task sharing the
        // table can put another file on that number before the kernel reads it (execveat of a
        // decoy, swapped for an ungranted binary), and nothing at the exec's end says which ran.
        if (exec && through_dirfd && p.files && p.files->shared) {
            ev.unverified =
                "an exec through a descriptor of a table another task shares, which "
                "that task could have changed before the kernel read it";
            return;
        }
        const bool writes = ev.kind == AccessKind::Write || ev.kind == AccessKind::Create ||
                            ev.kind == AccessKind::Remove;
        const bool refused_write =
            writes && !ev.success &&
            (ev.error == "EROFS" || ev.error == "EACCES" || ev.error == "EPERM");
        const bool raced = fd_named && ev.success && p.files && p.files->shared &&
                           ev.path_resolved != ev.path_lexical &&
                           (ev.kind == AccessKind::Read || writes);
        if (!exec && !refused_write && !raced) return;
        Named named = names_untouched() ? Named{ev.path_lexical, false, {}}
                                        : follow_names(ev_base, ev.path_asked);
        if (!named.unverified.empty()) {
            ev.unverified = std::move(named.unverified);
            return;
        }
        if (exec && named.established) {
            ev.path_resolved = std::move(named.path);  // a file the call made: it ran that
            return;
        }
        if (raced && named.established && named.path == ev.path_resolved) return;
        ev.path_named = std::move(named.path);
    }

    // Keeps names in step with a call that succeeded and was emitted just now.
    void note_open(AccessKind kind) {
        // The kernel's path of a file opened to write is no link: an exec of it runs it.
        if ((kind == AccessKind::Create || kind == AccessKind::Write) &&
            !ev.path_resolved.empty() && ev.path_resolved.front() == '/' &&
            !has_suffix(ev.path_resolved, " (deleted)")) {
            remember_name(ev.path_resolved, NameState{});
        }
    }

    // ---- events ----------------------------------------------------------------------------

    // Fills path_asked from a string argument, path_lexical from the dirfd or the working
    // directory and path_resolved from the returned fd; emits now, or holds the event until the
    // working directory is known.
    void path_event(int pid, Proc &p, const Call &c, AccessKind kind, std::string_view dirarg,
                    std::string_view patharg, bool use_ret_annotation) {
        emitted_now = false;
        begin_event(pid, p, c, kind);
        FdArg dir;
        if (!dirarg.empty()) {
            dir = parse_fd_arg(dirarg);
            if (!dir.valid) {
                problem("unreadable dirfd in: " + excerpt(c.args_text));
                return;
            }
            if (dir.at_fdcwd && dir.has_annotation) resync(pid, p, dir.annotation);
        }
        const StrResult sr = decode_string(patharg, ev.path_asked);
        if (sr == StrResult::Malformed) {
            problem("malformed path string in " + std::string(c.name) + ": " + excerpt(patharg));
            return;
        }
        bool kernel_path = false;
        bool non_file = false;
        if (use_ret_annotation && c.has_ret_annotation && ev.success) {
            if (!unescape(c.ret_annotation, tmp_annotation)) {
                problem("malformed fd path: " + excerpt(c.ret_annotation));
                return;
            }
            // "pipe:[N]", "socket:[N]" and the like name no file; the judge sees them so.
            if (!tmp_annotation.empty() && tmp_annotation.front() == '/') {
                ev.path_resolved.swap(tmp_annotation);
                kernel_path = true;
            } else if (is_object_name(tmp_annotation)) {
                non_file_name.swap(tmp_annotation);
                non_file = true;
            }
        }
        if (sr != StrResult::Ok && ev.success && !kernel_path) {
            // strace could not read the path, or cut it: the call named a file the audit
            // cannot know.
            problem(std::string(c.name) + " succeeded on a path strace did not print whole");
        }
        if (sr == StrResult::NotString) {
            if (kernel_path) emit(ev);
            return;
        }
        if (!lexical_path(p, dir)) {
            Deferred d;
            d.op = Deferred::Op::Event;
            d.seq = seq;
            d.ev = ev;
            push_deferred(pid, p, std::move(d));
            return;
        }
        if (ev.path_lexical.empty() && ev.success && !kernel_path) {
            problem(std::string(c.name) + " succeeded relative to a dirfd strace did not decode");
        }
        if (non_file) {
            ev.path_resolved = non_file_name;
        } else if (!kernel_path) {
            ev.path_resolved = ev.path_lexical;
        }
        verify(p, kernel_path || non_file, !dirarg.empty() && !dir.at_fdcwd);
        emit(ev);
        emitted_now = true;
    }

    // Makes ev.path_asked absolute into ev.path_lexical. Returns false when that needs the
    // working directory and it is not known yet; leaves path_lexical empty when it cannot be
    // done (a dirfd strace did not decode).
    bool lexical_path(const Proc &p, const FdArg &dir) {
        const std::string &asked = ev.path_asked;
        ev_base_physical = true;
        if (!asked.empty() && asked.front() == '/') {
            ev_base = "/";
            join_normalize(ev.path_lexical, "/", asked);
            return true;
        }
        if (dir.valid && !dir.at_fdcwd) {
            ev_base = {};
            if (dir.has_annotation && decode_absolute(dir.annotation, tmp_base)) {
                ev_base = tmp_base;
                join_normalize(ev.path_lexical, tmp_base, asked);
            }
            return true;
        }
        if (dir.at_fdcwd && dir.has_annotation) {
            if (cwd_ready(p) && dir.annotation == p.fs->cwd_raw) {
                ev_base = p.fs->cwd;
                join_normalize(ev.path_lexical, p.fs->cwd, asked);
                return true;
            }
            if (decode_absolute(dir.annotation, tmp_base)) {
                ev_base = tmp_base;
                join_normalize(ev.path_lexical, tmp_base, asked);
                return true;
            }
        }
        if (cwd_ready(p)) {
            ev_base = p.fs->cwd;
            ev_base_physical = p.fs->physical;
            join_normalize(ev.path_lexical, p.fs->cwd, asked);
            return true;
        }
        return false;
    }

    void fd_event(int pid, Proc &p, const Call &c, AccessKind kind, std::string_view fdarg) {
        begin_event(pid, p, c, kind);
        const FdArg fd = parse_fd_arg(fdarg);
        if (fd.has_annotation && decode_absolute(fd.annotation, ev.path_resolved)) {
            ev.path_asked = ev.path_resolved;
            ev.path_lexical = ev.path_resolved;
            emit(ev);
            if (kind == AccessKind::ChangeDir && ev.success) {
                set_cwd(pid, p, ev.path_resolved, false);
            }
            return;
        }
        if (ev.success) {
            problem(std::string(c.name) +
                    " succeeded on an fd strace did not decode: " + excerpt(fdarg));
        }
    }

    void chdir_event(int pid, Proc &p, const Call &c) {
        begin_event(pid, p, c, AccessKind::ChangeDir);
        const StrResult sr =
            c.nargs > 0 ? decode_string(c.args[0], ev.path_asked) : StrResult::NotString;
        if (sr != StrResult::Ok) {
            if (sr == StrResult::Malformed || ev.success) {
                problem("chdir to a path strace did not print whole");
            }
            return;
        }
        if (lexical_path(p, FdArg{})) {
            ev.path_resolved = ev.path_lexical;
            emit(ev);
            if (ev.success) set_cwd(pid, p, ev.path_resolved, false, false);
            return;
        }
        Deferred d;
        d.op = Deferred::Op::Chdir;
        d.seq = seq;
        d.ev = ev;
        push_deferred(pid, p, std::move(d));
    }

    void parse_argv(std::string_view arg) {
        ev.argv.clear();
        if (arg.size() < 2 || arg.front() != '[' || arg.back() != ']') {
            ev.argv_truncated = arg != "NULL";
            return;
        }
        std::string_view rest = arg.substr(1, arg.size() - 2);
        while (!rest.empty()) {
            rest = trim(rest);
            if (rest.empty()) break;
            if (rest.front() == '"') {
                const std::size_t end = skip_string(rest, 0);
                if (end == std::string_view::npos) {
                    ev.argv_truncated = true;
                    return;
                }
                std::string value;
                const StrResult sr = decode_string(rest.substr(0, end), value);
                if (sr == StrResult::Malformed) {
                    ev.argv_truncated = true;
                    return;
                }
                if (sr == StrResult::Truncated) ev.argv_truncated = true;
                ev.argv.push_back(std::move(value));
                rest.remove_prefix(end);
            } else if (has_prefix(rest, "...")) {
                ev.argv_truncated = true;
                rest.remove_prefix(3);
            } else {
                ev.argv_truncated = true;
                return;
            }
            rest = trim(rest);
            if (!rest.empty()) {
                if (rest.front() != ',') {
                    ev.argv_truncated = true;
                    return;
                }
                rest.remove_prefix(1);
            }
        }
    }

    void exec_event(int pid, Proc &p, const Call &c, bool at) {
        const std::size_t base = at ? 1 : 0;
        if (c.nargs < base + 2) {
            problem("execve with too few arguments: " + excerpt(c.args_text));
            return;
        }
        Call adjusted = c;
        if (p.exec_superseded) {
            // A thread's successful execve: the kernel gave it the leader's pid, and strace
            // prints a result it could not read. The supersede notice itself proves success.
            adjusted.known = true;
            adjusted.value = 0;
            adjusted.error = {};
            p.exec_superseded = false;
        }
        exec_argv = c.args[base + 1];
        path_event(pid, p, adjusted, AccessKind::Exec, at ? c.args[0] : std::string_view{},
                   c.args[base], false);
        exec_argv = {};
        if (adjusted.known && adjusted.error.empty() && adjusted.value >= 0) {
            // An exec gives the process a descriptor table of its own.
            p.files = std::make_shared<FdTable>();
            set_image(p, ev.path_resolved.empty() ? ev.path_asked : ev.path_resolved);
        }
    }

    void clone_done(int pid, Proc &p, const Call &c, std::uint64_t start_seq, bool has_flags) {
        if (!c.known || !c.error.empty() || c.value <= 0) return;
        const long long child_ll = c.ns_pid > 0 ? c.ns_pid : c.value;
        if (child_ll > kMaxPid) {
            problem("clone returned an impossible pid: " + std::to_string(child_ll));
            return;
        }
        const int child_pid = static_cast<int>(child_ll);
        if (child_pid == pid) return;
        // A child the tracer does not follow makes its calls out of the trace (made tracee of
        // its own parent, it runs them): the trace can no longer account for the call.
        if (has_flags && has_flag(keyword_flags(c.args_text), "CLONE_UNTRACED")) {
            problem("pid " + std::to_string(pid) + " started pid " + std::to_string(child_pid) +
                    " with CLONE_UNTRACED, which the tracer does not follow");
        }
        const bool share_fs = has_flags && has_flag(keyword_flags(c.args_text), "CLONE_FS");
        const bool share_files = has_flags && has_flag(keyword_flags(c.args_text), "CLONE_FILES");
        if (share_files) p.files->shared = true;
        const auto child_files = share_files ? p.files : std::make_shared<FdTable>(FdTable{false});
        std::shared_ptr<FsContext> parent_fs = p.fs;
        std::shared_ptr<const std::string> parent_image = p.image;

        Proc *existing = find(child_pid);
        if (existing != nullptr && existing->last_seq < start_seq) {
            // Silent since before the clone began: the pid belonged to a process that ended
            // (with -qq strace prints no normal exit), so nothing of its state carries over.
            forget(child_pid);
            existing = nullptr;
        }
        if (existing == nullptr) {
            Proc *child = get(child_pid);
            if (child == nullptr) return;
            child->fs = share_fs ? parent_fs : std::make_shared<FsContext>(*parent_fs);
            child->files = child_files;
            child->image = parent_image;
            return;
        }
        // The child ran before its parent's clone returned.
        Proc &child = *existing;
        child.files = child_files;
        if (!child.image) child.image = parent_image;
        if (parent_fs->known) {
            if (!child.deferred.empty()) {
                replay(child, parent_fs->cwd);
            } else if (!child.fs->known) {
                child.fs->cwd = parent_fs->cwd;
                child.fs->known = true;
                child.fs->seq = parent_fs->seq;
            }
        }
        if (share_fs && child.fs != parent_fs) {
            if (child.fs->known && (!parent_fs->known || child.fs->seq > parent_fs->seq)) {
                *parent_fs = *child.fs;
            }
            child.fs = parent_fs;
        }
    }

    // ---- lines -----------------------------------------------------------------------------

    void complete(int pid, std::string_view body, std::size_t paren, std::uint64_t start_seq) {
        const Sys sys = classify(body.substr(0, paren));
        if (sys == Sys::Ignored) return;
        Call &c = call;
        if (!parse_call(body, paren, c)) {
            problem("unparseable call: " + excerpt(body));
            return;
        }
        Proc *pp = get(pid);
        if (pp == nullptr) return;
        Proc &p = *pp;
        p.last_seq = seq;
        auto arg = [&c](std::size_t i) { return i < c.nargs ? c.args[i] : std::string_view{}; };
        if (c.nargs < 1 && sys != Sys::Fork) {
            problem("call without arguments: " + excerpt(body));
            return;
        }
        // Whether the event just built was emitted now, for a call that succeeded.
        const auto done = [this] { return emitted_now && ev.success; };
        switch (sys) {
            case Sys::Open:
                path_event(pid, p, c, open_kind(arg(1)), {}, arg(0), true);
                if (done()) note_open(ev.kind);
                break;
            case Sys::Openat:
                path_event(pid, p, c, open_kind(arg(2)), arg(0), arg(1), true);
                if (done()) note_open(ev.kind);
                break;
            case Sys::Openat2:
                path_event(pid, p, c, open_kind(keyword_flags(arg(2))), arg(0), arg(1), true);
                if (done()) note_open(ev.kind);
                break;
            case Sys::Creat:
                path_event(pid, p, c, AccessKind::Create, {}, arg(0), true);
                if (done()) note_open(ev.kind);
                break;
            case Sys::Execve:
                exec_event(pid, p, c, false);
                break;
            case Sys::Execveat:
                exec_event(pid, p, c, true);
                break;
            case Sys::Readlink:
                path_event(pid, p, c, AccessKind::ReadLink, {}, arg(0), false);
                break;
            case Sys::Readlinkat:
                path_event(pid, p, c, AccessKind::ReadLink, arg(0), arg(1), false);
                break;
            case Sys::Getdents:
                fd_event(pid, p, c, AccessKind::List, arg(0));
                break;
            case Sys::Mkdir:
            case Sys::Mkdirat: {
                const bool at = sys == Sys::Mkdirat;
                path_event(pid, p, c, AccessKind::Create, at ? arg(0) : std::string_view{},
                           at ? arg(1) : arg(0), false);
                // A node that is no link; a directory needs no note (a walk passes through it).
                if (done() && has_prefix(c.name, "mknod") && physical_name()) {
                    remember_name(ev.path_lexical, NameState{});
                }
                break;
            }
            case Sys::Unlink:
            case Sys::Unlinkat: {
                const bool at = sys == Sys::Unlinkat;
                path_event(pid, p, c, AccessKind::Remove, at ? arg(0) : std::string_view{},
                           at ? arg(1) : arg(0), false);
                if (done()) forget_name(ev.path_lexical, physical_name());
                break;
            }
            case Sys::Rename:
            case Sys::Renameat: {
                const bool at = sys == Sys::Renameat;
                path_event(pid, p, c, AccessKind::Remove, at ? arg(0) : std::string_view{},
                           at ? arg(1) : arg(0), false);
                const bool from_ok = done();
                std::string from = ev.path_lexical;
                const bool from_physical = physical_name();
                path_event(pid, p, c, AccessKind::Create, at ? arg(2) : std::string_view{},
                           at ? arg(3) : arg(1), false);
                if (from_ok && done()) {
                    rename_names(from, from_physical, ev.path_lexical, physical_name(),
                                 at && has_flag(arg(4), "RENAME_EXCHANGE"));
                } else if (ev.success) {
                    forget_name(from, false);  // a side held back: what moved is not known
                    if (!ev.path_lexical.empty()) forget_name(ev.path_lexical, false);
                }
                break;
            }
            case Sys::Link:
            case Sys::Linkat: {
                const bool at = sys == Sys::Linkat;
                path_event(pid, p, c, AccessKind::Other, at ? arg(0) : std::string_view{},
                           at ? arg(1) : arg(0), false);
                const bool from_ok = done() && !(at && has_flag(arg(4), "AT_EMPTY_PATH"));
                const std::string from = ev.path_lexical;
                path_event(pid, p, c, AccessKind::Create, at ? arg(2) : std::string_view{},
                           at ? arg(3) : arg(1), false);
                if (from_ok && done() && physical_name()) {
                    // A hard link is the same node: a link made by the call stays one, unless
                    // the call asked to follow it.
                    const auto known = names.find(from);
                    if (known != names.end() &&
                        !(known->second.is_link && at && has_flag(arg(4), "AT_SYMLINK_FOLLOW"))) {
                        remember_name(ev.path_lexical, known->second);
                    }
                }
                break;
            }
            case Sys::Symlink:
            case Sys::Symlinkat: {
                const bool at = sys == Sys::Symlinkat;
                // The target is a string stored in the link, not a file the call touches.
                path_event(pid, p, c, AccessKind::Create, at ? arg(1) : std::string_view{},
                           at ? arg(2) : arg(1), false);
                std::string text;
                if (done() && physical_name() && decode_string(arg(0), text) == StrResult::Ok) {
                    remember_name(ev.path_lexical, NameState{true, std::move(text)});
                }
                break;
            }
            case Sys::Truncate:
                path_event(pid, p, c, AccessKind::Write, {}, arg(0), false);
                break;
            case Sys::Chdir:
                chdir_event(pid, p, c);
                break;
            case Sys::Fchdir:
                fd_event(pid, p, c, AccessKind::ChangeDir, arg(0));
                break;
            case Sys::Clone:
                clone_done(pid, p, c, start_seq, true);
                break;
            case Sys::Fork:
                clone_done(pid, p, c, start_seq, false);
                break;
            case Sys::Seccomp:
                // A user-notify listener's answers outrank the tracer's stops: a call it lets
                // continue runs with no stop, so nothing after it can be vouched for.
                if (c.known && c.error.empty() && c.value >= 0 &&
                    c.args_text.find("SECCOMP_FILTER_FLAG_NEW_LISTENER") !=
                        std::string_view::npos) {
                    problem("pid " + std::to_string(pid) +
                            " installed a seccomp filter with a user-notify listener, whose "
                            "answers can hide calls from the tracer");
                }
                break;
            case Sys::Ignored:
                break;
        }
    }

    void hold_pending(int pid, std::string_view text) {
        Proc *p = get(pid);
        if (p == nullptr) return;
        if (p->has_pending) {
            problem("pid " + std::to_string(pid) + " began a call while another was unfinished");
            abandon_pending(pid, *p);
        }
        if (pending_bytes + text.size() > limits.max_pending_bytes) {
            problem("unfinished calls exceed " + std::to_string(limits.max_pending_bytes) +
                    " bytes; one was dropped");
            return;
        }
        p->pending.assign(text);
        p->has_pending = true;
        p->pending_seq = seq;
        p->last_seq = seq;
        pending_bytes += text.size();
    }

    // A call whose result will never be printed: report it with an unknown outcome.
    void abandon_pending(int pid, Proc &p) {
        if (!p.has_pending) return;
        const std::size_t paren = p.pending.find('(');
        pending_bytes -= p.pending.size();
        p.has_pending = false;
        if (paren == std::string::npos) {
            p.pending.clear();
            return;
        }
        joined.assign(p.pending);
        p.pending.clear();
        joined += ") = ?";
        complete(pid, joined, paren, p.pending_seq);
    }

    void resumed(int pid, std::string_view body) {
        // "<... NAME resumed>REST"
        constexpr std::string_view kResumed = " resumed>";
        const std::size_t end = body.find(kResumed);
        if (end == std::string_view::npos || end < 5) {
            problem("unparseable resumption: " + excerpt(body));
            return;
        }
        const std::string_view name = body.substr(5, end - 5);
        std::string_view rest = body.substr(end + kResumed.size());
        Proc *p = find(pid);
        if (p == nullptr || !p->has_pending) {
            problem("pid " + std::to_string(pid) + " resumed " + std::string(name) +
                    " that never started");
            return;
        }
        const std::size_t paren = p->pending.find('(');
        if (paren == std::string::npos || std::string_view(p->pending).substr(0, paren) != name) {
            problem("pid " + std::to_string(pid) + " resumed " + std::string(name) + " but began " +
                    excerpt(p->pending));
            pending_bytes -= p->pending.size();
            p->has_pending = false;
            p->pending.clear();
            return;
        }
        // "<... NAME resumed> <unfinished ...>) = ?": the process died inside the call.
        if (has_prefix(rest, " <unfinished ...>")) {
            rest.remove_prefix(kUnfinished.size() + 1);
        }
        joined.assign(p->pending);
        joined.append(rest);
        pending_bytes -= p->pending.size();
        p->pending.clear();
        p->has_pending = false;
        const std::uint64_t start = p->pending_seq;
        complete(pid, joined, paren, start);
    }

    void exit_line(int pid, std::string_view inner) {
        constexpr std::string_view kSuperseded = "superseded by execve in pid ";
        if (inner.substr(0, kSuperseded.size()) == kSuperseded) {
            long long other = 0;
            if (!parse_int(inner.substr(kSuperseded.size()), other) || other > kMaxPid) {
                problem("unparseable notice: " + excerpt(inner));
                return;
            }
            if (Proc *p = get(pid)) p->exec_superseded = true;
            if (other != pid) forget(static_cast<int>(other));
            return;
        }
        if (has_prefix(inner, "exited with ") || has_prefix(inner, "killed by ")) {
            if (Proc *p = find(pid)) {
                abandon_pending(pid, *p);
                forget(pid);
            }
            return;
        }
        problem("unknown notice: " + excerpt(inner));
    }

    // "???()", spaces, "= ?": the whole line strace prints for a process that died at a call's
    // entry when it does not drop it first.
    static bool is_unnamed_call_that_never_returned(std::string_view body) {
        if (!body.starts_with(kUnnamedCall) || body.size() < kUnnamedCall.size() + 1 ||
            body[kUnnamedCall.size()] != ')') {
            return false;
        }
        body.remove_prefix(kUnnamedCall.size() + 1);
        while (!body.empty() && body.front() == ' ') body.remove_prefix(1);
        return body == "= ?";
    }

    // A process that ended inside a call (killed, or its pid namespace torn down): with -qq and
    // signal=none strace prints no end for it, and closes the line it had begun with
    // " <detached ...>" as it drops the process. The call never returned to the process.
    void dropped_inside_a_call(int pid, std::string_view begun, std::string_view l) {
        // Killed at the call's entry, before strace could read which call it was: nothing ran.
        if (begun == kUnnamedCall) return;
        std::size_t paren = 0;
        while (paren < begun.size() && is_name_char(begun[paren])) ++paren;
        if (paren == 0 || paren >= begun.size() || begun[paren] != '(') {
            problem("unparseable line: " + excerpt(l));
            return;
        }
        // Any other call is reported with an unknown outcome, as an unfinished one whose process
        // ended: its path counts as attempted, whatever the kernel did with it.
        hold_pending(pid, begun);
        if (Proc *p = find(pid)) abandon_pending(pid, *p);
    }

    void line(std::string_view l) {
        ++seq;
        std::size_t i = 0;
        long pid = 0;
        while (i < l.size() && is_digit(l[i]) && i < 8) {
            pid = pid * 10 + (l[i] - '0');
            ++i;
        }
        if (i == 0 || i >= l.size() || l[i] != ' ' || pid > kMaxPid) {
            if (has_prefix(l, "[ Process PID=")) return;  // a personality notice
            problem("unparseable line: " + excerpt(l));
            return;
        }
        while (i < l.size() && l[i] == ' ') ++i;
        const std::string_view body = l.substr(i);
        const int ipid = static_cast<int>(pid);
        if (body.empty()) {
            problem("empty line body: " + excerpt(l));
            return;
        }
        const char first = body.front();
        if (first == '-') {
            if (body.size() >= 8 && has_prefix(body, "--- ") && has_suffix(body, " ---")) {
                return;  // a signal; it names no file
            }
            problem("unparseable line: " + excerpt(l));
            return;
        }
        if (first == '+') {
            if (body.size() >= 8 && has_prefix(body, "+++ ") && has_suffix(body, " +++")) {
                exit_line(ipid, body.substr(4, body.size() - 8));
                return;
            }
            problem("unparseable line: " + excerpt(l));
            return;
        }
        if (first == '<') {
            if (has_prefix(body, "<... ")) {
                resumed(ipid, body);
                return;
            }
            problem("unparseable line: " + excerpt(l));
            return;
        }
        if (body.ends_with(kDetached)) {
            dropped_inside_a_call(ipid, body.substr(0, body.size() - kDetached.size()), l);
            return;
        }
        if (is_unnamed_call_that_never_returned(body)) {
            // Killed at the call's entry, before strace could read which call it was: the kernel
            // skips a call whose process has a fatal signal pending at that stop, so nothing ran.
            return;
        }
        std::size_t paren = 0;
        while (paren < body.size() && is_name_char(body[paren])) ++paren;
        if (paren == 0 || paren >= body.size() || body[paren] != '(') {
            problem("unparseable line: " + excerpt(l));
            return;
        }
        if (has_suffix(body, "<unfinished ...>")) {
            hold_pending(ipid, body.substr(0, body.size() - kUnfinished.size()));
            return;
        }
        if (body.back() == '>') {
            // A thread's execve: "<pid changed to LEADER ...>", resumed under the leader's pid.
            const std::size_t at = body.rfind(kPidChanged);
            if (at != std::string_view::npos && body.size() >= at + kPidChanged.size() + 5 &&
                has_suffix(body, " ...>")) {
                long long leader = 0;
                const std::string_view num =
                    body.substr(at + kPidChanged.size(), body.size() - 5 - at - kPidChanged.size());
                if (!parse_int(num, leader) || leader <= 0 || leader > kMaxPid) {
                    problem("unparseable line: " + excerpt(l));
                    return;
                }
                const auto lpid = static_cast<int>(leader);
                if (Proc *lp = find(lpid)) abandon_pending(lpid, *lp);
                hold_pending(lpid, body.substr(0, at));
                return;
            }
        }
        complete(ipid, body, paren, seq);
    }

    void feed(std::string_view chunk) {
        std::size_t pos = 0;
        const std::size_t n = chunk.size();
        if (skipping) {
            const void *nl = std::memchr(chunk.data(), '\n', n);
            if (nl == nullptr) return;
            pos = static_cast<std::size_t>(static_cast<const char *>(nl) - chunk.data()) + 1;
            skipping = false;
        }
        if (!carry.empty() && pos < n) {
            const void *nl = std::memchr(chunk.data() + pos, '\n', n - pos);
            const std::size_t end =
                nl == nullptr
                    ? n
                    : static_cast<std::size_t>(static_cast<const char *>(nl) - chunk.data());
            if (carry.size() + (end - pos) > limits.max_line_bytes) {
                ++seq;
                problem("a line longer than " + std::to_string(limits.max_line_bytes) +
                        " bytes was skipped");
                carry.clear();
                if (nl == nullptr) {
                    skipping = true;
                    return;
                }
                pos = end + 1;
            } else {
                carry.append(chunk.substr(pos, end - pos));
                if (nl == nullptr) return;
                std::string held;
                held.swap(carry);
                line(held);
                if (carry.empty()) {
                    // keep the capacity for the next partial line
                    held.clear();
                    carry.swap(held);
                }
                pos = end + 1;
            }
        }
        while (pos < n) {
            const void *nl = std::memchr(chunk.data() + pos, '\n', n - pos);
            if (nl == nullptr) {
                if (n - pos > limits.max_line_bytes) {
                    ++seq;
                    problem("a line longer than " + std::to_string(limits.max_line_bytes) +
                            " bytes was skipped");
                    skipping = true;
                } else {
                    carry.assign(chunk.substr(pos));
                }
                return;
            }
            const auto end = static_cast<std::size_t>(static_cast<const char *>(nl) - chunk.data());
            if (end - pos > limits.max_line_bytes) {
                ++seq;
                problem("a line longer than " + std::to_string(limits.max_line_bytes) +
                        " bytes was skipped");
            } else {
                line(chunk.substr(pos, end - pos));
            }
            pos = end + 1;
        }
    }

    void finish() {
        if (finished) return;
        finished = true;
        if (skipping) {
            skipping = false;
        } else if (!carry.empty()) {
            ++seq;
            problem("the trace ends in the middle of a line: " + excerpt(carry));
            carry.clear();
        }
        // Deterministic order for what is left, whatever the hash map's.
        std::vector<int> pids;
        pids.reserve(procs.size());
        for (const auto &entry : procs) pids.push_back(entry.first);
        std::sort(pids.begin(), pids.end());
        for (const int pid : pids) {
            Proc *p = find(pid);
            if (p == nullptr) continue;
            if (p->has_pending) {
                const std::size_t paren = p->pending.find('(');
                problem("pid " + std::to_string(pid) + " never finished " +
                        excerpt(std::string_view(p->pending).substr(0, paren)));
                abandon_pending(pid, *p);
            }
        }
        for (const int pid : pids) {
            Proc *p = find(pid);
            if (p == nullptr || p->deferred.empty()) continue;
            problem("the working directory of pid " + std::to_string(pid) +
                    " was never known; its relative paths are unresolved");
            flush_unresolved(*p);
        }
    }
};

Parser::Parser(std::string initial_cwd, ParserLimits limits) : state_(std::make_unique<State>()) {
    state_->initial_cwd = std::move(initial_cwd);
    state_->limits = limits;
}

Parser::~Parser() = default;
Parser::Parser(Parser &&) noexcept = default;
Parser &Parser::operator=(Parser &&) noexcept = default;

void Parser::feed(std::string_view chunk, const EventSink &sink) {
    state_->sink = &sink;
    try {
        state_->feed(chunk);
    } catch (...) {
        state_->sink = nullptr;
        throw;
    }
    state_->sink = nullptr;
}

void Parser::finish(const EventSink &sink) {
    state_->sink = &sink;
    try {
        state_->finish();
    } catch (...) {
        state_->sink = nullptr;
        throw;
    }
    state_->sink = nullptr;
}

bool Parser::lossy() const {
    return state_->problem_count > 0;
}

std::string Parser::lossy_reason() const {
    std::string out;
    for (const std::string &r : state_->reasons) {
        if (!out.empty()) out += "; ";
        out += r;
    }
    if (state_->problem_count > state_->reasons.size()) {
        out += "; and " + std::to_string(state_->problem_count - state_->reasons.size()) + " more";
    }
    return out;
}

std::uint64_t Parser::lines() const {
    return state_->seq;
}
std::uint64_t Parser::events() const {
    return state_->event_count;
}

}  // namespace tea::strace
