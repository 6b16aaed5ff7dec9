#include "audit/host_resolution.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tea/path_components.hpp>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace tea::audit {
namespace {

// The kernel's limits: links followed in one lookup, interpreters nested in one exec.
constexpr int kMaxLinks = 40;
constexpr int kMaxInterpreters = 4;

// The depth (in components) of the deepest root in roots that path lies beneath or at; -1 when
// none. Whole components only: "/usr2" is not beneath "/usr".
int depth_within(std::string_view path, const std::vector<std::string> &roots) {
    int best = -1;
    for (std::string_view root : roots) {
        while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
        const bool beneath = path == root || root == "/" ||
                             (path.size() > root.size() && path.substr(0, root.size()) == root &&
                              path[root.size()] == '/');
        if (!beneath) continue;
        int depth = 0;
        for (const char c : root) depth += c == '/' ? 1 : 0;
        if (root == "/") depth = 0;
        best = std::max(best, depth);
    }
    return best;
}

std::string_view last_component(std::string_view path) {
    const std::size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string child(const std::string &dir, std::string_view name) {
    std::string out = dir;
    if (out != "/") out += '/';
    out += name;
    return out;
}

std::string parent(const std::string &path) {
    const std::size_t slash = path.rfind('/');
    return slash == 0 || slash == std::string::npos ? std::string{"/"} : path.substr(0, slash);
}

enum class Kind : std::uint8_t { missing, link, other };

struct Walked {
    std::string path;        // the path reached
    std::string unverified;  // why not, when it could not be followed
    bool shared = false;     // the path reached lies in a shared writable place
};

class Walker {
   public:
    Walker(const HostView &view, const Observation &observation)
        : view_{view}, observation_{observation} {}

    Walked walk(std::string_view start) {
        Walked out;
        std::vector<std::string> rest;
        tea::path_components::push_reversed(rest, start);
        std::string cur = "/";
        int links = 0;
        while (!rest.empty()) {
            std::string comp = std::move(rest.back());
            rest.pop_back();
            if (comp == ".") continue;
            if (comp == "..") {
                cur = parent(cur);  // cur holds no link: the walk followed each one
                continue;
            }
            std::string next = child(cur, comp);
            const int shared = depth_within(next, view_.shared_writable);
            const int host = std::max(shared, depth_within(next, view_.shared_read_only));
            const int own = depth_within(next, view_.view_only);
            // A directory of the view's own that leads down to a shared place (the /tmp of the
            // call's own up to a workspace under it, the private root up to the call's home): the
            // view made it for that place's path, and it names what the host's does unless the
            // call changed it. Taken as it is instead, a name through a link the call planted in
            // its home would be judged by its letters, not by the file it reached.
            const bool on_the_way = own > host && leads_to_shared(next);
            if (own > host && !on_the_way) {
                if (depth_within(next, view_.view_only_writable) >= 0) {
                    out.unverified =
                        next + " lies in a place of the sandbox's own that ended with the call";
                    return out;
                }
                // The host does not show the view here: the judge takes the rest as it is.
                out.path = std::move(next);
                for (auto it = rest.rbegin(); it != rest.rend(); ++it) out.path += "/" + *it;
                return out;
            }
            if ((shared >= 0 || on_the_way) && changed(next)) {
                out.unverified = "the call renamed, removed or made " + next +
                                 ", so what it named when it was used is not known";
                return out;
            }
            const Kind kind = kind_of(next);
            if (kind == Kind::missing) {
                out.unverified = next + " no longer exists on the host";
                return out;
            }
            if (kind == Kind::link) {
                if (++links > kMaxLinks) {
                    out.unverified = "more than 40 links on the way to " + next;
                    return out;
                }
                const auto text = read_link(next);
                if (!text) {
                    out.unverified = "the link " + next + " cannot be read on the host";
                    return out;
                }
                tea::path_components::push_reversed(rest, *text);
                if (!text->empty() && text->front() == '/') cur = "/";
                continue;
            }
            cur = std::move(next);
        }
        out.shared = depth_within(cur, view_.shared_writable) >= 0 &&
                     depth_within(cur, view_.shared_writable) >= depth_within(cur, view_.view_only);
        out.path = std::move(cur);
        return out;
    }

   private:
    // Whether a shared place lies strictly beneath `dir`.
    bool leads_to_shared(const std::string &dir) const {
        const auto beneath = [&](const std::vector<std::string> &places) {
            return std::any_of(places.begin(), places.end(), [&](std::string_view place) {
                while (place.size() > 1 && place.back() == '/') place.remove_suffix(1);
                return place.size() > dir.size() && place.substr(0, dir.size()) == dir &&
                       (dir == "/" || place[dir.size()] == '/');
            });
        };
        return beneath(view_.shared_writable) || beneath(view_.shared_read_only);
    }

    Kind kind_of(const std::string &path) {
        if (const auto it = kinds_.find(path); it != kinds_.end()) return it->second;
        struct stat st {};
        const Kind kind = ::lstat(path.c_str(), &st) != 0 ? Kind::missing
                          : S_ISLNK(st.st_mode)           ? Kind::link
                                                          : Kind::other;
        kinds_.emplace(path, kind);
        return kind;
    }

    static std::optional<std::string> read_link(const std::string &path) {
        std::array<char, 4096> buf{};
        const ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size());
        if (n <= 0 || static_cast<std::size_t>(n) >= buf.size()) return std::nullopt;
        return std::string(buf.data(), static_cast<std::size_t>(n));
    }

    // Whether the call changed the name at path (see the header). A change made through a path
    // that went through a link, or beneath a directory that is no longer there, is known only by
    // its last component, so a name with that component counts as changed too.
    bool changed(const std::string &path) {
        if (!touched_ready_) collect_changes();
        return touched_.contains(path) ||
               unplaced_names_.contains(std::string(last_component(path)));
    }

    void collect_changes() {
        touched_ready_ = true;
        for (const auto &e : observation_.events) {
            if (e.success && (e.access == Access::create || e.access == Access::remove) &&
                !e.path_asked.empty()) {
                touched_.insert(e.path_asked);
                if (e.access == Access::remove) removed_.insert(e.path_asked);
            }
        }
        // A name is placed when every directory above it in a shared place is a directory now
        // and was never removed or renamed away, so that its path is where the change happened:
        // a directory the call made is one, and only a removal could have put a link there.
        for (bool grew = true; grew;) {
            grew = false;
            for (const auto &t : touched_) {
                const std::string name{last_component(t)};
                if (unplaced_names_.contains(name) || placed(t)) continue;
                unplaced_names_.insert(name);
                grew = true;
            }
        }
    }

    bool placed(const std::string &path) {
        for (std::string dir = parent(path); dir != "/"; dir = parent(dir)) {
            if (depth_within(dir, view_.shared_writable) < 0) break;
            if (removed_.contains(dir) ||
                unplaced_names_.contains(std::string(last_component(dir))) ||
                kind_of(dir) != Kind::other) {
                return false;
            }
        }
        return true;
    }

    const HostView &view_;
    const Observation &observation_;
    std::unordered_map<std::string, Kind> kinds_;
    bool touched_ready_ = false;
    std::unordered_set<std::string> touched_;
    std::unordered_set<std::string> removed_;
    std::unordered_set<std::string> unplaced_names_;
};

constexpr std::string_view kElfMagic = "\177ELF";

// `size` bytes at `at`, least significant first, as an ELF header of a little-endian host holds
// its numbers; the caller has checked that they lie inside `bytes`.
std::uint64_t little_endian(std::string_view bytes, std::size_t at, std::size_t size) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < size; ++i) {
        v |= std::uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
    }
    return v;
}

// The program loader an ELF executable names (its PT_INTERP segment), read from the open file:
// "" when it names none (a static binary), nullopt when the headers do not hold together. The
// kernel maps that loader without any call the trace shows, like a script's interpreter.
std::optional<std::string> elf_loader(int fd, std::string_view head) {
    if (head.size() < 64 || head.substr(0, 4) != kElfMagic) return std::nullopt;
    const bool is64 = head[4] == 2;
    const bool little = head[5] == 1;
    if ((!is64 && head[4] != 1) || !little) return std::nullopt;  // big-endian: not a host binary
    const std::uint64_t phoff = is64 ? little_endian(head, 32, 8) : little_endian(head, 28, 4);
    const std::uint64_t phentsize = little_endian(head, is64 ? 54 : 42, 2);
    const std::uint64_t phnum = little_endian(head, is64 ? 56 : 44, 2);
    if (phentsize < (is64 ? 56U : 32U) || phnum == 0 || phnum > 512) return std::nullopt;
    std::string table(phentsize * phnum, '\0');
    if (::pread(fd, table.data(), table.size(), static_cast<off_t>(phoff)) !=
        static_cast<ssize_t>(table.size())) {
        return std::nullopt;
    }
    for (std::uint64_t i = 0; i < phnum; ++i) {
        const std::string_view entry{table.data() + i * phentsize, phentsize};
        if (little_endian(entry, 0, 4) != 3) continue;  // PT_INTERP
        const std::uint64_t offset = is64 ? little_endian(entry, 8, 8) : little_endian(entry, 4, 4);
        const std::uint64_t size = is64 ? little_endian(entry, 32, 8) : little_endian(entry, 16, 4);
        if (size == 0 || size > 4096) return std::nullopt;
        std::string path(size, '\0');
        if (::pread(fd, path.data(), path.size(), static_cast<off_t>(offset)) !=
            static_cast<ssize_t>(path.size())) {
            return std::nullopt;
        }
        path.resize(path.find('\0') == std::string::npos ? path.size() : path.find('\0'));
        return path;
    }
    return std::string{};
}

// The interpreter a script's "#!" line names, or the loader an ELF executable names, read from
// the file itself: "" when it names none. Opened without following a link and without blocking,
// and only a regular file.
std::optional<std::string> interpreter_of(const std::string &path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    std::array<char, 256> buf{};
    ssize_t n = -1;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = ::pread(fd, buf.data(), buf.size(), 0);
    if (n < 0) {
        ::close(fd);
        return std::nullopt;
    }
    const std::string_view head{buf.data(), static_cast<std::size_t>(n)};
    if (head.substr(0, 4) == kElfMagic) {
        auto loader = elf_loader(fd, head);
        ::close(fd);
        return loader;
    }
    ::close(fd);
    if (head.substr(0, 2) != "#!") return std::string{};
    std::size_t i = 2;
    while (i < head.size() && (head[i] == ' ' || head[i] == '\t')) ++i;
    std::size_t end = i;
    while (end < head.size() && head[end] != ' ' && head[end] != '\t' && head[end] != '\n' &&
           head[end] != '\0') {
        ++end;
    }
    return std::string{head.substr(i, end - i)};
}

}  // namespace

void resolve_named_on_host(Observation &observation, const HostView &view) {
    Walker walker{view, observation};
    // Interpreters found are appended and walked in turn; depth counts the scripts above each.
    std::vector<int> depth(observation.events.size(), 0);
    for (std::size_t i = 0; i < observation.events.size(); ++i) {
        ObservedAccess &e = observation.events[i];
        if (!e.unverified.empty()) continue;
        std::string ran;  // the file an exec ran, where the host shows what the target wrote
        if (!e.path_named.empty()) {
            Walked walked = walker.walk(e.path_named);
            if (!walked.unverified.empty()) {
                e.unverified = std::move(walked.unverified);
                continue;
            }
            e.path_named = walked.path;
            if (walked.shared) ran = std::move(walked.path);
        } else if (!e.path_resolved.empty() && e.path_resolved.front() == '/' &&
                   depth_within(e.path_resolved, view.shared_writable) >
                       depth_within(e.path_resolved, view.view_only)) {
            ran = e.path_resolved;  // a file the observer saw the call make
        }
        // The kernel runs a script's interpreter, or an ELF program's loader (PT_INTERP), without
        // any call the trace shows, and the target chose it in a place it writes: the
        // interpreter is an exec of its own.
        if (e.access != Access::exec || !e.success || ran.empty()) continue;
        const auto interpreter = interpreter_of(ran);
        if (!interpreter || interpreter->empty()) continue;
        ObservedAccess run = e;
        run.path_asked = *interpreter;
        run.path_resolved = *interpreter;
        run.path_named = *interpreter;
        run.unverified.clear();
        if (interpreter->front() != '/') {
            run.path_asked = ran;
            run.unverified = "the script " + ran + " names the interpreter " + *interpreter +
                             " by a relative path";
        } else if (depth[i] + 1 > kMaxInterpreters) {
            run.unverified = "more than four scripts name one another's interpreters";
        }
        observation.events.push_back(std::move(run));
        observation.counts.push_back(1);
        depth.push_back(depth[i] + 1);
    }
}

}  // namespace tea::audit
