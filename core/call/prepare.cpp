#include "call/prepare.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "util/error.hpp"
#include "util/mountinfo.hpp"
#include "util/paths.hpp"

namespace tea::call {
namespace {

bool contains(const std::vector<std::string> &list, const std::string &item) {
    return std::find(list.begin(), list.end(), item) != list.end();
}

std::string invalid_plan(const std::string &backend) {
    return "the backend '" + backend + "' returned an invalid exec plan: ";
}

// Only the call's own directories may be lent to the sandbox identity; a plugin asking for
// anything else (/etc, say) is refused.
// Where `path` lies on its file system: the device of the mount that shows it (the last of the
// mounts at the longest mount point above it) and its path from that file system's root.
struct Location {
    std::string device;
    std::filesystem::path path;
};
std::optional<Location> location(const std::vector<mountinfo::Mount> &mounts,
                                 const std::filesystem::path &path) {
    const mountinfo::Mount *shown = nullptr;
    for (const auto &m : mounts) {
        if (within(path, m.point) &&
            (shown == nullptr || std::distance(m.point.begin(), m.point.end()) >=
                                     std::distance(shown->point.begin(), shown->point.end()))) {
            shown = &m;
        }
    }
    if (shown == nullptr) {
        return std::nullopt;
    }
    const auto below = path.lexically_relative(shown->point);
    return Location{shown->device,
                    below == "." ? shown->root : (shown->root / below).lexically_normal()};
}

// Whether `inner` lies in `outer` (a system folder) where the file system is: the same device, and
// its path from that file system's root inside the folder's. A workspace bound from a system
// folder to a plain path lies there still.
bool lies_in(const std::vector<mountinfo::Mount> &mounts, const Location &inner,
             const std::filesystem::path &outer) {
    const auto at = location(mounts, outer);
    return at && at->device == inner.device && within(inner.path, at->path);
}

// Refuses to lend a workspace whose lend would give the target more than the workspace: one with
// a mount beneath it, or one inside a system folder (by its path, or where its file system puts
// it).
void check_lent_workspace(const std::string &workspace) {
    std::ifstream in{"/proc/self/mountinfo"};
    const std::string text{std::istreambuf_iterator<char>{in}, {}};
    // Unread, nothing would be seen beneath the workspace: the lend is refused instead.
    if (!in.is_open() || text.empty()) {
        throw host_error("cannot read /proc/self/mountinfo to check the workspace " + workspace +
                         " for mounts beneath it");
    }
    const auto mounts = mountinfo::parse(text);
    // Attack: the lend copies the workspace with every mount beneath it, the owner's files shown
    // as the target's: a mount beneath a workspace of root's (a bind of /etc, say) would hand the
    // target root's files there, beyond the workspace the operator named.
    for (const auto &mount : mounts) {
        if (mount.point != std::filesystem::path{workspace} && within(mount.point, workspace)) {
            throw host_error("the workspace " + workspace + " has a mount beneath it at " +
                             mount.point.string() +
                             ", which the runtime will not hand to the sandbox identity with it; "
                             "unmount it or choose a workspace without one");
        }
    }
    // Attack: what a target makes in a lent tree is the tree's owner's on disk, root's for a system
    // folder's, and the host runs or trusts root's files there (/etc/cron.d, /usr/local/bin,
    // /var/spool/cron): a workspace inside one, or bound from one, would let the target plant them.
    const auto real = location(mounts, workspace);
    const auto in_folder = [&](const std::filesystem::path &folder) {
        return within(workspace, folder) || (real && lies_in(mounts, *real, folder));
    };
    // Sources are kept beneath /usr/src by convention (a container's WORKDIR), never run.
    if (in_folder("/usr/src") || in_folder("/usr/local/src")) {
        return;
    }
    for (const std::filesystem::path system :
         {"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot",
          "/var/spool", "/run/systemd"}) {
        if (in_folder(system)) {
            throw host_error("the workspace " + workspace + " lies inside " + system.string() +
                             ", where the files a target makes would be root's for the host to run "
                             "or trust; the runtime will not hand it to the sandbox identity; "
                             "choose a project directory as the workspace");
        }
    }
}

void check_lend(const exec::ExecPlan &plan, const exec::LaunchSpec &spec) {
    for (const auto &p : plan.lend.paths) {
        if (contains(spec.unmade, p) && (!plan.make_dirs || !contains(*plan.make_dirs, p))) {
            // A name with nothing behind it: lending it would chown whatever appears there.
            throw runtime_failure("the backend asked to hand " + p +
                                  " to the sandbox identity, a directory it left unmade");
        }
        if (p != spec.workspace && p != spec.temp_dir && p != spec.home &&
            (spec.bridge.dir.empty() || p != spec.bridge.dir)) {
            throw runtime_failure("the backend asked to hand " + p +
                                  " to the sandbox identity; only the workspace, the call's temp "
                                  "directory, the home and the bridge's directory may be");
        }
    }
    // A call given an identity of its own shares it with no other: a plan that runs the target,
    // or lends its directories, as another would let calls reach each other through it.
    if (spec.identity) {
        const auto other = [&](unsigned uid, unsigned gid) {
            return uid != spec.identity->uid || gid != spec.identity->gid;
        };
        if ((plan.run_as.requested && other(plan.run_as.uid, plan.run_as.gid)) ||
            (plan.lend.requested && other(plan.lend.uid, plan.lend.gid))) {
            throw runtime_failure(
                "the backend planned the target as another identity than the "
                "call's own (uid " +
                std::to_string(spec.identity->uid) + ", [confinement] uid_range)");
        }
    }
    for (const std::filesystem::path system :
         {"/", "/etc", "/usr", "/bin", "/lib", "/var/lib", "/root", "/home"}) {
        if (plan.lend.requested && within(system, spec.workspace)) {
            throw host_error("the workspace " + spec.workspace + " holds " + system.string() +
                             ", which the runtime will not hand to the sandbox identity; choose a "
                             "project directory as the workspace");
        }
    }
    if (plan.lend.requested) {
        check_lent_workspace(spec.workspace);
    }
}

}  // namespace

void check_plan(const exec::ExecPlan &plan, const exec::LaunchSpec &spec,
                const std::string &backend) {
    for (const auto &f : plan.files) {
        if (f.deferred && !spec.staged) {
            // Only a staged call's process may start before its files are whole.
            throw runtime_failure(invalid_plan(backend) + "files: descriptor " +
                                  std::to_string(f.child_fd) +
                                  " is deferred in a plan the launch spec asked to be complete");
        }
    }
    for (const auto &d : plan.make_dirs.value_or(std::vector<std::string>{})) {
        if (!contains(spec.unmade, d)) {
            // The host makes only the call's own directories, never a path a plugin names.
            throw runtime_failure(invalid_plan(backend) + "makeDirs: " + d +
                                  " is not a directory the launch spec left unmade");
        }
    }
    if (spec.role == "grader") {
        if (plan.lend.requested || plan.run_as.requested) {
            // A grader keeps the invoking identity; a plan that hands it anything is not a
            // grader's.
            throw runtime_failure("the backend '" + backend +
                                  "' answered a grader's launch spec with a target's plan");
        }
        return;
    }
    check_lend(plan, spec);
}

void make_planned_dirs(const exec::ExecPlan &plan, files::RunDirectory &run_dir) {
    for (const auto &d : plan.make_dirs.value_or(std::vector<std::string>{})) {
        run_dir.make_named(d);
    }
}

const std::string &Planner::name() const {
    return backend_.plugin->name();
}

exec::ExecPlan Planner::prepare(const exec::LaunchSpec &spec) const {
    const auto &ops = std::get<tea_backend_ops>(backend_.plugin->ops());
    std::string plan_json;
    try {
        plan_json = backend_.instance->transform(ops.prepare, "prepare", exec::to_json(spec));
    } catch (const std::exception &e) {
        throw host_error(e.what());
    }
    exec::ExecPlan plan;
    try {
        plan = exec::exec_plan_from_json(plan_json);
    } catch (const std::exception &e) {
        throw runtime_failure(invalid_plan(name()) + e.what());
    }
    if (plan.child.new_session && !backend_.plugin->capabilities().new_session) {
        // What the plugin declares is what it is held to: a host of its minor would refuse the
        // field, so a plugin cannot rely on it while claiming the older contract.
        throw runtime_failure(invalid_plan(name()) +
                              "newSession: a field of ABI 1.10; the plugin declares 1." +
                              std::to_string(backend_.plugin->abi_minor()) + " (declare 1.10)");
    }
    return plan;
}

exec::ExecPlan Planner::prepare_complete(exec::LaunchSpec &spec,
                                         files::RunDirectory &run_dir) const {
    auto plan = prepare(spec);
    if (!spec.unmade.empty() && !plan.make_dirs) {
        for (const auto &d : spec.unmade) {
            run_dir.make_named(d);
        }
        spec.unmade.clear();
        plan = prepare(spec);
    }
    check_plan(plan, spec, name());
    make_planned_dirs(plan, run_dir);
    return plan;
}

}  // namespace tea::call
