// The bubblewrap backend: a launch spec in, an exec plan out that runs the
// target under bwrap with its own user, pid, network, ipc and uts namespaces,
// a read-only view of /, and the call's directories bound in. Nothing runs in
// prepare; probe confines a trivial process to prove the host allows it.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <tea/json_bytes.hpp>
#include <tea/plugin.hpp>
#include <tea/program_path.hpp>
#include <tea/stamp.hpp>
#include <utility>

#include "fd.hpp"
#include "host_sockets.hpp"
#include "identity.hpp"
#include "paths.hpp"
#include "private_temp.hpp"
#include "seccomp_program.hpp"  // generated from helper/seccomp_rules.cpp at build time

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tea::bwrap::Identity;
using tea::bwrap::inside;
using tea::bwrap::normal;

constexpr int env_fd = 10;   // the target's environment, read by the helper
constexpr int args_fd = 11;  // bwrap's arguments, so no command line limits or shows them
// The helper, open: the sandbox identity runs it through /proc/self/fd even
// when it may not search the directories the runtime is installed in.
constexpr int helper_fd = 12;
constexpr const char *helper_in_sandbox = "/proc/self/fd/12";
constexpr const char *temp_mount = "/dev/tea-evaluate-tmp";
// The host's temp directories, which every user and service may fill: each is the call's own in the
// view (src/private_temp.hpp).
constexpr std::array<const char *, 2> host_temp_dirs{"/tmp", "/var/tmp"};
// The egress shim, open, for the same reason as the helper (a call that lists egress hosts only).
constexpr int shim_fd = 13;
constexpr const char *shim_in_sandbox = "/proc/self/fd/13";
// The seccomp program, for bwrap's --seccomp when bwrap starts the audited call's holder.
constexpr int seccomp_fd = 14;
// The plan's setup mark: bwrap (--block-fd) or the view builder takes its byte once the view is
// built and the privileges are dropped, just before the seccomp program and the exec, so a call
// that ends with the byte unread failed in the set-up, not in the target.
constexpr int setup_mark_fd = 15;
// (ABI 1.4) The hand-off between the holder inside the sandbox and the helper that joins it: the
// holder's end, and the end of the plan's own process.
constexpr int holder_handoff_fd = 16;
constexpr int handoff_fd = 17;
// The view builder (view/view.cpp), open like the helper, and the view it builds: when bwrap starts
// the target, the view's mounts are made by the builder inside the namespaces bwrap made.
constexpr int view_fd = 18;
constexpr int view_builder_fd = 19;
constexpr const char *view_builder_in_sandbox = "/proc/self/fd/19";

struct Settings {
    std::string bwrap = "bwrap";
    std::string sandbox_user = "tea-sandbox";
    std::uint64_t cpu_seconds = 3600;
    std::uint64_t file_size_bytes = std::uint64_t{4} << 30U;
    // RLIMIT_NPROC counts every process of the identity on the host, so calls side by side (and
    // the observer's own fork) starve each other: off unless asked for. The runtime's per-call
    // process budget (a pids cgroup, [budgets] processes) bounds a call instead.
    std::uint64_t processes = 0;
    std::uint64_t tmpfs_bytes = std::uint64_t{256} << 20U;
    std::uint64_t call_dir_bytes = std::uint64_t{1} << 30U;
    std::size_t max_socket_masks = 1024;
    std::size_t socket_walk_entries = 50000;
    std::vector<std::string> socket_dirs{"/run", "/var/run", "/tmp", "/var/tmp"};
    std::vector<std::string> sys_paths{"/sys/devices/system/cpu"};
};

Settings parse_settings(std::string_view text) {
    const auto doc = json::parse(text, nullptr, false);
    if (!doc.is_object()) {
        throw tea::sdk::Invalid("[plugin.bubblewrap] must be a table");
    }
    Settings s;
    auto number = [&](const std::string &key, auto &out, std::uint64_t min) {
        const auto &v = doc[key];
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() < min) {
            throw tea::sdk::Invalid("plugin.bubblewrap." + key +
                                    ": expected an integer >= " + std::to_string(min));
        }
        out = static_cast<std::remove_reference_t<decltype(out)>>(v.get<std::uint64_t>());
    };
    auto strings = [&](const std::string &key, std::vector<std::string> &out) {
        const auto &v = doc[key];
        if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const json &i) {
                return i.is_string() && !i.get<std::string>().empty() &&
                       i.get<std::string>()[0] == '/';
            })) {
            throw tea::sdk::Invalid("plugin.bubblewrap." + key +
                                    ": expected an array of absolute paths");
        }
        out = v.get<std::vector<std::string>>();
    };
    for (const auto &[key, value] : doc.items()) {
        if (key == "bwrap" || key == "sandbox_user") {
            if (!value.is_string() || value.get<std::string>().empty()) {
                throw tea::sdk::Invalid("plugin.bubblewrap." + key + ": expected a string");
            }
            (key == "bwrap" ? s.bwrap : s.sandbox_user) = value.get<std::string>();
        } else if (key == "cpu_seconds") {
            number(key, s.cpu_seconds, 0);
        } else if (key == "file_size_bytes") {
            number(key, s.file_size_bytes, 0);
        } else if (key == "processes") {
            number(key, s.processes, 0);
        } else if (key == "tmpfs_bytes") {
            number(key, s.tmpfs_bytes, 4096);
        } else if (key == "call_dir_bytes") {
            number(key, s.call_dir_bytes, 4096);
        } else if (key == "max_socket_masks") {
            number(key, s.max_socket_masks, 0);
        } else if (key == "socket_walk_entries") {
            number(key, s.socket_walk_entries, 1);
        } else if (key == "socket_dirs") {
            strings(key, s.socket_dirs);
        } else if (key == "sys_paths") {
            strings(key, s.sys_paths);
        } else {
            throw tea::sdk::Invalid("plugin.bubblewrap." + key +
                                    ": unknown key (known: bwrap, sandbox_user, cpu_seconds, "
                                    "file_size_bytes, processes, tmpfs_bytes, call_dir_bytes, "
                                    "max_socket_masks, "
                                    "socket_walk_entries, socket_dirs, sys_paths)");
        }
    }
    return s;
}

std::string find_program(const std::string &name) {
    if (name.find('/') != std::string::npos) {
        return ::access(name.c_str(), X_OK) == 0 ? name : std::string{};
    }
    for (const char *dir : {"/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin"}) {
        auto candidate = std::string{dir} + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
    }
    return {};
}

// The helpers ship beside this plugin: <prefix>/lib/tea-evaluate/plugins/x.so
// and <prefix>/libexec/tea-evaluate/<name>.
std::string libexec_path(const char *name) {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void *>(&libexec_path), &info) == 0 ||
        info.dli_fname == nullptr) {
        return {};
    }
    const auto prefix =
        fs::path{info.dli_fname}.parent_path().parent_path().parent_path().parent_path();
    return (prefix / "libexec" / "tea-evaluate" / name).string();
}

std::string helper_path() {
    return libexec_path("tea-sandbox-helper");
}
std::string view_builder_path() {
    return libexec_path("tea-sandbox-view");
}

// The directories strictly between a writable root and `path` beneath it, outermost first: the
// ones a target could rename to carry `path` away from its cover.
std::vector<std::string> directories_between(const std::string &root, const std::string &path) {
    std::vector<std::string> out;
    const auto r = normal(root);
    const auto p = normal(path);
    if (!inside(p.string(), r.string()) || p == r) {
        return out;
    }
    fs::path at = r;
    for (const auto &part : p.lexically_relative(r)) {
        at /= part;
        if (at != p) {
            out.push_back(at.string());
        }
    }
    return out;
}

// A quote, a backslash or a control character in a path the confinement is
// built from: refused, so no layer ever has to quote or escape it.
void check_path(const std::string &path, const std::string &what) {
    for (const char ch : path) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\'' || c == '\\' || c < 0x20 || c == 0x7f) {
            throw tea::sdk::Unavailable(
                "the " + what +
                " path holds a quote, a backslash or a "
                "control character, which the confinement refuses to "
                "carry: " +
                json(path).dump(-1, ' ', true, json::error_handler_t::replace) + "; rename it");
        }
    }
    if (path.empty() || path[0] != '/') {
        throw tea::sdk::Unavailable("the " + what + " path is not absolute: " + path);
    }
}

std::string env_value(const std::vector<std::string> &env, std::string_view name) {
    std::string out;
    for (const auto &e : env) {
        if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 &&
            e[name.size()] == '=') {
            out = e.substr(name.size() + 1);
        }
    }
    return out;
}

void set_env(std::vector<std::string> &env, std::string_view name, const std::string &value) {
    std::erase_if(env, [&](const std::string &e) {
        return e.size() > name.size() && e.compare(0, name.size(), name) == 0 &&
               e[name.size()] == '=';
    });
    env.push_back(std::string{name} + "=" + value);
}

// The lent tree `path` lies in, or nullptr.
const tea::bwrap::LentTree *tree_of(const std::vector<tea::bwrap::LentTree> &lent,
                                    const fs::path &path) {
    const auto it = std::find_if(lent.begin(), lent.end(), [&](const tea::bwrap::LentTree &t) {
        return tea::bwrap::in_tree(t, path);
    });
    return it != lent.end() ? &*it : nullptr;
}

// The first directory on the way to `path` that `who` cannot search in the call's view: below
// the top of a lent tree for a path in one, every ancestor otherwise.
std::optional<fs::path> unreachable(const fs::path &path, const Identity &who,
                                    const std::vector<tea::bwrap::LentTree> &lent) {
    const auto *tree = tree_of(lent, path);
    return tree != nullptr ? tea::bwrap::unreachable_in_tree(*tree, path, who)
                           : tea::bwrap::unreachable_ancestor(path, who);
}

// The path execvp (bwrap's, with the target's PATH) will name when it starts the target, as the
// trace shows it (tea/program_path.hpp searches as execvp does), judged as the identity that will
// exec it in the call's view. Empty when there is none: the caller then keeps a launcher, whose
// own "not found" the target's exit status reports. A view that differs from the host (a PATH
// entry under a withheld folder) makes the exec name another path; the audit then never sees the
// target start and marks the call incomplete: it fails closed.
std::string exec_path(const std::string &argv0, const std::vector<std::string> &env,
                      const std::string &cwd, const Identity &who,
                      const std::vector<tea::bwrap::LentTree> &lent,
                      const tea::bwrap::PrivateTemp &private_temp) {
    // As the identity that will exec it: root may run what the sandbox account may not reach.
    const auto executable = [&](const std::string &candidate) {
        const auto on_host = candidate[0] == '/' ? candidate : cwd + "/" + candidate;
        struct stat st {};
        // A program the host keeps in its /tmp outside the call's grants is not in the view.
        if (private_temp.hides(on_host) || ::stat(on_host.c_str(), &st) != 0) {
            return ENOENT;
        }
        if (!S_ISREG(st.st_mode)) {
            return EACCES;
        }
        if (!who.dropped) {
            return ::access(on_host.c_str(), X_OK) == 0 ? 0 : EACCES;
        }
        if (const auto *tree = tree_of(lent, on_host)) {
            st = tea::bwrap::seen_in(*tree, st, who);
        }
        const mode_t run = st.st_uid == who.uid   ? S_IXUSR
                           : st.st_gid == who.gid ? S_IXGRP
                                                  : S_IXOTH;
        return (st.st_mode & run) != 0 && !unreachable(fs::path{on_host}.parent_path(), who, lent)
                   ? 0
                   : EACCES;
    };
    const bool has_path = std::any_of(
        env.begin(), env.end(), [](const std::string &e) { return e.rfind("PATH=", 0) == 0; });
    const std::string path = has_path ? env_value(env, "PATH") : std::string{};
    return tea::program_path::resolve(
               argv0, has_path ? std::optional<std::string_view>{path} : std::nullopt, executable)
        .path;
}

// The seccomp program (compiled from the rules at build time) as bwrap reads it: raw sock_filter
// records.
json seccomp_bytes() {
    const auto &program = tea::helper::generated::seccomp_program;
    return tea::bytes::to_json(std::string_view{reinterpret_cast<const char *>(program),
                                                sizeof program});  // NOLINT: raw bytes
}

struct Spec {
    std::string role;  // "target" or "grader"
    std::vector<std::string> argv, env, withhold, read_only, system_paths;
    std::vector<std::pair<std::string, std::string>> read_only_over;  // {source, destination}
    std::string cwd, workspace, temp_dir, home;
    std::vector<std::string> unmade;  // (ABI 1.3) of temp_dir and home, those not on the host
    std::uint64_t cpu = 0, fsize = 0, nproc = 0;
    std::string egress_socket, egress_shim;  // empty: the call has no route out
    std::uint16_t egress_port = 0;
    bool observed = false;  // (ABI 1.4) an observer wraps the plan
    bool staged = false;    // (ABI 1.5) the host starts the process before the plan is complete
    // (ABI 1.6) The identity the host took for this call's target alone: {uid, gid}.
    std::optional<std::pair<unsigned, unsigned>> identity;
};

Spec parse_spec(std::string_view text) {
    const auto doc = json::parse(text);
    Spec s;
    namespace b = tea::bytes;
    s.role = "target";  // a spec from before roles existed
    if (doc.contains("role")) {
        const auto &role = doc["role"];
        // An unknown role must never run under some other view than the one it asked for.
        if (!role.is_string() || (role != "target" && role != "grader")) {
            throw tea::sdk::Invalid(R"(role: expected "target" or "grader", got )" +
                                    role.dump(-1, ' ', true, json::error_handler_t::replace));
        }
        s.role = role.get<std::string>();
    }
    s.argv = b::list_from_json(doc.at("argv"), "argv");
    s.env = b::list_from_json(doc.at("env"), "env");
    s.cwd = b::from_json(doc.at("cwd"), "cwd");
    s.workspace = b::from_json(doc.at("workspace"), "workspace");
    s.temp_dir = b::from_json(doc.at("tempDir"), "tempDir");
    s.home = b::from_json(doc.at("home"), "home");
    s.withhold = b::list_from_json(doc.at("withhold"), "withhold");
    s.read_only = b::list_from_json(doc.at("readOnly"), "readOnly");
    s.system_paths = b::list_from_json(doc.at("systemPaths"), "systemPaths");
    if (doc.contains("unmade")) {
        s.unmade = b::list_from_json(doc.at("unmade"), "unmade");
        for (const auto &u : s.unmade) {
            if (u.empty() || (u != s.temp_dir && u != s.home)) {
                throw tea::sdk::Invalid("unmade: " + u + " is neither the tempDir nor the home");
            }
        }
    }
    if (doc.contains("readOnlyOver")) {
        const auto &over = doc.at("readOnlyOver");
        if (!over.is_array()) {
            throw tea::sdk::Invalid("readOnlyOver: expected an array");
        }
        for (const auto &o : over) {
            if (!o.is_object()) {
                throw tea::sdk::Invalid(
                    R"(readOnlyOver: expected {"source", "destination"} items)");
            }
            s.read_only_over.emplace_back(
                b::from_json(o.at("source"), "readOnlyOver.source"),
                b::from_json(o.at("destination"), "readOnlyOver.destination"));
        }
    }
    const auto &limits = doc.at("limits");
    s.cpu = limits.value("cpuSeconds", std::uint64_t{0});
    s.fsize = limits.value("fileSizeBytes", std::uint64_t{0});
    s.nproc = limits.value("processes", std::uint64_t{0});
    if (doc.contains("egress")) {
        const auto &egress = doc.at("egress");
        s.egress_socket = b::from_json(egress.at("socket"), "egress.socket");
        s.egress_shim = b::from_json(egress.at("shim"), "egress.shim");
        const auto port = egress.at("port").get<std::uint64_t>();
        if (port == 0 || port > 65535) {
            throw tea::sdk::Invalid("egress.port: expected a port from 1 to 65535");
        }
        s.egress_port = static_cast<std::uint16_t>(port);
    }
    if (doc.contains("observed")) {
        if (!doc.at("observed").is_boolean()) {
            throw tea::sdk::Invalid("observed: expected a boolean");
        }
        s.observed = doc.at("observed").get<bool>();
    }
    if (doc.contains("staged")) {
        if (!doc.at("staged").is_boolean()) {
            throw tea::sdk::Invalid("staged: expected a boolean");
        }
        s.staged = doc.at("staged").get<bool>();
    }
    if (doc.contains("identity")) {
        const auto &identity = doc.at("identity");
        const auto id = [&](const char *key) {
            // Root's ids would give the target the host's files back.
            if (!identity.is_object() || !identity.contains(key) ||
                !identity.at(key).is_number_unsigned() ||
                identity.at(key).get<std::uint64_t>() == 0 ||
                identity.at(key).get<std::uint64_t>() > 0xFFFFFFFEU) {
                throw tea::sdk::Invalid(
                    "identity: expected {\"uid\", \"gid\"}, each an unprivileged id");
            }
            return identity.at(key).get<unsigned>();
        };
        s.identity.emplace(id("uid"), id("gid"));
    }
    return s;
}

// The host's temp directories as the call's view has them: each replaced, unless a place the view
// shows at its host path holds it.
tea::bwrap::PrivateTemp private_temp_of(const Spec &spec, const std::string &egress_dir) {
    std::vector<std::string> shown{spec.workspace, spec.home, egress_dir};
    shown.insert(shown.end(), spec.system_paths.begin(), spec.system_paths.end());
    shown.insert(shown.end(), spec.read_only.begin(), spec.read_only.end());
    return tea::bwrap::PrivateTemp{{host_temp_dirs.begin(), host_temp_dirs.end()},
                                   std::move(shown)};
}

// What runs bwrap: the helper dropping to the sandbox identity when the
// runtime is root, nothing otherwise.
std::vector<std::string> identity_prefix(const std::string &helper, const Identity &identity) {
    if (!identity.dropped) {
        return {};
    }
    return {helper,  "drop",
            "--uid", std::to_string(identity.uid),
            "--gid", std::to_string(identity.gid),
            "--"};
}

// The namespaces and process options of every target's bwrap. The UTS namespace is not among them:
// a target's argument stream ends with it (see target_args_file). No --die-with-parent: the
// sandbox's first process is always the plugin's own init, which ends the sandbox once the runtime
// is gone (tea/namespace_init.hpp), and bwrap, ending with it, must not die sooner: killed between
// its clone and releasing its child, it would leave that child blocked for ever.
std::vector<std::string> namespace_options() {
    return {"--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net",
            "--unshare-cgroup-try",
            // A new session: no controlling terminal to push input into.
            "--new-session"};
}

// What bwrap gives the view builder: the call's uid 0 with the three capabilities it needs, to
// mount, to map the target's identity onto that uid, and to forbid further user namespaces. The
// builder drops all three, and every other, before the target starts.
std::vector<std::string> view_builder_privileges() {
    return {"--uid",         "0",         "--gid",       "0",         "--cap-add",
            "CAP_SYS_ADMIN", "--cap-add", "CAP_SETFCAP", "--cap-add", "CAP_SYS_RESOURCE"};
}

// The view builder's command line before the target's argv: it reads the view at view_fd, takes
// the setup mark and runs `exec` as `identity`, which the call's uid 0 stands for on the host.
std::vector<std::string> view_builder_command(const Identity &identity, const std::string &exec) {
    return {view_builder_in_sandbox,
            "--view-fd",
            std::to_string(view_fd),
            "--setup-mark",
            std::to_string(setup_mark_fd),
            "--uid",
            std::to_string(identity.uid),
            "--gid",
            std::to_string(identity.gid),
            "--exec",
            exec,
            "--"};
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string> &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

class Bubblewrap {
   public:
    Bubblewrap(tea::sdk::Host host, std::string_view config)
        : host_(host), settings_(parse_settings(config)) {}

    void probe() const {
        const auto bwrap = find_program(settings_.bwrap);
        if (bwrap.empty()) {
            throw tea::sdk::Unavailable(bwrap_missing());
        }
        const auto helper = helper_path();
        const auto view_builder = view_builder_path();
        for (const auto &program : {helper, view_builder}) {
            if (program.empty() || ::access(program.c_str(), X_OK) != 0) {
                throw tea::sdk::Unavailable("the sandbox helper is missing (" + program +
                                            "); reinstall the bubblewrap plugin");
            }
        }
        const auto identity = sandbox_identity();
        const auto stamp = probe_stamp(bwrap, helper, view_builder, identity);
        // A stamp only ever skips this check, never the confinement: if the host
        // changed since, bwrap itself fails the call and says why.
        if (tea::stamp::present(stamp)) {
            return;
        }
        // Confine a trivial process with the namespaces every call gets: a host can
        // carry bwrap and still refuse it (user or network namespaces forbidden).
        const std::vector<std::string> root{"--ro-bind", "/",      "/",     "--dev",
                                            "/dev",      "--proc", "/proc", "--"};
        auto argv = identity_prefix(helper, identity) + std::vector<std::string>{bwrap} +
                    namespace_options() +
                    std::vector<std::string>{"--unshare-uts", "--disable-userns", "--as-pid-1"} +
                    root + std::vector<std::string>{helper_in_sandbox,      "confine", "--env-fd",
                                                    std::to_string(env_fd), "--",      "true"};
        auto [status, err] = run_probe(argv, {{env_fd, ""}}, {{helper_fd, helper}});
        if (status == 0) {
            // The same namespaces as the view builder gets them, with one bind and one remount:
            // a kernel without the mount API it uses (open_tree, mount_setattr) is refused here.
            argv = identity_prefix(helper, identity) + std::vector<std::string>{bwrap} +
                   namespace_options() + std::vector<std::string>{"--unshare-uts", "--as-pid-1"} +
                   view_builder_privileges() + root +
                   view_builder_command(identity, find_program("true")) +
                   std::vector<std::string>{"true"};
            const std::vector<std::string> view{
                "--ro-bind", "/dev/null", "/dev/null", "--remount-ro",
                "/dev",      "--chdir",   "/",         "--end"};
            std::tie(status, err) =
                run_probe(argv, {{view_fd, join_nul(view)}, {setup_mark_fd, "m"}},
                          {{helper_fd, helper}, {view_builder_fd, view_builder}});
        }
        if (status != 0) {
            throw tea::sdk::Unavailable(
                "bubblewrap cannot confine a process on this host (" + err +
                "). The kernel or container must allow unprivileged user namespaces and new "
                "network namespaces: check the sysctls kernel.unprivileged_userns_clone=1 and "
                "user.max_user_namespaces > 0, and on AppArmor hosts "
                "kernel.apparmor_restrict_unprivileged_userns=0 or a profile for bwrap; or run "
                "unconfined on purpose (\"confinement\": false, or --backend opt-out)");
        }
        tea::stamp::write(stamp);
    }

    std::string prepare(std::string_view text) {
        const Spec spec = parse_spec(text);
        if (spec.argv.empty()) {
            throw tea::sdk::Invalid("the launch spec has no argv");
        }
        return spec.role == "grader" ? prepare_grader(spec) : prepare_target(spec);
    }

   private:
    // The target's view: every namespace of its own, the host read-only, only the call's
    // directories writable, the withheld paths and the private root covered.
    std::string prepare_target(const Spec &spec) const {
        // As root, the call's own identity when the host took one for it (ABI 1.6); otherwise
        // the sandbox account, which every call shares.
        const auto identity = spec.identity && ::geteuid() == 0
                                  ? Identity{spec.identity->first, spec.identity->second, true}
                                  : sandbox_identity();
        check_path(spec.workspace, "workspace");
        check_path(spec.cwd, "working directory");
        check_path(spec.temp_dir, "temp directory");
        check_path(spec.home, "home");
        for (const auto &w : spec.withhold) {
            check_path(w, "withheld");
        }
        for (const auto &w : spec.withhold) {
            // A temp directory inside the withheld folder would hand the target a way into it.
            const auto host_tmp = env_value(spec.env, "TMPDIR");
            if (!host_tmp.empty() && inside(host_tmp, w)) {
                std::string message = "TMPDIR (";
                message += host_tmp;
                message += ") lies inside the withheld path ";
                message += w;
                message += "; point TMPDIR elsewhere";
                throw tea::sdk::Unavailable(message);
            }
            if (inside(spec.home, w) || inside(spec.temp_dir, w)) {
                throw tea::sdk::Unavailable(
                    "the call's private directories lie inside the "
                    "withheld path " +
                    w);
            }
        }
        if (inside(spec.home, spec.workspace)) {
            throw tea::sdk::Unavailable("the home " + spec.home + " lies inside the workspace " +
                                        spec.workspace + "; it must not");
        }
        // The call's directories that exist only inside the sandbox, each a tmpfs of its own.
        const auto unmade = [&](const std::string &p) {
            return std::find(spec.unmade.begin(), spec.unmade.end(), p) != spec.unmade.end();
        };
        // What the plan lends (below): the runtime shows each at its own path whatever lies
        // above it, so only what lies inside a tree can keep the identity out.
        std::vector<std::string> lent_paths{spec.workspace};
        for (const auto &p : {spec.temp_dir, spec.home}) {
            if (!unmade(p)) {
                lent_paths.push_back(p);
            }
        }
        std::vector<tea::bwrap::LentTree> lent;
        if (identity.dropped) {
            for (const auto &p : lent_paths) {
                if (auto tree = tea::bwrap::lent_tree(p)) {
                    lent.push_back(std::move(*tree));
                }
            }
        }
        for (const auto &p : {spec.workspace, spec.cwd, spec.temp_dir, spec.home}) {
            if (unmade(p)) {
                continue;  // made by bwrap, by the sandbox identity, inside the view
            }
            // Inside a lent tree the path itself counts: the target enters it as the tree's
            // owner, or not at all.
            const fs::path way =
                tree_of(lent, p) != nullptr ? fs::path{p} : fs::path{p}.parent_path();
            if (const auto blocked = unreachable(way, identity, lent)) {
                const auto *tree = tree_of(lent, *blocked);
                throw tea::sdk::Unavailable(
                    "the sandbox identity (uid " + std::to_string(identity.uid) +
                    ") cannot reach " + p + " because it may not search " + blocked->string() +
                    (tree != nullptr
                         ? ", which the owner of " + tree->top.string() + " (uid " +
                               std::to_string(tree->owner_uid) +
                               ", whom the target stands for in it) does not own; make it "
                               "searchable, or use a working directory the target can reach"
                         : "; use a workspace it can reach (under /tmp or /srv, say)"));
            }
        }

        std::vector<std::string> env = spec.env;
        std::erase_if(env, [](const std::string &e) {
            return e.rfind("NODE_V8_COVERAGE=", 0) == 0;  // a coverage dump would write outside
        });
        set_env(env, "PWD", spec.cwd);
        set_env(env, "HOME", spec.home);
        set_env(env, "XDG_CONFIG_HOME", spec.home + "/.config");
        set_env(env, "XDG_CACHE_HOME", spec.home + "/.cache");
        set_env(env, "XDG_DATA_HOME", spec.home + "/.local/share");
        for (const char *name : {"TMPDIR", "TMP", "TEMP"}) {
            set_env(env, name, temp_mount);
        }

        const auto limit = [](std::uint64_t spec_value, std::uint64_t fallback) {
            return spec_value != 0 ? spec_value : fallback;
        };
        const std::uint64_t cpu = limit(spec.cpu, settings_.cpu_seconds);
        const std::uint64_t fsize = limit(spec.fsize, settings_.file_size_bytes);
        const std::uint64_t nproc = limit(spec.nproc, settings_.processes);
        // The path bwrap's exec of the target will name, so the audit can tell where the
        // target starts; empty when the host has no such program (the call then fails to start).
        // --setenv carries only NAME=VALUE with a name; an entry without one (a parent may exec
        // with anything) goes to the target as it is, through the helper.
        const bool settable = std::all_of(env.begin(), env.end(), [](const std::string &e) {
            const auto eq = e.find('=');
            return eq != std::string::npos && eq > 0;
        });
        const auto private_root = fs::path{spec.home}.parent_path().parent_path().string();
        const auto egress_dir = egress_directory(spec, private_root);
        const auto private_temp = private_temp_of(spec, egress_dir);
        if (private_temp.hides(spec.cwd)) {
            throw tea::sdk::Unavailable(
                "the working directory " + spec.cwd +
                " lies in the host's temp directory outside the call's grants, and the target's "
                "temp directories are its own; run the call in its workspace");
        }
        const auto start = egress_dir.empty() && settable ? exec_path(spec.argv[0], env, spec.cwd,
                                                                      identity, lent, private_temp)
                                                          : std::string{};
        // Where the target may write that the launch spec does not name: its own mounts, which
        // the audit grants like the workspace.
        json writable = json::array({temp_mount});
        for (const auto &dir : private_temp.replaced()) {
            writable.push_back(tea::bytes::to_json(dir));
        }
        // When bwrap starts the target, the view builder makes the view's mounts (view/view.cpp):
        // bwrap's own binds and remounts each re-read the whole mount table, which was most of
        // what a call's view cost. Audited calls and calls with a launcher keep bwrap's options.
        const bool by_view_builder = !start.empty() && !spec.observed;
        // Staged (ABI 1.5): the builder's process is known now, and the runtime starts it before
        // the view exists.
        const bool staged = spec.staged && by_view_builder;
        // The view after the root and /proc, in bwrap's words, which the view builder takes too
        // (with /dev first, below). A staged call's view comes in the complete plan (its socket
        // walk is the costly part), through the descriptor the builder reads once bwrap has
        // started it.
        std::vector<std::string> view;
        json report = json::object();
        if (!staged) {
            auto add = [&](std::initializer_list<std::string> items) {
                view.insert(view.end(), items);
            };
            // bwrap covers /proc/sys only when it could write there, which an unprivileged
            // bwrap never can: the knobs of the sandbox's own namespaces (kernel.msgmax,
            // fs.mqueue.*, kernel.ns_last_pid) stayed writable. The host's /proc/sys, bound
            // read-only, shows the same knobs: each one answers for the reader's namespaces.
            add({"--ro-bind", "/proc/sys", "/proc/sys"});
            // The host's /sys tells a target about devices and the kernel; toolchains need only
            // CPUs.
            add({"--size", "65536", "--tmpfs", "/sys"});
            for (const auto &p : settings_.sys_paths) {
                add({"--ro-bind-try", p, p});
            }
            add({"--remount-ro", "/sys"});
            if (fs::is_directory("/run/user")) {
                add({"--size", "4096", "--tmpfs", "/run/user", "--remount-ro", "/run/user"});
            }
            // The host's /tmp and /var/tmp: another user's files and sockets there, and a tree of
            // any size, are absent, and what the target writes there never reaches the host. Each
            // is sized, so a target that fills it fills memory up to the size.
            for (const auto &dir : private_temp.replaced()) {
                add({"--perms", "1777", "--size", std::to_string(settings_.tmpfs_bytes), "--tmpfs",
                     dir});
            }
            // A system path in them is shown at its host path, read-only. Before the private
            // root's cover, as the workspace is: one that held the private root must never
            // uncover it.
            for (const auto &p : spec.system_paths) {
                if (private_temp.in_replaced(p)) {
                    add({"--ro-bind-try", p, p});
                }
            }
            // The private root: an empty read-only cover with only this call's home (and a
            // workspace of the call's run directory) bound back.
            const bool workspace_in_root = workspace_under_private_root(spec, private_root);
            if (!workspace_in_root) {
                // Before the cover: a workspace that held the private root must never uncover it.
                add({"--bind", spec.workspace, spec.workspace});
            }
            const auto call_dir_size = std::to_string(settings_.call_dir_bytes);
            // An unmade directory is a tmpfs of its own, sized: it vanishes with the call's mount
            // namespace (even when the runtime is killed), and a target filling it fills memory up
            // to the size, never the host's disk.
            auto call_dir = [&](const std::string &host, const std::string &mount) {
                if (unmade(host)) {
                    add({"--perms", "0700", "--size", call_dir_size, "--tmpfs", mount});
                } else {
                    add({"--bind", host, mount});
                }
            };
            call_dir(spec.temp_dir, temp_mount);
            add({"--size", "65536", "--tmpfs", private_root});
            call_dir(spec.home, spec.home);
            if (workspace_in_root) {
                // After the cover, or the cover would hide it; the run's other directories stay
                // hidden.
                add({"--bind", spec.workspace, spec.workspace});
            }
            if (!egress_dir.empty()) {
                // Read-only: the target may connect to the proxy's socket, never replace it.
                add({"--ro-bind", egress_dir, egress_dir});
            }
            const auto run_dir = normal(fs::path{spec.home}.parent_path().string()).string();
            check_read_only_over(spec, run_dir);
            for (const auto &r : spec.read_only) {
                // A read-only grant in the call's run directory (a trial's private repository) is
                // bound before the cover turns read-only, since its mount point must be made there.
                // Anywhere else under the private root it is refused: it would uncover another run.
                if (inside(r, private_root)) {
                    if (!inside(r, run_dir) || normal(r) == fs::path{run_dir}) {
                        std::string message = "the read-only grant " + r;
                        message +=
                            " lies under the private root but not inside this call's run "
                            "directory ";
                        message += run_dir;
                        throw tea::sdk::Invalid(message);
                    }
                    add({"--ro-bind", r, r});
                }
            }
            add({"--remount-ro", private_root});
            std::set<std::string> pinned;
            for (const auto &w : spec.withhold) {
                std::error_code ec;
                const auto status = fs::symlink_status(w, ec);
                // A withheld path that is gone (moved by an earlier call, say) or is now a link
                // would leave the real folder uncovered under another name: refused, not skipped.
                if (!fs::is_directory(status) && !fs::is_regular_file(status)) {
                    throw tea::sdk::Unavailable(
                        "the withheld path " + w +
                        (fs::exists(status) ? " is neither a directory nor a regular file"
                                            : " does not exist") +
                        "; an earlier call may have moved it: check the folder and withhold "
                        "where it is now");
                }
                // Every directory between the workspace and the withheld path becomes a mount
                // point of its own: the kernel refuses to rename a mount point (EBUSY), so a
                // target cannot move the withheld folder's parent away from under its cover and
                // leave the next call covering a name that no longer holds it. (The call's temp
                // directory and home hold no withheld path: refused above.)
                for (const auto &dir : directories_between(spec.workspace, w)) {
                    if (pinned.insert(dir).second) {
                        add({"--bind", dir, dir});
                    }
                }
                if (fs::is_directory(status)) {
                    // An empty read-only file system: a read answers ENOENT, a write EROFS.
                    add({"--size", "4096", "--tmpfs", w, "--remount-ro", w});
                } else {
                    add({"--ro-bind", "/dev/null", w});
                }
            }
            for (const auto &r : spec.read_only) {
                if (!inside(r, private_root)) {
                    add({"--ro-bind-try", r, r});
                }
            }
            for (const auto &[source, destination] : spec.read_only_over) {
                // After the withheld paths, since it covers one: the project's git directory at the
                // workspace's .git is shown as the call's private repository.
                add({"--ro-bind", source, destination});
            }
            report = mask_sockets(spec, identity, private_root, private_temp, view);
            add({"--remount-ro", "/dev", "--chdir", spec.cwd});
        }
        // bwrap's own options. The UTS namespace is the stream's last option (see
        // target_args_file), the host name on bwrap's own command line (target_bwrap_command).
        std::vector<std::string> a = namespace_options();
        if (by_view_builder) {
            a = a + view_builder_privileges();
        } else {
            // No nested user namespace: one would give the target back every capability.
            a.insert(a.end(), {"--disable-userns", "--cap-drop", "ALL", "--block-fd",
                               std::to_string(setup_mark_fd)});
        }
        // /dev with its sized /dev/shm: bwrap's --dev binds six device nodes, each followed by a
        // re-read of the mount table, so the view builder makes it where it runs (staged too).
        const std::vector<std::string> dev{"--dev",   "/dev",
                                           "--perms", "1777",
                                           "--size",  std::to_string(settings_.tmpfs_bytes),
                                           "--tmpfs", "/dev/shm"};
        a = a + std::vector<std::string>{"--ro-bind", "/", "/", "--proc", "/proc"};
        if (by_view_builder) {
            view = dev + view;
        } else {
            a = a + dev + view;
        }

        json plan{{"env", json::array()},
                  {"cwd", "/"},
                  {"confinement", "bubblewrap"},
                  {"report", report},
                  {"setupMark", {{"fd", setup_mark_fd}}}};
        std::vector<std::string> argv = target_bwrap_command();
        if (!start.empty() && spec.observed) {
            // Audited: bwrap builds the view untraced and the helper holds it as the sandbox's
            // pid 1; the plan's own process, the helper on the host, joins it and starts the
            // target, so the observer follows the target and not bwrap's set-up (some 150
            // traced system calls of mounts and path lookups, each a stop of the tracer).
            // The environment travels through a descriptor; the seccomp program is the
            // helper's own copy of the same one.
            const auto helper = helper_path();
            a.insert(a.end(),
                     {"--clearenv", "--as-pid-1", "--seccomp", std::to_string(seccomp_fd)});
            auto holder = target_bwrap_command();
            holder.insert(holder.end(), {helper_in_sandbox, "hold", "--handoff-fd",
                                         std::to_string(holder_handoff_fd)});
            plan["holder"] = {{"argv", tea::bytes::list_to_json(holder)},
                              {"env", json::array()},
                              {"cwd", "/"},
                              {"files",
                               {target_args_file(a),
                                {{"fd", seccomp_fd}, {"content", seccomp_bytes()}},
                                {{"fd", helper_fd}, {"path", tea::bytes::to_json(helper)}}}},
                              {"handoffFd", holder_handoff_fd}};
            plan["handoffFd"] = handoff_fd;
            // Run through its descriptor, as inside: the sandbox identity may not search the
            // directories the runtime is installed in.
            argv = {helper_in_sandbox,
                    "enter",
                    "--handoff-fd",
                    std::to_string(handoff_fd),
                    "--env-fd",
                    std::to_string(env_fd),
                    "--cwd",
                    spec.cwd,
                    "--"};
            argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
            plan["files"] = {{{"fd", env_fd}, {"content", tea::bytes::to_json(join_nul(env))}},
                             {{"fd", helper_fd}, {"path", tea::bytes::to_json(helper)}}};
            plan["limits"] = {{"cpuSeconds", cpu}, {"fileSizeBytes", fsize}, {"processes", nproc}};
            plan["newSessionKeyring"] = true;
            plan["audit"] = {{"targetStart", tea::bytes::to_json(start)},
                             {"targetStartKind", "target"},
                             {"writable", writable}};
        } else if (by_view_builder) {
            // bwrap starts the view builder, which builds the view and becomes the target: the
            // runtime's child sets the limits and the session keyring before bwrap (plan
            // "limits", "newSessionKeyring"); the builder drops every capability, sets
            // no_new_privs, takes the setup mark, closes every descriptor above 2 and loads the
            // seccomp program (its own copy of the same one). The environment travels as
            // --setenv pairs in bwrap's argument descriptor, never on a command line.
            // The builder is the namespace's first process and stays its init, which ends the
            // namespace when the runtime dies (view/view.cpp): bwrap's own init would take its
            // parent-death signal too late.
            a.insert(a.end(), {"--as-pid-1", "--clearenv"});
            for (const auto &e : env) {
                const auto eq = e.find('=');
                a.insert(a.end(), {"--setenv", e.substr(0, eq), e.substr(eq + 1)});
            }
            argv = argv + view_builder_command(identity, start) + spec.argv;
            // The view's last element: a view cut short (a runtime killed while writing a staged
            // call's view) lacks it, and the builder then refuses to build any of it.
            view.emplace_back("--end");
            plan["files"] = {
                target_args_file(a),
                staged ? json{{"fd", view_fd}, {"deferred", true}}
                       : json{{"fd", view_fd}, {"content", tea::bytes::to_json(join_nul(view))}},
                {{"fd", view_builder_fd}, {"path", tea::bytes::to_json(view_builder_path())}}};
            plan["limits"] = {{"cpuSeconds", cpu}, {"fileSizeBytes", fsize}, {"processes", nproc}};
            plan["newSessionKeyring"] = true;
            plan["audit"] = {{"targetStart", tea::bytes::to_json(start)},
                             {"targetStartKind", "target"},
                             {"writable", writable}};
        } else {
            // A launcher in front of the target: the helper, which takes the environment from a
            // descriptor, sets the limits and the keyring, closes every other descriptor, loads
            // the seccomp program and runs the target (with its own error, 127, when there is
            // no such program); for a call with a route out, the egress shim before it.
            const auto helper = helper_path();
            if (!egress_dir.empty()) {
                // In front of the helper, so its listener exists before the target starts and
                // its relay lives in the call's namespaces, ending with them.
                argv.insert(argv.end(),
                            {shim_in_sandbox, "--port", std::to_string(spec.egress_port),
                             "--socket", spec.egress_socket, "--"});
            }
            // The shim (or else the helper) is the namespace's init, staying as its reaper and
            // ending the namespace when the runtime dies: bwrap's own init is dumpable here (a
            // target writing its /proc/1/mem would own it), and takes its parent-death signal
            // only after bwrap's set-up.
            a.emplace_back("--as-pid-1");
            // bwrap loads the filter before its first process (and its own init) runs, so no
            // process of the call runs without it: not the shim or its relay, which start before
            // the helper, nor bwrap's init. The fresh session keyring is joined before bwrap for
            // the same reason, and the helper, under the filter, leaves it be.
            a.insert(a.end(), {"--seccomp", std::to_string(seccomp_fd)});
            plan["newSessionKeyring"] = true;
            argv.insert(argv.end(), {helper_in_sandbox, "confine", "--env-fd",
                                     std::to_string(env_fd), "--keyring", "inherited"});
            for (const auto &[option, value] :
                 {std::pair{"--cpu", cpu}, std::pair{"--fsize", fsize},
                  std::pair{"--nproc", nproc}}) {
                if (value != 0) {
                    argv.insert(argv.end(), {option, std::to_string(value)});
                }
            }
            argv.emplace_back("--");
            argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
            plan["files"] = {{{"fd", env_fd}, {"content", tea::bytes::to_json(join_nul(env))}},
                             target_args_file(a),
                             {{"fd", helper_fd}, {"path", tea::bytes::to_json(helper)}}};
            plan["audit"] = {{"targetStart", helper_in_sandbox}, {"writable", writable}};
            plan["files"].push_back({{"fd", seccomp_fd}, {"content", seccomp_bytes()}});
            if (!egress_dir.empty()) {
                plan["files"].push_back(
                    {{"fd", shim_fd}, {"path", tea::bytes::to_json(spec.egress_shim)}});
            }
        }
        plan["argv"] = tea::bytes::list_to_json(argv);
        if (identity.dropped) {
            // Host root's files would belong to a bwrap started as root (uid-isolation).
            plan["runAs"] = {{"uid", identity.uid}, {"gid", identity.gid}};
            plan["lend"] = {{"uid", identity.uid},
                            {"gid", identity.gid},
                            {"paths", tea::bytes::list_to_json(lent_paths)}};
        }
        if (!spec.unmade.empty()) {
            plan["makeDirs"] = json::array();  // every one is provided inside the view
        }
        return plan.dump();
    }

    // The evaluator's view: the host as it is (its network, its identity, every place the uid may
    // write), with only the read-only paths (the evaluation folder, the git directory) protected.
    std::string prepare_grader(const Spec &spec) const {
        check_path(spec.workspace, "workspace");
        check_path(spec.cwd, "working directory");
        if (!spec.temp_dir.empty()) {
            check_path(spec.temp_dir, "temp directory");
        }
        if (!spec.home.empty()) {
            check_path(spec.home, "home");
        }
        // A grader runs outside the target's confinement: withholding or a route out would be
        // promises this view does not keep, so they are refused rather than dropped.
        if (!spec.withhold.empty()) {
            throw tea::sdk::Invalid("a grader's launch spec withholds nothing (withhold: " +
                                    spec.withhold.front() + "); list it in readOnly instead");
        }
        if (!spec.egress_socket.empty()) {
            throw tea::sdk::Invalid("a grader keeps the host's network and takes no egress route");
        }
        if (!spec.read_only_over.empty()) {
            throw tea::sdk::Invalid("a grader sees the host's own files; nothing is shown over " +
                                    spec.read_only_over.front().second);
        }
        for (const auto &r : spec.read_only) {
            check_path(r, "read-only");
            check_protected_path(r);
            if (inside(spec.workspace, r)) {
                throw tea::sdk::Invalid("the grader's working directory " + spec.workspace +
                                        " lies inside the read-only path " + r +
                                        ", so it could not write it");
            }
        }

        std::vector<std::string> a;
        if (::geteuid() != 0) {
            // An unprivileged bwrap may mount only in a user namespace of its own. As root none is
            // made: the grader keeps the invoking identity, with no capability left.
            a.emplace_back("--unshare-user");
        }
        // The helper is the sandbox's first process and its init, ending it once the runtime is
        // gone (tea/namespace_init.hpp); see namespace_options for why not --die-with-parent.
        a.insert(a.end(), {"--unshare-pid", "--as-pid-1",
                           // A new session: no controlling terminal to push input into.
                           "--new-session", "--block-fd", std::to_string(setup_mark_fd),
                           // Without a capability the grader cannot remount a read-only bind.
                           "--cap-drop", "ALL", "--dev-bind", "/", "/", "--proc", "/proc"});
        for (const auto &r : spec.read_only) {
            // Recursive and read-only: the grader cannot rewrite evidence, move a ref, change the
            // repository's configuration or plant a hook, nor below in a submount.
            a.insert(a.end(), {"--ro-bind", r, r});
        }
        a.insert(a.end(), {"--chdir", spec.cwd});

        auto argv = bwrap_command();
        argv.insert(argv.end(), {helper_in_sandbox, "init", "--"});
        argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
        // No seccomp, socket mask, lend or runAs: the grader is code the team trusts, run as the
        // invoking user; only the evidence and the grading material are guarded. The helper is
        // its sandbox's init, nothing more.
        const json plan{
            {"argv", tea::bytes::list_to_json(argv)},
            {"env", tea::bytes::list_to_json(spec.env)},
            {"cwd", "/"},
            {"files",
             json::array({args_file(a),
                          {{"fd", helper_fd}, {"path", tea::bytes::to_json(helper_path())}}})},
            {"confinement", "bubblewrap"},
            {"report", {{"role", "grader"}}},
            {"setupMark", {{"fd", setup_mark_fd}}}};
        return plan.dump();
    }

    // bwrap, reading its arguments from args_fd: no command line limits them or shows them.
    std::vector<std::string> bwrap_command() const {
        auto bwrap = find_program(settings_.bwrap);
        if (bwrap.empty()) {
            throw tea::sdk::Unavailable(bwrap_missing());
        }
        return {std::move(bwrap), "--args", std::to_string(args_fd), "--"};
    }

    std::string bwrap_missing() const {
        return "bubblewrap (" + settings_.bwrap + ") is not installed: apt-get install bubblewrap";
    }

    static json args_file(const std::vector<std::string> &a) {
        return {{"fd", args_fd}, {"content", tea::bytes::to_json(join_nul(a))}};
    }

    // A target's bwrap: the host name on the command line, which bwrap refuses unless the
    // argument stream, read first, ends with --unshare-uts (target_args_file).
    std::vector<std::string> target_bwrap_command() const {
        auto argv = bwrap_command();
        argv.insert(argv.end() - 1, {"--hostname", "tea-sandbox"});
        return argv;
    }

    // A target's argument stream, ending with its only --unshare-uts: a stream cut short (a
    // runtime killed while writing a staged call's stream, ABI 1.5) lacks it, and bwrap then
    // refuses the host name on its command line instead of building part of the view. No other
    // element can stand in for it: bwrap reads an option's values from the stream alone, so
    // "--unshare-uts" as the value of a --setenv or a path is never taken for the option.
    static json target_args_file(std::vector<std::string> a) {
        a.emplace_back("--unshare-uts");
        return args_file(a);
    }

    // A read-only path must be the directory or file itself: a link, or a path through one,
    // could be swapped between this check and bwrap's mount, leaving the real one writable.
    static void check_protected_path(const std::string &path) {
        std::error_code ec;
        const auto status = fs::symlink_status(path, ec);
        if (ec || !fs::exists(status)) {
            throw tea::sdk::Unavailable("the read-only path " + path +
                                        " does not exist, so it cannot be protected");
        }
        if (fs::is_symlink(status)) {
            throw tea::sdk::Unavailable("the read-only path " + path +
                                        " is a symbolic link; name the place it leads to");
        }
        const auto real = fs::canonical(path, ec);
        if (ec || real != normal(path)) {
            throw tea::sdk::Unavailable(
                "the read-only path " + path + " passes through a symbolic link (it resolves to " +
                (ec ? ec.message() : real.string()) + "); name the real path");
        }
    }

    // What may be shown read-only in place of an entry of the workspace, and where.
    static void check_read_only_over(const Spec &spec, const std::string &run_dir) {
        for (const auto &[source, destination] : spec.read_only_over) {
            check_path(source, "read-only source");
            check_path(destination, "read-only destination");
            // Only what the runtime made for this call: a source elsewhere would show the target a
            // host file the confinement withholds (another run's home, a withheld folder).
            if (!inside(source, run_dir) || normal(source) == fs::path{run_dir}) {
                std::string message = "the read-only source " + source;
                message += " does not lie inside this call's run directory ";
                message += run_dir;
                throw tea::sdk::Invalid(message);
            }
            // Only inside the workspace, which the target may change anyway: elsewhere it would
            // replace a file the target trusts (/etc/passwd, a library) with other content.
            if (!inside(destination, spec.workspace) ||
                normal(destination) == normal(spec.workspace)) {
                throw tea::sdk::Invalid("the read-only destination " + destination +
                                        " does not lie inside the workspace " + spec.workspace);
            }
            // Neither may pass through a link, which could carry the mount elsewhere.
            check_protected_path(source);
            check_protected_path(destination);
            std::error_code ec;
            if (fs::is_directory(fs::symlink_status(source, ec)) !=
                fs::is_directory(fs::symlink_status(destination, ec))) {
                std::string message = "the read-only source " + source;
                message += " and its destination ";
                message += destination;
                message += " are not both directories or both files";
                throw tea::sdk::Invalid(message);
            }
        }
    }

    // Whether the workspace lies under the private root. It may only lie in this call's run
    // directory: anywhere else under the root, binding it back would uncover the root itself or
    // another run's home.
    static bool workspace_under_private_root(const Spec &spec, const std::string &private_root) {
        if (!inside(spec.workspace, private_root)) {
            return false;
        }
        const auto run_dir = normal(fs::path{spec.home}.parent_path().string());
        if (!inside(spec.workspace, run_dir.string()) || normal(spec.workspace) == run_dir) {
            throw tea::sdk::Unavailable(
                "the workspace " + spec.workspace + " lies under the private root " + private_root +
                " but not inside this call's run directory " + run_dir.string());
        }
        return true;
    }

    // The account database is read once per process, not once per probe and call.
    const Identity &sandbox_identity() const {
        if (!identity_) {
            identity_ = tea::bwrap::sandbox_identity(settings_.sandbox_user);
        }
        return *identity_;
    }

    // Where a successful probe is remembered: one file per boot and per
    // everything the probe's answer depends on.
    static std::string probe_stamp(const std::string &bwrap, const std::string &helper,
                                   const std::string &view_builder, const Identity &identity) {
        std::string key = tea::stamp::file_key(bwrap) + tea::stamp::file_key(helper) +
                          tea::stamp::file_key(view_builder) + tea::stamp::boot_id();
        for (const char *sysctl :
             {"/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces",
              "/proc/sys/user/max_net_namespaces",
              "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"}) {
            key += tea::stamp::first_line(sysctl) + ";";
        }
        key += std::to_string(identity.uid) + ":" + std::to_string(identity.gid);
        return tea::stamp::path_for("bubblewrap-probe", key).string();
    }

    // The directory of the call's egress socket, or "" for a call without egress. It must be a
    // private directory of the call: a socket elsewhere would bind a host directory into view.
    static std::string egress_directory(const Spec &spec, const std::string &private_root) {
        if (spec.egress_socket.empty()) {
            return {};
        }
        check_path(spec.egress_socket, "egress socket");
        check_path(spec.egress_shim, "egress shim");
        auto dir = fs::path{spec.egress_socket}.parent_path().string();
        if (spec.egress_port == 0 || !inside(dir, private_root) ||
            fs::path{dir}.lexically_normal() == fs::path{private_root}.lexically_normal()) {
            throw tea::sdk::Invalid("the egress socket " + spec.egress_socket +
                                    " must lie in a private directory of the call under " +
                                    private_root);
        }
        return dir;
    }

    static std::string join_nul(const std::vector<std::string> &items) {
        std::string out;
        for (const auto &i : items) {
            out += i;
            out += '\0';
        }
        return out;
    }

    json mask_sockets(const Spec &spec, const Identity &identity, const std::string &private_root,
                      const tea::bwrap::PrivateTemp &private_temp,
                      std::vector<std::string> &a) const {
        // Where no socket is masked: fresh in the sandbox, covered already, or the call's own.
        // The workspace is not among them: a host process (a language server, a dev server) may
        // have bound a socket there, and /proc/net/unix names it without any walk.
        std::vector<std::string> unmasked{"/dev",      "/proc",      "/sys",
                                          "/run/user", private_root, spec.temp_dir};
        unmasked.insert(unmasked.end(), spec.withhold.begin(), spec.withhold.end());
        tea::bwrap::SocketScanOptions options;
        options.directories = walked_directories(spec, private_root, private_temp);
        options.max_entries = settings_.socket_walk_entries;
        // Nor walked, so that a workspace the target filled with entries cannot use up the walk
        // before it reaches a host socket. Nor the host's temp directories the view replaces:
        // nothing of theirs is in the view, and a tree of any size there must neither cost a call
        // nor stop it.
        options.skip.assign(unmasked.begin(), unmasked.end());
        options.skip.emplace_back(spec.workspace);
        options.skip.insert(options.skip.end(), private_temp.replaced().begin(),
                            private_temp.replaced().end());
        // Kept in the private root, which every sandbox covers: a target that could write it
        // could hide a socket from the next call's walk.
        options.cache_file = fs::path{private_root} / "socket-walk-cache";
        const auto scan = tea::bwrap::scan_host_sockets(options, identity);
        // A walk cut short may have missed a socket bound in another network namespace, which
        // /proc/net/unix does not list: refused rather than left reachable.
        if (!scan.walk_complete) {
            std::string dirs;
            for (const auto &d : options.directories) {
                dirs += (dirs.empty() ? "" : ", ") + d.string();
            }
            throw tea::sdk::Unavailable(
                "the search for host sockets under " + dirs + " met more than " +
                std::to_string(settings_.socket_walk_entries) +
                " entries (three levels deep), so a socket there might be left reachable; "
                "clear those directories, or raise plugin.bubblewrap.socket_walk_entries or "
                "narrow plugin.bubblewrap.socket_dirs");
        }
        std::size_t mandatory = 0;
        std::size_t masked = 0;
        json reachable = json::array();
        for (const auto &s : scan.sockets) {
            // Every path the view shows the socket at: none for one in the host's /tmp outside
            // the call's grants, two for one beneath a grant there that is a link.
            auto places = private_temp.view_paths(s.path);
            std::erase_if(places, [&](const std::string &p) {
                return std::any_of(unmasked.begin(), unmasked.end(),
                                   [&](const std::string &place) { return inside(p, place); });
            });
            if (places.empty() || tea::bwrap::unreachable_ancestor(s.path, identity)) {
                continue;
            }
            // A newline or a quote in a host socket's name is no reason to leave it
            // open: bwrap's arguments travel NUL-separated, so any name can be masked.
            if (s.mandatory) {
                ++mandatory;
            }
            if (masked + places.size() <= settings_.max_socket_masks) {
                for (const auto &p : places) {
                    a.insert(a.end(), {"--ro-bind", "/dev/null", p});
                }
                masked += places.size();
            } else {
                reachable.push_back(tea::bytes::to_json(s.path));
            }
        }
        // A socket bound by a relative name that no holder's working directory places could be
        // anywhere the target can see: root's, the system's and this user's refuse the call,
        // another user's is reported as left reachable.
        for (const auto &u : scan.unlocated) {
            if (u.mandatory) {
                throw tea::sdk::Unavailable(
                    "a host socket bound by the relative name \"" + u.path + "\" (owner uid " +
                    std::to_string(u.owner) +
                    ") cannot be found in its holders' working directories, so it cannot be "
                    "masked; stop the process that holds it, or bind it by an absolute path");
            }
            reachable.push_back(tea::bytes::to_json(u.path));
        }
        // Only other users' sockets may be left open for lack of room; root's,
        // the system's and this user's never are.
        if (mandatory > settings_.max_socket_masks) {
            throw tea::sdk::Unavailable(std::to_string(mandatory) +
                                        " host sockets of root, system accounts and this user "
                                        "must be masked, but the room is " +
                                        std::to_string(settings_.max_socket_masks) +
                                        " (plugin.bubblewrap.max_socket_masks)");
        }
        return json{{"sandboxUid", identity.uid},
                    {"sandboxGid", identity.gid},
                    {"identityDropped", identity.dropped},
                    {"socketsMasked", masked},
                    {"socketMaskRoom", settings_.max_socket_masks},
                    {"socketsLeftReachable", reachable}};
    }

    // The directories the socket walk reads: the configured ones the view shares with the host,
    // and the grants it shows inside the private temp directories (read-only places a host
    // process may have bound a socket in, which the target can neither fill nor change). The
    // workspace is never walked: /proc/net/unix names what a host process bound there.
    std::vector<fs::path> walked_directories(const Spec &spec, const std::string &private_root,
                                             const tea::bwrap::PrivateTemp &private_temp) const {
        std::vector<fs::path> walked;
        for (const auto &dir : settings_.socket_dirs) {
            std::error_code ec;
            const auto real = fs::weakly_canonical(dir, ec);  // /var/tmp may lead to /tmp
            if (!private_temp.hides(ec ? dir : real.string())) {
                walked.emplace_back(dir);
            }
        }
        for (const auto *grants : {&spec.system_paths, &spec.read_only}) {
            for (const auto &grant : *grants) {
                const bool configured =
                    std::any_of(settings_.socket_dirs.begin(), settings_.socket_dirs.end(),
                                [&](const std::string &dir) { return inside(grant, dir); });
                if (configured && private_temp.in_replaced(grant) && !inside(grant, private_root) &&
                    std::find(walked.begin(), walked.end(), normal(grant)) == walked.end()) {
                    walked.push_back(normal(grant));
                }
            }
        }
        return walked;
    }

    // Runs the probe with a clean signal mask and only 0-2, plus `contents` (descriptor, bytes)
    // and `programs` (descriptor, path, opened), and returns its status and what it said.
    static std::pair<int, std::string> run_probe(
        const std::vector<std::string> &argv,
        const std::vector<std::pair<int, std::string>> &contents,
        const std::vector<std::pair<int, std::string>> &programs) {
        int err_pipe[2];
        if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
            return {-1, "cannot make a pipe"};
        }
        // Every descriptor the child gets, closed here once it is started (or not). Each is
        // lifted above every number the child's descriptors are placed at, so no dup2 below
        // overwrites a source not yet placed: a runtime started with descriptors of its own
        // open had its view builder's program replaced by the helper's that way.
        int floor = STDERR_FILENO;
        for (const auto *list : {&contents, &programs}) {
            for (const auto &item : *list) {
                floor = std::max(floor, item.first);
            }
        }
        const auto lifted = [floor](int fd) {
            tea::bwrap::Fd low{fd};
            return tea::bwrap::Fd{fd < 0 ? -1 : ::fcntl(fd, F_DUPFD_CLOEXEC, floor + 1)};
        };
        std::vector<tea::bwrap::Fd> opened;
        for (const auto &[fd, content] : contents) {
            opened.push_back(lifted(::memfd_create("tea-probe", MFD_CLOEXEC)));
            const int mem = opened.back().get();
            if (mem < 0 ||
                ::write(mem, content.data(), content.size()) !=
                    static_cast<ssize_t>(content.size()) ||
                ::lseek(mem, 0, SEEK_SET) != 0) {
                ::close(err_pipe[0]);
                ::close(err_pipe[1]);
                return {-1, "cannot write the probe's files"};
            }
        }
        for (const auto &[fd, path] : programs) {
            opened.push_back(lifted(::open(path.c_str(), O_RDONLY | O_CLOEXEC)));
        }
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
        std::size_t next = 0;
        for (const auto *list : {&contents, &programs}) {
            for (const auto &item : *list) {
                posix_spawn_file_actions_adddup2(&fa, opened[next++].get(), item.first);
            }
        }
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        sigset_t none;
        sigset_t all;
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawnattr_setflags(
            &attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
        std::vector<char *> args;
        for (const auto &s : argv) {
            args.push_back(const_cast<char *>(s.c_str()));  // NOLINT
        }
        args.push_back(nullptr);
        char *envp[] = {nullptr};
        pid_t pid = -1;
        const int rc = ::posix_spawn(&pid, args[0], &fa, &attr, args.data(), envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        ::close(err_pipe[1]);
        opened.clear();
        if (rc != 0) {
            ::close(err_pipe[0]);
            return {-1,
                    std::string{"cannot start "} + argv[0] + ": " + std::strerror(rc)};  // NOLINT
        }
        std::string err;
        char buffer[4096];
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{20};
        pollfd p{err_pipe[0], POLLIN, 0};
        while (std::chrono::steady_clock::now() < deadline && ::poll(&p, 1, 200) >= 0) {
            if ((p.revents & (POLLIN | POLLHUP)) != 0) {
                const auto n = ::read(err_pipe[0], buffer, sizeof buffer);
                if (n <= 0) {
                    break;
                }
                if (err.size() < 4096) {
                    err.append(buffer, static_cast<std::size_t>(n));
                }
            }
        }
        ::close(err_pipe[0]);
        ::kill(-pid, SIGKILL);
        int status = 0;
        ::waitpid(pid, &status, 0);
        while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) {
            err.pop_back();
        }
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (err.empty() && code != 0) {
            err = "exit status " + std::to_string(code);
        }
        return {code, err};
    }

    tea::sdk::Host host_;
    Settings settings_;
    mutable std::optional<Identity> identity_;  // a cache: the account, once looked up
};

}  // namespace

TEA_SDK_BACKEND_PLUGIN(Bubblewrap, "bubblewrap", "1.0.0", TEA_ABI_1_6)
