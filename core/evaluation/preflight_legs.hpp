// preflight's legs of one command: pristine copies of the call's workspace, each in a directory
// of the command's own, removed with it and by the next preflight when this one is killed.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "files/private_dirs.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::evaluation {

namespace stdfs = std::filesystem;

constexpr std::string_view legs_prefix = "tea-evaluate-preflight-";

// A directory for the legs' workspaces, removed with the object, and by the next preflight when
// this one is killed. Not under the private root: the confinement covers that root, and a
// workspace must stay visible to the target.
class LegsDirectory {
   public:
    LegsDirectory() {
        std::error_code ec;
        auto base = stdfs::temp_directory_path(ec);
        if (ec) {
            base = "/tmp";
        }
        files::reclaim_unlocked(base, legs_prefix);  // the legs of killed preflights
        path_ = base / (std::string{legs_prefix} + files::random_token());
        // The legs are copies of a workspace whose own parents may keep other users out: only the
        // invoker may search this directory. As root, the target runs as the sandbox account and
        // must reach its leg: searchable by everyone (never listable, each leg's name unguessable)
        // until the first call hands the directory to that account's group alone
        // (CallSession::search_by_target), since a leg's name shows in `ps` once its call runs.
        try {
            lock_ = files::make_locked_directory(path_, ::geteuid() == 0 ? 0711 : 0700);
        } catch (const Error &e) {
            throw runtime_failure("cannot make a directory for the preflight legs under " +
                                  base.string() + ": " + e.what());
        }
    }
    LegsDirectory(const LegsDirectory &) = delete;
    LegsDirectory &operator=(const LegsDirectory &) = delete;
    ~LegsDirectory() { files::remove_locked_directory(path_, lock_); }
    [[nodiscard]] const stdfs::path &path() const { return path_; }

   private:
    stdfs::path path_;
    UniqueFd lock_;
};

// Copies the pristine workspace: directories, regular files and links as links (never followed,
// so a link to a secret copies as a link, not as the secret). Other kinds are left out.
std::size_t copy_workspace(const stdfs::path &from, const stdfs::path &to);

}  // namespace tea::evaluation
