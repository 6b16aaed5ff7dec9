// The file execvp(3) would run for a program name, found the way glibc's execvp searches, for a
// backend that must name its target's exec in advance (the exec plan's audit.targetStart).
//
//   const auto found = tea::program_path::resolve("python3", path_value);  // PATH's value, or
//   if (found) { use(found.path); }                                         // std::nullopt
//   else if (found.error == EACCES) { /* there, but nothing of that name may be executed */ }
//
// The search: a name with a slash is taken as it is; otherwise each entry of PATH in turn (an
// empty entry is the working directory; without PATH, "/bin:/usr/bin" as glibc's confstr says),
// the first candidate that may be executed winning. A candidate that exists but may not be
// executed (EACCES: no execute permission, a directory, a noexec mount, a folder on the way that
// may not be searched) is passed over as execvp passes it over, and the search goes on; if
// nothing is found after one, the answer is EACCES, otherwise ENOENT. Any other error of a
// candidate ends the search with that error, as it ends execvp's.
//
// Whether a candidate may be executed is a question about someone: by default the calling
// process (its effective ids), asked of the kernel. A plugin that runs its target as another
// identity, or in a view other than the host's, passes its own check. C++17, POSIX.
#ifndef TEA_PROGRAM_PATH_HPP
#define TEA_PROGRAM_PATH_HPP

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>
#include <string_view>

namespace tea::program_path {

struct Found {
    std::string path;  // what execvp would run; empty when error is set
    int error = 0;     // 0, or the errno execvp would fail with (ENOENT, EACCES, ...)

    explicit operator bool() const noexcept { return error == 0; }
};

// 0 when the calling process may execute `candidate` (relative to its working directory),
// otherwise the errno an exec would meet: ENOENT and the like when there is nothing, EACCES
// when there is something that may not be executed.
inline int executable_by_this_process(const std::string &candidate) {
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0) {
        return errno;
    }
    if (::faccessat(AT_FDCWD, candidate.c_str(), X_OK, AT_EACCESS) != 0) {
        return errno;
    }
    // execve of a directory, a device or a socket fails with EACCES, even for root.
    return S_ISREG(st.st_mode) ? 0 : EACCES;
}

namespace detail {

// The errors that make execvp try the next entry of PATH.
inline bool try_next(int error) noexcept {
    return error == EACCES || error == ENOENT || error == ESTALE || error == ENOTDIR ||
           error == ENODEV || error == ETIMEDOUT;
}

}  // namespace detail

// `path_variable`: the value of PATH in the environment the exec will have, or std::nullopt when
// that environment has no PATH. `check(candidate)` answers as executable_by_this_process does.
template <class Check>
Found resolve(std::string_view name, const std::optional<std::string_view> &path_variable,
              Check &&check) {
    if (name.empty()) {
        return Found{{}, ENOENT};
    }
    if (name.find('/') != std::string_view::npos) {
        std::string candidate{name};
        const int error = check(candidate);
        return error == 0 ? Found{std::move(candidate), 0} : Found{{}, error};
    }
    if (name.size() > NAME_MAX) {
        return Found{{}, ENAMETOOLONG};
    }
    const std::string_view search = path_variable ? *path_variable : "/bin:/usr/bin";
    bool met_eacces = false;
    int last_error = ENOENT;
    std::size_t begin = 0;
    for (;;) {
        const auto end = search.find(':', begin);
        const auto entry = search.substr(
            begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
        std::string candidate{entry};
        if (!candidate.empty()) {
            candidate += '/';
        }
        candidate += name;
        const int error = check(candidate);
        if (error == 0) {
            return Found{std::move(candidate), 0};
        }
        if (!detail::try_next(error)) {
            return Found{{}, error};
        }
        met_eacces = met_eacces || error == EACCES;
        last_error = error;
        if (end == std::string_view::npos) {
            break;
        }
        begin = end + 1;
    }
    return Found{{}, met_eacces ? EACCES : last_error};
}

// The same search, asking whether the calling process may execute each candidate.
inline Found resolve(std::string_view name, const std::optional<std::string_view> &path_variable) {
    return resolve(name, path_variable, executable_by_this_process);
}

}  // namespace tea::program_path

#endif  // TEA_PROGRAM_PATH_HPP
