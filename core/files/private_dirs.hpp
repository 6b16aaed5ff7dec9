// The user's private root and the private directories of a run beneath it.
//
//   <private root>/                      0700 (0711 for root, so the sandbox
//                                        identity can pass through, never list)
//     run-<random>/                      a run's private parent, 0711 (0710 with
//                                        the target identity's group once a call
//                                        runs as another identity); holds
//       lock                             flock held while the run lives
//       tmp-<random>/                    a call's temp directory
//       tea-evaluate-target-home-<random>/  a trial's private home
//     socket-walk-cache                  the bubblewrap backend's host-socket
//                                        walk, kept between calls (0600)
//
// A run's parent is made as .run-<random>, locked, then renamed, so a run-*
// name always has its lock held by a live run or by nobody. A run killed
// outright leaves its parent behind with no lock held; the next run over the
// same root removes it, with everything in it (the call's temp directory,
// home, trace directory and egress socket directory), and the name a kill part
// way through making or removing it left: .run-* or .removed-run-*.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "util/fd.hpp"

namespace tea::files {

// $TEA_EVALUATE_PRIVATE_ROOT when set, else: for root /var/lib/tea-evaluate;
// for other users $XDG_STATE_HOME/tea-evaluate or ~/.local/state/tea-evaluate.
std::filesystem::path default_private_root();

// Creates or checks the private root: owned by this user, a real directory
// (not a link), and not writable by anyone else. Throws tea::Error (exit 12).
std::filesystem::path open_private_root(const std::filesystem::path &root);

// Removes every directory of this user named `prefix`* right under `base` that a killed process
// left: one whose `lock` file nobody holds, or one without a lock file made more than a minute
// ago. The same for the names make_locked_directory and remove_locked_directory use on the way:
// ".removed-`prefix`*" goes at once unless its lock is held; ".`prefix`*", a name being made,
// goes at once when no maker is at work under `base` (makers hold `base`'s flock shared while
// they make a name; a reclaim that takes it exclusively knows none is), else after the minute. A
// live owner holds an exclusive flock on <dir>/lock for as long as it needs the directory.
// Returns how many were removed.
int reclaim_unlocked(const std::filesystem::path &base, std::string_view prefix);

// Creates <dir>/lock and holds an exclusive flock on it for the descriptor's life: the mark of a
// live owner that reclaim_unlocked leaves alone. Invalid when either step fails.
UniqueFd take_lock(const std::filesystem::path &dir);

// Makes the directory `dir` with mode `mode` and <dir>/lock held (take_lock), so that the name
// never shows without a live owner's lock: it is made as "." + its name beside it, locked, then
// renamed, never over an entry already there, all while holding the parent's flock shared (see
// reclaim_unlocked; at most two seconds are waited for it). Throws tea::Error (exit 12) naming
// the path.
UniqueFd make_locked_directory(const std::filesystem::path &dir, mode_t mode);

// Removes `dir`, made by make_locked_directory, and then releases its lock. It is renamed to
// ".removed-" + its name first, so a kill part way leaves no name the next run must spare.
void remove_locked_directory(const std::filesystem::path &dir, UniqueFd &lock);

// Removes every run-* parent under root whose lock is not held (reclaim_unlocked).
// Returns how many were reclaimed.
int reclaim_leftovers(const std::filesystem::path &root);

class RunDirectory {
   public:
    // When the directory itself is made: at once, or with the first directory made in it (a
    // call whose backend makes its directories inside the confinement needs none on the host).
    enum class Creation { now, with_first_directory };
    explicit RunDirectory(const std::filesystem::path &private_root,
                          Creation creation = Creation::now);
    RunDirectory(const RunDirectory &) = delete;
    RunDirectory &operator=(const RunDirectory &) = delete;
    ~RunDirectory();

    [[nodiscard]] const std::filesystem::path &path() const { return path_; }
    [[nodiscard]] const std::filesystem::path &private_root() const { return root_; }
    // A fresh directory, mode 0700, named <prefix><random>.
    std::filesystem::path make_directory(const std::string &prefix);
    // A name <prefix><random> in this run directory, for a directory not made yet.
    [[nodiscard]] std::filesystem::path name_directory(const std::string &prefix) const;
    // Makes the directory `dir` (a name_directory answer), mode 0700; nothing when this run
    // directory has made it already. Throws tea::Error naming it when `dir` is not a name of
    // this run directory or cannot be made.
    void make_named(const std::filesystem::path &dir);
    // Whether the run directory exists on the host.
    [[nodiscard]] bool made() const { return lock_.valid(); }
    // Removes the whole run directory now (also done by the destructor).
    void remove();

   private:
    void create();

    std::filesystem::path root_;
    std::filesystem::path path_;
    UniqueFd lock_;
    std::vector<std::filesystem::path> named_made_;
};

// Removes a tree without following links and without leaving it when a
// target made parts of it read-only. Errors are ignored: best effort.
void remove_tree(const std::filesystem::path &path);

// A random token of letters and digits, from the kernel's random source.
std::string random_token(std::size_t length = 12);

}  // namespace tea::files
