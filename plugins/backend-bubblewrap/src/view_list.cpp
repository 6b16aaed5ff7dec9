#include "view_list.hpp"

#include <filesystem>
#include <set>
#include <system_error>
#include <tea/plugin.hpp>

#include "login_files.hpp"
#include "path_checks.hpp"
#include "paths.hpp"
#include "socket_masks.hpp"

namespace tea::bwrap {

namespace fs = std::filesystem;

namespace {

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

// What may be shown read-only in place of an entry of the workspace, and where.
void check_read_only_over(const documents::LaunchSpec &spec, const std::string &run_dir) {
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
        if (!inside(destination, spec.workspace) || normal(destination) == normal(spec.workspace)) {
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
bool workspace_under_private_root(const TargetCall &call) {
    const auto &spec = call.spec;
    if (!inside(spec.workspace, call.private_root)) {
        return false;
    }
    if (!inside(spec.workspace, call.run_dir) || normal(spec.workspace) == fs::path{call.run_dir}) {
        throw tea::sdk::Unavailable("the workspace " + spec.workspace +
                                    " lies under the private root " + call.private_root +
                                    " but not inside this call's run directory " + call.run_dir);
    }
    return true;
}

}  // namespace

TargetView target_view(const Settings &settings, const TargetCall &call) {
    const auto &spec = call.spec;
    const auto &private_root = call.private_root;
    TargetView out;
    auto &view = out.options;
    auto add = [&](std::initializer_list<std::string> items) { view.insert(view.end(), items); };
    // bwrap covers /proc/sys only when it could write there, which an unprivileged bwrap never
    // can: the knobs of the sandbox's own namespaces (kernel.msgmax, fs.mqueue.*,
    // kernel.ns_last_pid) stayed writable. The host's /proc/sys, bound read-only, shows the same
    // knobs: each one answers for the reader's namespaces.
    add({"--ro-bind", "/proc/sys", "/proc/sys"});
    // The host's /sys tells a target about devices and the kernel; toolchains need only CPUs.
    add({"--size", "65536", "--tmpfs", "/sys"});
    for (const auto &p : settings.sys_paths) {
        add({"--ro-bind-try", p, p});
    }
    add({"--remount-ro", "/sys"});
    if (fs::is_directory("/run/user")) {
        add({"--size", "4096", "--tmpfs", "/run/user", "--remount-ro", "/run/user"});
    }
    // The host's /tmp and /var/tmp: another user's files and sockets there, and a tree of any
    // size, are absent, and what the target writes there never reaches the host. Each is sized, so
    // a target that fills it fills memory up to the size.
    for (const auto &dir : call.private_temp.replaced()) {
        add({"--perms", "1777", "--size", std::to_string(settings.tmpfs_bytes), "--tmpfs", dir});
    }
    // The runtime's prefix in them (target_call.hpp), at its host path: a skill target runs the
    // runner it holds. Read-only, or a target could change the programs the runtime runs for the
    // next call. First: the system paths in it, the workspace, the private root's cover, the
    // call's directories and the withheld paths' covers all come after, so a prefix holding one
    // neither shadows it nor uncovers what its cover hides.
    if (!call.runtime_prefix.empty()) {
        add({"--ro-bind", call.runtime_prefix, call.runtime_prefix});
    }
    // A system path in them is shown at its host path, read-only. Before the private root's
    // cover, as the workspace is: one that held the private root must never uncover it.
    for (const auto &p : spec.system_paths) {
        if (call.private_temp.in_replaced(p)) {
            add({"--ro-bind-try", p, p});
        }
    }
    // The private root: an empty read-only cover with only this call's home (and a workspace of
    // the call's run directory) bound back.
    const bool workspace_in_root = workspace_under_private_root(call);
    if (!workspace_in_root) {
        // Before the cover: a workspace that held the private root must never uncover it.
        add({"--bind", spec.workspace, spec.workspace});
    }
    const auto call_dir_size = std::to_string(settings.call_dir_bytes);
    // An unmade directory is a tmpfs of its own, sized: it vanishes with the call's mount
    // namespace (even when the runtime is killed), and a target filling it fills memory up to the
    // size, never the host's disk.
    auto call_dir = [&](const std::string &host, const std::string &mount) {
        if (call.unmade(host)) {
            add({"--perms", "0700", "--size", call_dir_size, "--tmpfs", mount});
        } else {
            add({"--bind", host, mount});
        }
    };
    call_dir(spec.temp_dir, temp_mount);
    add({"--size", "65536", "--tmpfs", private_root});
    call_dir(spec.home, spec.home);
    // Inside the home's own mount, whichever it is: the directories bwrap makes on the way
    // (.claude) are the target's to write in.
    const auto logins = login_file_options(call);
    view.insert(view.end(), logins.begin(), logins.end());
    if (workspace_in_root) {
        // After the cover, or the cover would hide it; the run's other directories stay hidden.
        add({"--bind", spec.workspace, spec.workspace});
    }
    if (!call.bridge_dir.empty()) {
        // After the cover, at its own path, read-write: the service writes its port file there and
        // the relay binds its socket (the port file's path is the one TEA_PORT_FILE names).
        add({"--bind", call.bridge_dir, call.bridge_dir});
    }
    if (!call.egress_dir.empty()) {
        // Read-only: the target may connect to the proxy's socket, never replace it.
        add({"--ro-bind", call.egress_dir, call.egress_dir});
    }
    check_read_only_over(spec, call.run_dir);
    for (const auto &r : spec.read_only) {
        // A read-only grant in the call's run directory (a trial's private repository) is bound
        // before the cover turns read-only, since its mount point must be made there. Anywhere
        // else under the private root it is refused: it would uncover another run.
        if (inside(r, private_root)) {
            if (!inside(r, call.run_dir) || normal(r) == fs::path{call.run_dir}) {
                std::string message = "the read-only grant " + r;
                message += " lies under the private root but not inside this call's run directory ";
                message += call.run_dir;
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
        // A withheld path that is gone (moved by an earlier call, say) or is now a link would
        // leave the real folder uncovered under another name: refused, not skipped.
        if (!fs::is_directory(status) && !fs::is_regular_file(status)) {
            throw tea::sdk::Unavailable(
                "the withheld path " + w +
                (fs::exists(status) ? " is neither a directory nor a regular file"
                                    : " does not exist") +
                "; an earlier call may have moved it: check the folder and withhold where it is "
                "now");
        }
        // Every directory between the workspace and the withheld path becomes a mount point of
        // its own: the kernel refuses to rename a mount point (EBUSY), so a target cannot move the
        // withheld folder's parent away from under its cover and leave the next call covering a
        // name that no longer holds it. (The call's temp directory and home hold no withheld
        // path: refused in target_call.)
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
    out.report = mask_sockets(settings, call, view);
    add({"--remount-ro", "/dev", "--chdir", spec.cwd});
    return out;
}

}  // namespace tea::bwrap
