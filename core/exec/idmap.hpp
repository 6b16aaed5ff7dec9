// Idmapped mounts: a tree shown to another identity as its own, with nothing on disk changed.
//
// A lent tree is copied as a detached mount (open_tree) and marked idmapped (mount_setattr with
// MOUNT_ATTR_IDMAP) through a user namespace that maps the owner of the tree's top onto the
// identity the target runs as. Through that mount the target's files are the owner's files: it
// may change what the owner may change, and what it creates belongs on disk to the owner.
// Entries of other owners show as the overflow id and stay theirs. Only root can make one (the
// mount needs CAP_SYS_ADMIN over the file system's own user namespace), and only on a file
// system that allows it (ext4, xfs, btrfs and tmpfs do; NFS, ramfs and overlay, here, do not).
#pragma once

#include <sys/types.h>

#include <compare>
#include <string>

#include "util/fd.hpp"

namespace tea::exec {

// On-disk owner -> the identity that stands for it in the mount.
struct IdMapping {
    uid_t owner_uid = 0;
    gid_t owner_gid = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    auto operator<=>(const IdMapping &) const = default;
};

// A user namespace whose only mappings are `mapping`'s (uid_map "owner_uid uid 1", the same for
// groups), made once per mapping and kept for the process's life. Thread-safe. Throws tea::Error
// (exit 125) naming the step that failed.
int mapping_namespace(const IdMapping &mapping);

// A detached copy of the tree open as `top` (with every mount beneath it), never set-user-id and
// without devices. Idmapped by `mapping` unless the file system refuses it: `refusal` then holds
// the error (EINVAL, EPERM, EOPNOTSUPP) and the copy shows the tree as it is on disk. Throws
// tea::Error (exit 125) when no copy can be made at all.
struct DetachedTree {
    UniqueFd tree;
    int refusal = 0;
};
DetachedTree detached_tree(int top, const IdMapping &mapping);

// The name of the file system `top` lies on, for a sentence ("nfs", "ramfs"; "file system type
// 0x..." for one this list does not know).
std::string filesystem_name(int top);

}  // namespace tea::exec
