// Lending a tree by ownership: where a file system refuses an idmapped mount (idmap.hpp).
//
// When the runtime runs as root, the backend runs the target under an unprivileged identity of
// its own, so that a file the mounts forgot is still guarded by its permissions. That identity
// must be able to write what it is lent: the workspace, the call's temp directory and the trial's
// home. An idmapped mount shows it each tree as its own with nothing on disk changed; on a file
// system that takes no idmap (NFS, ramfs, overlay), a loan hands every entry of the tree to it
// for the call and gives each back to its owner after, with what the target created going to the
// owner of the tree's top. That costs a walk of the tree each way and rewrites every entry's
// ctime, and a run killed mid-call leaves the entries with the identity.
//
// Both walks go by descriptor: each directory is entered from its parent's descriptor without
// following a link and checked to be the one looked at, and each entry is changed through that
// descriptor without following a link, so a directory swapped for a link to a host folder during
// the walk never carries the walk there.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tea::exec {

// A file by what it is rather than by name: its device and inode.
struct FileIdentity {
    dev_t dev;
    ino_t ino;
};

class OwnershipLoan {
   public:
    OwnershipLoan() = default;
    // Throws tea::Error (exit 125) when a tree cannot be handed over. Nothing
    // at or below a `kept` path, found by name or by device and inode (the
    // same folder under another name), is lent (nor touched on restore): every call's
    // target runs as the same identity and sees the host read-only, so a
    // withheld folder lent to it would be readable by the targets of other
    // calls running at the same time.
    //
    // A `disposable` tree (one of `trees`) is lent but never given back: the caller removes it
    // once the call has ended (the call's temp directory, exec's one-call home), so walking it
    // once more to hand every entry back would only double the work of removing it.
    OwnershipLoan(const std::vector<std::filesystem::path> &trees, uid_t uid, gid_t gid,
                  const std::vector<std::filesystem::path> &kept = {},
                  const std::vector<std::filesystem::path> &disposable = {});
    OwnershipLoan(const OwnershipLoan &) = delete;
    OwnershipLoan &operator=(const OwnershipLoan &) = delete;
    OwnershipLoan(OwnershipLoan &&) = default;
    OwnershipLoan &operator=(OwnershipLoan &&) = default;
    ~OwnershipLoan();

    // Gives everything back; called by the destructor too.
    void restore();
    // Entries left as they were because they have more than one hard link.
    [[nodiscard]] std::size_t skipped_hard_links() const { return skipped_; }

    using FileKey = std::pair<dev_t, ino_t>;

   private:
    struct Tree {
        std::filesystem::path top;
        uid_t uid;
        gid_t gid;
        // Each lent entry's owner, by device and inode: an entry the target renamed still gets
        // its own owner back, and one it made gets the top's.
        std::map<FileKey, std::pair<uid_t, gid_t>> owners;
        bool disposable = false;  // lent, not given back: the caller removes it
    };
    std::vector<Tree> trees_;
    std::vector<std::filesystem::path> kept_;
    std::vector<FileIdentity> kept_ids_;
    std::size_t skipped_ = 0;
};

}  // namespace tea::exec
