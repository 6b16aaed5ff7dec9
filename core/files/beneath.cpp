#include "files/beneath.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "files/private_dirs.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::files {
namespace {

namespace stdfs = std::filesystem;

std::vector<std::string> components(const std::string &rel) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= rel.size()) {
        const auto slash = rel.find('/', start);
        const auto end = slash == std::string::npos ? rel.size() : slash;
        out.push_back(rel.substr(start, end - start));
        if (slash == std::string::npos) break;
        start = slash + 1;
    }
    return out;
}

// The walk of open_beneath where openat2 is refused: one component at a time from dirfd, each
// opened with O_NOFOLLOW (a link at any step fails with ELOOP) and on dirfd's file system (a mount
// the walk crosses fails with EXDEV). rel should be a plain relative path,
// and any "..", "." or empty component is refused, so nothing leads above dirfd.
int open_by_components(int dirfd, const std::string &rel, std::uint64_t flags, std::uint64_t mode) {
    struct stat root {};
    if (::fstat(dirfd, &root) != 0) {
        return -1;
    }
    const auto parts = components(rel);
    // A "..", "." or empty step could climb above dirfd, which openat2's RESOLVE_BENEATH refuses:
    // a caller's path taken from the target (an artifact's name) must not lead the walk out.
    for (const auto &part : parts) {
        if (part.empty() || part == "." || part == "..") {
            errno = EXDEV;
            return -1;
        }
    }
    UniqueFd dir;
    int at = dirfd;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        UniqueFd next{
            ::openat(at, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
        struct stat st {};
        if (!next || ::fstat(next.get(), &st) != 0) {
            return -1;
        }
        if (st.st_dev != root.st_dev) {
            errno = EXDEV;
            return -1;
        }
        dir = std::move(next);
        at = dir.get();
    }
    UniqueFd fd{::openat(at, parts.back().c_str(), static_cast<int>(flags | O_CLOEXEC | O_NOFOLLOW),
                         static_cast<mode_t>(mode))};
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
        return -1;
    }
    if (st.st_dev != root.st_dev) {
        errno = EXDEV;
        return -1;
    }
    return fd.release();
}

// openat2 beneath dirfd, never through a link: a link the target planted cannot lead the runtime
// to the grading material or a credential (or make it write there). Where openat2 is refused
// (ENOSYS: inside the confinement, whose seccomp filter refuses it, for tea-skill-runner), the same
// rules are kept by a walk one component at a time.
int open_beneath(int dirfd, const std::string &rel, std::uint64_t flags, std::uint64_t mode) {
    open_how how{};
    how.flags = flags | O_CLOEXEC | O_NOFOLLOW;
    how.mode = mode;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    long fd = -1;
    do {
        fd = ::syscall(SYS_openat2, dirfd, rel.c_str(), &how, sizeof how);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0 && errno == ENOSYS) {
        return open_by_components(dirfd, rel, flags, mode);
    }
    return static_cast<int>(fd);
}

UniqueFd open_root(const stdfs::path &root) {
    UniqueFd fd{::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (!fd) {
        throw runtime_failure("cannot open " + root.string() + ": " + errno_text(errno));
    }
    return fd;
}

// rel opened to read beneath dirfd as open_beneath resolves it, only when it is a regular file;
// an empty descriptor otherwise, with *why saying what is there and *error its errno (0 when the
// file is of another kind). O_NONBLOCK: a fifo left under the name opens without a writer, and is
// then refused as no regular file.
UniqueFd open_regular_beneath(int dirfd, const std::string &rel, std::string *why, int *error) {
    UniqueFd in{open_beneath(dirfd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0)};
    if (!in) {
        *error = errno;
        *why = *error == ELOOP || *error == EXDEV ? "a symbolic link or a mount point"
                                                  : errno_text(*error);
        return in;
    }
    struct stat st {};
    if (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        *error = 0;
        *why = "not a regular file";
        return UniqueFd{};
    }
    return in;
}

void write_all(int fd, const std::string &content, const std::string &what) {
    const char *p = content.data();
    std::size_t left = content.size();
    while (left > 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw runtime_failure("cannot write " + what + ": " + errno_text(errno));
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

}  // namespace

bool plain_relative(const std::string &rel) {
    if (rel.empty() || rel.front() == '/') return false;
    for (const auto &c : components(rel)) {
        if (c.empty() || c == "." || c == "..") return false;
    }
    return rel.find('\0') == std::string::npos;
}

void write_beneath(const stdfs::path &root, const std::string &rel, const std::string &content) {
    if (!plain_relative(rel)) {
        throw usage_error("'" + rel + "' is not a plain relative path");
    }
    const auto parts = components(rel);
    auto dir = open_root(root);
    std::string walked;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        walked += (walked.empty() ? "" : "/") + parts[i];
        if (::mkdirat(dir.get(), parts[i].c_str(), 0755) != 0 && errno != EEXIST) {
            throw runtime_failure("cannot make " + walked + " in " + root.string() + ": " +
                                  errno_text(errno));
        }
        UniqueFd next{open_beneath(dir.get(), parts[i], O_RDONLY | O_DIRECTORY, 0)};
        if (!next) {
            throw runtime_failure("cannot enter " + walked + " in " + root.string() +
                                  " (a link or not a directory): " + errno_text(errno));
        }
        dir = std::move(next);
    }
    // O_NONBLOCK: a fifo planted under the name must not hang the runtime.
    UniqueFd file{open_beneath(dir.get(), parts.back(), O_WRONLY | O_CREAT | O_NONBLOCK, 0644)};
    if (!file) {
        throw runtime_failure("cannot write " + rel + " in " + root.string() + ": " +
                              errno_text(errno));
    }
    struct stat st {};
    if (::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        throw runtime_failure("cannot write " + rel + " in " + root.string() +
                              ": not a regular file");
    }
    if (::ftruncate(file.get(), 0) != 0) {
        throw runtime_failure("cannot truncate " + rel + ": " + errno_text(errno));
    }
    write_all(file.get(), content, rel);
}

const char *to_string(CopyResult::Status status) {
    switch (status) {
        case CopyResult::Status::copied:
            return "copied";
        case CopyResult::Status::truncated:
            return "truncated";
        case CopyResult::Status::missing:
            return "missing";
        case CopyResult::Status::refused:
            return "refused";
    }
    return "refused";
}

CopyResult copy_out_beneath(const stdfs::path &root, const std::string &rel,
                            const stdfs::path &destination, std::uint64_t max_bytes) {
    CopyResult result;
    if (!plain_relative(rel)) {
        result.status = CopyResult::Status::refused;
        result.reason = "not a plain relative path";
        return result;
    }
    const auto dir = open_root(root);
    int error = 0;
    const UniqueFd in = open_regular_beneath(dir.get(), rel, &result.reason, &error);
    if (!in) {
        if (error == ENOENT) {
            result.reason.clear();
            return result;
        }
        result.status = CopyResult::Status::refused;
        return result;
    }
    const UniqueFd out{
        ::open(destination.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)};
    if (!out) {
        throw runtime_failure("cannot write " + destination.string() + ": " + errno_text(errno));
    }
    std::string buffer(1U << 16U, '\0');
    result.status = CopyResult::Status::copied;
    while (true) {
        const auto want = static_cast<std::size_t>(
            std::min<std::uint64_t>(buffer.size(), max_bytes - result.bytes + 1));
        if (want == 0) break;
        const ssize_t n = ::read(in.get(), buffer.data(), want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            result.status = CopyResult::Status::refused;
            result.reason = errno_text(errno);
            break;
        }
        if (n == 0) break;
        auto take = static_cast<std::uint64_t>(n);
        if (result.bytes + take > max_bytes) {
            take = max_bytes - result.bytes;
            result.status = CopyResult::Status::truncated;
        }
        write_all(out.get(), buffer.substr(0, static_cast<std::size_t>(take)),
                  destination.string());
        result.bytes += take;
        if (result.status == CopyResult::Status::truncated) break;
    }
    return result;
}

std::optional<std::string> read_head_beneath(const stdfs::path &root, const std::string &rel,
                                             std::size_t max_bytes, std::string *why) {
    if (!plain_relative(rel)) {
        *why = "not a plain relative path";
        return std::nullopt;
    }
    const UniqueFd dir{::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (!dir) {
        *why = errno_text(errno);
        return std::nullopt;
    }
    int error = 0;
    const UniqueFd in = open_regular_beneath(dir.get(), rel, why, &error);
    if (!in) return std::nullopt;
    struct stat st {};
    if (::fstat(in.get(), &st) != 0 || st.st_nlink > 1) {
        *why = "a file with another name (a hard link)";
        return std::nullopt;
    }
    std::string out(max_bytes, '\0');
    std::size_t got = 0;
    while (got < max_bytes) {
        const ssize_t n = ::read(in.get(), out.data() + got, max_bytes - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            *why = errno_text(errno);
            return std::nullopt;
        }
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    out.resize(got);
    return out;
}

void write_atomically(const stdfs::path &path, const std::string &content) {
    const auto dir = path.parent_path();
    const auto temp = dir / ("." + path.filename().string() + ".tmp-" + random_token(8));
    UniqueFd fd{::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)};
    if (!fd) {
        throw runtime_failure("cannot write " + temp.string() + ": " + errno_text(errno));
    }
    try {
        write_all(fd.get(), content, temp.string());
        if (::fsync(fd.get()) != 0) {
            throw runtime_failure("cannot sync " + temp.string() + ": " + errno_text(errno));
        }
    } catch (...) {
        ::unlink(temp.c_str());
        throw;
    }
    fd.reset();
    if (::rename(temp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        ::unlink(temp.c_str());
        throw runtime_failure("cannot replace " + path.string() + ": " + errno_text(e));
    }
    const UniqueFd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (d) {
        (void)::fsync(d.get());
    }
}

}  // namespace tea::files
