// The eBPF observer's programs kept loaded between sessions, unattached.
//
// The kernel verifies a program when it is loaded, and that is most of what a session's probe
// costs (docs/observer-ebpf-design.md, "Kept between sessions"). A session run as root therefore
// pins what it loaded in bpffs, at /sys/fs/bpf/tea-evaluate/<set>/, where <set> names the object
// (a digest taken at build time) and the map sizes the configuration chose; the next session takes
// the set, empties its maps and attaches the programs itself. Attachments are never pinned: while
// no session runs, the kept programs run on no system call, and a session that dies takes its
// attachments with it.
//
// One session uses a set at a time: it holds an exclusive lock on the set's directory for its
// whole life. A session that finds the set taken, or that may not keep one (not root, no bpffs),
// loads a set of its own and pins nothing. A set that is incomplete (a session killed while
// pinning) or that is not this object's is removed and pinned again from a fresh load. A set no
// session has used for an hour (another build's, another configuration's) is removed by the next
// session, when no session holds it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace tea::ebpf {

// The programs, in the order they are attached.
enum class ProgramSlot : std::size_t { fork, exit, exec, sys_enter, sys_exit };
inline constexpr std::size_t kProgramSlots = 5;
// The maps the plugin reads, writes or empties.
enum class MapSlot : std::size_t {
    tracked,
    pending,
    calls,
    events,
    tables,
    open_flights,
    displacer_flights,
    bss
};
inline constexpr std::size_t kMapSlots = 8;

// A program's name in the object and the raw tracepoint it is attached to.
struct ProgramName {
    std::string_view name;
    std::string_view tracepoint;
};
inline constexpr std::array<ProgramName, kProgramSlots> kPrograms{{
    {"on_fork", "sched_process_fork"},
    {"on_exit", "sched_process_exit"},
    {"on_exec", "sched_process_exec"},
    {"on_sys_enter", "sys_enter"},
    {"on_sys_exit", "sys_exit"},
}};
// Each map's name in the object (libbpf's name for the global variables' section).
inline constexpr std::array<std::string_view, kMapSlots> kMaps{
    "tracked",      "pending",           "calls",       "events", "tables",
    "open_flights", "displacer_flights", "observer.bss"};

// The map sizes the configuration chose.
struct SetSizes {
    std::uint64_t ring_bytes = 0;
    std::uint64_t max_calls = 0;
};

// One session's loaded programs and maps: descriptors this process owns, and the kept set's lock
// when they are a kept set's.
class LoadedSet {
   public:
    LoadedSet();
    LoadedSet(LoadedSet &&other) noexcept;
    LoadedSet &operator=(LoadedSet &&other) noexcept;
    LoadedSet(const LoadedSet &) = delete;
    LoadedSet &operator=(const LoadedSet &) = delete;
    ~LoadedSet();

    [[nodiscard]] int program(ProgramSlot slot) const {
        return programs_.at(static_cast<std::size_t>(slot));
    }
    [[nodiscard]] int map(MapSlot slot) const { return maps_.at(static_cast<std::size_t>(slot)); }
    // Whether the set was taken from bpffs rather than loaded by this session.
    [[nodiscard]] bool taken() const { return taken_; }

    // Takes ownership of the descriptors.
    void set_program(ProgramSlot slot, int fd);
    void set_map(MapSlot slot, int fd);
    // Whether every program and map is there.
    [[nodiscard]] bool whole() const;

   private:
    friend LoadedSet load_or_take(const std::string &, const SetSizes &, bool,
                                  const std::function<LoadedSet()> &, std::string *);
    void close_all();

    std::array<int, kProgramSlots> programs_{};
    std::array<int, kMapSlots> maps_{};
    int lock_ = -1;
    bool taken_ = false;
};

// Where bpffs is mounted, and beneath it where kept sets are pinned.
inline constexpr const char *kBpffsMount = "/sys/fs/bpf";
inline constexpr const char *kKeptSetsDir = "/sys/fs/bpf/tea-evaluate";
// How the plugin loads the object beyond its bytes (the maps' sizes it sets, its .rodata): raised
// whenever that changes, so that a session never takes a set loaded the old way.
inline constexpr int kLoaderVersion = 1;
// A set no session has taken or pinned for this long is removed by the next session that runs.
inline constexpr int kUnusedSetSeconds = 3600;

// The set's name: the object's digest, the loader's version, the libbpf that relocated it and
// the map sizes.
std::string kept_set_name(std::string_view object_digest, const SetSizes &sizes);

// With `keep`, takes the kept set `name`, emptied of any earlier session's state, or loads one
// with `load` and pins it there; without `keep`, or when no set may be kept now, returns what
// `load` returns. `load` throws when the kernel refuses the programs, and that is passed on.
// With `keep`, *not_kept (when given) says why no set was taken or kept, else is left alone.
LoadedSet load_or_take(const std::string &name, const SetSizes &sizes, bool keep,
                       const std::function<LoadedSet()> &load, std::string *not_kept = nullptr);

}  // namespace tea::ebpf
