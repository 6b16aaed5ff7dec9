#include "kept_programs.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "owned_fd.hpp"

namespace tea::ebpf {
namespace {

// The pins' names in a set's directory, map by map (a name without the section's dot).
constexpr std::array<std::string_view, kMapSlots> kMapPins{
    "tracked", "pending", "calls", "events", "tables", "open_flights", "displacer_flights", "bss"};
// The kernel keeps an object's name to this many bytes.
constexpr std::size_t kObjectNameBytes = BPF_OBJ_NAME_LEN - 1;
// More maps than the programs use: a program that claims more is not this object's.
constexpr std::size_t kMaxMapIds = 64;

// A directory made and kept by root alone, on bpffs, opened without following a link: anything
// else is not ours to pin in or take programs from.
bool ours(int dir) {
    struct stat st {};
    struct statfs fs {};
    // A directory another user could write in would let that user plant the programs a session
    // attaches.
    return ::fstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
           (st.st_mode & (S_IWGRP | S_IWOTH)) == 0 && ::fstatfs(dir, &fs) == 0 &&
           static_cast<std::uint64_t>(fs.f_type) == BPF_FS_MAGIC;
}

// Opens (making it first) the directory `name` beneath `parent` (-1: an absolute name).
int open_dir(int parent, const char *name) {
    const int at = parent >= 0 ? parent : AT_FDCWD;
    if (::mkdirat(at, name, 0700) != 0 && errno != EEXIST) {
        return -1;
    }
    OwnedFd dir{::openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    return dir.get() >= 0 && ours(dir.get()) ? dir.release() : -1;
}

std::string pin_path(int dir, std::string_view pin) {
    return "/proc/self/fd/" + std::to_string(dir) + "/" + std::string{pin};
}

// The names in a directory.
std::vector<std::string> entries(int dir) {
    std::vector<std::string> names;
    std::error_code ec;
    std::filesystem::directory_iterator it{"/proc/self/fd/" + std::to_string(dir), ec};
    for (; !ec && it != std::filesystem::directory_iterator{}; it.increment(ec)) {
        names.push_back(it->path().filename().string());
    }
    return names;
}

// Removes every pin in a set's directory.
void wipe(int dir) {
    for (const auto &name : entries(dir)) {
        (void)::unlinkat(dir, name.c_str(), 0);
    }
}

bool same_name(const char *kernel_name, std::string_view expected) {
    return std::string_view{kernel_name} == expected.substr(0, kObjectNameBytes);
}

// Takes the set pinned in `dir` into `set` when it is whole and this object's: every program a
// raw tracepoint program of its name, every map one of the programs' own maps of its name.
bool take(int dir, LoadedSet &set, const SetSizes &sizes) {
    std::vector<std::uint32_t> map_ids;
    for (std::size_t i = 0; i < kProgramSlots; ++i) {
        OwnedFd fd{::bpf_obj_get(pin_path(dir, kPrograms.at(i).name).c_str())};
        if (fd.get() < 0) {
            return false;
        }
        std::array<std::uint32_t, kMaxMapIds> ids{};
        bpf_prog_info info{};
        info.nr_map_ids = kMaxMapIds;
        info.map_ids = reinterpret_cast<std::uintptr_t>(ids.data());
        std::uint32_t len = sizeof info;
        if (::bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0 ||
            info.type != BPF_PROG_TYPE_RAW_TRACEPOINT ||
            !same_name(info.name, kPrograms.at(i).name) || info.nr_map_ids > kMaxMapIds) {
            return false;
        }
        map_ids.insert(map_ids.end(), ids.begin(), ids.begin() + info.nr_map_ids);
        set.set_program(static_cast<ProgramSlot>(i), fd.release());
    }
    for (std::size_t i = 0; i < kMapSlots; ++i) {
        OwnedFd fd{::bpf_obj_get(pin_path(dir, kMapPins.at(i)).c_str())};
        if (fd.get() < 0) {
            return false;
        }
        bpf_map_info info{};
        std::uint32_t len = sizeof info;
        // A map pinned beside the programs that none of them uses would be read and emptied in
        // place of theirs, while theirs kept an earlier session's processes.
        if (::bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0 ||
            !same_name(info.name, kMaps.at(i)) ||
            std::find(map_ids.begin(), map_ids.end(), info.id) == map_ids.end()) {
            return false;
        }
        // Sizes other than the configuration's: the name said otherwise, so the set is not ours.
        const auto slot = static_cast<MapSlot>(i);
        if ((slot == MapSlot::events && info.max_entries != sizes.ring_bytes) ||
            ((slot == MapSlot::calls || slot == MapSlot::pending) &&
             info.max_entries != sizes.max_calls)) {
            return false;
        }
        set.set_map(static_cast<MapSlot>(i), fd.release());
    }
    return set.whole();
}

// Empties a hash map.
bool empty_hash(int map) {
    bpf_map_info info{};
    std::uint32_t len = sizeof info;
    if (::bpf_obj_get_info_by_fd(map, &info, &len) != 0 || info.type != BPF_MAP_TYPE_HASH) {
        return false;
    }
    std::vector<unsigned char> key(info.key_size);
    while (::bpf_map_get_next_key(map, nullptr, key.data()) == 0) {
        if (::bpf_map_delete_elem(map, key.data()) != 0 && errno != ENOENT) {
            return false;
        }
    }
    return errno == ENOENT;
}

// Forgets what an earlier session left in the set's maps (its processes, calls, tokens, shared
// tables and counters), as a set just loaded holds nothing. Run before the programs are attached.
// The ring buffer is drained by the session's reader before its first call is registered.
bool reset(const LoadedSet &set) {
    // An earlier session's tracked process, still running, would be taken for a call of this
    // session that gets its call's number.
    for (const auto slot : {MapSlot::tracked, MapSlot::pending, MapSlot::calls, MapSlot::tables,
                            MapSlot::open_flights, MapSlot::displacer_flights}) {
        if (!empty_hash(set.map(slot))) {
            return false;
        }
    }
    bpf_map_info info{};
    std::uint32_t len = sizeof info;
    const int bss = set.map(MapSlot::bss);
    if (::bpf_obj_get_info_by_fd(bss, &info, &len) != 0 || info.type != BPF_MAP_TYPE_ARRAY ||
        info.key_size != sizeof(std::uint32_t) || info.max_entries != 1) {
        return false;
    }
    const std::uint32_t zero = 0;
    const std::vector<unsigned char> value(info.value_size, 0);
    return ::bpf_map_update_elem(bss, &zero, value.data(), BPF_ANY) == 0;
}

// Pins every program and map of `set` in `dir`.
bool pin(int dir, const LoadedSet &set) {
    for (std::size_t i = 0; i < kMapSlots; ++i) {
        if (::bpf_obj_pin(set.map(static_cast<MapSlot>(i)),
                          pin_path(dir, kMapPins.at(i)).c_str()) != 0) {
            return false;
        }
    }
    // The programs last: a set killed before its last pin is incomplete, and loaded again.
    for (std::size_t i = 0; i < kProgramSlots; ++i) {
        if (::bpf_obj_pin(set.program(static_cast<ProgramSlot>(i)),
                          pin_path(dir, kPrograms.at(i).name).c_str()) != 0) {
            return false;
        }
    }
    return true;
}

// Whether any of the set's programs is still attached: a session killed a moment ago may have
// let its lock go before the kernel has released its attachments, and emptying the maps under
// them would lose that session's last records, or hand them to this one.
bool still_attached(const LoadedSet &set) {
    std::vector<std::uint32_t> ids;
    for (std::size_t i = 0; i < kProgramSlots; ++i) {
        bpf_prog_info info{};
        std::uint32_t len = sizeof info;
        if (::bpf_obj_get_info_by_fd(set.program(static_cast<ProgramSlot>(i)), &info, &len) != 0) {
            return true;
        }
        ids.push_back(info.id);
    }
    std::uint32_t id = 0;
    while (::bpf_link_get_next_id(id, &id) == 0) {
        const OwnedFd link{::bpf_link_get_fd_by_id(id)};
        if (link.get() < 0) {
            continue;  // gone meanwhile
        }
        bpf_link_info info{};
        std::uint32_t len = sizeof info;
        if (::bpf_obj_get_info_by_fd(link.get(), &info, &len) == 0 &&
            std::find(ids.begin(), ids.end(), info.prog_id) != ids.end()) {
            return true;
        }
    }
    return false;
}

// Waits a moment for the set's programs to be detached.
bool detached(const LoadedSet &set) {
    for (int i = 0; i < 100; ++i) {
        if (!still_attached(set)) {
            return true;
        }
        ::usleep(1000);
    }
    return false;
}

// Removes the sets (other than `own`) that no session has taken or pinned for an hour and none
// holds: another build's, which this one never takes, or a configuration no longer used. Each
// holds its ring buffer's memory until the machine restarts.
void remove_unused(int base, const std::string &own) {
    const auto now = ::time(nullptr);
    for (const auto &name : entries(base)) {
        struct stat st {};
        if (name == own || ::fstatat(base, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode) || now - st.st_mtime < kUnusedSetSeconds) {
            continue;
        }
        OwnedFd dir{::openat(base, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
        if (dir.get() < 0 || ::flock(dir.get(), LOCK_EX | LOCK_NB) != 0) {
            continue;
        }
        wipe(dir.get());
        (void)::unlinkat(base, name.c_str(), AT_REMOVEDIR);
    }
}

}  // namespace

LoadedSet::LoadedSet() {
    programs_.fill(-1);
    maps_.fill(-1);
}

LoadedSet::LoadedSet(LoadedSet &&other) noexcept
    : programs_{std::exchange(other.programs_, {})},
      maps_{std::exchange(other.maps_, {})},
      lock_{std::exchange(other.lock_, -1)},
      taken_{other.taken_} {
    other.programs_.fill(-1);
    other.maps_.fill(-1);
}

LoadedSet &LoadedSet::operator=(LoadedSet &&other) noexcept {
    if (this != &other) {
        close_all();
        programs_ = other.programs_;
        maps_ = other.maps_;
        lock_ = std::exchange(other.lock_, -1);
        taken_ = other.taken_;
        other.programs_.fill(-1);
        other.maps_.fill(-1);
    }
    return *this;
}

LoadedSet::~LoadedSet() {
    close_all();
}

void LoadedSet::close_all() {
    for (int &fd : programs_) {
        if (fd >= 0) {
            ::close(std::exchange(fd, -1));
        }
    }
    for (int &fd : maps_) {
        if (fd >= 0) {
            ::close(std::exchange(fd, -1));
        }
    }
    // The lock last: the next session empties the maps this one no longer uses.
    if (lock_ >= 0) {
        ::close(std::exchange(lock_, -1));
    }
}

void LoadedSet::set_program(ProgramSlot slot, int fd) {
    int &at = programs_.at(static_cast<std::size_t>(slot));
    if (at >= 0) {
        ::close(at);
    }
    at = fd;
}

void LoadedSet::set_map(MapSlot slot, int fd) {
    int &at = maps_.at(static_cast<std::size_t>(slot));
    if (at >= 0) {
        ::close(at);
    }
    at = fd;
}

bool LoadedSet::whole() const {
    return std::all_of(programs_.begin(), programs_.end(), [](int fd) { return fd >= 0; }) &&
           std::all_of(maps_.begin(), maps_.end(), [](int fd) { return fd >= 0; });
}

std::string kept_set_name(std::string_view object_digest, const SetSizes &sizes) {
    return std::string{object_digest} + "-l" + std::to_string(kLoaderVersion) + "-b" +
           // No dot: bpffs keeps names with one for the kernel.
           std::to_string(::libbpf_major_version()) + "_" +
           std::to_string(::libbpf_minor_version()) + "-" + std::to_string(sizes.ring_bytes) + "-" +
           std::to_string(sizes.max_calls);
}

LoadedSet load_or_take(const std::string &name, const SetSizes &sizes, bool keep,
                       const std::function<LoadedSet()> &load, std::string *not_kept) {
    const auto alone = [&](const char *why) {
        if (not_kept != nullptr) *not_kept = why;
        return load();
    };
    if (!keep) {
        return load();
    }
    // Only root may pin in bpffs, and only root's sets are taken.
    if (::geteuid() != 0) {
        return alone("only root keeps them");
    }
    // Where no bpffs is mounted, nothing is made there: a directory left on whatever file system
    // holds that path would be a change to the host no session undoes.
    struct statfs fs {};
    if (::statfs(kBpffsMount, &fs) != 0 || static_cast<std::uint64_t>(fs.f_type) != BPF_FS_MAGIC) {
        return alone(
            "no bpffs is mounted at /sys/fs/bpf (mount -t bpf bpf /sys/fs/bpf keeps them)");
    }
    OwnedFd base{open_dir(-1, kKeptSetsDir)};
    if (base.get() < 0) {
        return alone(
            "/sys/fs/bpf/tea-evaluate could not be made, or is not a directory of root's alone");
    }
    remove_unused(base.get(), name);
    OwnedFd dir{open_dir(base.get(), name.c_str())};
    // Held for the session's life: two sessions attaching one set would each read, and empty,
    // the other's calls.
    if (dir.get() < 0) {
        return alone("the set's directory could not be made, or is not of root's alone");
    }
    if (::flock(dir.get(), LOCK_EX | LOCK_NB) != 0) {
        return alone("another session holds the kept set");
    }
    {
        LoadedSet set;
        if (take(dir.get(), set, sizes)) {
            if (!detached(set)) {
                // Left to whoever still runs it; nothing wiped.
                return alone("the kept set's programs are still attached");
            }
            if (reset(set)) {
                (void)::futimens(dir.get(), nullptr);  // used now
                set.lock_ = dir.release();
                set.taken_ = true;
                return set;
            }
        }
    }
    wipe(dir.get());
    LoadedSet fresh = load();
    if (!pin(dir.get(), fresh)) {
        wipe(dir.get());
        if (not_kept != nullptr) *not_kept = "they could not be pinned";
        return fresh;
    }
    fresh.lock_ = dir.release();
    return fresh;
}

}  // namespace tea::ebpf
