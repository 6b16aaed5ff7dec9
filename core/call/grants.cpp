#include "call/grants.hpp"

#include <algorithm>

#include "util/paths.hpp"

namespace tea::call {

// What the call may reach without being listed (see audit/judge.hpp).
audit::Grants call_grants(const exec::LaunchSpec &spec, const exec::ExecPlan &plan,
                          const std::filesystem::path &private_root) {
    auto g = audit::default_os_grants();
    g.workspace_like = {spec.workspace, spec.temp_dir, spec.home};
    g.call_own = plan.audit.writable;
    if (spec.runtime_prefix != "/") {
        g.runtime = {spec.runtime_prefix};
    }
    g.system_paths = spec.system_paths;
    // A login's files shown read-only in the home: the target reads them (the home grants that),
    // and a CLI refreshing its token is refused there by design, which is no attempt to list.
    for (const auto &file : spec.login_files) {
        g.read_only_logins.push_back((std::filesystem::path{spec.home} / file.home_path).string());
    }
    // The launch spec's read-only grants (a trial's private repository) are readable; one that
    // lies under the private root is excepted from it, as the home is.
    g.system_paths.insert(g.system_paths.end(), spec.read_only.begin(), spec.read_only.end());
    g.always_listed = spec.withhold;
    // A withheld path the runtime shows something else over (exec's private repository at the
    // workspace's .git, over the project's git directory) holds what the target reads there; the
    // bind keeps the path's own content out of view, so reading it is no access to that content.
    std::erase_if(g.always_listed, [&spec](const std::string &w) {
        return std::any_of(spec.read_only_over.begin(), spec.read_only_over.end(),
                           [&w](const exec::ReadOnlyOver &o) {
                               return std::filesystem::path{o.destination}.lexically_normal() ==
                                      std::filesystem::path{w}.lexically_normal();
                           });
    });
    g.always_listed.push_back(private_root.string());
    // A trial's workspace may lie in a run directory beneath the private root, beside its home.
    g.always_listed_exceptions = {spec.temp_dir, spec.home, spec.workspace};
    g.always_listed_exceptions.insert(g.always_listed_exceptions.end(), spec.read_only.begin(),
                                      spec.read_only.end());
    if (!spec.bridge.dir.empty()) {
        // The started service's port file and the relay's socket: the call's own, like its home.
        g.workspace_like.push_back(spec.bridge.dir);
        g.always_listed_exceptions.push_back(spec.bridge.dir);
    }
    return g;
}

// Where the host shows what the target saw, for following what the observer could not place
// (audit/host_resolution.hpp): the workspace and home are the host's own directories, and the
// system paths and read-only grants are shown as the host has them; the sandbox's /dev, /proc,
// /sys and /run/user, the private root, the withheld paths and the plan's writable places (the
// confinement's own mounts, a /tmp of the call's own among them) are not.
audit::HostView host_view(const exec::LaunchSpec &spec, const exec::ExecPlan &plan,
                          const std::filesystem::path &private_root) {
    audit::HostView view;
    view.shared_writable = {spec.workspace, spec.home};
    view.view_only = {"/dev", "/proc", "/sys", "/run/user", private_root.string()};
    view.view_only.insert(view.view_only.end(), spec.withhold.begin(), spec.withhold.end());
    // A grant beneath a cover (the private root's, a withheld path's) is not what the host shows.
    for (const auto *grants : {&spec.system_paths, &spec.read_only}) {
        for (const auto &grant : *grants) {
            if (std::none_of(view.view_only.begin(), view.view_only.end(),
                             [&](const std::string &own) { return within(grant, own); })) {
                view.shared_read_only.push_back(grant);
            }
        }
    }
    // The runtime's installation is shown at its own path, read-only, even under a /tmp of the
    // call's own (a build tree there), unless it is or holds one of the view's own places (a
    // prefix of /tmp itself): followed on the host there, a name would be judged by the host's
    // /tmp, not the call's.
    const auto &prefix = spec.runtime_prefix;
    if (!prefix.empty() && prefix.front() == '/' &&
        std::filesystem::path{prefix}.lexically_normal() != std::filesystem::path{"/"} &&
        std::none_of(view.view_only.begin(), view.view_only.end(),
                     [&](const std::string &own) { return within(prefix, own); }) &&
        std::none_of(plan.audit.writable.begin(), plan.audit.writable.end(),
                     [&](const std::string &own) { return within(own, prefix); })) {
        view.shared_read_only.push_back(prefix);
    }
    view.view_only.insert(view.view_only.end(), plan.audit.writable.begin(),
                          plan.audit.writable.end());
    view.view_only_writable = {"/dev/shm", spec.temp_dir};
    view.view_only_writable.insert(view.view_only_writable.end(), plan.audit.writable.begin(),
                                   plan.audit.writable.end());
    return view;
}

}  // namespace tea::call
