#include "profile.hpp"

#include <algorithm>
#include <string_view>

#include "sbpl_string.hpp"

namespace tea::seatbelt {

const std::vector<std::string> &system_roots() {
    static const std::vector<std::string> roots{
        "/System",
        "/usr",
        "/bin",
        "/sbin",
        "/dev",
        "/private/etc",
        "/Library/Apple",
        "/private/var/db/timezone",
        "/Library/Preferences/Logging",
        "/Library/Perl",
        "/Library/Python",
        "/Library/Ruby",
        "/private/var/db/dyld",
    };
    return roots;
}

const std::vector<std::string> &system_sockets() {
    static const std::vector<std::string> sockets{"/private/var/run/mDNSResponder",
                                                  "/private/var/run/syslog"};
    return sockets;
}

namespace {

// The operations of a file the read grants open and the withheld paths close.
constexpr std::string_view kFileReadOps = "file-read* process-exec file-map-executable";
constexpr std::string_view kRemoteSocket = "remote unix-socket";
constexpr std::string_view kLocalSocket = "local unix-socket";
constexpr std::string_view kFileAllOps = "file-read* file-write* process-exec file-map-executable";

class Writer {
   public:
    explicit Writer(std::string &out) : out_(out) {}

    void line(std::string_view text) {
        out_ += text;
        out_ += '\n';
    }
    void comment(std::string_view text) {
        out_ += ";; ";
        line(text);
    }
    // (verb ops (kind "path") ...), one filter a line; nothing when `paths` is empty, since an
    // SBPL rule without a filter would match every path.
    // `around` wraps each filter, as the socket rules' (remote unix-socket (path-literal "p")).
    void rule(std::string_view verb, std::string_view ops, std::string_view kind,
              const std::vector<std::string> &paths, std::string_view what,
              std::string_view around = {}) {
        if (paths.empty()) {
            return;
        }
        out_ += '(';
        out_ += verb;
        out_ += ' ';
        out_ += ops;
        for (const auto &p : paths) {
            out_ += "\n    (";
            if (!around.empty()) {
                out_ += around;
                out_ += " (";
            }
            out_ += kind;
            out_ += ' ';
            out_ += sbpl_string(p, what);
            out_ += around.empty() ? ")" : "))";
        }
        line(")");
    }

   private:
    std::string &out_;
};

void add(std::vector<std::string> &to, const std::string &path) {
    if (!path.empty() && std::find(to.begin(), to.end(), path) == to.end()) {
        to.push_back(path);
    }
}

std::vector<std::string> present(std::initializer_list<std::string> paths) {
    // Each once, in order; an empty one (a directory the call does not have) left out.
    std::vector<std::string> out;
    for (const auto &p : paths) {
        add(out, p);
    }
    return out;
}

bool inside(const std::string &path, const std::string &dir) {
    if (dir.empty() || path.size() < dir.size() || path.compare(0, dir.size(), dir) != 0) {
        return false;
    }
    return path.size() == dir.size() || dir.back() == '/' || path[dir.size()] == '/';
}

std::string parent_of(const std::string &path) {
    const auto slash = path.find_last_of('/');
    return slash == 0 || slash == std::string::npos ? std::string{"/"} : path.substr(0, slash);
}

void process_rules(Writer &w) {
    w.line("(version 1)");
    w.comment("Everything not allowed below is refused (EPERM).");
    w.line("(deny default)");
    w.line("(allow process-fork)");
    w.line("(allow process-info* (target same-sandbox))");
    w.line("(allow signal (target same-sandbox))");
    w.line("(allow sysctl-read)");
    w.line("(allow pseudo-tty)");
    w.line("(allow file-ioctl)");
    w.line("(allow ipc-posix-sem)");
    w.line("(allow ipc-posix-shm)");
    w.comment("Mach services are a channel of their own, allowed or refused as a whole: closing");
    w.comment("them would stop name lookups and the system's frameworks (see docs/macos.md).");
    w.line("(allow mach-lookup)");
}

void read_grants(Writer &w, const ProfileRequest &r, const std::vector<std::string> &outside) {
    w.comment("Metadata answers everywhere (lookups, stat); data only where granted below.");
    w.line("(allow file-read-metadata)");
    w.comment("The root directory itself, which a shell lists to find its way.");
    w.line("(allow file-read-data (literal \"/\"))");
    w.rule("allow", kFileReadOps, "subpath", system_roots(), "system root");
    w.rule("allow", kFileReadOps, "subpath", r.system_paths, "systemPaths");
    if (!r.runtime_prefix.empty() && r.runtime_prefix != "/") {
        w.rule("allow", kFileReadOps, "subpath", {r.runtime_prefix}, "runtime");
    }
    w.rule("allow", kFileReadOps, "subpath", outside, "read-only");
    w.rule("allow", kFileAllOps, "subpath", {r.workspace}, "workspace");
    w.comment("The devices a shell writes.");
    w.rule("allow", "file-write-data", "literal",
           {"/dev/null", "/dev/zero", "/dev/tty", "/dev/dtracehelper"}, "device");
    w.rule("allow", "file-write-data", "subpath", {"/dev/fd"}, "device");
}

void private_root_rules(Writer &w, const ProfileRequest &r,
                        const std::vector<std::string> &inside_root) {
    if (r.private_root.empty()) {
        return;
    }
    w.comment("The user's private root: every run's private parent, other trials' homes, the");
    w.comment("bridge's token. Closed whole; the call's own directories granted back below.");
    w.rule("deny", kFileAllOps, "subpath", {r.private_root}, "private root");
    w.comment("Their metadata answers (realpath, mkdir -p, cd resolve); their listing does not.");
    // A run's trial keeps its workspace in the run's directory too.
    const bool workspace_inside = inside(r.workspace, r.private_root);
    auto parents = present({r.private_root, r.run_dir});
    if (workspace_inside) {
        add(parents, parent_of(r.workspace));
    }
    w.rule("allow", "file-read-metadata", "literal", parents, "private root");
    w.rule("allow", kFileAllOps, "subpath",
           present({r.home, r.temp_dir, r.bridge_dir, workspace_inside ? r.workspace : ""}),
           "call directory");
    std::vector<std::string> readable = inside_root;
    if (!r.egress_socket.empty()) {
        add(readable, parent_of(r.egress_socket));
    }
    w.rule("allow", kFileReadOps, "subpath", readable, "read-only");
}

// The directories, from each writable grant down to the parent of each closed path strictly
// inside it, that must stay where they are. Top-down, each once.
std::vector<std::string> pinned_directories(const ProfileRequest &r) {
    std::vector<std::string> out;
    const auto writable = present({r.workspace, r.home, r.temp_dir, r.bridge_dir});
    for (const auto *closed : {&r.withhold, &r.read_only}) {
        for (const auto &path : *closed) {
            for (const auto &grant : writable) {
                if (path == grant || !inside(path, grant)) {
                    continue;
                }
                std::vector<std::string> chain;
                for (auto dir = parent_of(path); inside(dir, grant); dir = parent_of(dir)) {
                    chain.push_back(dir);
                    if (dir == grant) {
                        break;
                    }
                }
                for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
                    add(out, *it);
                }
            }
        }
    }
    return out;
}

void network_rules(Writer &w, const ProfileRequest &r) {
    w.comment("No network but what follows: connect() to every Unix socket path refused, the");
    w.comment("call's own and two system services allowed back. Seatbelt matches the socket's");
    w.comment("real path, so a link to a socket outside these is refused too.");
    w.line("(deny network*)");
    w.rule("allow", "network-outbound", "path-literal", system_sockets(), "system socket",
           kRemoteSocket);
    auto writable = present({r.workspace, r.temp_dir, r.home, r.bridge_dir});
    w.rule("allow", "network-outbound", "subpath", writable, "call directory", kRemoteSocket);
    w.rule("allow", "network-bind", "subpath", writable, "call directory", kLocalSocket);
    if (!r.egress_socket.empty()) {
        w.comment("The route out: the shim listens on its loopback port and carries each");
        w.comment("connection to the call's proxy socket; nothing else leaves.");
        w.rule("allow", "network-outbound", "path-literal", {r.egress_socket}, "egress socket",
               kRemoteSocket);
        const std::string port = "\"localhost:" + std::to_string(r.egress_port) + "\"";
        w.line("(allow network-bind (local ip " + port + "))");
        w.line("(allow network-inbound (local ip " + port + "))");
        w.line("(allow network-outbound (remote ip " + port + "))");
    }
    w.comment("A socket inside a withheld path stays closed, whatever grant holds it.");
    w.rule("deny", "network-outbound", "subpath", r.withhold, "withheld", kRemoteSocket);
}

}  // namespace

std::string target_profile(const ProfileRequest &r) {
    // Every path is checked before anything is written, so a refusal names the first bad one
    // whatever rule would have carried it.
    check_path(r.workspace, "workspace");
    std::vector<std::string> outside_root;
    std::vector<std::string> inside_root;
    for (const auto &p : r.read_only) {
        add(inside(p, r.private_root) ? inside_root : outside_root, p);
    }
    std::string out;
    out.reserve(4096 + 96 * (r.system_paths.size() + r.read_only.size() + r.withhold.size()));
    Writer w{out};
    process_rules(w);
    read_grants(w, r, outside_root);
    private_root_rules(w, r, inside_root);
    w.comment("Read-only grants stay unwritable, even inside the workspace.");
    w.rule("deny", "file-write*", "subpath", r.read_only, "read-only");
    w.comment("Withheld: the evaluation folder and the project's git directory. Last, so no");
    w.comment("grant above reaches into them.");
    w.rule("deny", kFileAllOps, "subpath", r.withhold, "withheld");
    // Rules name paths, not files: renaming the workspace (into the home, say) or a directory
    // between it and a withheld or read-only path would carry that path out from under its rule.
    if (const auto pinned = pinned_directories(r); !pinned.empty()) {
        w.comment("The directories that hold a closed path inside a writable grant cannot be");
        w.comment("renamed or removed, so the closed path stays where its rule names it.");
        w.rule("deny", "file-write-unlink", "literal", pinned, "pinned directory");
    }
    network_rules(w, r);
    return out;
}

std::string grader_profile(const std::vector<std::string> &read_only) {
    std::string out;
    Writer w{out};
    w.line("(version 1)");
    w.comment("The evaluation layer keeps the host, but cannot write what it is graded by.");
    w.line("(allow default)");
    w.rule("deny", "file-write*", "subpath", read_only, "read-only");
    return out;
}

}  // namespace tea::seatbelt
