// Lending the call's directories to the sandbox identity.
//
// When the runtime runs as root, the backend runs the target under a
// dedicated unprivileged identity, so that a file the mounts forgot is still
// guarded by its permissions. That identity must own what it may write: the
// workspace, the call's temp directory and the trial's home. A loan hands
// each tree to it for the call and gives every entry back to its owner after,
// with what the target created going to the owner of the tree's top.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
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

   private:
    struct Entry {
        std::filesystem::path path;
        uid_t uid;
        gid_t gid;
    };
    struct Tree {
        std::filesystem::path top;
        uid_t uid;
        gid_t gid;
        std::vector<Entry> entries;
        bool disposable = false;  // lent, not given back: the caller removes it
    };
    std::vector<Tree> trees_;
    std::vector<std::filesystem::path> kept_;
    std::vector<FileIdentity> kept_ids_;
    std::size_t skipped_ = 0;
};

}  // namespace tea::exec
