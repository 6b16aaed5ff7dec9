#include "audit/judge.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace tea::audit {
namespace {

// What a trie node is to the audit; a path takes the marks of every ancestor-or-self.
enum Mark : std::uint16_t {
    kWorkspace = 1U << 0U,
    kRuntime = 1U << 1U,
    kSystem = 1U << 2U,
    kOs = 1U << 3U,
    kKernelView = 1U << 4U,
    kWritableSystem = 1U << 5U,
    kLogin = 1U << 6U,
    kListed = 1U << 7U,
    kException = 1U << 8U,
    kAboveException = 1U << 9U,  // a strict ancestor of an exception; not inherited
    kCallOwn = 1U << 10U,
    kAboveWorkspace = 1U << 11U,  // a strict ancestor of a workspace-like grant; not inherited
};
constexpr std::uint16_t kReadGrants = kWorkspace | kRuntime | kSystem | kOs | kLogin | kCallOwn;
// Where the target can create files, and so plant links.
constexpr std::uint16_t kWritablePlaces = kWorkspace | kWritableSystem | kCallOwn;
// The grants that decide, inside a place of the call's own, for what lies beneath them.
constexpr std::uint16_t kGrantsInsideOwn =
    kWorkspace | kRuntime | kSystem | kOs | kKernelView | kWritableSystem | kLogin;

// A path keeps the reason of its most serious access.
enum Rank : int {
    kRankRead = 1,
    kRankRefusedWrite = 2,
    kRankWriteGotThrough = 3,
    kRankAlwaysListed = 4,
};

bool well_formed(std::string_view path) {
    return !path.empty() && path.front() == '/' && path.find('\0') == std::string_view::npos;
}

// Splits an absolute path into components with "." and ".." folded lexically and repeated
// slashes dropped; ".." at the root stays at the root, as it does for the kernel. The views point
// into path, which must outlive out.
void split(std::string_view path, std::vector<std::string_view> &out) {
    out.clear();
    std::size_t i = 0;
    while (i < path.size()) {
        if (path[i] == '/') {
            ++i;
            continue;
        }
        std::size_t end = path.find('/', i);
        if (end == std::string_view::npos) end = path.size();
        const std::string_view component = path.substr(i, end - i);
        if (component == "..") {
            if (!out.empty()) out.pop_back();
        } else if (component != ".") {
            out.push_back(component);
        }
        i = end;
    }
}

std::string join(const std::vector<std::string_view> &components) {
    if (components.empty()) return "/";
    std::size_t size = 0;
    for (const auto c : components) size += c.size() + 1;
    std::string path;
    path.reserve(size);
    for (const auto c : components) {
        path += '/';
        path += c;
    }
    return path;
}

bool is_write(Access access) {
    return access == Access::write || access == Access::create || access == Access::remove;
}

// Executing a binary reads it, so exec is judged as a read.
bool is_read(Access access) {
    return access == Access::read || access == Access::exec || access == Access::list ||
           access == Access::readlink;
}

// The answers by which the kernel refuses an access it understood; ENOENT, EEXIST and the like
// mean there was nothing to refuse.
bool is_refusal(std::string_view error) {
    return error == "EROFS" || error == "EACCES" || error == "EPERM";
}

bool is_digits(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// procfs holds links that lead anywhere in the file system: /proc/<pid>/root and cwd, fd/N and
// map_files/*, and the same under task/<tid>/. A path through one (/proc/self/root/root/.ssh/x)
// would otherwise pass as a procfs read; it is never granted as a kernel view. Reading the link
// itself (readlink, stat) does not follow it. /proc/<pid>/exe is left out: it leads only to an
// image a process of the sandbox already executed, which its exec was judged by.
bool through_proc_link(const std::vector<std::string_view> &c, Access access) {
    if (c.size() < 3 || c[0] != "proc") return false;
    if (c[1] != "self" && c[1] != "thread-self" && !is_digits(c[1])) return false;
    std::size_t i = 2;
    if (c[2] == "task" && c.size() >= 5 && is_digits(c[3])) i = 4;
    std::size_t link = 0;
    if (c[i] == "root" || c[i] == "cwd") {
        link = i;
    } else if ((c[i] == "fd" || c[i] == "map_files") && c.size() > i + 1) {
        link = i + 1;
    } else {
        return false;
    }
    const bool names_link_itself = link + 1 == c.size();
    return !(names_link_itself && (access == Access::readlink || access == Access::metadata));
}

// A path that goes through a link standing for a descriptor of the process: /dev/fd/N,
// /dev/stdin, /dev/stdout and /dev/stderr (links into /proc/self/fd in the sandbox's /dev), and
// procfs's own links. Where such a path is the one judged, nobody established the file behind
// it: execve("/dev/fd/3") of an O_PATH descriptor runs whatever 3 names, while the path lies
// under /dev or /proc, which grant reading.
bool through_descriptor_link(const std::vector<std::string_view> &c, Access access) {
    if (c.size() >= 2 && c[0] == "dev") {
        const bool link = (c[1] == "fd" && c.size() >= 3) || c[1] == "stdin" || c[1] == "stdout" ||
                          c[1] == "stderr";
        const bool names_link_itself = c.size() == (c[1] == "fd" ? 3U : 2U);
        return link &&
               !(names_link_itself && (access == Access::readlink || access == Access::metadata));
    }
    return through_proc_link(c, access);
}

std::string_view unverified_reason(Access access) {
    switch (access) {
        case Access::exec:
            return "exec whose file could not be verified: ";
        case Access::list:
            return "directory listing whose directory could not be verified: ";
        case Access::readlink:
            return "link read whose link could not be verified: ";
        default:
            return "read whose file could not be verified: ";
    }
}

std::string_view read_reason(Access access) {
    switch (access) {
        case Access::exec:
            return "exec outside the grants";
        case Access::list:
            return "directory listing outside the grants";
        case Access::readlink:
            return "link read outside the grants";
        default:
            return "read outside the grants";
    }
}

}  // namespace

Grants default_os_grants() {
    Grants grants;
    // The distribution's own files; the target cannot write them, so a link there is the
    // distribution's and the asked path may be trusted.
    grants.os_dirs = {"/usr",   "/bin",    "/sbin", "/lib", "/lib32",
                      "/lib64", "/libx32", "/etc",  "/dev"};
    // The sandbox mounts its own procfs (its pid namespace only) and a /sys cut down to the CPU
    // list, which toolchains read to count CPUs.
    grants.kernel_views = {"/proc", "/sys"};
    // /dev holds null, tty, pts and a private /dev/shm; procfs takes writes to the process's own
    // files (comm, oom_score_adj), while /proc/sys stays read-only and a refusal there is listed.
    grants.writable_system = {"/dev", "/proc"};
    return grants;
}

Judge::Judge(const Grants &grants, std::size_t max_findings) : max_findings_(max_findings) {
    nodes_.emplace_back();
    // A grant of "/" would turn the audit off without anyone noticing; refuse it.
    add(grants.workspace_like, "workspace_like", kWorkspace, true);
    add(grants.call_own, "call_own", kCallOwn, true);
    add(grants.runtime, "runtime", kRuntime, true);
    add(grants.system_paths, "system_paths", kSystem, true);
    add(grants.os_dirs, "os_dirs", kOs, true);
    add(grants.kernel_views, "kernel_views", kKernelView, true);
    add(grants.writable_system, "writable_system", kWritableSystem, true);
    add(grants.read_only_logins, "read_only_logins", kLogin, true);
    add(grants.always_listed, "always_listed", kListed, false);
    add(grants.always_listed_exceptions, "always_listed_exceptions", kException, true);
    asked_.reserve(64);
    real_.reserve(64);
}

void Judge::add(const std::vector<std::string> &paths, const char *field, std::uint16_t mark,
                bool refuse_root) {
    std::vector<std::string_view> components;
    for (const auto &path : paths) {
        if (!well_formed(path)) {
            throw std::invalid_argument(std::string(field) + ": '" + path +
                                        "' is not an absolute path");
        }
        split(path, components);
        if (components.empty() && refuse_root) {
            throw std::invalid_argument(std::string(field) + ": '" + path +
                                        "' names the whole file system");
        }
        std::uint32_t node = 0;
        for (const auto component : components) {
            if (mark == kException) nodes_[node].marks |= kAboveException;
            if (mark == kWorkspace) nodes_[node].marks |= kAboveWorkspace;
            auto &children = nodes_[node].children;
            auto it = std::lower_bound(
                children.begin(), children.end(), component,
                [](const auto &child, std::string_view name) { return child.first < name; });
            if (it != children.end() && it->first == component) {
                node = it->second;
                continue;
            }
            const auto next = static_cast<std::uint32_t>(nodes_.size());
            children.insert(it, {std::string(component), next});
            nodes_.emplace_back();  // invalidates children; not used again this round
            node = next;
        }
        nodes_[node].marks |= mark;
        nodes_[node].path = join(components);
    }
}

Judge::Match Judge::match(const std::vector<std::string_view> &components) const {
    Match m;
    int own_depth = -1;
    int grant_depth = -1;
    const auto visit = [&](std::uint32_t index, int depth) {
        const Node &node = nodes_[index];
        m.marks = static_cast<std::uint16_t>(m.marks |
                                             (node.marks & ~(kAboveException | kAboveWorkspace)));
        if ((node.marks & kListed) != 0) {
            m.listed_depth = depth;
            m.listed_node = index;
        }
        if ((node.marks & kException) != 0) m.exception_depth = depth;
        if ((node.marks & kCallOwn) != 0) own_depth = depth;
        if ((node.marks & kGrantsInsideOwn) != 0) grant_depth = depth;
    };
    // A grant the view binds back inside a place of the call's own (a read-only system path under
    // a /tmp of the call's own) is what the target finds beneath it: the own place's writing
    // grants nothing there, and a write refused there is the mechanism's.
    const auto settle = [&] {
        if (own_depth >= 0 && grant_depth > own_depth) {
            m.marks = static_cast<std::uint16_t>(m.marks & ~kCallOwn);
        }
    };
    std::uint32_t index = 0;
    visit(index, 0);
    int depth = 0;
    for (const auto component : components) {
        const auto &children = nodes_[index].children;
        const auto it = std::lower_bound(
            children.begin(), children.end(), component,
            [](const auto &child, std::string_view name) { return child.first < name; });
        if (it == children.end() || it->first != component) {
            // A name directly inside, or a hidden directory's tree (.claude/, .git/): the
            // private root's own entries (run-*, tea-evaluate-*) are neither.
            m.beside_way_to_workspace =
                (nodes_[index].marks & kAboveWorkspace) != 0 &&
                (depth + 1 == static_cast<int>(components.size()) || component.front() == '.');
            settle();
            return m;
        }
        index = it->second;
        visit(index, ++depth);
    }
    settle();
    m.above_exception = (nodes_[index].marks & kAboveException) != 0;
    return m;
}

namespace {

// Whether an access to a path the match places beneath an always-listed path is listed.
bool lists_always_listed(int listed_depth, int exception_depth, bool above_exception,
                         bool beside_way_to_workspace, const ObservedAccess &a) {
    // A path named both always-listed and excepted stays listed: the safer reading of a mistake.
    if (listed_depth < 0 || listed_depth < exception_depth) return false;
    // Reaching the call's own home or temp directory passes through its ancestors (realpath
    // readlinks each one, module resolution stats them); such probes learn nothing the grant of
    // the directory below did not already tell. Listing or opening an ancestor still counts.
    if (above_exception && (a.access == Access::metadata || a.access == Access::readlink ||
                            a.access == Access::other)) {
        return false;
    }
    // A client looks for its files in every directory above its working directory (Claude Code's
    // CLAUDE.md, .claude/CLAUDE.md and AGENTS.md, package.json, .git). Beside the way down to a
    // workspace-like grant the cover holds nothing, so such a name is absent by construction and
    // its failed open learns nothing. A name deeper that is not hidden (another run's home) is
    // still listed, and so is any access that found something.
    if (beside_way_to_workspace && !a.success && a.error == "ENOENT") {
        return false;
    }
    // `mkdir -p "$HOME/x"` makes each ancestor from the root down: one that exists answers EEXIST,
    // which tells only that it is there, as the home's own path does. Anything else is listed.
    if (above_exception && a.access == Access::create && !a.success && a.error == "EEXIST") {
        return false;
    }
    // A failed stat learns only that a name is absent, and walk-ups (module resolution, git's
    // repository discovery) make such probes with no intent. A successful one is listed: the size
    // and times of a grading file are an oracle on its content.
    return !(a.access == Access::metadata && !a.success);
}

}  // namespace

void Judge::observe(const ObservedAccess &a) {
    // A path that is empty, relative or cut by a NUL cannot be judged; it is counted rather than
    // guessed at, so the caller can treat the audit as lossy instead of passing the run.
    if (!well_formed(a.path_asked) || a.path_resolved.find('\0') != std::string::npos) {
        ++malformed_;
        return;
    }
    split(a.path_asked, asked_);
    // A resolved name that is not absolute is a pipe, socket, anonymous inode or namespace reached
    // through /proc/self/fd or /dev/std*: no file of the file system was touched.
    const bool resolved_known = !a.path_resolved.empty();
    const bool is_file = !resolved_known || a.path_resolved.front() == '/';
    if (resolved_known && is_file) split(a.path_resolved, real_);
    // Without a resolved path the asked one is the best knowledge of the real one (it is what
    // the observer falls back to as well).
    const std::vector<std::string_view> &real = resolved_known && is_file ? real_ : asked_;

    const Match asked_match = match(asked_);
    const Match real_match = is_file ? match(real) : Match{};

    // Always-listed paths are checked on both paths: a link under /etc (or in the workspace) into
    // the evaluation folder reaches the grading material whichever path the process named, and a
    // link inside the evaluation folder shows the process went there.
    const bool listed_real =
        is_file &&
        lists_always_listed(real_match.listed_depth, real_match.exception_depth,
                            real_match.above_exception, real_match.beside_way_to_workspace, a);
    const bool listed_asked =
        lists_always_listed(asked_match.listed_depth, asked_match.exception_depth,
                            asked_match.above_exception, asked_match.beside_way_to_workspace, a);
    if (listed_real || listed_asked) {
        // The path inside the always-listed folder is the one reported: a granted file reached
        // through a link there would otherwise read as harmless.
        const Match &m = listed_real ? real_match : asked_match;
        record(listed_real ? real : asked_, kRankAlwaysListed, "access to always-listed ",
               nodes_[m.listed_node].path, a, !a.success && is_refusal(a.error));
        return;
    }

    // An access nobody could place is never presumed to be inside the grants.
    if (!a.unverified.empty() && a.success && is_read(a.access)) {
        record(asked_, kRankRead, unverified_reason(a.access), a.unverified, a, false);
        return;
    }
    if (!a.path_named.empty() && a.path_named != a.path_resolved) {
        // What the asked path names is judged as well: the file an exec ran, or the file an open
        // in a shared descriptor table asked for when the descriptor may have been swapped.
        ObservedAccess named = a;
        named.path_asked = a.path_named;
        named.path_resolved = a.path_named;
        named.path_named.clear();
        observe(named);
        // The asked path's own components were rewritten by the call above.
        split(a.path_asked, asked_);
        if (resolved_known && is_file) split(a.path_resolved, real_);
    }

    if (is_write(a.access)) {
        if (!is_file) return;
        if (a.success) {
            // The confinement lets the target write only in these places; a write that got
            // through elsewhere shows it did not hold.
            if ((real_match.marks & kWritablePlaces) != 0) return;
            record(real, kRankWriteGotThrough, "write outside the writable grants", {}, a, false);
            return;
        }
        if (!is_refusal(a.error)) return;
        // The confinement allows writing here, so a refusal comes from the file's own mode (a
        // read-only object in a git checkout), not from the mechanism.
        if ((real_match.marks & (kWorkspace | kCallOwn)) != 0) return;
        // A CLI that refreshes a read-only login is expected to be refused.
        if ((real_match.marks & kLogin) != 0) return;
        // A refused write is an attempt on what the confinement protects, even under /etc.
        record(real, kRankRefusedWrite, "write refused by the confinement", {}, a, true);
        return;
    }

    // Metadata probes and O_PATH-style accesses read no content. A failed read took nothing: the
    // mechanism withholds by absence (ENOENT), and a read the permissions refused got no byte.
    if (!is_read(a.access) || !a.success || !is_file) return;

    // A path through a descriptor link is the file nobody named: the link's place grants nothing.
    if (through_descriptor_link(real, a.access)) {
        record(real, kRankRead, unverified_reason(a.access),
               "it goes through a descriptor link the observer cannot follow", a, false);
        return;
    }

    // The real path decides first, so a link the target planted in its workspace is judged by
    // where it leads and borrows nothing from the workspace grant.
    if ((real_match.marks & kReadGrants) != 0) return;
    if ((real_match.marks & kKernelView) != 0 && !through_proc_link(real, a.access)) return;
    // Under the OS directories the asked path decides as well, so a system file the distribution
    // links elsewhere (/etc/resolv.conf into /run) is not listed. Not where the target can write
    // (/dev/shm, /dev/tea-evaluate-tmp): a link it planted there must not borrow the OS's trust.
    if ((asked_match.marks & kOs) != 0 && (asked_match.marks & kWritablePlaces) == 0) return;

    record(real, kRankRead, read_reason(a.access), {}, a, false);
}

void Judge::record(const std::vector<std::string_view> &components, int rank,
                   std::string_view reason, std::string_view detail, const ObservedAccess &a,
                   bool refused) {
    std::string path = join(components);
    auto it = entries_.find(path);
    if (it == entries_.end()) {
        // A bound on memory against a target that names millions of paths; past it the run has
        // far more findings than a pass allows, so dropping new paths changes no verdict.
        if (entries_.size() >= max_findings_) {
            ++omitted_;
            return;
        }
        it = entries_.emplace(path, Entry{}).first;
        it->second.finding.path = std::move(path);
    }
    Entry &entry = it->second;
    Finding &finding = entry.finding;
    if (rank > entry.rank) {
        entry.rank = rank;
        finding.reason.assign(reason);
        finding.reason.append(detail);
    }
    if (std::find(finding.syscalls.begin(), finding.syscalls.end(), a.syscall) ==
        finding.syscalls.end()) {
        finding.syscalls.push_back(a.syscall);
    }
    ++finding.count;
    finding.refused = finding.refused || refused;
}

std::vector<Finding> Judge::findings() const {
    std::vector<Finding> out;
    out.reserve(entries_.size());
    for (const auto &[path, entry] : entries_) out.push_back(entry.finding);
    return out;
}

}  // namespace tea::audit
