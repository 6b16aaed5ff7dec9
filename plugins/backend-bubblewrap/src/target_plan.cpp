#include "target_plan.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "command_line.hpp"
#include "descriptors.hpp"
#include "login_files.hpp"
#include "seccomp_program.hpp"  // generated from helper/seccomp_rules.cpp at build time
#include "view_list.hpp"

namespace tea::bwrap {

using documents::ExecPlan;
using documents::PlanFile;

namespace {

// The seccomp program (compiled from the rules at build time) as bwrap reads it: raw sock_filter
// records.
PlanFile seccomp_file() {
    const auto &program = tea::helper::generated::seccomp_program;
    return {number(Descriptor::seccomp),
            std::string{reinterpret_cast<const char *>(program), sizeof program},  // NOLINT
            {},
            false};
}

PlanFile program_file(Descriptor d, std::string path) {
    return {number(d), {}, std::move(path), false};
}

PlanFile content_file(Descriptor d, std::string content) {
    return {number(d), std::move(content), {}, false};
}

// Audited: the environment travels through a descriptor; the seccomp program is the helper's own
// copy of the same one.
void start_by_holder(const Settings &settings, const TargetCall &call,
                     std::vector<std::string> args, ExecPlan &plan) {
    const auto helper = helper_path();
    args.insert(args.end(),
                {"--clearenv", "--as-pid-1", "--seccomp", to_string(Descriptor::seccomp)});
    auto holder = target_bwrap_command(settings);
    holder.insert(holder.end(), {in_sandbox(Descriptor::helper), "hold", "--handoff-fd",
                                 to_string(Descriptor::holder_handoff)});
    plan.holder = documents::Holder{
        std::move(holder),
        {},
        "/",
        {target_args_file(args), seccomp_file(), program_file(Descriptor::helper, helper)},
        number(Descriptor::holder_handoff)};
    // bwrap, the holder, reads the login's files while it builds the view.
    const auto logins = login_plan_files(call);
    plan.holder->files.insert(plan.holder->files.end(), logins.begin(), logins.end());
    plan.handoff_fd = number(Descriptor::handoff);
    // Run through its descriptor, as inside: the sandbox identity may not search the directories
    // the runtime is installed in.
    plan.argv = {in_sandbox(Descriptor::helper),
                 "enter",
                 "--handoff-fd",
                 to_string(Descriptor::handoff),
                 "--env-fd",
                 to_string(Descriptor::env),
                 "--cwd",
                 call.spec.cwd,
                 "--"};
    plan.argv.insert(plan.argv.end(), call.spec.argv.begin(), call.spec.argv.end());
    plan.files = {content_file(Descriptor::env, join_nul(call.env)),
                  program_file(Descriptor::helper, helper)};
    plan.child = {call.limits, true};
    plan.audit = {call.start, true, call.writable};
}

// The runtime's child sets the limits and the session keyring before bwrap (the plan's limits
// and newSessionKeyring); the builder drops every capability, sets no_new_privs, takes the setup
// mark, closes every descriptor above 2 and loads the seccomp program (its own copy of the same
// one). The environment travels as --setenv pairs in bwrap's argument descriptor, never on a
// command line. The builder is the namespace's first process and stays its init, which ends the
// namespace when the runtime dies (view/view.cpp): bwrap's own init would take its parent-death
// signal too late.
void start_by_view_builder(const TargetCall &call, std::vector<std::string> args,
                           std::vector<std::string> view, ExecPlan &plan) {
    args.insert(args.end(), {"--as-pid-1", "--clearenv"});
    for (const auto &e : call.env) {
        const auto eq = e.find('=');
        args.insert(args.end(), {"--setenv", e.substr(0, eq), e.substr(eq + 1)});
    }
    plan.argv = plan.argv + view_builder_command(call.identity, call.start) + call.spec.argv;
    // The view's last element: a view cut short (a runtime killed while writing a staged call's
    // view) lacks it, and the builder then refuses to build any of it.
    view.emplace_back("--end");
    plan.files = {target_args_file(args),
                  call.staged ? PlanFile{number(Descriptor::view), {}, {}, true}
                              : content_file(Descriptor::view, join_nul(view)),
                  program_file(Descriptor::view_builder, view_builder_path())};
    // The builder reads the login's files while it builds the view (its --ro-bind-data).
    const auto logins = login_plan_files(call);
    plan.files.insert(plan.files.end(), logins.begin(), logins.end());
    plan.child = {call.limits, true};
    plan.audit = {call.start, true, call.writable};
}

// The helper takes the environment from a descriptor, sets the limits, closes every other
// descriptor, loads the seccomp program and runs the target (with its own error, 127, when there
// is no such program); for a call with a route out, the egress shim before it, and for a call with
// a bridge, the bridge relay.
void start_by_launcher(const TargetCall &call, std::vector<std::string> args, ExecPlan &plan) {
    const auto &spec = call.spec;
    const auto helper = helper_path();
    if (!call.egress_dir.empty()) {
        // In front of the helper, so its listener exists before the target starts and its relay
        // lives in the call's namespaces, ending with them.
        plan.argv.insert(plan.argv.end(),
                         {in_sandbox(Descriptor::shim), "--port", std::to_string(spec.egress.port),
                          "--socket", spec.egress.socket, "--"});
    }
    if (!call.bridge_dir.empty()) {
        // After the shim, so the shim stays the namespace's init and the relay's connections to
        // the service never pass through it; before the helper, so its socket exists before the
        // service starts. It detaches itself and execs the rest, so it runs under the same filter,
        // identity and namespaces as the target, and ends with the pid namespace.
        plan.argv.insert(plan.argv.end(), {in_sandbox(Descriptor::bridge_relay), "--socket",
                                           call.bridge_dir + "/bridge.sock", "--"});
    }
    // The shim (or else the helper) is the namespace's init, staying as its reaper and ending the
    // namespace when the runtime dies: bwrap's own init is dumpable here (a target writing its
    // /proc/1/mem would own it), and takes its parent-death signal only after bwrap's set-up.
    args.emplace_back("--as-pid-1");
    // bwrap loads the filter before its first process (and its own init) runs, so no process of
    // the call runs without it: not the shim or its relay, which start before the helper, nor
    // bwrap's init. The fresh session keyring is joined before bwrap for the same reason, and the
    // helper, under the filter, leaves it be.
    args.insert(args.end(), {"--seccomp", to_string(Descriptor::seccomp)});
    plan.child.new_session_keyring = true;
    plan.argv.insert(plan.argv.end(), {in_sandbox(Descriptor::helper), "confine", "--env-fd",
                                       to_string(Descriptor::env), "--keyring", "inherited"});
    for (const auto &[option, value] : {std::pair{"--cpu", call.limits.cpu_seconds},
                                        std::pair{"--fsize", call.limits.file_size_bytes},
                                        std::pair{"--nproc", call.limits.processes}}) {
        if (value != 0) {
            plan.argv.insert(plan.argv.end(), {option, std::to_string(value)});
        }
    }
    plan.argv.emplace_back("--");
    plan.argv.insert(plan.argv.end(), spec.argv.begin(), spec.argv.end());
    plan.files = {content_file(Descriptor::env, join_nul(call.env)), target_args_file(args),
                  program_file(Descriptor::helper, helper), seccomp_file()};
    const auto logins = login_plan_files(call);
    plan.files.insert(plan.files.end(), logins.begin(), logins.end());
    if (!call.egress_dir.empty()) {
        plan.files.push_back(program_file(Descriptor::shim, spec.egress.shim));
    }
    if (!call.bridge_dir.empty()) {
        plan.files.push_back(program_file(Descriptor::bridge_relay, spec.bridge.relay));
    }
    plan.audit = {in_sandbox(Descriptor::helper), false, call.writable};
}

}  // namespace

ExecPlan target_plan(const Settings &settings, const TargetCall &call) {
    // A staged call's view comes in the complete plan (its socket walk is the costly part),
    // through the descriptor the builder reads once bwrap has started it.
    TargetView view;
    if (!call.staged) {
        view = target_view(settings, call);
    }
    // bwrap's own options. The UTS namespace is the stream's last option (target_args_file), the
    // host name on bwrap's own command line (target_bwrap_command).
    std::vector<std::string> args = namespace_options();
    if (call.by_view_builder) {
        args = args + view_builder_privileges();
    } else {
        // No nested user namespace: one would give the target back every capability.
        args.insert(args.end(), {"--disable-userns", "--cap-drop", "ALL", "--block-fd",
                                 to_string(Descriptor::setup_mark)});
    }
    // /dev with its sized /dev/shm: bwrap's --dev binds six device nodes, each followed by a
    // re-read of the mount table, so the view builder makes it where it runs (staged too).
    const std::vector<std::string> dev{"--dev",   "/dev",    "--perms",
                                       "1777",    "--size",  std::to_string(settings.tmpfs_bytes),
                                       "--tmpfs", "/dev/shm"};
    args = args + std::vector<std::string>{"--ro-bind", "/", "/", "--proc", "/proc"};
    if (call.by_view_builder) {
        view.options = dev + view.options;
    } else {
        args = args + dev + view.options;
    }

    ExecPlan plan;
    plan.argv = target_bwrap_command(settings);
    plan.cwd = "/";
    plan.confinement = "bubblewrap";
    plan.report_json = view.report.dump();
    plan.setup_mark_fd = number(Descriptor::setup_mark);
    if (!call.start.empty() && call.spec.observed) {
        start_by_holder(settings, call, std::move(args), plan);
    } else if (call.by_view_builder) {
        start_by_view_builder(call, std::move(args), std::move(view.options), plan);
    } else {
        start_by_launcher(call, std::move(args), plan);
    }
    if (call.identity.dropped) {
        // Host root's files would belong to a bwrap started as root (uid-isolation).
        plan.run_as = {true, call.identity.uid, call.identity.gid};
        plan.lend = {true, call.identity.uid, call.identity.gid, call.lent_paths};
    }
    if (!call.spec.unmade.empty()) {
        plan.make_dirs.emplace();  // every one is provided inside the view
    }
    return plan;
}

}  // namespace tea::bwrap
