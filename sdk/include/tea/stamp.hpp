// Remembered host checks, for the runtime and for plugins: a check that starts processes (a
// probe of bwrap, a version of strace, a traced reader of a probe file) is run once per boot and
// per everything its answer depends on, and a stamp file says it passed. A stamp only ever skips
// a check; the mechanism itself still fails a call when the host changed since.
//
//   std::string key = tea::stamp::file_key("/usr/bin/strace") + tea::stamp::boot_id();
//   auto stamp = tea::stamp::path_for("strace-version", key);
//   if (!tea::stamp::present(stamp)) { check(); tea::stamp::write(stamp); }
#ifndef TEA_STAMP_HPP
#define TEA_STAMP_HPP

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace tea::stamp {

// /var/cache/tea-evaluate for root; $XDG_CACHE_HOME/tea-evaluate or ~/.cache/tea-evaluate
// otherwise; empty when neither is known (then nothing is remembered).
inline std::filesystem::path cache_dir() {
    if (::geteuid() == 0) {
        return "/var/cache/tea-evaluate";
    }
    const char *cache = std::getenv("XDG_CACHE_HOME");  // NOLINT(concurrency-mt-unsafe)
    if (cache != nullptr && cache[0] == '/') {
        return std::filesystem::path{cache} / "tea-evaluate";
    }
    const char *home = std::getenv("HOME");  // NOLINT(concurrency-mt-unsafe)
    if (home != nullptr && home[0] == '/') {
        return std::filesystem::path{home} / ".cache" / "tea-evaluate";
    }
    return {};
}

// "path:inode:size:mtime;" for an existing regular file, "" otherwise: a replaced or updated
// program changes its key.
inline std::string file_key(const std::string &path) {
    struct stat st {};
    if (path.empty() || path[0] != '/' || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return {};
    }
    return path + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ";";
}

// The first line of a small file (a sysctl, the boot id), or "" when it cannot be read.
inline std::string first_line(const char *path) {
    // A plain read: a plugin's first stream would set up its own copy of the C++ locale.
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return {};
    }
    std::string text(256, '\0');
    const auto n = ::read(fd, text.data(), text.size());
    ::close(fd);
    text.resize(n > 0 ? static_cast<std::size_t>(n) : 0U);
    return text.substr(0, text.find('\n'));
}

inline std::string boot_id() {
    return first_line("/proc/sys/kernel/random/boot_id") + ";";
}

// <cache_dir>/<prefix>-<hash of key and the effective uid>; empty when there is no cache dir.
inline std::filesystem::path path_for(std::string_view prefix, std::string_view key) {
    const auto dir = cache_dir();
    if (dir.empty()) {
        return {};
    }
    std::uint64_t hash = 1469598103934665603ULL;  // FNV-1a: a name, not a secret
    auto mix = [&hash](std::string_view s) {
        for (const char c : s) {
            hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
        }
    };
    mix(key);
    mix(std::to_string(::geteuid()));
    char name[24];
    (void)std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(hash));
    return dir / (std::string{prefix} + "-" + name);
}

inline bool present(const std::filesystem::path &stamp) {
    struct stat st {};
    // Only a regular file of this user counts: another user cannot vouch for our checks.
    return !stamp.empty() && ::lstat(stamp.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           st.st_uid == ::geteuid();
}

// Best effort: a stamp that cannot be written only means the check runs again next time.
inline void write(const std::filesystem::path &stamp) {
    if (stamp.empty()) {
        return;
    }
    std::error_code ec;
    std::filesystem::create_directories(stamp.parent_path(), ec);
    ::chmod(stamp.parent_path().c_str(), 0700);
    const int fd = ::open(stamp.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ::close(fd);
    }
}

}  // namespace tea::stamp

#endif
