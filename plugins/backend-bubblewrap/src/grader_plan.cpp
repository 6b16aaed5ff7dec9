#include "grader_plan.hpp"

#include <unistd.h>

#include <string>
#include <tea/plugin.hpp>
#include <vector>

#include "command_line.hpp"
#include "descriptors.hpp"
#include "path_checks.hpp"
#include "paths.hpp"

namespace tea::bwrap {

documents::ExecPlan grader_plan(const Settings &settings, const documents::LaunchSpec &spec) {
    check_path(spec.workspace, "workspace");
    check_path(spec.cwd, "working directory");
    if (!spec.temp_dir.empty()) {
        check_path(spec.temp_dir, "temp directory");
    }
    if (!spec.home.empty()) {
        check_path(spec.home, "home");
    }
    // A grader runs outside the target's confinement: withholding would be a promise this view
    // does not keep, so it is refused rather than dropped.
    if (!spec.withhold.empty()) {
        throw tea::sdk::Invalid("a grader's launch spec withholds nothing (withhold: " +
                                spec.withhold.front() + "); list it in readOnly instead");
    }
    const bool routed = !spec.egress.socket.empty();
    if (routed) {
        // The socket is reached at its host path (this view shows the host's files), so it is
        // only checked, never bound; the decoder has refused a port out of range.
        check_path(spec.egress.socket, "egress socket");
        check_path(spec.egress.shim, "egress shim");
    }
    if (!spec.bridge.dir.empty()) {
        throw tea::sdk::Invalid("a grader starts no service and takes no bridge");
    }
    // A login is the target's: a grader shown one would hand the evaluation layer a credential
    // no entry granted it.
    if (!spec.login_files.empty()) {
        throw tea::sdk::Invalid("a grader takes no login; loginFiles names " +
                                spec.login_files.front().home_path);
    }
    if (!spec.read_only_over.empty()) {
        throw tea::sdk::Invalid("a grader sees the host's own files; nothing is shown over " +
                                spec.read_only_over.front().destination);
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

    std::vector<std::string> args;
    if (::geteuid() != 0) {
        // An unprivileged bwrap may mount only in a user namespace of its own. As root none is
        // made: the grader keeps the invoking identity, with no capability left.
        args.emplace_back("--unshare-user");
    }
    // The helper is the sandbox's first process and its init, ending it once the runtime is gone
    // (tea/namespace_init.hpp); see namespace_options for why not --die-with-parent.
    if (routed) {
        // An agent of the evaluation layer with a route reaches the hosts its egress lists and
        // nothing else: a network namespace of its own, whose only way out is the shim.
        args.emplace_back("--unshare-net");
    }
    args.insert(args.end(), {"--unshare-pid", "--as-pid-1",
                             // A new session: no controlling terminal to push input into.
                             "--new-session", "--block-fd", to_string(Descriptor::setup_mark),
                             // Without a capability the grader cannot remount a read-only bind.
                             "--cap-drop", "ALL", "--dev-bind", "/", "/", "--proc", "/proc"});
    for (const auto &r : spec.read_only) {
        // Recursive and read-only: the grader cannot rewrite evidence, move a ref, change the
        // repository's configuration or plant a hook, nor below in a submount.
        args.insert(args.end(), {"--ro-bind", r, r});
    }
    args.insert(args.end(), {"--chdir", spec.cwd});

    // No seccomp, socket mask, lend or runAs: the grader is code the team trusts, run as the
    // invoking user; only the evidence and the grading material are guarded. The helper is its
    // sandbox's init, nothing more.
    documents::ExecPlan plan;
    plan.argv = bwrap_command(settings);
    if (routed) {
        // In front of the helper: the shim's listener exists before the grader starts, and the
        // shim is the namespace's init, ending it when the runtime is gone, as in a target's.
        plan.argv.insert(plan.argv.end(),
                         {in_sandbox(Descriptor::shim), "--port", std::to_string(spec.egress.port),
                          "--socket", spec.egress.socket, "--"});
    }
    plan.argv.insert(plan.argv.end(), {in_sandbox(Descriptor::helper), "init"});
    if (routed) {
        plan.argv.insert(plan.argv.end(), {"--namespace-init", "egress-shim"});
    }
    plan.argv.emplace_back("--");
    plan.argv.insert(plan.argv.end(), spec.argv.begin(), spec.argv.end());
    plan.env = spec.env;
    plan.cwd = "/";
    plan.files = {args_file(args),
                  documents::PlanFile{number(Descriptor::helper), {}, helper_path(), false}};
    if (routed) {
        plan.files.push_back(
            documents::PlanFile{number(Descriptor::shim), {}, spec.egress.shim, false});
    }
    plan.confinement = "bubblewrap";
    plan.report_json = routed ? R"({"role":"grader","network":"egress"})" : R"({"role":"grader"})";
    plan.setup_mark_fd = number(Descriptor::setup_mark);
    return plan;
}

}  // namespace tea::bwrap
