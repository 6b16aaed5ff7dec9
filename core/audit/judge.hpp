// The audit judge: decides which of a call's file accesses are isolation findings.
//
// An observer (strace on Linux, the sandbox's report log on macOS) turns what a confined target
// did into ObservedAccess values; the judge knows nothing about any observer and takes only those.
// It reports each ungranted path once, by the path the target really reached, so the isolation
// manifest can list it as an observed mount and the run can be declared Invalid.
//
// What is listed (each rule is restated with its reason where the code applies it):
//  - a successful read, exec, directory listing or link read outside every read grant;
//  - a write, create or remove the mechanism refused (EROFS, EACCES, EPERM), outside the writable
//    grants and the read-only login files (a read-only grant inside a writable place of the
//    call's own is outside them);
//  - a successful write, create or remove outside the writable grants (the confinement failed);
//  - any access beneath an always-listed path (the evaluation folder, the project's git directory,
//    the private root), granted or not, succeeded or not, unless an exception is deeper. Metadata
//    probes there are listed only when they succeed, and the directories on the way down to an
//    exception may be probed (stat, readlink, chdir, O_PATH) without being listed.
// What is not listed: failed reads (nothing was read; a missing file answers ENOENT), metadata
// probes (stat, access) and O_PATH-style accesses outside the always-listed paths, and accesses to
// objects that are not files (a pipe or socket reached through /proc/self/fd).
//
// How paths are judged:
//  - Grants match by whole path components ("/usr2" is not under "/usr"), after "." and ".." are
//    folded lexically; a grant is never matched as a string prefix.
//  - The real path (path_resolved) decides, so a link the target plants in its workspace cannot
//    lend its workspace grant to the file it leads to.
//  - Under the OS directories the asked path decides too, so a file the distribution links
//    elsewhere (/etc/resolv.conf to /run/...) is not listed. That trust is withheld from asked
//    paths inside a place the target can write (the workspace-like grants, the call's own places
//    and writable_system: /dev/shm and /dev/tea-evaluate-tmp among them), where the target could
//    plant the link.
//  - Inside a place of the call's own, a grant bound back there (a workspace or a read-only
//    system path under a /tmp of the call's own) decides for what lies beneath it.
//  - Always-listed paths are checked on both the asked and the real path.
//  - Kernel views (/proc, /sys) are granted by the real path only, and never a path that goes
//    through one of procfs's links into the file system (/proc/<pid>/root, cwd, fd/N, map_files).
//  - A successful read or exec whose deciding path still goes through a descriptor link
//    (/dev/fd/N, /dev/stdin, /proc/<pid>/fd/N, root, cwd, map_files) is listed as unverified: the
//    observer did not establish the file it names, and the link's own place grants nothing.
//  - An access the observer marks unverified is listed; path_named, when set, is judged too.
//
// Not thread-safe; one judge per call or trial. observe() is O(path depth) and allocates nothing
// for a granted access once its scratch buffers have grown to the deepest path seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tea/documents.hpp>
#include <vector>

namespace tea::audit {

// What an access did to the path it names: the SDK's type, which observers report in. What each
// means to the judge:
//   read      an open for reading (a directory opened for reading included)
//   write     an open for writing, a truncate
//   exec      execve of the path; executing a binary reads it
//   list      getdents of a directory
//   readlink  reading a symbolic link's text
//   create    a new name: O_CREAT, mkdir, mknod, the new name of rename/link/symlink
//   remove    unlink, rmdir, the old name of rename
//   metadata  stat, access, statx: the file's attributes, not its content
//   other     names a file without reading it: O_PATH, chdir, the existing name of link
using Access = documents::Access;

struct ObservedAccess {
    int pid = 0;
    std::string syscall;
    // The path as the process asked for it, made absolute, "." and ".." folded, no link followed.
    std::string path_asked;
    // The kernel's real path when the observer knows it (for an fd it returned, say); may be
    // empty. A name that is not absolute ("pipe:[123]", "socket:[9]") is an object outside the
    // file system.
    std::string path_resolved;
    Access access = Access::other;
    bool success = false;
    std::string error;  // errno name of a failed access ("ENOENT"); empty on success
    // What path_asked names once the links the observer saw the call make are followed, when the
    // observer cannot vouch that path_resolved is the file reached: an exec (its trace returns no
    // descriptor), an open in a descriptor table another task shares (that task can swap the
    // descriptor before the observer reads it). Empty otherwise. The runtime resolves it on the
    // host where the host shows what the target saw (resolve_named_on_host), and the judge
    // judges it as well as path_resolved.
    std::string path_named;
    // Non-empty: the observer (or the runtime) could not establish the file this access reached,
    // and says why. A successful read, exec, listing or link read so marked is listed: an access
    // nobody can place is never presumed to be inside the grants.
    std::string unverified;
};

// Every list holds absolute paths; "." and ".." are folded lexically. The judge refuses (throws
// std::invalid_argument) a relative or empty path and a read or write grant of "/", any of which
// would quietly switch the audit off.
struct Grants {
    // Readable and writable: the workspace, the call's temp directory's host path, the trial's
    // home.
    std::vector<std::string> workspace_like;
    // Readable and writable: the confinement's own places for the call that the launch spec does
    // not name (the plan's audit.writable: the temp directory's mount /dev/tea-evaluate-tmp, a
    // /tmp of the call's own). Like workspace_like, except beneath another grant that lies
    // inside one (a workspace or a read-only system path the view binds back under /tmp): that
    // grant decides there, as it is what the target finds.
    std::vector<std::string> call_own;
    // Readable: the runtime's installation prefix and its helper.
    std::vector<std::string> runtime;
    // Readable: the target's registry entry's systemPaths.
    std::vector<std::string> system_paths;
    // Readable, judged by the asked path as well as the real one; see default_os_grants().
    std::vector<std::string> os_dirs;
    // Readable, judged by the real path only and never through a procfs link; the sandbox's own
    // procfs and its reduced /sys.
    std::vector<std::string> kernel_views;
    // Places outside the workspace-like grants where a successful write is the confinement's own
    // design: the sandbox's minimal /dev (null, tty, pts, shm) and its own procfs. Also no
    // source of asked-path trust, since the target can plant links there.
    std::vector<std::string> writable_system;
    // Files granted for reading whose refused write is expected and not listed: a login's
    // credentials file that a CLI tries to refresh.
    std::vector<std::string> read_only_logins;
    // Every access beneath these is listed: the evaluation folder(s), the project's git
    // directory, the user's private root.
    std::vector<std::string> always_listed;
    // Beneath an always-listed path, these are not always listed (the worktree's own entry in
    // the git directory, the call's home and temp directory under the private root). An
    // exception only lifts the always-listed rule; an access there is still judged by the
    // grants, so grant what an exception holds (usually as workspace_like).
    std::vector<std::string> always_listed_exceptions;
};

// Grants with only the operating system's directories filled in:
//   os_dirs          /usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc /dev
//   kernel_views     /proc /sys
//   writable_system  /dev /proc
// Left out on purpose: /opt, /srv and /usr's siblings that hold third-party software (declare
// them in systemPaths), /home, /root, /tmp, /var, /run, /mnt, /media (user and service data, host
// sockets), /boot (not needed to run anything).
Grants default_os_grants();

struct Finding {
    std::string path;                   // the real path reported (see Judge)
    std::string reason;                 // the most serious reason seen for the path
    std::vector<std::string> syscalls;  // distinct, in order of first sight
    std::size_t count = 0;              // listed accesses to the path
    bool refused = false;               // some access was refused (EROFS, EACCES, EPERM)
};

class Judge {
   public:
    static constexpr std::size_t kDefaultMaxFindings = std::size_t{1} << 16;

    // Throws std::invalid_argument naming the field and the path for a bad grant.
    explicit Judge(const Grants &grants, std::size_t max_findings = kDefaultMaxFindings);

    void observe(const ObservedAccess &access);

    // Sorted by path, each path once.
    std::vector<Finding> findings() const;
    // Accesses ignored because a path was empty, relative or held a NUL byte. An observer that
    // delivers one has lost track of a path, so a careful caller treats a nonzero count as a
    // lossy audit.
    std::size_t malformed() const { return malformed_; }
    // Listed accesses to new paths dropped once max_findings paths were held. Nonzero only when
    // the findings are already far past any passing run.
    std::size_t omitted() const { return omitted_; }

   private:
    // A trie of every listed path, one node per component, so a path is matched in one walk.
    struct Node {
        std::vector<std::pair<std::string, std::uint32_t>> children;  // sorted by name
        std::uint16_t marks = 0;
        std::string path;  // the normalised path, for a node some list names
    };
    struct Match {
        std::uint16_t marks = 0;        // the marks of every ancestor-or-self, or'ed
        int listed_depth = -1;          // depth of the deepest always-listed ancestor-or-self
        int exception_depth = -1;       // depth of the deepest exception ancestor-or-self
        std::uint32_t listed_node = 0;  // the node of listed_depth (for the reason)
        bool above_exception = false;   // the path is a strict ancestor of an exception
        // The path leaves the way down to a workspace-like grant at one of its strict ancestors,
        // as a name directly inside it or inside a hidden directory there.
        bool beside_way_to_workspace = false;
    };
    struct Entry {
        Finding finding;
        int rank = 0;
    };

    void add(const std::vector<std::string> &paths, const char *field, std::uint16_t mark,
             bool refuse_root);
    Match match(const std::vector<std::string_view> &components) const;
    void record(const std::vector<std::string_view> &components, int rank, std::string_view reason,
                std::string_view detail, const ObservedAccess &access, bool refused);

    std::vector<Node> nodes_;
    std::vector<std::string_view> asked_;  // scratch: the asked path's components
    std::vector<std::string_view> real_;   // scratch: the real path's components
    std::map<std::string, Entry, std::less<>> entries_;
    std::size_t max_findings_;
    std::size_t malformed_ = 0;
    std::size_t omitted_ = 0;
};

}  // namespace tea::audit
