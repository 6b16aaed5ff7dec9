// The call's directories handed to the identity its target runs as, for the call's duration: the
// directories above them made searchable by that identity's group alone, and the plan's lent
// trees lent (exec/lending.hpp) until the call has ended.
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "exec/exec_plan.hpp"
#include "exec/lending.hpp"
#include "files/private_dirs.hpp"

namespace tea::call {

class Handover {
   public:
    explicit Handover(std::filesystem::path private_root)
        : private_root_(std::move(private_root)) {}

    // A directory of the invoker's above the workspaces of the calls to come, which the target's
    // identity must search to reach them (see CallSession::search_by_target).
    void search_by_target(std::filesystem::path dir);

    // The start of a call: `removed_after` are the trees the caller removes once the call has
    // ended (a trial's workspace and home), never given back.
    void begin(std::vector<std::filesystem::path> removed_after);

    // Hands the call's directories to the identity its target runs as, before anything resolves a
    // path below them as that identity: the run directories it must pass through, and the plan's
    // lent trees. Nothing for a plan that keeps the invoker's identity. Exit 12 when it cannot.
    void hand_to_target(const exec::LaunchSpec &spec, const exec::ExecPlan &plan,
                        files::RunDirectory &run_dir);

    // The call's own mount namespace, where its lent directories are; -1: none.
    [[nodiscard]] int mount_namespace() const;

    // Gives back what was lent by ownership and lets the namespace go, keeping the record of how
    // each directory was lent (lent()).
    void give_back();
    [[nodiscard]] const std::vector<exec::Lending::Lent> &lent() const { return last_lent_; }

    // The end of a call, however it ends.
    void end();

   private:
    [[nodiscard]] std::vector<std::filesystem::path> searched_directories(
        const exec::LaunchSpec &spec, const files::RunDirectory &run_dir) const;

    std::filesystem::path private_root_;
    std::vector<std::filesystem::path> removed_after_;       // of the call running now
    std::vector<std::filesystem::path> searched_by_target_;  // see search_by_target
    std::optional<exec::Lending> lending_;
    exec::Lend lent_for_;                         // the plan's lend lending_ was made for
    std::vector<exec::Lending::Lent> last_lent_;  // what the last run of the call lent
    std::set<std::string> warned_ownership_;      // trees already named as lent by ownership
};

// Makes `dir` searchable by the group `gid` of the identity the target runs as, and by nobody else
// but its owner (0710). False, with errno, on failure.
bool hand_search(const std::filesystem::path &dir, unsigned gid);

// Hands the route's socket to the identity the target runs as. Exit 12 when it cannot.
void hand_route(const std::string &socket, const exec::Lend &lend);

}  // namespace tea::call
