#include "files/tree_walk.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <tea/dirents.hpp>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::files {
namespace {

TreeEntryType type_of(mode_t mode) {
    if (S_ISDIR(mode)) return TreeEntryType::directory;
    if (S_ISREG(mode)) return TreeEntryType::regular;
    if (S_ISLNK(mode)) return TreeEntryType::link;
    return TreeEntryType::other;
}

std::string join(const std::string &dir, const std::string &name) {
    return dir == "." ? name : dir + "/" + name;
}

// The names of the directory open at fd, in byte order, read through the descriptor.
bool read_names(int fd, std::vector<std::string> &names, int &error) {
    if (!dirents::for_each(fd, [&](const dirent64 &e) {
            names.emplace_back(e.d_name);
            return true;
        })) {
        error = errno;
        return false;
    }
    std::sort(names.begin(), names.end());
    return true;
}

class Walker {
   public:
    Walker(const TreeLimits &limits, const std::function<void(const TreeEntry &)> &visit)
        : limits_(limits), visit_(visit) {}

    TreeWalk run(int root, const struct stat &st) {
        ++out_.entries;
        visit_(describe(".", st));
        directory(root, ".", 0);
        return std::move(out_);
    }

   private:
    void directory(int fd, const std::string &path, std::size_t depth) {
        std::vector<std::string> names;
        if (int error = 0; !read_names(fd, names, error)) {
            out_.unreached.push_back(path + ": cannot be listed (" + errno_text(error) + ")");
            return;
        }
        for (const auto &name : names) {
            entry(fd, name, join(path, name), depth);
        }
    }

    void entry(int parent, const std::string &name, const std::string &path, std::size_t depth) {
        if (limits_.excluded.contains(path)) return;
        if (out_.entries >= limits_.max_entries) {
            if (!over_entries_) {
                out_.unreached.push_back(path + ": and what follows it, past the walk's " +
                                         std::to_string(limits_.max_entries) + " entries");
                over_entries_ = true;
            }
            return;
        }
        struct stat st {};
        if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            const int error = errno;
            // Gone between the listing and now: a change the next walk shows, not a gap.
            if (error != ENOENT) {
                out_.unreached.push_back(path + ": cannot be read (" + errno_text(error) + ")");
            }
            return;
        }
        TreeEntry e = describe(path, st);
        UniqueFd fd;
        if (e.type == TreeEntryType::link) {
            // A link's text is shorter than PATH_MAX (4096), whatever st_size says of it.
            std::string text(4096, '\0');
            const ssize_t n = ::readlinkat(parent, name.c_str(), text.data(), text.size());
            if (n < 0 || static_cast<std::size_t>(n) >= text.size()) {
                out_.unreached.push_back(path + ": its text cannot be read");
                return;
            }
            text.resize(static_cast<std::size_t>(n));
            e.link_text = std::move(text);
        } else if (e.type == TreeEntryType::regular || e.type == TreeEntryType::directory) {
            const bool dir = e.type == TreeEntryType::directory;
            // O_NONBLOCK: a fifo put in the file's place since fstatat does not block the open.
            fd.reset(::openat(
                parent, name.c_str(),
                O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | (dir ? O_DIRECTORY : O_NONBLOCK)));
            struct stat now {};
            if (!fd || ::fstat(fd.get(), &now) != 0) {
                const int error = errno;
                out_.unreached.push_back(path + ": cannot be opened (" + errno_text(error) + ")");
                return;
            }
            if (now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
                // Swapped between the stat and the open: what was opened is not what was seen.
                out_.unreached.push_back(path + ": changed while it was walked");
                return;
            }
            if (!dir) e.fd = fd.get();
        }
        ++out_.entries;
        visit_(e);
        if (e.type == TreeEntryType::directory) {
            if (depth + 1 > limits_.max_depth) {
                out_.unreached.push_back(path + ": deeper than the walk's " +
                                         std::to_string(limits_.max_depth) + " levels");
                return;
            }
            directory(fd.get(), path, depth + 1);
        }
    }

    static TreeEntry describe(const std::string &path, const struct stat &st) {
        TreeEntry e;
        e.path = path;
        e.type = type_of(st.st_mode);
        e.mode = static_cast<std::uint32_t>(st.st_mode) & 07777U;
        e.uid = st.st_uid;
        e.gid = st.st_gid;
        if (e.type == TreeEntryType::regular || e.type == TreeEntryType::link) {
            e.size = static_cast<std::uint64_t>(st.st_size);
        }
        return e;
    }

    TreeWalk out_;
    const TreeLimits &limits_;
    const std::function<void(const TreeEntry &)> &visit_;
    bool over_entries_ = false;
};

}  // namespace

const char *to_string(TreeEntryType type) {
    switch (type) {
        case TreeEntryType::directory:
            return "directory";
        case TreeEntryType::regular:
            return "file";
        case TreeEntryType::link:
            return "link";
        case TreeEntryType::other:
            break;
    }
    return "special file";
}

TreeWalk walk_tree(const std::filesystem::path &root, const TreeLimits &limits,
                   const std::function<void(const TreeEntry &)> &visit) {
    const UniqueFd fd{::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
        const int error = errno;
        throw runtime_failure("cannot walk " + root.string() + ": " + errno_text(error) +
                              (error == ENOTDIR || error == ELOOP ? " (not a directory)" : ""));
    }
    Walker walker{limits, visit};
    return walker.run(fd.get(), st);
}

}  // namespace tea::files
