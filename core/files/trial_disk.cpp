#include "files/trial_disk.hpp"

#include <fcntl.h>
#include <linux/loop.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "exec/host_program.hpp"
#include "files/private_dirs.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace tea::files {
namespace {

namespace stdfs = std::filesystem;

[[noreturn]] void fail(const std::string &what, int error_number) {
    throw host_error("cannot give the trial a file system of bounded size: " + what + ": " +
                     errno_text(error_number));
}

std::string find_mkfs() {
    for (const char *candidate : {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"}) {
        if (::access(candidate, X_OK) == 0) {
            return candidate;
        }
    }
    throw host_error(
        "budgets.disk = \"image\" needs mkfs.ext4 (apt-get install e2fsprogs), or choose "
        "\"tmpfs\"");
}

// An empty ext4 file system in `image`, a sparse file of `bytes`: no journal (the trial's data is
// thrown away with it) and no reserved blocks (the budget is the target's).
void make_ext4(const stdfs::path &image, std::uint64_t bytes) {
    {
        const UniqueFd fd{::open(image.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)};
        if (!fd || ::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
            fail("making the image " + image.string(), errno);
        }
    }
    const auto mkfs = find_mkfs();
    std::vector<std::string> args{mkfs,           "-q", "-F",
                                  "-m",           "0",  "-O",
                                  "^has_journal", "-E", "nodiscard,lazy_itable_init=1",
                                  image.string()};
    const std::vector<std::string> env{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
    const auto made = exec::run_host_program(args, &env, 4096);
    if (!made.started) throw host_error(made.start_error);
    if (made.status != 0) {
        const auto said = made.err.substr(0, made.err.find('\n'));
        throw host_error("cannot give the trial a file system of bounded size: " + mkfs + " " +
                         image.string() + " failed (status " + std::to_string(made.status) + ")" +
                         (said.empty() ? "" : ": " + said));
    }
}

// A loop device backed by `image`, detached by the kernel once nothing holds it: the returned
// descriptor, until a mount does.
struct Loop {
    std::string device;
    UniqueFd fd;
};
Loop attach_loop(const stdfs::path &image) {
    const UniqueFd backing{::open(image.c_str(), O_RDWR | O_CLOEXEC)};
    const UniqueFd control{::open("/dev/loop-control", O_RDWR | O_CLOEXEC)};
    if (!backing || !control) {
        fail(backing ? "opening /dev/loop-control" : "opening " + image.string(), errno);
    }
    // Another process may take the free device between the two steps: asked again.
    for (int attempt = 0; attempt < 16; ++attempt) {
        const int n = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
        if (n < 0) {
            fail("finding a free loop device", errno);
        }
        const std::string device = "/dev/loop" + std::to_string(n);
        UniqueFd loop{::open(device.c_str(), O_RDWR | O_CLOEXEC)};
        if (!loop) {
            fail("opening " + device, errno);
        }
        loop_config config{};
        config.fd = static_cast<__u32>(backing.get());
        config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
        if (::ioctl(loop.get(), LOOP_CONFIGURE, &config) == 0) {
            return {device, std::move(loop)};
        }
        if (errno != EBUSY) {
            fail("attaching " + image.string() + " to " + device, errno);
        }
    }
    fail("attaching " + image.string() + " to a loop device", EBUSY);
}

void bind(const stdfs::path &from, const stdfs::path &to) {
    if (::mount(from.c_str(), to.c_str(), nullptr, MS_BIND, nullptr) != 0) {
        fail("binding it at " + to.string(), errno);
    }
}

}  // namespace

void enter_private_mount_namespace() {
    // Received from the host (slave), never sent back: the trial's file systems stay the runtime's.
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
        throw host_error(
            "cannot give the run a mount namespace of its own, where its trials' file systems "
            "are mounted (" +
            errno_text(errno) + "); set budgets.disk = \"none\" to run without them");
    }
}

TrialDisk::TrialDisk(RunDirectory &run_dir, DiskKind kind, std::uint64_t bytes,
                     const stdfs::path &workspace, const stdfs::path &home)
    : workspace_(workspace), home_(home) {
    const auto top = run_dir.make_directory("disk-");
    const auto root = top / "fs";
    if (::mkdir(root.c_str(), 0700) != 0) {
        fail("making " + root.string(), errno);
    }
    if (kind == DiskKind::tmpfs) {
        const auto options = "size=" + std::to_string(bytes) + ",mode=0755";
        if (::mount("tea-evaluate-trial", root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                    options.c_str()) != 0) {
            fail("mounting a tmpfs of " + std::to_string(bytes) + " bytes", errno);
        }
    } else {
        dir_ = top;
        const auto image = top / "image";
        make_ext4(image, bytes);
        const auto loop = attach_loop(image);
        if (::mount(loop.device.c_str(), root.c_str(), "ext4", MS_NOSUID | MS_NODEV, nullptr) !=
            0) {
            fail("mounting " + loop.device, errno);
        }
    }
    try {
        for (const auto &[name, mode] : {std::pair{"workspace", 0755}, std::pair{"home", 0700}}) {
            const auto dir = root / name;
            if (::mkdir(dir.c_str(), static_cast<mode_t>(mode)) != 0) {
                fail("making " + dir.string(), errno);
            }
        }
        bind(root / "workspace", workspace_);
        mounted_ = true;
        if (!home_.empty()) {
            bind(root / "home", home_);
        }
    } catch (...) {
        release();
        (void)::umount2(root.c_str(), MNT_DETACH);
        throw;
    }
    // The two binds keep the file system; its own mount point goes.
    (void)::umount2(root.c_str(), MNT_DETACH);
    if (dir_.empty()) {
        remove_tree(top);
    }
}

TrialDisk::~TrialDisk() {
    release();
}

std::uint64_t TrialDisk::used_bytes() const {
    struct statvfs st {};
    if (!mounted_ || ::statvfs(workspace_.c_str(), &st) != 0) {
        return 0;
    }
    return static_cast<std::uint64_t>(st.f_blocks - st.f_bfree) * st.f_frsize;
}

bool TrialDisk::full() const {
    struct statvfs st {};
    // Less than a MiB left: a tmpfs answers ENOSPC at none, ext4 a few hundred KiB before (the
    // clusters it keeps for its own metadata).
    constexpr std::uint64_t slack = std::uint64_t{1} << 20U;
    return mounted_ && ::statvfs(workspace_.c_str(), &st) == 0 &&
           static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize < slack;
}

void TrialDisk::release() {
    if (mounted_) {
        (void)::umount2(workspace_.c_str(), MNT_DETACH);
        if (!home_.empty()) {
            (void)::umount2(home_.c_str(), MNT_DETACH);
        }
        mounted_ = false;
    }
    if (!dir_.empty()) {
        // The loop device lets go of the image once the file system is gone (autoclear); the
        // image's blocks return to the host when both have let go.
        remove_tree(dir_);
        dir_.clear();
    }
}

}  // namespace tea::files
