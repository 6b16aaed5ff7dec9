// tea-sandbox-view: builds a call's view inside the namespaces bubblewrap made, then becomes the
// target with no capability left.
//
//   bwrap --unshare-user --uid 0 --gid 0 --cap-add CAP_SYS_ADMIN --cap-add CAP_SETFCAP
//         --cap-add CAP_SYS_RESOURCE ... --ro-bind / / --proc /proc ...
//         -- tea-sandbox-view --view-fd V --setup-mark M --uid U --gid G --exec PATH -- ARGV...
//
// bwrap leaves it uid 0 in the call's user namespace with those three capabilities. It reads the
// view from descriptor V: NUL-separated options in bwrap's own words (--dev, --bind, --ro-bind,
// --ro-bind-try, --tmpfs with --size and --perms, --ro-bind-data with --perms, --remount-ro,
// --chdir), ending with "--end". It
// makes those mounts with plain system calls: bwrap itself re-reads the whole mount table after
// every bind and every remount, and that re-reading was most of what the view cost. Then it
// forbids further user namespaces, enters a nested one that maps U and G (the identity the
// target runs as) to the call's uid 0, drops every capability, sets no_new_privs, takes the
// setup mark, closes every descriptor above 2, loads the seccomp filter and runs PATH with
// ARGV and the environment bwrap gave it (PWD set to the --chdir directory).
//
// It runs on every call, so it is freestanding: no C library, whose start alone (its CPU probe)
// costs more on a virtual machine than the whole program does. Any failure ends it before the
// target runs, with a sentence on stderr and exit status 125 (126 or 127 when the target cannot
// be executed or found).
#include <asm/unistd.h>
#include <linux/capability.h>
#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/poll.h>
#include <linux/prctl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <linux/signal.h>
#include <linux/signalfd.h>
#include <linux/stat.h>
#include <linux/time.h>
#include <linux/wait.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "seccomp_program.hpp"  // generated from ../helper/seccomp_rules.cpp at build time

// The few functions a compiler may call on its own for copies and clears.
extern "C" {
void *memcpy(void *dest, const void *src, std::size_t n);
void *memmove(void *dest, const void *src, std::size_t n);
void *memset(void *dest, int c, std::size_t n);
int memcmp(const void *a, const void *b, std::size_t n);
}

namespace {

// ---- system calls -----------------------------------------------------------------------------

#if defined(__x86_64__)
long raw_syscall(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long ret = 0;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
#elif defined(__aarch64__)
long raw_syscall(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    register long x5 __asm__("x5") = f;
    __asm__ volatile("svc 0"
                     : "+r"(x0)
                     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                     : "memory");
    return x0;
}
#else
#error "tea-sandbox-view: system calls are written for x86_64 and aarch64 only"
#endif

// A system call's result, or the error number it answered (as a positive value in `error`).
struct Result {
    long value;
    int error;
};

template <typename... T>
Result call(long n, T... args) {
    const long r = raw_syscall(n, static_cast<long>(args)...);
    if (r < 0 && r > -4096) {
        return {-1, static_cast<int>(-r)};
    }
    return {r, 0};
}

long as_long(const void *p) {
    return static_cast<long>(reinterpret_cast<std::uintptr_t>(p));
}

constexpr int exit_setup = 125;
constexpr int at_fdcwd = -100;
constexpr int mnt_detach = 2;  // umount2's MNT_DETACH, which only the C library's headers name

// ---- output -----------------------------------------------------------------------------------

std::size_t length(const char *s) {
    std::size_t n = 0;
    while (s[n] != '\0') {
        ++n;
    }
    return n;
}

bool same(const char *a, const char *b) {
    std::size_t i = 0;
    for (; a[i] != '\0' && a[i] == b[i]; ++i) {
    }
    return a[i] == b[i];
}

bool starts_with(const char *s, const char *prefix) {
    for (std::size_t i = 0; prefix[i] != '\0'; ++i) {
        if (s[i] != prefix[i]) {
            return false;
        }
    }
    return true;
}

// Text built in a fixed buffer, always NUL-terminated: cut short rather than overrun (there is no
// snprintf here). A Text is a message line, a mount's data or a line of an id map.
template <std::size_t Room>
class Text {
   public:
    Text &operator<<(const char *s) {
        for (std::size_t i = 0; s[i] != '\0' && used_ < Room - 1; ++i) {
            text_[used_++] = s[i];
        }
        text_[used_] = '\0';
        return *this;
    }
    Text &operator<<(unsigned long n) {
        char digits[24];
        std::size_t k = 0;
        do {
            digits[k++] = static_cast<char>('0' + n % 10);
            n /= 10;
        } while (n != 0);
        while (k > 0 && used_ < Room - 1) {
            text_[used_++] = digits[--k];
        }
        text_[used_] = '\0';
        return *this;
    }
    [[nodiscard]] const char *c_str() const { return text_; }
    [[nodiscard]] bool cut() const { return used_ == Room - 1; }
    // As a line on stderr.
    void write_line() {
        text_[used_] = '\n';
        (void)call(__NR_write, 2, as_long(text_), used_ + 1);
        text_[used_] = '\0';
    }

   private:
    char text_[Room] = {};
    std::size_t used_ = 0;
};
using Line = Text<1024>;

struct ErrorName {
    int number;
    const char *name;
};
constexpr ErrorName error_names[] = {
    {EPERM, "EPERM"},     {ENOENT, "ENOENT"},   {EBADF, "EBADF"},
    {ENOMEM, "ENOMEM"},   {EACCES, "EACCES"},   {EBUSY, "EBUSY"},
    {EEXIST, "EEXIST"},   {ENOTDIR, "ENOTDIR"}, {EINVAL, "EINVAL"},
    {EMFILE, "EMFILE"},   {ENOSPC, "ENOSPC"},   {EROFS, "EROFS"},
    {ELOOP, "ELOOP"},     {ENOSYS, "ENOSYS"},   {ENAMETOOLONG, "ENAMETOOLONG"},
    {ENOEXEC, "ENOEXEC"},
};

const char *error_name(int error) {
    for (const auto &e : error_names) {
        if (e.number == error) {
            return e.name;
        }
    }
    return "error";
}

[[noreturn]] void exit_now(int status) {
    for (;;) {
        (void)raw_syscall(__NR_exit_group, status);
    }
}

[[noreturn]] void fail(const char *what, const char *path = nullptr, int error = 0,
                       int status = exit_setup) {
    Line line;
    line << "tea-sandbox-view: " << what;
    if (path != nullptr) {
        line << " " << path;
    }
    if (error != 0) {
        line << ": " << error_name(error) << " (errno " << static_cast<unsigned long>(error) << ")";
    }
    line.write_line();
    exit_now(status);
}

// ---- options ----------------------------------------------------------------------------------

bool number(const char *text, unsigned long &out) {
    unsigned long value = 0;
    if (text[0] == '\0') {
        return false;
    }
    for (std::size_t i = 0; text[i] != '\0'; ++i) {
        if (text[i] < '0' || text[i] > '9' || value > (~0UL - 9) / 10) {
            return false;
        }
        value = value * 10 + static_cast<unsigned long>(text[i] - '0');
    }
    out = value;
    return true;
}

bool octal(const char *text, unsigned long &out) {
    unsigned long value = 0;
    if (text[0] == '\0') {
        return false;
    }
    for (std::size_t i = 0; text[i] != '\0'; ++i) {
        if (text[i] < '0' || text[i] > '7' || value > 07777) {
            return false;
        }
        value = value * 8 + static_cast<unsigned long>(text[i] - '0');
    }
    out = value;
    return value <= 07777;
}

unsigned long required_number(const char *text, const char *option) {
    unsigned long value = 0;
    if (text == nullptr || !number(text, value)) {
        fail("expected a number after", option);
    }
    return value;
}

// ---- the view's stream ------------------------------------------------------------------------

// Large enough for every mask the backend may ask for (1024 by default) with long paths; bss, so
// only the part the stream fills is ever touched.
constexpr std::size_t max_stream = std::size_t{8} << 20U;
char stream[max_stream + 1];

// The stream's tokens, in order. A stream cut short (a runtime killed while writing it) lacks
// the final "--end", and is refused before any mount is made.
struct Tokens {
    const char *const *items = nullptr;
    std::size_t count = 0;
};

constexpr std::size_t max_tokens = 65536;
const char *tokens[max_tokens];

Tokens read_stream(int fd) {
    std::size_t used = 0;
    for (;;) {
        if (used == max_stream) {
            fail("the view is larger than 8 MiB");
        }
        const Result r = call(__NR_read, fd, as_long(stream + used), max_stream - used);
        if (r.error == EINTR) {
            continue;
        }
        if (r.error != 0) {
            fail("cannot read the view", nullptr, r.error);
        }
        if (r.value == 0) {
            break;
        }
        used += static_cast<std::size_t>(r.value);
    }
    (void)call(__NR_close, fd);
    stream[used] = '\0';
    std::size_t count = 0;
    std::size_t start = 0;
    while (start < used) {
        if (count == max_tokens) {
            fail("the view has too many options");
        }
        tokens[count++] = stream + start;
        start += length(stream + start) + 1;
    }
    // Every token NUL-terminated, the last one "--end": nothing was lost on the way.
    if (count == 0 || stream[used - 1] != '\0' || !same(tokens[count - 1], "--end")) {
        fail("the view was cut short (no --end): nothing of it was built");
    }
    return {tokens, count - 1};
}

// ---- mounts -----------------------------------------------------------------------------------

// A parent directory chain made as bwrap makes its mount points: what exists stays as it is.
void make_directories(const char *path, std::size_t upto) {
    char buffer[4096];
    if (upto >= sizeof buffer) {
        fail("path too long:", path);
    }
    for (std::size_t i = 1; i <= upto; ++i) {
        if (i == upto || path[i] == '/') {
            for (std::size_t k = 0; k < i; ++k) {
                buffer[k] = path[k];
            }
            buffer[i] = '\0';
            const Result r = call(__NR_mkdirat, at_fdcwd, as_long(buffer), 0755);
            if (r.error != 0 && r.error != EEXIST) {
                fail("cannot make the directory", buffer, r.error);
            }
        }
    }
}

std::size_t parent_length(const char *path) {
    std::size_t n = length(path);
    while (n > 0 && path[n - 1] != '/') {
        --n;
    }
    return n > 1 ? n - 1 : 0;
}

// A mount point for a directory or a file, made when missing.
void ensure_mount_point(const char *path, bool directory) {
    struct statx st {};
    if (call(__NR_statx, at_fdcwd, as_long(path), AT_SYMLINK_NOFOLLOW, STATX_TYPE, as_long(&st))
            .error == 0) {
        return;
    }
    if (path[0] != '/') {
        fail("a mount point must be an absolute path:", path);
    }
    if (directory) {
        make_directories(path, length(path));
        return;
    }
    make_directories(path, parent_length(path));
    const Result fd = call(__NR_openat, at_fdcwd, as_long(path),
                           O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444);
    if (fd.error != 0 && fd.error != EEXIST) {
        fail("cannot make the mount point", path, fd.error);
    }
    if (fd.error == 0) {
        (void)call(__NR_close, fd.value);
    }
}

int set_attributes(int fd, const char *path, unsigned int flags, std::uint64_t set,
                   std::uint64_t clear) {
    mount_attr attr{};
    attr.attr_set = set;
    attr.attr_clr = clear;
    return call(__NR_mount_setattr, fd, as_long(path), flags, as_long(&attr), sizeof attr).error;
}

// What stands for a bind's tree when none was taken at the start.
constexpr int tree_absent = -1;      // an --ro-bind-try whose source does not exist
constexpr int tree_when_bound = -2;  // /dev/null, taken from the view's own /dev when bound

// A detached copy of the tree at `source`, as the view was before any of this stream's mounts.
int capture(const char *source, bool optional) {
    const Result fd = call(__NR_open_tree, at_fdcwd, as_long(source),
                           OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (fd.error == ENOENT && optional) {
        return tree_absent;
    }
    if (fd.error != 0) {
        fail("cannot take the tree at", source, fd.error);
    }
    return static_cast<int>(fd.value);
}

enum class Access { read_only, writable, devices };

// The captured tree at `dest`: never set-user-id; read-only, or writable; device nodes usable only
// for the nodes of /dev (Access::devices, writable too).
void attach(int tree, const char *source, const char *dest, Access access) {
    struct statx st {};
    if (const Result r =
            call(__NR_statx, tree, as_long(""), AT_EMPTY_PATH, STATX_TYPE, as_long(&st));
        r.error != 0) {
        fail("cannot inspect the tree at", source, r.error);
    }
    ensure_mount_point(dest, (st.stx_mode & S_IFMT) == S_IFDIR);
    constexpr std::uint64_t always = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if (access == Access::devices) {
        if (const int e = set_attributes(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, MOUNT_ATTR_NOSUID,
                                         MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV);
            e != 0) {
            fail("cannot make usable the device", source, e);
        }
    } else if (access == Access::read_only) {
        if (const int e = set_attributes(tree, "", AT_EMPTY_PATH | AT_RECURSIVE,
                                         always | MOUNT_ATTR_RDONLY, 0);
            e != 0) {
            fail("cannot make read-only the tree of", source, e);
        }
    } else if (const int e = set_attributes(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, always,
                                            MOUNT_ATTR_RDONLY);
               e != 0) {
        // A mount beneath the source that the host itself holds read-only stays read-only (the
        // kernel locks it so): the top is made writable, what lies below keeps the view's flags.
        if (e != EPERM || set_attributes(tree, "", AT_EMPTY_PATH, always, MOUNT_ATTR_RDONLY) != 0 ||
            set_attributes(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, always, 0) != 0) {
            fail("cannot make writable the tree of", source, e);
        }
    }
    if (const Result r = call(__NR_move_mount, tree, as_long(""), at_fdcwd, as_long(dest),
                              MOVE_MOUNT_F_EMPTY_PATH);
        r.error != 0) {
        fail("cannot mount the tree onto", dest, r.error);
    }
    (void)call(__NR_close, tree);
}

void tmpfs(const char *dest, unsigned long size, unsigned long mode) {
    ensure_mount_point(dest, true);
    Text<64> data;
    data << "mode=0" << ((mode >> 9U) & 7U) << ((mode >> 6U) & 7U) << ((mode >> 3U) & 7U)
         << (mode & 7U);
    if (size != 0) {
        data << ",size=" << size;
    }
    if (const Result r = call(__NR_mount, as_long("tmpfs"), as_long(dest), as_long("tmpfs"),
                              MS_NOSUID | MS_NODEV, as_long(data.c_str()));
        r.error != 0) {
        fail("cannot mount a tmpfs on", dest, r.error);
    }
}

// ---- a file of given content (bwrap's --ro-bind-data) ---------------------------------------

// Whether `path` lies strictly beneath the directory `dir`.
bool beneath(const char *path, const char *dir) {
    const std::size_t n = length(dir);
    if (n == 1 && dir[0] == '/') {
        return path[0] == '/' && path[1] != '\0';
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (path[i] != dir[i]) {
            return false;
        }
    }
    return path[n] == '/' && path[n + 1] != '\0';
}

char place_name[256];  // the last component of the file's place, set by open_place_parent

// The directory that holds `dest`, opened beneath `top` (the mount `dest` lies in), with what is
// missing made as bwrap makes it (0755). Below `top` no link is followed: a link an earlier call
// of the trial planted in its home would carry the file's mount to a place the target chose (over
// a file of the view it reads as trusted, /etc/passwd, say).
int open_place_parent(const char *top, const char *dest) {
    const Result opened =
        call(__NR_openat, at_fdcwd, as_long(top), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (opened.error != 0) {
        fail("cannot open the mount that holds", dest, opened.error);
    }
    int dir = static_cast<int>(opened.value);
    const char *part = dest + (same(top, "/") ? 1 : length(top) + 1);
    for (;;) {
        std::size_t n = 0;
        while (part[n] != '\0' && part[n] != '/') {
            ++n;
        }
        if (n == 0 || n >= sizeof place_name || (n == 1 && part[0] == '.') ||
            (n == 2 && part[0] == '.' && part[1] == '.')) {
            fail("a file's place must name each directory plainly:", dest);
        }
        for (std::size_t k = 0; k < n; ++k) {
            place_name[k] = part[k];
        }
        place_name[n] = '\0';
        if (part[n] == '\0') {
            return dir;
        }
        if (const Result r = call(__NR_mkdirat, dir, as_long(place_name), 0755);
            r.error != 0 && r.error != EEXIST) {
            fail("cannot make a directory on the way to", dest, r.error);
        }
        const Result next = call(__NR_openat, dir, as_long(place_name),
                                 O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        (void)call(__NR_close, dir);
        if (next.error != 0) {
            fail("a link or a file that is no directory lies on the way to", dest, next.error);
        }
        dir = static_cast<int>(next.value);
        part += n + 1;
    }
}

// The empty file the mount stands on, made when missing: the place itself is never a link, and is
// a regular file. Returns it opened as a path.
int file_mount_point(int dir, const char *dest) {
    const Result made = call(__NR_openat, dir, as_long(place_name),
                             O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
    if (made.error != 0 && made.error != EEXIST) {
        fail("cannot make the mount point", dest, made.error);
    }
    if (made.error == 0) {
        (void)call(__NR_close, made.value);
    }
    const Result place =
        call(__NR_openat, dir, as_long(place_name), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (place.error != 0) {
        fail("cannot open the mount point", dest, place.error);
    }
    struct statx st {};
    if (call(__NR_statx, place.value, as_long(""), AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_TYPE,
             as_long(&st))
                .error != 0 ||
        (st.stx_mode & S_IFMT) != S_IFREG) {
        fail("the place of a file of given content is no regular file:", dest);
    }
    return static_cast<int>(place.value);
}

constexpr std::size_t copy_room = 65536;
char copy_buffer[copy_room];

// The whole content of `source` (from its start) into `file`.
void copy_content(int source, int file, const char *dest) {
    long offset = 0;
    for (;;) {
        const Result got = call(__NR_pread64, source, as_long(copy_buffer), copy_room, offset);
        if (got.error == EINTR) {
            continue;
        }
        if (got.error != 0) {
            fail("cannot read the content of", dest, got.error);
        }
        if (got.value == 0) {
            return;
        }
        for (long written = 0; written < got.value;) {
            const Result w =
                call(__NR_write, file, as_long(copy_buffer + written), got.value - written);
            if (w.error == EINTR) {
                continue;
            }
            if (w.error != 0) {
                fail("cannot write the content of", dest, w.error);
            }
            written += w.value;
        }
        offset += got.value;
    }
}

// A tmpfs of its own, detached (never in the view), just large enough for `bytes`.
int detached_tmpfs(unsigned long bytes, const char *dest) {
    const Result fs = call(__NR_fsopen, as_long("tmpfs"), FSOPEN_CLOEXEC);
    if (fs.error != 0) {
        fail("cannot make a file system for", dest, fs.error);
    }
    Text<32> size;
    size << ((bytes + 4095) / 4096 + 1) * 4096;
    const char *const settings[][2] = {{"size", size.c_str()}, {"mode", "0700"}};
    for (const auto &[key, value] : settings) {
        if (const Result r =
                call(__NR_fsconfig, fs.value, FSCONFIG_SET_STRING, as_long(key), as_long(value), 0);
            r.error != 0) {
            fail("cannot size the file system for", dest, r.error);
        }
    }
    if (const Result r = call(__NR_fsconfig, fs.value, FSCONFIG_CMD_CREATE, 0, 0, 0);
        r.error != 0) {
        fail("cannot create the file system for", dest, r.error);
    }
    const Result mnt = call(__NR_fsmount, fs.value, FSMOUNT_CLOEXEC,
                            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    (void)call(__NR_close, fs.value);
    if (mnt.error != 0) {
        fail("cannot mount the file system for", dest, mnt.error);
    }
    return static_cast<int>(mnt.value);
}

// bwrap's --ro-bind-data: the content of descriptor `source` at `dest`, read-only, with `mode`,
// owned by the call's uid 0 (the target's uid in its own namespace). The content lives in a tmpfs
// of its own, so none of it lands on the host's disk, and only the file is bound: a write, chmod,
// rename or unlink of it answers EROFS or EBUSY. `top` is the mount of the view `dest` lies in.
void show_data(int source, const char *dest, unsigned long mode, const char *top) {
    struct statx st {};
    if (const Result r =
            call(__NR_statx, source, as_long(""), AT_EMPTY_PATH, STATX_SIZE, as_long(&st));
        r.error != 0) {
        fail("cannot inspect the content of", dest, r.error);
    }
    const int dir = open_place_parent(top, dest);
    const int place = file_mount_point(dir, dest);
    const int mnt = detached_tmpfs(st.stx_size, dest);
    const Result file =
        call(__NR_openat, mnt, as_long("data"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
    if (file.error != 0) {
        fail("cannot make the file for", dest, file.error);
    }
    copy_content(source, static_cast<int>(file.value), dest);
    if (const Result r = call(__NR_fchmod, file.value, mode); r.error != 0) {
        fail("cannot set the mode of", dest, r.error);
    }
    (void)call(__NR_close, file.value);
    // A kernel before 6.15 clones no file of a detached mount: the tmpfs stands over the place's
    // directory for as long as the clone takes (nothing of the call runs yet), then goes.
    if (const Result r = call(__NR_move_mount, mnt, as_long(""), dir, as_long(""),
                              MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
        r.error != 0) {
        fail("cannot attach the file system for", dest, r.error);
    }
    const Result tree =
        call(__NR_open_tree, mnt, as_long("data"), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    Text<64> attached;
    attached << "/proc/self/fd/" << static_cast<unsigned long>(mnt);
    if (const Result r = call(__NR_umount2, as_long(attached.c_str()), mnt_detach); r.error != 0) {
        fail("cannot detach the file system for", dest, r.error);
    }
    (void)call(__NR_close, mnt);
    (void)call(__NR_close, dir);
    if (tree.error != 0) {
        fail("cannot take the file for", dest, tree.error);
    }
    if (const int e = set_attributes(static_cast<int>(tree.value), "", AT_EMPTY_PATH,
                                     MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0);
        e != 0) {
        fail("cannot make read-only the file for", dest, e);
    }
    if (const Result r = call(__NR_move_mount, tree.value, as_long(""), place, as_long(""),
                              MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
        r.error != 0) {
        fail("cannot mount the file onto", dest, r.error);
    }
    (void)call(__NR_close, place);
    (void)call(__NR_close, tree.value);
}

constexpr std::size_t max_binds = 8192;
int trees[max_binds];  // each bind's captured tree, in the view's order

// The nodes bwrap's --dev binds from the host's /dev, in its order.
constexpr const char *dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
constexpr std::size_t dev_count = sizeof dev_nodes / sizeof dev_nodes[0];
int dev_trees[dev_count];

bool is_bind(const char *op) {
    return same(op, "--bind") || same(op, "--ro-bind") || same(op, "--ro-bind-try");
}

// How many values an option takes, or -1 for one the builder does not know.
int arity(const char *op) {
    if (is_bind(op) || same(op, "--ro-bind-data")) {
        return 2;
    }
    for (const char *one : {"--size", "--perms", "--tmpfs", "--remount-ro", "--chdir", "--dev"}) {
        if (same(op, one)) {
            return 1;
        }
    }
    return -1;
}

// bwrap's --dev, made the same way: a tmpfs (sized here, as every tmpfs of the call is) with the
// host's null, zero, full, random, urandom and tty bound in, the standard links, an empty shm
// directory and a devpts of its own. No console: bwrap binds one only when its output is a
// terminal, and a call's output is the runtime's pipe.
void dev(const char *dest) {
    tmpfs(dest, 65536, 0755);
    for (std::size_t k = 0; k < dev_count; ++k) {
        Text<4096> node;
        node << dest << "/" << dev_nodes[k];
        attach(dev_trees[k], node.c_str(), node.c_str(), Access::devices);
    }
    const char *const links[][2] = {{"stdin", "/proc/self/fd/0"},  {"stdout", "/proc/self/fd/1"},
                                    {"stderr", "/proc/self/fd/2"}, {"fd", "/proc/self/fd"},
                                    {"core", "/proc/kcore"},       {"ptmx", "pts/ptmx"}};
    for (const auto &[name, target] : links) {
        Text<4096> link;
        link << dest << "/" << name;
        if (const Result r = call(__NR_symlinkat, as_long(target), at_fdcwd, as_long(link.c_str()));
            r.error != 0) {
            fail("cannot make the link", link.c_str(), r.error);
        }
    }
    Text<4096> shm;
    shm << dest << "/shm";
    Text<4096> pts;
    pts << dest << "/pts";
    for (const auto *dir : {&shm, &pts}) {
        if (const Result r = call(__NR_mkdirat, at_fdcwd, as_long(dir->c_str()), 0755);
            r.error != 0) {
            fail("cannot make the directory", dir->c_str(), r.error);
        }
    }
    if (const Result r =
            call(__NR_mount, as_long("devpts"), as_long(pts.c_str()), as_long("devpts"),
                 MS_NOSUID | MS_NOEXEC, as_long("newinstance,ptmxmode=0666,mode=620"));
        r.error != 0) {
        fail("cannot mount a devpts on", pts.c_str(), r.error);
    }
}

// The whole view checked, and every bind's source taken, before the first mount: a view that says
// something the builder does not know changes nothing. The sources come from the view bwrap
// built: a later cover (the private root's, /sys) must not hide a source bound after it, as bwrap
// takes every source from the host's tree.
void check_and_capture(Tokens view) {
    const char *const *t = view.items;
    const std::size_t n = view.count;
    std::size_t binds = 0;
    bool dev_seen = false;
    for (std::size_t i = 0; i < n; ++i) {
        const char *op = t[i];
        const int values = arity(op);
        if (values < 0) {
            fail("unknown option in the view:", op);
        }
        if (i + static_cast<std::size_t>(values) >= n) {
            fail("an option without its values:", op);
        }
        unsigned long ignored = 0;
        if (same(op, "--size")) {
            (void)required_number(t[i + 1], op);
        } else if (same(op, "--perms")) {
            if (!octal(t[i + 1], ignored)) {
                fail("expected an octal mode after --perms");
            }
        } else if (same(op, "--ro-bind-data")) {
            const unsigned long fd = required_number(t[i + 1], op);
            if (fd < 3 || fd > 255 || t[i + 2][0] != '/') {
                fail("expected a descriptor 3..255 and an absolute path after", op);
            }
        } else {
            // Every path of a view is absolute, so none can be taken for an option or an --end.
            for (int k = 1; k <= values; ++k) {
                if (t[i + static_cast<std::size_t>(k)][0] != '/') {
                    fail("expected an absolute path after", op);
                }
            }
        }
        if (is_bind(op)) {
            if (binds == max_binds) {
                fail("the view has too many binds");
            }
            // /dev/null, the mask over host sockets, is taken from the /dev the view ends with
            // when it is bound; every other source now.
            trees[binds++] = same(t[i + 1], "/dev/null")
                                 ? tree_when_bound
                                 : capture(t[i + 1], same(op, "--ro-bind-try"));
        } else if (same(op, "--dev")) {
            if (dev_seen) {
                fail("more than one --dev in the view");
            }
            dev_seen = true;
            for (std::size_t k = 0; k < dev_count; ++k) {
                Text<32> node;
                node << "/dev/" << dev_nodes[k];
                dev_trees[k] = capture(node.c_str(), false);
            }
        }
        i += static_cast<std::size_t>(values);
    }
}

// The deepest mount of the view that options before `upto` made and `dest` lies beneath ("/" when
// none did, the view's root).
const char *enclosing_mount(Tokens view, std::size_t upto, const char *dest) {
    const char *deepest = "/";
    for (std::size_t i = 0; i < upto; i += static_cast<std::size_t>(arity(view.items[i])) + 1) {
        const char *op = view.items[i];
        const char *at = same(op, "--tmpfs") || same(op, "--dev") ? view.items[i + 1]
                         : is_bind(op)                            ? view.items[i + 2]
                                                                  : nullptr;
        if (at != nullptr && beneath(dest, at) && length(at) > length(deepest)) {
            deepest = at;
        }
    }
    return deepest;
}

// Every option of the checked view, applied in order; returns the --chdir directory, made current.
const char *build_view(Tokens view) {
    check_and_capture(view);
    const char *const *t = view.items;
    const std::size_t n = view.count;
    const char *cwd = nullptr;
    unsigned long size = 0;
    unsigned long mode = 0;
    bool perms = false;  // as bwrap: a --perms applies to the next tmpfs or file alone
    std::size_t bind = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const char *op = t[i];
        const char *first = t[i + 1];
        if (same(op, "--size")) {
            size = required_number(first, op);
        } else if (same(op, "--perms")) {
            (void)octal(first, mode);
            perms = true;
        } else if (same(op, "--tmpfs")) {
            tmpfs(first, size, perms ? mode : 0755);
            size = 0;
            perms = false;
        } else if (same(op, "--ro-bind-data")) {
            show_data(static_cast<int>(required_number(first, op)), t[i + 2], perms ? mode : 0600,
                      enclosing_mount(view, i, t[i + 2]));
            perms = false;
        } else if (same(op, "--dev")) {
            dev(first);
        } else if (is_bind(op)) {
            int tree = trees[bind++];
            if (tree == tree_when_bound) {
                tree = capture(first, false);
            }
            if (tree != tree_absent) {
                attach(tree, first, t[i + 2],
                       same(op, "--bind") ? Access::writable : Access::read_only);
            }
        } else if (same(op, "--remount-ro")) {
            if (const int e =
                    set_attributes(at_fdcwd, first, 0,
                                   MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0);
                e != 0) {
                fail("cannot make read-only", first, e);
            }
        } else if (same(op, "--chdir")) {
            cwd = first;
        }
        i += static_cast<std::size_t>(arity(op));
    }
    if (cwd == nullptr) {
        fail("the view names no working directory (--chdir)");
    }
    // After every mount: the directory the target starts in is the view's, not the one beneath.
    if (const Result r = call(__NR_chdir, as_long(cwd)); r.error != 0) {
        fail("cannot change to", cwd, r.error);
    }
    return cwd;
}

// ---- identity ---------------------------------------------------------------------------------

void write_file(const char *path, const char *text) {
    const Result fd = call(__NR_openat, at_fdcwd, as_long(path), O_WRONLY | O_CLOEXEC);
    if (fd.error != 0) {
        fail("cannot open", path, fd.error);
    }
    const std::size_t n = length(text);
    const Result w = call(__NR_write, fd.value, as_long(text), n);
    (void)call(__NR_close, fd.value);
    if (w.error != 0 || static_cast<std::size_t>(w.value) != n) {
        fail("cannot write", path, w.error);
    }
}

// The target's identity: a user namespace nested in the call's, where only `uid` and `gid` exist
// (the call's uid 0, which is the sandbox identity on the host). No capability reaches the call's
// mount namespace from here, so no cover can be unmounted, and no further user namespace can be
// made (bwrap's --disable-userns, done here because this program builds the view).
void enter_target_identity(unsigned long uid, unsigned long gid) {
    if (const Result r = call(__NR_unshare, CLONE_NEWUSER); r.error != 0) {
        fail("cannot enter the target's user namespace", nullptr, r.error);
    }
    // One line each, "INSIDE OUTSIDE 1": the target's ids onto the call's 0.
    write_file("/proc/self/setgroups", "deny");
    write_file("/proc/self/uid_map", (Text<64>{} << uid << " 0 1\n").c_str());
    write_file("/proc/self/gid_map", (Text<64>{} << gid << " 0 1\n").c_str());
    // Check rather than trust: a further namespace is refused.
    if (call(__NR_unshare, CLONE_NEWUSER).error == 0) {
        fail("a further user namespace could still be made");
    }
}

// Every capability gone from every set: what the nested namespace gave, and bwrap's three.
void drop_capabilities() {
    // Up to the kernel's last capability, which answers the next one with EINVAL.
    for (long cap = 0; cap <= 63; ++cap) {
        const Result r = call(__NR_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0);
        if (r.error == EINVAL && cap > 0) {
            break;
        }
        if (r.error != 0) {
            fail("cannot empty the bounding set", nullptr, r.error);
        }
    }
    if (const Result r = call(__NR_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        r.error != 0) {
        fail("cannot clear the ambient capabilities", nullptr, r.error);
    }
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct none[2] = {};
    if (const Result r = call(__NR_capset, as_long(&header), as_long(none)); r.error != 0) {
        fail("cannot clear the capability sets", nullptr, r.error);
    }
    __user_cap_data_struct now[2] = {};
    if (call(__NR_capget, as_long(&header), as_long(now)).error != 0 || now[0].effective != 0 ||
        now[0].permitted != 0 || now[0].inheritable != 0 || now[1].effective != 0 ||
        now[1].permitted != 0 || now[1].inheritable != 0) {
        fail("the capability drop did not hold");
    }
}

// ---- the target -------------------------------------------------------------------------------

constexpr std::size_t max_env = 65536;
char *target_env[max_env + 1];
Text<4096 + 5> pwd;

// The environment bwrap passed, with PWD naming the directory the target starts in (bwrap set it
// to the directory it started this program in, before the view existed).
char **environment(char **envp, const char *cwd) {
    pwd << "PWD=" << cwd;
    if (pwd.cut()) {
        fail("the working directory's path is too long");
    }
    std::size_t count = 0;
    for (char **e = envp; *e != nullptr; ++e) {
        if (count == max_env) {
            fail("the environment has too many entries");
        }
        target_env[count++] = starts_with(*e, "PWD=") ? const_cast<char *>(pwd.c_str()) : *e;
    }
    target_env[count] = nullptr;
    return target_env;
}

void install_seccomp() {
    sock_fprog program{
        static_cast<unsigned short>(sizeof tea::helper::generated::seccomp_program /
                                    sizeof tea::helper::generated::seccomp_program[0]),
        const_cast<sock_filter *>(tea::helper::generated::seccomp_program),  // NOLINT: kernel API
    };
    if (const Result r = call(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, as_long(&program));
        r.error != 0) {
        fail("cannot load the seccomp filter", nullptr, r.error);
    }
}

// ---- the namespace's init ----------------------------------------------------------------------

// What tea/namespace_init.hpp does for the C library's programs, in plain system calls: the call's
// stdout and stderr are pipes only the runtime reads, so a write end reporting POLLERR says the
// runtime has died (see that header for why no parent-death signal can be relied on here).
bool runtime_gone(pollfd *output) {
    return ((output[0].revents | output[1].revents) & POLLERR) != 0;
}

bool runtime_gone_now() {
    pollfd output[2] = {{1, 0, 0}, {2, 0, 0}};
    const timespec now{0, 0};
    return call(__NR_ppoll, as_long(output), 2, as_long(&now), 0, 0).value > 0 &&
           runtime_gone(output);
}

constexpr unsigned long end_signal = 1UL << (SIGTERM - 1);

// The runtime's SIGTERM at the end of the call (tea/namespace_init.hpp): blocked from the start, so
// that one sent while the view is built waits for serve() instead of being dropped by the kernel,
// which drops a signal from outside the namespace that its init neither handles nor blocks.
void hold_end_signal() {
    (void)call(__NR_rt_sigprocmask, SIG_BLOCK, as_long(&end_signal), 0, sizeof end_signal);
}

void release_end_signal() {
    (void)call(__NR_rt_sigprocmask, SIG_UNBLOCK, as_long(&end_signal), 0, sizeof end_signal);
}

// The namespace's init until `child` ends, then its status as a shell reports it (as bwrap's own
// init reports it); at once when the runtime is gone, which ends the namespace and all in it.
// Passes each SIGTERM of the runtime's on to every process of the namespace, as
// tea/namespace_init.hpp does.
[[noreturn]] void serve(long child) {
    const unsigned long watched_signals = (1UL << (SIGCHLD - 1)) | end_signal;
    (void)call(__NR_rt_sigprocmask, SIG_BLOCK, as_long(&watched_signals), 0,
               sizeof watched_signals);
    // Without a signalfd the init still reaps, once a second, and still watches the runtime.
    const Result ended = call(__NR_signalfd4, -1, as_long(&watched_signals), sizeof watched_signals,
                              O_CLOEXEC | O_NONBLOCK);
    for (;;) {
        // Reaped before every wait: a child that ended before SIGCHLD was blocked left no signal.
        for (;;) {
            int status = 0;
            const Result r = call(__NR_wait4, -1, as_long(&status), WNOHANG, 0);
            if (r.error != 0 || r.value == 0) {
                break;
            }
            if (r.value == child) {
                const int signal = status & 0x7f;
                exit_now(signal == 0 ? (status >> 8) & 0xff : 128 + signal);
            }
        }
        pollfd watched[3] = {{1, 0, 0}, {2, 0, 0}, {static_cast<int>(ended.value), POLLIN, 0}};
        const timespec second{1, 0};
        const Result ready = call(__NR_ppoll, as_long(watched), ended.error == 0 ? 3 : 2,
                                  ended.error == 0 ? 0L : as_long(&second), 0, 0);
        if (ready.error != 0) {
            const timespec pause{0, 100'000'000};  // a poll that failed (ENOMEM) is tried again
            (void)call(__NR_nanosleep, as_long(&pause), 0);
            continue;
        }
        if (runtime_gone(watched)) {
            exit_now(128 + SIGKILL);
        }
        if (ended.error == 0 && (watched[2].revents & POLLIN) != 0) {
            signalfd_siginfo info{};
            while (call(__NR_read, ended.value, as_long(&info), sizeof info).value ==
                   static_cast<long>(sizeof info)) {
                // Only the runtime's (a sender outside the namespace has no pid in it): a target
                // cannot make the init signal every process of the namespace for it.
                if (info.ssi_signo == SIGTERM && info.ssi_pid == 0) {
                    (void)call(__NR_kill, -1, SIGTERM);
                }
            }
        }
    }
}

// As its pid namespace's first process (bwrap --as-pid-1), the builder stays the namespace's init
// and starts the target in a child: bwrap's own init arms its parent-death signal only after
// bwrap's set-up, so a runtime killed during it would leave the sandbox running for nobody.
// Called once the view stands and every privilege is gone; returns in the child.
void become_init() {
    if (runtime_gone_now()) {
        fail("the runtime that started the call is gone");
    }
    const Result child = call(__NR_clone, SIGCHLD, 0, 0, 0, 0);
    if (child.error != 0) {
        fail("cannot start the target's process", nullptr, child.error);
    }
    if (child.value == 0) {
        return;
    }
    // The init holds nothing the target lacks (no descriptor beyond 0-2: not the view, not the
    // setup mark, which the child takes), its memory does not open for the target, and it runs
    // under the target's own seccomp program.
    if (const Result r = call(__NR_close_range, 3, ~0U, 0); r.error != 0) {
        fail("cannot close inherited descriptors", nullptr, r.error);
    }
    if (const Result r = call(__NR_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0); r.error != 0) {
        fail("cannot make the sandbox's init undumpable", nullptr, r.error);
    }
    install_seccomp();
    serve(child.value);
}

struct Options {
    int view_fd = -1;
    int setup_mark = -1;
    unsigned long uid = 0;
    unsigned long gid = 0;
    const char *exec = nullptr;
    char **argv = nullptr;
};

int descriptor(const char *text, const char *option) {
    const unsigned long fd = required_number(text, option);
    if (fd < 3 || fd > 255) {
        fail("a descriptor 3..255 is expected after", option);
    }
    return static_cast<int>(fd);
}

Options parse(int argc, char **argv) {
    Options o;
    bool uid = false;
    bool gid = false;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (same(a, "--")) {
            if (i + 1 >= argc) {
                fail("no program after --");
            }
            o.argv = argv + i + 1;
            break;
        }
        if (i + 1 >= argc) {
            fail("expected a value after", a);
        }
        const char *v = argv[++i];
        if (same(a, "--view-fd")) {
            o.view_fd = descriptor(v, a);
        } else if (same(a, "--setup-mark")) {
            o.setup_mark = descriptor(v, a);
        } else if (same(a, "--uid")) {
            o.uid = required_number(v, a);
            uid = true;
        } else if (same(a, "--gid")) {
            o.gid = required_number(v, a);
            gid = true;
        } else if (same(a, "--exec")) {
            o.exec = v;
        } else {
            fail("unknown option", a);
        }
    }
    // The target is never the call's uid 0 under another name: that identity held capabilities.
    if (o.view_fd < 0 || o.setup_mark < 0 || !uid || !gid || o.exec == nullptr ||
        o.argv == nullptr || o.uid == 0 || o.gid == 0 || o.uid > 0xFFFFFFFEUL ||
        o.gid > 0xFFFFFFFEUL) {
        fail(
            "usage: tea-sandbox-view --view-fd V --setup-mark M --uid U --gid G --exec PATH -- "
            "ARGV...");
    }
    return o;
}

}  // namespace

extern "C" {

// Through volatile pointers: the compiler must not turn these loops into calls to themselves.
void *memcpy(void *dest, const void *src, std::size_t n) {
    auto *d = static_cast<volatile unsigned char *>(dest);
    const auto *s = static_cast<const unsigned char *>(src);
    for (std::size_t i = 0; i < n; ++i) {
        d[i] = s[i];
    }
    return dest;
}

void *memmove(void *dest, const void *src, std::size_t n) {
    auto *d = static_cast<volatile unsigned char *>(dest);
    const auto *s = static_cast<const unsigned char *>(src);
    if (d < s) {
        for (std::size_t i = 0; i < n; ++i) {
            d[i] = s[i];
        }
    } else {
        for (std::size_t i = n; i > 0; --i) {
            d[i - 1] = s[i - 1];
        }
    }
    return dest;
}

void *memset(void *dest, int c, std::size_t n) {
    auto *d = static_cast<volatile unsigned char *>(dest);
    for (std::size_t i = 0; i < n; ++i) {
        d[i] = static_cast<unsigned char>(c);
    }
    return dest;
}

int memcmp(const void *a, const void *b, std::size_t n) {
    const auto *x = static_cast<const volatile unsigned char *>(a);
    const auto *y = static_cast<const volatile unsigned char *>(b);
    for (std::size_t i = 0; i < n; ++i) {
        if (x[i] != y[i]) {
            return x[i] < y[i] ? -1 : 1;
        }
    }
    return 0;
}

// Called from _start with the initial stack: argc, argv..., NULL, envp..., NULL.
[[noreturn]] __attribute__((used)) void tea_view_main(long *stack) {
    const int argc = static_cast<int>(stack[0]);
    char **argv = reinterpret_cast<char **>(stack + 1);
    char **envp = argv + argc + 1;
    hold_end_signal();
    const Options o = parse(argc, argv);

    const Tokens view = read_stream(o.view_fd);
    // A nested user namespace would give the target every capability again, over mounts of its
    // own: one is allowed in the call's namespace, and this program takes it. Before the view,
    // which makes /proc/sys read-only.
    write_file("/proc/sys/user/max_user_namespaces", "1");
    const char *cwd = build_view(view);
    char **env = environment(envp, cwd);
    enter_target_identity(o.uid, o.gid);
    drop_capabilities();
    if (call(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0).error != 0) {
        fail("cannot set no_new_privs");
    }
    // The namespace change cleared bwrap's --die-with-parent: the target still ends with bwrap.
    if (call(__NR_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0).error != 0) {
        fail("cannot die with the sandbox");
    }
    if (call(__NR_getpid).value == 1) {
        become_init();
    }
    // The setup mark, taken only now that the whole view stands: a call that ends with it unread
    // never ran its target.
    char byte = 0;
    if (const Result r = call(__NR_read, o.setup_mark, as_long(&byte), 1); r.value != 1) {
        fail("cannot take the setup mark", nullptr, r.error);
    }
    // A descriptor bwrap passed through (a directory above a cover, say) would reach past every
    // mount: only the standard streams go on to the target.
    if (const Result r = call(__NR_close_range, 3, ~0U, 0); r.error != 0) {
        fail("cannot close inherited descriptors", nullptr, r.error);
    }
    install_seccomp();
    release_end_signal();
    const Result r = call(__NR_execve, as_long(o.exec), as_long(o.argv), as_long(env));
    Line line;
    line << "tea-sandbox-view: cannot run " << o.argv[0] << ": " << error_name(r.error)
         << " (errno " << static_cast<unsigned long>(r.error) << ")";
    if (r.error == ENOEXEC) {
        // No retry through sh: 126 under every backend (see the helper's exec_program).
        line << ": it has neither an interpreter line (#!) nor a format this kernel runs; begin "
                "a script with a line such as #!/bin/sh";
    }
    line.write_line();
    exit_now(r.error == ENOENT ? 127 : 126);
}
}

#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".global _start\n"
    "_start:\n"
    "  xor %rbp, %rbp\n"
    "  mov %rsp, %rdi\n"
    "  and $-16, %rsp\n"
    "  call tea_view_main\n"
    "  hlt\n");
#elif defined(__aarch64__)
__asm__(
    ".text\n"
    ".global _start\n"
    "_start:\n"
    "  mov x29, #0\n"
    "  mov x30, #0\n"
    "  mov x0, sp\n"
    "  and sp, x0, #-16\n"
    "  bl tea_view_main\n"
    "  brk #0\n");
#endif
