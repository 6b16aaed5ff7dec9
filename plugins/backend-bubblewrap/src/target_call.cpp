#include "target_call.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <tea/plugin.hpp>

#include "environment.hpp"
#include "login_files.hpp"
#include "path_checks.hpp"
#include "paths.hpp"
#include "reach.hpp"

namespace tea::bwrap {

namespace fs = std::filesystem;

namespace {

// The directory of the call's egress socket, or "" for a call without egress. It must be a private
// directory of the call: a socket elsewhere would bind a host directory into view.
std::string egress_directory(const documents::LaunchSpec &spec, const std::string &private_root) {
    if (spec.egress.socket.empty()) {
        return {};
    }
    check_path(spec.egress.socket, "egress socket");
    check_path(spec.egress.shim, "egress shim");
    auto dir = fs::path{spec.egress.socket}.parent_path().string();
    if (spec.egress.port == 0 || !inside(dir, private_root) ||
        fs::path{dir}.lexically_normal() == fs::path{private_root}.lexically_normal()) {
        throw tea::sdk::Invalid("the egress socket " + spec.egress.socket +
                                " must lie in a private directory of the call under " +
                                private_root);
    }
    return dir;
}

// The bridge's directory (the port file and the relay's socket), or "" for a call without a
// bridge. Shown read-write at its own path, so it must be a directory of this call's own run
// directory, the one its temp directory is made in (a trial's home lies in the trial's): one
// anywhere else would hand the target a host directory to write.
std::string bridge_directory(const documents::LaunchSpec &spec) {
    if (spec.bridge.dir.empty()) {
        return {};
    }
    check_path(spec.bridge.dir, "bridge directory");
    check_path(spec.bridge.relay, "bridge relay");
    check_path(spec.temp_dir, "temp directory of a call with a bridge");
    const auto run_dir = normal(fs::path{spec.temp_dir}.parent_path().string()).string();
    const auto dir = normal(spec.bridge.dir);
    if (dir.parent_path() != fs::path{run_dir}) {
        throw tea::sdk::Invalid("the bridge directory " + spec.bridge.dir +
                                " must be a directory of the call's run directory " + run_dir);
    }
    std::error_code ec;
    const auto status = fs::symlink_status(dir, ec);
    // A link there would carry the read-write bind (and the loan) to wherever it points.
    if (!fs::is_directory(status)) {
        throw tea::sdk::Invalid("the bridge directory " + spec.bridge.dir +
                                " is not a directory (a link is refused)");
    }
    return dir.string();
}

// The host's temp directories as the call's view has them: each replaced, unless a place the view
// shows at its host path holds it. `runtime_prefix` is shown there too, once chosen
// (shown_runtime_prefix), and never keeps a temp directory the host's.
PrivateTemp private_temp_of(const documents::LaunchSpec &spec, const std::string &egress_dir,
                            const std::string &runtime_prefix) {
    std::vector<std::string> shown{spec.workspace, spec.home, egress_dir, spec.bridge.dir,
                                   runtime_prefix};
    shown.insert(shown.end(), spec.system_paths.begin(), spec.system_paths.end());
    shown.insert(shown.end(), spec.read_only.begin(), spec.read_only.end());
    return PrivateTemp{{host_temp_dirs.begin(), host_temp_dirs.end()}, std::move(shown)};
}

// The runtime's prefix when the view must show it (TargetCall::runtime_prefix), judged against
// the temp directories the view replaces without it.
std::string shown_runtime_prefix(const documents::LaunchSpec &spec, const PrivateTemp &temp,
                                 const std::string &private_root) {
    const auto &prefix = spec.runtime_prefix;
    // "" and "/" name no installation; a relative path names no place, and lies in no temp
    // directory.
    if (prefix.empty() || prefix[0] != '/' || normal(prefix) == fs::path{"/"}) {
        return {};
    }
    // Shown already (by the root's bind or a place the view binds back), or not in /tmp.
    if (!temp.hides(prefix)) {
        return {};
    }
    // A prefix that is a replaced temp directory would hand the target the host's whole /tmp.
    const auto &replaced = temp.replaced();
    if (std::any_of(replaced.begin(), replaced.end(),
                    [&](const std::string &r) { return inside(r, prefix); })) {
        return {};
    }
    // Covered whatever is bound beneath: bound after the private root's cover it would uncover a
    // run's directory, and a withheld folder's content would show under its own name.
    if (inside(prefix, private_root) ||
        std::any_of(spec.withhold.begin(), spec.withhold.end(),
                    [&](const std::string &w) { return inside(prefix, w); })) {
        return {};
    }
    check_path(prefix, "runtime prefix");
    std::error_code ec;
    const auto status = fs::symlink_status(prefix, ec);
    if (!fs::exists(status)) {
        return {};  // nothing to show
    }
    // A link, or a path through one, would carry the read-only bind to wherever it leads (a
    // withheld folder under another name).
    check_protected_path(prefix);
    return normal(prefix).string();
}

void check_paths(const documents::LaunchSpec &spec) {
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
                "the call's private directories lie inside the withheld path " + w);
        }
    }
    if (inside(spec.home, spec.workspace)) {
        throw tea::sdk::Unavailable("the home " + spec.home + " lies inside the workspace " +
                                    spec.workspace + "; it must not");
    }
}

// Every directory of the call the target starts in or works in must be reachable by the identity
// it runs as, or the call would fail inside the sandbox with a reason nobody sees.
void check_reachable(const TargetCall &call) {
    const auto &spec = call.spec;
    for (const auto &p : {spec.workspace, spec.cwd, spec.temp_dir, spec.home}) {
        if (call.unmade(p)) {
            continue;  // made by bwrap, by the sandbox identity, inside the view
        }
        // Inside a lent tree the path itself counts: the target enters it as the tree's owner, or
        // not at all.
        const fs::path way =
            tree_of(call.lent, p) != nullptr ? fs::path{p} : fs::path{p}.parent_path();
        if (const auto blocked = unreachable(way, call.identity, call.lent)) {
            const auto *tree = tree_of(call.lent, *blocked);
            throw tea::sdk::Unavailable(
                "the sandbox identity (uid " + std::to_string(call.identity.uid) +
                ") cannot reach " + p + " because it may not search " + blocked->string() +
                (tree != nullptr ? ", which the owner of " + tree->top.string() + " (uid " +
                                       std::to_string(tree->owner_uid) +
                                       ", whom the target stands for in it) does not own; make it "
                                       "searchable, or use a working directory the target can reach"
                                 : "; use a workspace it can reach (under /tmp or /srv, say)"));
        }
    }
}

}  // namespace

bool TargetCall::unmade(const std::string &path) const {
    return std::find(spec.unmade.begin(), spec.unmade.end(), path) != spec.unmade.end();
}

TargetCall target_call(const Settings &settings, const documents::LaunchSpec &spec,
                       const Identity &sandbox) {
    const auto identity = spec.identity && ::geteuid() == 0
                              ? Identity{spec.identity->uid, spec.identity->gid, true}
                              : sandbox;
    check_paths(spec);
    const auto private_root = fs::path{spec.home}.parent_path().parent_path().string();
    TargetCall call{spec,
                    identity,
                    {},
                    {},
                    {},
                    {},
                    private_root,
                    normal(fs::path{spec.home}.parent_path().string()).string(),
                    {},
                    {},
                    {},  // runtime_prefix, chosen once the private temp directories are known
                    PrivateTemp{{}, {}},
                    {},
                    {},
                    false,
                    false};
    // What the plan lends: the runtime shows each at its own path whatever lies above it, so
    // only what lies inside a tree can keep the identity out.
    call.lent_paths.push_back(spec.workspace);
    for (const auto &p : {spec.temp_dir, spec.home}) {
        if (!call.unmade(p)) {
            call.lent_paths.push_back(p);
        }
    }
    call.bridge_dir = bridge_directory(spec);
    if (!call.bridge_dir.empty()) {
        // Lent like the temp directory: the service writes its port file there and the relay
        // binds its socket, as the sandbox identity; the host reads both as hostile.
        call.lent_paths.push_back(call.bridge_dir);
    }
    if (identity.dropped) {
        for (const auto &p : call.lent_paths) {
            if (auto tree = lent_tree(p)) {
                call.lent.push_back(std::move(*tree));
            }
        }
    }
    check_reachable(call);
    check_login_files(call);

    call.env = target_environment(spec, temp_mount);
    const auto limit = [](std::uint64_t spec_value, std::uint64_t fallback) {
        return spec_value != 0 ? spec_value : fallback;
    };
    call.limits = documents::Limits{limit(spec.limits.cpu_seconds, settings.cpu_seconds),
                                    limit(spec.limits.file_size_bytes, settings.file_size_bytes),
                                    limit(spec.limits.processes, settings.processes)};
    call.egress_dir = egress_directory(spec, private_root);
    call.private_temp = private_temp_of(spec, call.egress_dir, {});
    call.runtime_prefix = shown_runtime_prefix(spec, call.private_temp, private_root);
    if (!call.runtime_prefix.empty()) {
        call.private_temp = private_temp_of(spec, call.egress_dir, call.runtime_prefix);
    }
    if (call.private_temp.hides(spec.cwd)) {
        throw tea::sdk::Unavailable(
            "the working directory " + spec.cwd +
            " lies in the host's temp directory outside the call's grants, and the target's "
            "temp directories are its own; run the call in its workspace");
    }
    // Empty when the host has no such program (the call then fails to start), or when a launcher
    // must start the target: for a route out or a bridge (the shim and the relay go first) or an
    // environment bwrap's --setenv cannot carry.
    if (call.egress_dir.empty() && call.bridge_dir.empty() && settable(call.env)) {
        call.start =
            exec_path(spec.argv[0], call.env, spec.cwd, identity, call.lent, call.private_temp);
    }
    call.writable.emplace_back(temp_mount);
    if (!call.bridge_dir.empty()) {
        call.writable.push_back(call.bridge_dir);  // the port file and the relay's socket
    }
    for (const auto &dir : call.private_temp.replaced()) {
        call.writable.push_back(dir);
    }
    call.by_view_builder = !call.start.empty() && !spec.observed;
    call.staged = spec.staged && call.by_view_builder;
    return call;
}

}  // namespace tea::bwrap
