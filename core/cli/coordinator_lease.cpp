#include "cli/coordinator_lease.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <tea/stamp.hpp>

#include "config/slurm_lease.hpp"
#include "files/beneath.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/process_mark.hpp"

namespace tea::cli {

namespace stdfs = std::filesystem;
using nlohmann::json;

namespace {

// Larger than any lease this runtime writes.
constexpr std::size_t kLeaseCap = 4096;

std::string node_name() {
    utsname names{};
    return ::uname(&names) == 0 ? std::string{names.nodename} : std::string{};
}

std::string boot_id() {
    return stamp::first_line("/proc/sys/kernel/random/boot_id");
}

std::int64_t seconds_between(const timespec &from, const timespec &to) {
    return static_cast<std::int64_t>(to.tv_sec - from.tv_sec) - (to.tv_nsec < from.tv_nsec ? 1 : 0);
}

// The modification time the file system gives a file made now in `dir`; nullopt with *why.
std::optional<timespec> file_system_now(const stdfs::path &dir, std::string *why) {
    auto pattern = (dir / ".clock.XXXXXX").string();
    const UniqueFd fd{::mkostemp(pattern.data(), O_CLOEXEC)};
    if (!fd) {
        *why = "no file can be made beside it to read the file system's clock (" +
               errno_text(errno) + ")";
        return std::nullopt;
    }
    struct stat st {};
    const int err = ::fstat(fd.get(), &st) == 0 ? 0 : errno;
    ::unlink(pattern.c_str());
    if (err != 0) {
        *why = "the file system's clock cannot be read (" + errno_text(err) + ")";
        return std::nullopt;
    }
    return st.st_mtim;
}

}  // namespace

CoordinatorLease::CoordinatorLease(const stdfs::path &slurm_dir, std::int64_t lease_s)
    : file_{slurm_dir / kLeaseFile}, length_s_{lease_s} {
    files::write_atomically(file_, json{{"node", node_name()},
                                        {"bootId", boot_id()},
                                        {"process", own_process_mark()},
                                        {"leaseS", lease_s}}
                                           .dump() +
                                       "\n");
    fd_ = ::open(file_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd_ < 0) {
        throw runtime_failure("cannot open the coordinator's lease " + file_.string() + ": " +
                              errno_text(errno));
    }
}

CoordinatorLease::~CoordinatorLease() {
    ::close(fd_);
    // Gone with the wait: a task that starts after it makes no trial for a run that will not
    // merge it.
    ::unlink(file_.c_str());
}

void CoordinatorLease::renew() const noexcept {
    // UTIME_NOW for both: on a network file system, the server's own clock.
    (void)::futimens(fd_, nullptr);
}

CoordinatorState coordinator_state(const stdfs::path &slurm_dir) {
    using Is = CoordinatorState::Is;
    const auto file = slurm_dir / kLeaseFile;
    // Opened, not stat'ed: an NFS client revalidates a file's times at open, not at a stat
    // its attribute cache answers.
    const UniqueFd fd{::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
    if (!fd) {
        const int err = errno;
        return {Is::unknown, "its lease " + file.string() +
                                 (err == ENOENT ? std::string{" is missing"}
                                                : " cannot be opened (" + errno_text(err) + ")")};
    }
    struct stat st {};
    // A link, a fifo or a directory planted in its place is no lease.
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<std::size_t>(st.st_size) > kLeaseCap) {
        return {Is::unknown, "its lease " + file.string() + " is not a file the runtime writes"};
    }
    std::string text(kLeaseCap, '\0');
    const auto got = ::pread(fd.get(), text.data(), text.size(), 0);
    text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    const auto lease = json::parse(text, nullptr, false);
    const auto string_at = [&lease](const char *key) {
        return lease.is_object() && lease.contains(key) && lease[key].is_string()
                   ? lease[key].get<std::string>()
                   : std::string{};
    };
    const auto length =
        lease.is_object() && lease.contains("leaseS") && lease["leaseS"].is_number_integer()
            ? lease["leaseS"].get<std::int64_t>()
            : 0;
    const auto node = string_at("node");
    const auto process = string_at("process");
    if (length < config::kShortestSlurmLeaseS || length > config::kLongestSlurmLeaseS ||
        process.empty() || string_at("bootId").empty()) {
        return {Is::unknown, "its lease " + file.string() + " is not a lease the runtime writes"};
    }
    // On the kernel it ran on, the coordinator's end is known at once, not a lease later.
    if (string_at("bootId") == boot_id() && !process_mark_alive(process)) {
        return {Is::gone, "its process (" + process + " on node " + node + ") has ended"};
    }
    std::string why;
    const auto now = file_system_now(slurm_dir, &why);
    if (!now) return {Is::unknown, "its lease " + file.string() + " cannot be judged: " + why};
    const auto age = seconds_between(st.st_mtim, *now);
    if (age > length) {
        return {Is::gone, "its lease was last renewed " + std::to_string(age) +
                              " s ago, longer than its " + std::to_string(length) +
                              " s (its process: " + process + " on node " + node + ")"};
    }
    return {Is::alive, {}};
}

}  // namespace tea::cli
