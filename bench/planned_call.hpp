// The bubblewrap backend's own plan for a call, as a command line a benchmark can start the way
// it starts raw bwrap: what bwrap costs with every argument the runtime gives it, apart from
// what the runtime itself costs. Header-only; link tea_core.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "exec/environment.hpp"
#include "exec/exec_plan.hpp"
#include "files/private_dirs.hpp"
#include "plugins/loader.hpp"
#include "util/runtime_paths.hpp"

namespace tea::bench {

struct PlannedCall {
    std::vector<std::string> argv;   // ends with the call's command
    OpenFiles files;                 // the plan's descriptors, from files
    std::vector<std::string> bwrap;  // argv without the helper's drop
    bool run_as = false;             // as root: the plan's identity, uid and gid
    uid_t uid = 0;
    gid_t gid = 0;
    // {"--uid", U, "--gid", G} when run_as, else empty: the options of the helper's drop and of
    // process_floor alike.
    [[nodiscard]] std::vector<std::string> identity() const {
        if (!run_as) {
            return {};
        }
        return {"--uid", std::to_string(uid), "--gid", std::to_string(gid)};
    }
};

// The plan for `command` in `ws` (its working directory and workspace), with the call's
// directories made in `run_dir`, where the runtime keeps them, so that the plan covers and binds
// what a real call's does. The plan's content files are written beside them and the setup mark is
// a file holding its one byte. As root, the plan's identity is taken through the helper's drop,
// as in the raw baseline, and the call's directories are handed to it; the plan's limits and
// keyring are left out (the runner's few system calls, not bwrap's).
inline PlannedCall planned_call(const std::string &tea_evaluate, const std::string &helper,
                                const std::string &ws, files::RunDirectory &run_dir,
                                const std::vector<std::string> &command,
                                const std::vector<std::string> &system_paths = {}) {
    namespace stdfs = std::filesystem;
    const auto paths =
        RuntimePaths::for_prefix(stdfs::path{tea_evaluate}.parent_path().parent_path());
    const auto registry = plugins::Registry::discover({paths.manifest_dir}, paths.plugin_libdir);
    const auto &plugin = registry.require("bubblewrap", plugins::Kind::backend);
    const auto instance = plugin.create("{}");
    exec::LaunchSpec spec;
    spec.argv = command;
    spec.env = exec::current_environment();
    spec.workspace = ws;
    spec.cwd = ws;
    spec.system_paths = system_paths;
    spec.temp_dir = run_dir.make_directory("tmp-").string();
    spec.home = run_dir.make_directory("tea-evaluate-target-home-").string();
    spec.runtime_prefix = paths.prefix.string();
    spec.helper_dir = paths.helper_dir.string();
    const auto &ops = std::get<tea_backend_ops>(plugin.ops());
    const auto plan =
        exec::exec_plan_from_json(instance->transform(ops.prepare, "prepare", exec::to_json(spec)));
    if (plan.lend.requested) {
        for (const auto &dir : {spec.temp_dir, spec.home}) {
            if (::chown(dir.c_str(), plan.lend.uid, plan.lend.gid) != 0) {
                std::perror(dir.c_str());
                std::exit(1);
            }
        }
    }
    // The plan's files in a directory of their own: two plans made in one run directory name
    // the same descriptors.
    const auto files_dir = run_dir.make_directory("plan-");
    PlannedCall out;
    if (plan.run_as.requested) {
        out.run_as = true;
        out.uid = plan.run_as.uid;
        out.gid = plan.run_as.gid;
        out.argv = with({helper, "drop"}, out.identity());
        out.argv.emplace_back("--");
    }
    out.bwrap = plan.argv;
    out.argv = with(out.argv, plan.argv);
    for (const auto &f : plan.files) {
        auto file = f.path;
        if (file.empty()) {
            file = (files_dir / ("fd-" + std::to_string(f.child_fd))).string();
            std::ofstream{file, std::ios::binary} << f.content;
        }
        out.files.emplace_back(f.child_fd, file);
    }
    if (plan.setup_mark_fd >= 0) {
        const auto mark = (files_dir / "setup-mark").string();
        std::ofstream{mark} << 'm';
        out.files.emplace_back(plan.setup_mark_fd, mark);
    }
    return out;
}

// process_floor (bench/process_floor.c) starting `wrapper` and then the plan's bwrap, taking the
// plan's identity itself as the runtime does (no helper), with `options` first: the least a
// runtime that stays around the call costs. Start it with the call's `files`.
inline std::vector<std::string> floor_argv(const std::string &floor, const PlannedCall &call,
                                           std::vector<std::string> options,
                                           const std::vector<std::string> &wrapper = {}) {
    options.insert(options.begin(), floor);
    options = with(options, call.identity());
    options.emplace_back("--");
    return with(with(options, wrapper), call.bwrap);
}

}  // namespace tea::bench
