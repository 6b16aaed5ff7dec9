#include "call/handover.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::call {

// Makes `dir` searchable by the group `gid` of the identity the target runs as, and by nobody else
// but its owner (0710): that identity can pass through it to what it was handed beneath, and no
// other user of the host can reach a name inside it, even one it read in `ps` (a call's working
// directory is on the helper's command line). False, with errno, on failure.
bool hand_search(const std::filesystem::path &dir, unsigned gid) {
    // Through one descriptor of the directory itself: a link put in its place is never followed.
    const UniqueFd fd{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    return fd && ::fchown(fd.get(), static_cast<uid_t>(-1), gid) == 0 &&
           ::fchmod(fd.get(), 0710) == 0;
}

// Hands the route to the identity the target runs as: the socket (still 0600) becomes its, and
// its directory searchable by that identity's group alone. No other user of the host can borrow
// the route, and another user's call cannot even reach the socket's path, so it never has to
// mask a socket that goes away when this call ends.
void hand_route(const std::string &socket, const exec::Lend &lend) {
    if (::fchownat(AT_FDCWD, socket.c_str(), lend.uid, lend.gid, AT_SYMLINK_NOFOLLOW) != 0 ||
        !hand_search(std::filesystem::path{socket}.parent_path(), lend.gid)) {
        throw host_error("cannot hand the egress socket " + socket +
                         " to the sandbox identity: " + errno_text(errno));
    }
}

std::vector<std::filesystem::path> Handover::searched_directories(
    const exec::LaunchSpec &spec, const files::RunDirectory &run_dir) const {
    auto dirs = searched_by_target_;
    if (run_dir.made()) {
        dirs.push_back(run_dir.path());  // the trace, the route's socket, a home made for the call
    }
    // The run directory a trial's workspace, home and private repository lie in.
    for (const auto &p : {spec.workspace, spec.home}) {
        const auto parent = std::filesystem::path{p}.parent_path();
        const bool unmade =
            std::find(spec.unmade.begin(), spec.unmade.end(), p) != spec.unmade.end();
        if (!p.empty() && !unmade && parent.parent_path() == private_root_) {
            dirs.push_back(parent);
        }
    }
    std::sort(dirs.begin(), dirs.end());
    dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
    return dirs;
}

void Handover::search_by_target(std::filesystem::path dir) {
    searched_by_target_.push_back(std::move(dir));
}

void Handover::begin(std::vector<std::filesystem::path> removed_after) {
    removed_after_ = std::move(removed_after);
    last_lent_.clear();
}

int Handover::mount_namespace() const {
    return lending_ ? lending_->mount_namespace() : -1;
}

void Handover::give_back() {
    last_lent_ = lending_ ? lending_->lent() : std::vector<exec::Lending::Lent>{};
    lending_.reset();
}

void Handover::end() {
    removed_after_.clear();  // a later call must not take this call's trees as ones to remove
    lending_.reset();
}

// Hands the call's directories to the identity its target runs as, before anything resolves a
// path below them as that identity: the run directories it must pass through, and the plan's lent
// trees (exec/lending.hpp), kept in lending_ until the call has ended. Nothing for a plan that
// keeps the invoker's identity.
void Handover::hand_to_target(const exec::LaunchSpec &spec, const exec::ExecPlan &plan,
                              files::RunDirectory &run_dir) {
    if (!plan.lend.requested && !plan.run_as.requested) {
        return;
    }
    // Once the call runs, `ps` shows these directories' names to every local user, who could
    // read a trial's copy of the project below them: from here on only the target's group
    // may pass through.
    const unsigned gid = plan.run_as.requested ? plan.run_as.gid : plan.lend.gid;
    for (const auto &dir : searched_directories(spec, run_dir)) {
        if (!hand_search(dir, gid)) {
            throw host_error("cannot make " + dir.string() +
                             " searchable by the sandbox identity: " + errno_text(errno));
        }
    }
    if (!plan.lend.requested || (lending_ && lent_for_ == plan.lend)) {
        return;
    }
    auto request = exec::Lending::Request::of(plan.lend, spec.withhold);
    // What this call's run directory holds goes with it at the call's end: its temp
    // directory, and a home made for this call alone. So do the trees the caller removes
    // once the call has ended (a trial's workspace and home, after its last call).
    request.disposable = removed_after_;
    for (const auto &p : {spec.temp_dir, spec.home}) {
        if (!p.empty() && std::filesystem::path{p}.parent_path() == run_dir.path()) {
            request.disposable.emplace_back(p);
        }
    }
    lending_.reset();
    lending_.emplace(request);
    lent_for_ = plan.lend;
    for (const auto &lent : lending_->lent()) {
        if (!lent.idmapped && warned_ownership_.insert(lent.path.string()).second) {
            spdlog::warn(
                "{} lies on {}, which refused an idmapped mount ({}): it is lent to the "
                "target's identity by ownership instead, which walks the whole tree before and "
                "after each call and changes the ctime of every entry",
                lent.path.string(), lent.filesystem, errno_text(lent.refusal));
        }
    }
    if (lending_->skipped_hard_links() > 0) {
        spdlog::warn(
            "{} files with several hard links stay owned by their owner and are not "
            "writable by the target",
            lending_->skipped_hard_links());
    }
}

}  // namespace tea::call
