// The call's directories lent to the identity its target runs as (the plan's lend), for the call's
// duration: the workspace, the call's temp directory and the trial's home.
//
// Each tree is shown to that identity, in the call's own mount namespace (call_mounts.hpp), at its
// own path, through an idmapped copy that maps the owner of the tree's top onto it (idmap.hpp):
// the target writes the tree as its owner would, what it makes belongs to that owner on disk, and
// nothing on disk changes owner or ctime. The cost does not grow with the tree. A tree whose file
// system refuses the idmap is lent by ownership instead (ownership.hpp), the old way, and named in
// lent() so the caller can say so. Either way the tree is reachable in the call's namespace
// through directories the identity could not search on the host (/root/project).
//
// Only root can lend: the namespace and the idmaps take CAP_SYS_ADMIN over the host.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "exec/exec_plan.hpp"
#include "exec/ownership.hpp"
#include "util/fd.hpp"

namespace tea::exec {

class Lending {
   public:
    struct Request {
        std::vector<std::filesystem::path> trees;  // absolute; none inside another
        uid_t uid = 0;
        gid_t gid = 0;
        // The withheld paths: a loan by ownership leaves them alone (see OwnershipLoan), and
        // one that lies in a directory the namespace covers gets a mount point there.
        std::vector<std::filesystem::path> kept;
        // For a loan by ownership: what it never gives back. An idmapped tree changes nothing on
        // disk, so this does not apply to it.
        std::vector<std::filesystem::path> disposable;

        // The plan's lend (each tree once), keeping the withheld paths.
        static Request of(const Lend &lend, const std::vector<std::string> &withhold);
    };
    // How one tree was lent.
    struct Lent {
        std::filesystem::path path;
        bool idmapped = false;
        std::string filesystem;  // where the idmap was refused: the file system's name
        int refusal = 0;         // and the error mount_setattr gave
    };

    Lending() = default;
    // Throws tea::Error (exit 125) naming the tree when one cannot be lent either way.
    explicit Lending(const Request &request);
    Lending(const Lending &) = delete;
    Lending &operator=(const Lending &) = delete;
    Lending(Lending &&) = default;
    Lending &operator=(Lending &&) = default;
    ~Lending() = default;

    // The call's mount namespace, for RunOptions::mount_namespace; -1 when nothing is lent.
    [[nodiscard]] int mount_namespace() const { return namespace_.valid() ? namespace_.get() : -1; }
    [[nodiscard]] const std::vector<Lent> &lent() const { return lent_; }
    // Entries a loan by ownership left with their owner, having more than one name.
    [[nodiscard]] std::size_t skipped_hard_links() const { return loan_.skipped_hard_links(); }
    // Gives back what was lent by ownership (also done by the destructor). The namespace stays
    // until this object goes.
    void restore() { loan_.restore(); }

   private:
    std::vector<Lent> lent_;
    OwnershipLoan loan_;
    UniqueFd namespace_;
};

}  // namespace tea::exec
