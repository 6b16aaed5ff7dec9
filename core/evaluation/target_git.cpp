#include "evaluation/target_git.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "exec/environment.hpp"
#include "exec/git_config_env.hpp"
#include "files/beneath.hpp"
#include "git/private_repository.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace tea::evaluation {

namespace stdfs = std::filesystem;

stdfs::path build_target_repository(const git::WorkspaceSource &source,
                                    const std::vector<std::string> &withheld,
                                    files::RunDirectory &run_dir) {
    auto repository = run_dir.path() / ("repository-" + files::random_token(8));
    const auto cache = run_dir.private_root() / "git-cache";
    if (::mkdir(cache.c_str(), 0700) != 0 && errno != EEXIST) {
        throw runtime_failure("cannot make " + cache.string() + ": " + errno_text(errno));
    }
    git::PrivateRepositoryRequest request;
    // The git directory the source was found in, never the work tree's .git read again.
    request.project_repository = source.worktree_git_dir;
    request.commit = source.commit;
    request.withheld_paths = withheld;
    request.destination = repository;
    try {
        (void)git::build_private_repository(request, cache);
    } catch (const git::PrivateRepositoryError &e) {
        throw host_error(e.what());
    }
    return repository;
}

void grant_target_repository(exec::LaunchSpec &spec, const stdfs::path &repository) {
    // The target's git reads the private repository and can change nothing in it.
    spec.read_only.push_back(repository.string());
    // The repository belongs to the runtime, the checkout (lent) to the identity the target runs
    // as: git's ownership check would refuse one of the two. Inside the confinement that check
    // guards nothing: what a repository's configuration runs, runs confined. Added to the end of
    // the call's own GIT_CONFIG_COUNT list, never in place of it. The environment, not a file in
    // the home: it needs nothing written where the target writes, and holds whatever HOME or
    // GIT_CONFIG_GLOBAL the call sets.
    try {
        exec::add_git_config(spec.env, "safe.directory", "*");
    } catch (const std::invalid_argument &e) {
        throw usage_error(std::string{"the call's git configuration: "} + e.what() +
                          "; correct or unset the GIT_CONFIG_* variables");
    }
    // git status must not try to refresh the read-only index.
    exec::set_variable(spec.env, "GIT_OPTIONAL_LOCKS", "0");
}

namespace {

// Whether git's discovery could find a repository holding dir: a `.git` entry in it or an
// ancestor, or an ancestor that is itself a git directory (HEAD, objects and refs). Only then is
// the git module loaded: libgit2 costs every exec milliseconds of loading (docs/architecture.md).
// It may say yes for what is no repository (the module then finds none), never the reverse.
bool may_be_in_repository(const stdfs::path &dir) {
    std::error_code ec;
    for (auto p = dir.lexically_normal();; p = p.parent_path()) {
        if (stdfs::exists(stdfs::symlink_status(p / ".git", ec)) ||
            (stdfs::exists(p / "HEAD", ec) && stdfs::is_directory(p / "objects", ec) &&
             stdfs::is_directory(p / "refs", ec))) {
            return true;
        }
        if (p == p.parent_path()) {
            return false;
        }
    }
}

// Adds git_dir to the call's withheld paths unless one of them holds it already.
void withhold_git_dir(exec::LaunchSpec &spec, const stdfs::path &git_dir) {
    if (git_dir.empty()) return;
    const bool covered = std::any_of(spec.withhold.begin(), spec.withhold.end(),
                                     [&](const std::string &w) { return within(git_dir, w); });
    if (!covered) spec.withhold.push_back(git_dir.string());
}

}  // namespace

void withhold_git_dirs(exec::LaunchSpec &spec, const git::WorkspaceSource &source) {
    // The outer one first: it may hold the project's (a submodule's git directory).
    withhold_git_dir(spec, source.enclosing_git_dir);
    withhold_git_dir(spec, source.git_dir);
}

ExecGit give_exec_target_git(exec::LaunchSpec &spec, const stdfs::path &private_root) {
    const stdfs::path workspace{spec.workspace};
    if (!may_be_in_repository(workspace)) {
        return {};
    }
    git::WorkspaceSource source;
    try {
        source = git::open_workspace_source(workspace, {}, false);
    } catch (const git::WorkspaceSourceError &e) {
        throw usage_error("--workspace " + spec.workspace + ": " + e.what());
    }
    // A workspace inside the git directory itself is the user's choice to hand it over.
    if (!source.git || within(workspace, source.git_dir)) return {};
    withhold_git_dirs(spec, source);
    const auto dot_git = workspace / ".git";
    std::error_code ec;
    const auto kind = stdfs::symlink_status(dot_git, ec).type();
    // Only a checkout at the root of its work tree has a .git the private repository can stand in
    // for; a link there could carry the bind elsewhere.
    if (!source.prefix.empty() || source.commit.empty() ||
        (kind != stdfs::file_type::directory && kind != stdfs::file_type::regular)) {
        return {"none", nullptr};
    }
    auto run_dir = std::make_unique<files::RunDirectory>(private_root);
    std::vector<std::string> withheld;
    for (const auto &w : spec.withhold) {
        if (within(w, source.worktree) && !within(w, source.git_dir) &&
            stdfs::path{w} != source.worktree) {
            withheld.push_back(stdfs::path{w}.lexically_relative(source.worktree).string());
        }
    }
    const auto repository = build_target_repository(source, withheld, *run_dir);
    try {
        git::attach_in_place(workspace, repository);
    } catch (const git::PrivateRepositoryError &e) {
        throw host_error(e.what());
    }
    if (kind == stdfs::file_type::directory) {
        // The project's git directory is shown as the private repository.
        spec.read_only_over.push_back({repository.string(), dot_git.string()});
    } else {
        // A linked worktree's or submodule's .git file: shown as one naming the private repository.
        const auto dir = run_dir->make_directory("git-");
        // bwrap binds it as the sandbox identity: searchable, never listable.
        ::chmod(dir.c_str(), 0711);
        const auto file = dir / "dot-git";
        files::write_atomically(file, "gitdir: " + repository.string() + "\n");
        ::chmod(file.c_str(), 0644);
        spec.read_only_over.push_back({file.string(), dot_git.string()});
    }
    grant_target_repository(spec, repository);
    // The backend's run directory is the home's: the repository must lie beside it.
    spec.home = run_dir->make_directory("tea-evaluate-target-home-").string();
    return {"private repository", std::move(run_dir)};
}

}  // namespace tea::evaluation
