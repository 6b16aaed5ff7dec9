#include "exec/call_cgroup.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <optional>
#include <tea/dirents.hpp>
#include <tea/read_all.hpp>
#include <thread>

#include "util/error.hpp"
#include "util/mountinfo.hpp"
#include "util/process_mark.hpp"

namespace tea::exec {
namespace {

namespace stdfs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr std::string_view call_prefix = "tea-call-";
constexpr std::string_view runtime_prefix = "tea-runtime-";
// A process the kernel was told to kill leaves its cgroup once it has released its memory; a
// large one takes a while. Bounded, so a process stuck in the kernel cannot hold the runtime.
constexpr std::chrono::seconds empty_bound{5};

std::string read_file(const char *path) {
    const UniqueFd fd{::open(path, O_RDONLY | O_CLOEXEC)};
    return fd ? read_all(fd.get()) : std::string{};
}

std::string read_at(int dir, const char *file) {
    const UniqueFd fd{::openat(dir, file, O_RDONLY | O_CLOEXEC)};
    return fd ? read_all(fd.get()) : std::string{};
}

using mountinfo::split;

std::optional<std::uint64_t> number(std::string_view text) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end == text.data()) {
        return std::nullopt;
    }
    return value;
}

// The directory of cgroup `path` in a mount of its hierarchy whose root is `root`; empty when
// the mount does not show it.
stdfs::path directory_in(const stdfs::path &mountpoint, const stdfs::path &root,
                         const stdfs::path &path) {
    const auto relative = path.lexically_relative(root);
    if (relative.empty() || *relative.begin() == "..") {
        return {};
    }
    return relative == "." ? mountpoint : (mountpoint / relative).lexically_normal();
}

std::string random_suffix() {
    std::array<unsigned char, 6> bytes{};
    if (::getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
        throw runtime_failure("cannot name the call's cgroup: " + errno_text(errno));
    }
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (const auto b : bytes) {
        out += digits[b >> 4U];
        out += digits[b & 15U];
    }
    return out;
}

bool writable(const stdfs::path &path) {
    return ::access(path.c_str(), W_OK) == 0;
}

// Writes without throwing; false with errno set.
bool try_write(const stdfs::path &file, std::string_view value) {
    const UniqueFd fd{::open(file.c_str(), O_WRONLY | O_CLOEXEC)};
    return fd &&
           ::write(fd.get(), value.data(), value.size()) == static_cast<ssize_t>(value.size());
}

bool has_word(std::string_view text, std::string_view word) {
    for (auto line : split(text, '\n')) {
        for (const auto w : split(line, ' ')) {
            if (w == word) {
                return true;
            }
        }
    }
    return false;
}

// Ends every process of the cgroup at `dir` and waits (bounded) until it holds none. Returns how
// many it found there.
std::size_t empty_cgroup(int dir, int freezer) {
    auto pids = cgroup_files::read_pids(dir);
    if (pids.empty()) {
        return 0;
    }
    const auto found = pids.size();
    const UniqueFd kill_file{::openat(dir, "cgroup.kill", O_WRONLY | O_CLOEXEC)};
    if (kill_file) {
        // cgroup2 (Linux 5.14): the kernel kills the whole cgroup at once, a process forking
        // meanwhile included.
        (void)::write(kill_file.get(), "1", 1);
    } else if (freezer >= 0) {
        // cgroup v1: frozen, nothing in it can fork between the listing and the kill.
        cgroup_files::write(freezer, "freezer.state", "FROZEN");
        const auto until = Clock::now() + std::chrono::seconds{1};
        while (read_at(freezer, "freezer.state").rfind("FROZEN", 0) != 0 && Clock::now() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds{1});
        }
        for (const pid_t pid : cgroup_files::read_pids(freezer)) {
            ::kill(pid, SIGKILL);
        }
        cgroup_files::write(freezer, "freezer.state", "THAWED");
    }
    const auto until = Clock::now() + empty_bound;
    while (!pids.empty() && Clock::now() < until) {
        if (!kill_file) {
            for (const pid_t pid : pids) {
                ::kill(pid, SIGKILL);  // without a freezer, a fork bomb's pids.max bounds it
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
        pids = cgroup_files::read_pids(dir);
    }
    return found;
}

// rmdir, retried while the kernel still counts a dying process in it (bounded).
bool remove_cgroup(const stdfs::path &path) {
    const auto until = Clock::now() + empty_bound;
    while (::rmdir(path.c_str()) != 0) {
        if (errno == ENOENT) {
            return true;
        }
        if (errno != EBUSY || Clock::now() >= until) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
    return true;
}

// Whether `dir` is its hierarchy's real root, which alone has no cgroup.type; the root of a cgroup
// namespace (a container's) is not.
bool hierarchy_root(const stdfs::path &dir) {
    return ::access((dir / "cgroup.type").c_str(), F_OK) != 0 && errno == ENOENT;
}

// Why `dir` may not enable controllers for its children; empty when it may. Beneath a cgroup with
// processes cgroup2 enables none but at the hierarchy's real root, and it does enable a threaded
// one (pids): that makes the cgroup a thread root, in which no cgroup below can hold a process
// again (a container's every later cgroup broken, whatever this runtime does next).
std::string holding_processes(const stdfs::path &dir) {
    const UniqueFd fd{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (hierarchy_root(dir) || (fd && cgroup_files::read_pids(fd.get()).empty())) {
        return {};
    }
    return dir.string() +
           " holds processes, and cgroup2 enables controllers beneath a cgroup with processes "
           "only at the hierarchy's root (run tea-evaluate alone in a cgroup of its own: as a "
           "container's first process, or under systemd-run --scope -p Delegate=yes)";
}

// cgroup2: the parent of the call cgroups, with the controllers enabled for its children; empty,
// and *why set, when the runtime may not make one.
stdfs::path v2_parent(const OwnCgroups &own, const stdfs::path &mount_root, std::string *why) {
    const auto &dir = own.v2;
    const auto procs = dir / "cgroup.procs";
    // A cgroup that holds this runtime alone, writable by it (a delegated scope): the runtime
    // moves into a leaf beneath it, and its calls are that leaf's siblings. A cgroup with
    // processes cannot enable controllers for its children (cgroup2's no-internal-process rule).
    if (writable(dir) && writable(procs) && writable(dir / "cgroup.subtree_control")) {
        const UniqueFd fd{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
        const auto members = fd ? cgroup_files::read_pids(fd.get()) : std::vector<pid_t>{};
        if (members == std::vector<pid_t>{::getpid()}) {
            const auto leaf = dir / (std::string{runtime_prefix} + own_process_mark());
            if ((::mkdir(leaf.c_str(), 0755) == 0 || errno == EEXIST) &&
                try_write(leaf / "cgroup.procs", std::to_string(::getpid()))) {
                return dir;
            }
            *why = "cannot move the runtime into " + leaf.string() + ": " + errno_text(errno);
            return {};
        }
        if (own.v2_is_root && hierarchy_root(dir) && ::geteuid() == 0) {
            return dir;  // the root cgroup may hold processes beside children with controllers
        }
    }
    if (::geteuid() == 0) {
        // Root whose cgroup is shared (a login session's scope): a subtree of its own.
        if (auto busy = holding_processes(mount_root); !busy.empty()) {
            *why = std::move(busy);  // the root of a container's cgroup namespace, say
            return {};
        }
        auto parent = mount_root / "tea-evaluate";
        for (const char *controller : {"+memory", "+pids"}) {
            (void)try_write(mount_root / "cgroup.subtree_control", controller);
        }
        if (::mkdir(parent.c_str(), 0755) == 0 || errno == EEXIST) {
            return parent;
        }
        *why = "cannot make " + parent.string() + ": " + errno_text(errno);
        return {};
    }
    *why = "the runtime's cgroup " + dir.string() +
           " is not delegated to it alone (run tea-evaluate under "
           "systemd-run --user --scope -p Delegate=yes)";
    return {};
}

CgroupLayout detect_layout() {
    CgroupLayout layout;
    const auto mounts = read_file("/proc/self/mountinfo");
    const auto own = parse_own_cgroups(mounts, read_file("/proc/self/cgroup"));
    std::vector<std::string> why;
    if (!own.v2.empty()) {
        const auto controllers = read_file((own.v2 / "cgroup.controllers").c_str());
        if (has_word(controllers, "memory") || has_word(controllers, "pids")) {
            // The mount's root: the first ancestor whose parent is no cgroup.
            auto mount_root = own.v2;
            while (mount_root.has_parent_path() && mount_root.parent_path() != mount_root &&
                   ::access((mount_root.parent_path() / "cgroup.controllers").c_str(), F_OK) == 0) {
                mount_root = mount_root.parent_path();
            }
            std::string reason;
            auto parent = v2_parent(own, mount_root, &reason);
            if (auto busy = parent.empty() ? std::string{} : holding_processes(parent);
                !busy.empty()) {
                why.push_back(std::move(busy));
            } else if (!parent.empty()) {
                int refused = 0;
                for (const char *controller : {"+memory", "+pids"}) {
                    if (!try_write(parent / "cgroup.subtree_control", controller)) {
                        refused = errno;
                    }
                }
                const auto enabled = read_file((parent / "cgroup.subtree_control").c_str());
                layout.v2_memory = has_word(enabled, "memory");
                layout.v2_pids = has_word(enabled, "pids");
                if (layout.v2_memory || layout.v2_pids) {
                    for (const auto &[enabled_here, name] : {std::pair{layout.v2_memory, "memory"},
                                                             std::pair{layout.v2_pids, "pids"}}) {
                        if (!enabled_here) {
                            why.push_back(parent.string() + " does not enable the " + name +
                                          " controller for its children");
                        }
                    }
                    layout.v2_parent = std::move(parent);
                } else {
                    why.push_back(parent.string() + " enables neither memory nor pids" +
                                  (refused != 0 ? " (" + errno_text(refused) + ")" : ""));
                }
            } else {
                why.push_back(reason);
            }
        } else {
            why.push_back(own.v2.string() +
                          " is given neither the memory nor the pids controller by its parent");
        }
    }
    if (layout.v2_parent.empty()) {
        // cgroup v1, which only root may write on a usual host.
        const auto usable = [&](const char *controller) -> stdfs::path {
            const auto it = own.v1.find(controller);
            return it != own.v1.end() && writable(it->second) ? it->second : stdfs::path{};
        };
        layout.v1_memory = usable("memory");
        layout.v1_pids = usable("pids");
        if (!layout.v1_memory.empty() || !layout.v1_pids.empty()) {
            layout.v1_freezer = usable("freezer");
        }
        if (layout.v1_memory.empty() && own.v1.count("memory") != 0) {
            why.push_back("the cgroup v1 memory hierarchy is not writable by this user");
        }
        if (layout.v1_pids.empty() && own.v1.count("pids") != 0) {
            why.push_back("the cgroup v1 pids hierarchy is not writable by this user");
        }
    }
    if (own.v2.empty() && own.v1.empty()) {
        why.emplace_back("no cgroup hierarchy is mounted");
    }
    for (const auto &w : why) {
        layout.why_not += (layout.why_not.empty() ? "" : "; ") + w;
    }
    return layout;
}

}  // namespace

const char *to_string(Enforcement enforcement) {
    switch (enforcement) {
        case Enforcement::cgroup_v2:
            return "cgroup2";
        case Enforcement::cgroup_v1:
            return "cgroup1";
        case Enforcement::rlimit:
            return "rlimit";
        case Enforcement::none:
            break;
    }
    return "none";
}

std::string cgroup_unavailable(const CgroupLayout &layout, const Budget &budget, Enforcement memory,
                               Enforcement processes) {
    const bool unheld = memory == Enforcement::rlimit || processes == Enforcement::rlimit ||
                        (budget.memory_bytes != 0 && memory == Enforcement::none);
    if (!unheld) {
        return {};
    }
    return budget.cgroups ? layout.why_not : std::string{"budgets.cgroup = \"off\""};
}

Enforcement CgroupLayout::memory() const {
    if (!v2_parent.empty() && v2_memory) {
        return Enforcement::cgroup_v2;
    }
    return v1_memory.empty() ? Enforcement::none : Enforcement::cgroup_v1;
}

Enforcement CgroupLayout::processes() const {
    if (!v2_parent.empty() && v2_pids) {
        return Enforcement::cgroup_v2;
    }
    return v1_pids.empty() ? Enforcement::none : Enforcement::cgroup_v1;
}

OwnCgroups parse_own_cgroups(std::string_view mounts, std::string_view proc_cgroup) {
    std::optional<mountinfo::Mount> v2;
    std::map<std::string, mountinfo::Mount> v1;
    for (const auto &mount : mountinfo::parse(mounts)) {
        if (mount.type == "cgroup2" && !v2) {
            v2 = mount;
        } else if (mount.type == "cgroup") {
            for (const auto option : split(mount.super_options, ',')) {
                v1.emplace(std::string{option}, mount);  // the first mount of each controller
            }
        }
    }
    OwnCgroups own;
    for (const auto line : split(proc_cgroup, '\n')) {
        const auto first = line.find(':');
        const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
        if (second == std::string_view::npos) {
            continue;
        }
        const auto controllers = line.substr(first + 1, second - first - 1);
        const stdfs::path path{std::string{line.substr(second + 1)}};
        if (line.substr(0, first) == "0" && controllers.empty()) {
            if (v2) {
                own.v2 = directory_in(v2->point, v2->root, path);
                own.v2_is_root = path == "/";
            }
            continue;
        }
        for (const auto controller : split(controllers, ',')) {
            const auto it = v1.find(std::string{controller});
            if (it != v1.end()) {
                if (auto dir = directory_in(it->second.point, it->second.root, path);
                    !dir.empty()) {
                    own.v1.emplace(std::string{controller}, std::move(dir));
                }
            }
        }
    }
    return own;
}

const CgroupLayout &host_cgroup_layout() {
    static const CgroupLayout layout = [] {
        auto found = detect_layout();
        if (const int n = reclaim_call_cgroups(found); n > 0) {
            spdlog::info("removed {} call cgroups a killed runtime left", n);
        }
        return found;
    }();
    return layout;
}

int reclaim_call_cgroups(const CgroupLayout &layout) {
    int removed = 0;
    // The freezer's first: what a killed runtime left frozen is thawed before it is waited for.
    for (const auto &parent :
         {layout.v2_parent, layout.v1_freezer, layout.v1_memory, layout.v1_pids}) {
        const UniqueFd dir{::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
        if (parent.empty() || !dir) {
            continue;
        }
        std::vector<std::string> stale;
        tea::dirents::for_each(dir.get(), [&](const dirent64 &entry) {
            const std::string_view name{entry.d_name};
            for (const auto prefix : {call_prefix, runtime_prefix}) {
                if (name.rfind(prefix, 0) == 0 && !process_mark_alive(name.substr(prefix.size()))) {
                    stale.emplace_back(name);
                }
            }
            return true;
        });
        for (const auto &name : stale) {
            if (name.rfind(call_prefix, 0) != 0) {
                // A runtime's own leaf holds what that runtime started outside its calls, which
                // is not this runtime's to end: removed once empty, never waited for.
                removed += ::rmdir((parent / name).c_str()) == 0 ? 1 : 0;
                continue;
            }
            // The call's processes outlived their runtime: a call's budget ends with it.
            const UniqueFd cgroup{
                ::openat(dir.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
            if (cgroup) {
                // A runtime killed while it froze the cgroup to end it left it frozen, where no
                // signal is taken.
                if (::faccessat(cgroup.get(), "freezer.state", F_OK, 0) == 0) {
                    (void)try_write(parent / name / "freezer.state", "THAWED");
                }
                (void)empty_cgroup(cgroup.get(), -1);
            }
            removed += remove_cgroup(parent / name) ? 1 : 0;
        }
    }
    return removed;
}

CallCgroup::Member CallCgroup::make(const stdfs::path &parent, const char *join) {
    Member m;
    m.path = parent / name_;
    if (::mkdir(m.path.c_str(), 0755) != 0) {
        throw runtime_failure("cannot make the call's cgroup " + m.path.string() + ": " +
                              errno_text(errno));
    }
    m.dir.reset(::open(m.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    m.procs.reset(::openat(m.dir.get(), join, O_WRONLY | O_CLOEXEC));
    if (!m.dir || !m.procs) {
        const int error = errno;
        (void)::rmdir(m.path.c_str());
        throw runtime_failure("cannot open the call's cgroup " + m.path.string() + ": " +
                              errno_text(error));
    }
    return m;
}

CallCgroup::CallCgroup(const CgroupLayout &layout, const Budget &budget) {
    make_members(layout, budget);
    report_.cgroup_unavailable =
        cgroup_unavailable(layout, budget, report_.memory, report_.processes);
}

void CallCgroup::make_members(const CgroupLayout &layout, const Budget &budget) {
    report_.budget = budget;
    const bool memory = budget.memory_bytes != 0;
    const bool processes = budget.processes != 0;
    report_.memory = memory && !budget.memory_is_share ? Enforcement::rlimit : Enforcement::none;
    report_.processes = processes ? Enforcement::rlimit : Enforcement::none;
    if (!budget.cgroups) {
        return;
    }
    name_ = std::string{call_prefix} + own_process_mark() + "-" + random_suffix();
    // cgroup v1: the runner's child, a process of one thread, joins through `tasks`, which moves
    // the writing thread alone. Moving a whole process (cgroup.procs) takes a lock of the
    // kernel's for every fork on the host, whose first taking waits out an RCU grace period
    // (every call pays it, since every exec is a new runtime; bench/README.md has the figure);
    // moving the writer itself does not take it. cgroup2 has no such file for a domain cgroup.
    constexpr const char *v1_join = "tasks";
    members_.reserve(3);
    try {
        if (!layout.v2_parent.empty()) {
            members_.push_back(make(layout.v2_parent, "cgroup.procs"));
            v2_ = &members_.back();
            const bool by_memory = memory && layout.v2_memory;
            const bool by_pids = processes && layout.v2_pids;
            cgroup_files::write_v2_limits(v2_->dir.get(), budget, by_memory, by_pids);
            report_.memory = by_memory ? Enforcement::cgroup_v2 : report_.memory;
            report_.processes = by_pids ? Enforcement::cgroup_v2 : report_.processes;
            return;
        }
        if (memory && !layout.v1_memory.empty()) {
            members_.push_back(make(layout.v1_memory, v1_join));
            memory_ = &members_.back();
            const auto bytes = std::to_string(budget.memory_bytes);
            cgroup_files::write(memory_->dir.get(), "memory.limit_in_bytes", bytes);
            // Memory and swap together: no swap beyond the budget, where swap is accounted.
            if (::faccessat(memory_->dir.get(), "memory.memsw.limit_in_bytes", F_OK, 0) == 0) {
                cgroup_files::write(memory_->dir.get(), "memory.memsw.limit_in_bytes", bytes);
            }
            report_.memory = Enforcement::cgroup_v1;
        }
        if (processes && !layout.v1_pids.empty()) {
            members_.push_back(make(layout.v1_pids, v1_join));
            pids_ = &members_.back();
            cgroup_files::write(pids_->dir.get(), "pids.max", std::to_string(budget.processes));
            report_.processes = Enforcement::cgroup_v1;
        }
        if (!members_.empty() && !layout.v1_freezer.empty()) {
            members_.push_back(make(layout.v1_freezer, v1_join));
            freezer_ = &members_.back();
        }
    } catch (...) {
        (void)end();
        throw;
    }
}

CallCgroup::~CallCgroup() {
    try {
        (void)end();
    } catch (...) {
        // Nothing may leave a destructor. A cgroup left behind is reclaimed by the next runtime,
        // which finds its owner's mark gone.
    }
}

std::vector<int> CallCgroup::join_fds() const {
    std::vector<int> out;
    for (const auto &m : members_) {
        out.push_back(m.procs.get());
    }
    return out;
}

BudgetReport CallCgroup::end() {
    if (ended_) {
        return report_;
    }
    ended_ = true;
    if (members_.empty()) {
        return report_;
    }
    // Every member holds every process of the call (each joined them all); the freezer's, or
    // else any, is listed.
    const Member &listed = freezer_ != nullptr ? *freezer_ : members_.front();
    report_.left_killed =
        empty_cgroup(listed.dir.get(), freezer_ != nullptr ? freezer_->dir.get() : -1);
    if (v2_ != nullptr) {
        cgroup_files::read_v2_counts(v2_->dir.get(), report_.memory == Enforcement::cgroup_v2,
                                     report_.processes == Enforcement::cgroup_v2, report_);
    }
    if (memory_ != nullptr) {
        report_.oom_kills =
            cgroup_files::read_key(memory_->dir.get(), "memory.oom_control", "oom_kill");
        report_.memory_peak_bytes =
            cgroup_files::read_number(memory_->dir.get(), "memory.max_usage_in_bytes");
    }
    if (pids_ != nullptr) {
        report_.refused_forks = cgroup_files::read_key(pids_->dir.get(), "pids.events", "max");
    }
    for (auto &m : members_) {
        m.procs.reset();
        m.dir.reset();
        if (!remove_cgroup(m.path)) {
            // Left for the next runtime's reclaim, which finds its owner gone.
            spdlog::warn("cannot remove the call's cgroup {}: {}", m.path.string(),
                         errno_text(errno));
        }
    }
    members_.clear();
    v2_ = memory_ = pids_ = freezer_ = nullptr;
    return report_;
}

namespace cgroup_files {

void write(int dir, const char *file, std::string_view value) {
    const UniqueFd fd{::openat(dir, file, O_WRONLY | O_CLOEXEC)};
    if (!fd ||
        ::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size())) {
        throw runtime_failure(std::string{"the kernel refused "} + std::string{value} + " in " +
                              file + " of the call's cgroup: " + errno_text(errno));
    }
}

std::uint64_t read_key(int dir, const char *file, std::string_view key) {
    const auto text = read_at(dir, file);
    for (const auto line : split(text, '\n')) {
        const auto space = line.find(' ');
        if (space != std::string_view::npos && line.substr(0, space) == key) {
            return number(line.substr(space + 1)).value_or(0);
        }
    }
    return 0;
}

std::uint64_t read_number(int dir, const char *file) {
    return number(read_at(dir, file)).value_or(0);
}

std::vector<pid_t> read_pids(int dir) {
    std::vector<pid_t> out;
    const auto text = read_at(dir, "cgroup.procs");  // outlives the views split makes of it
    for (const auto line : split(text, '\n')) {
        if (const auto pid = number(line)) {
            out.push_back(static_cast<pid_t>(*pid));
        }
    }
    return out;
}

void write_v2_limits(int dir, const Budget &budget, bool memory, bool pids) {
    if (memory) {
        write(dir, "memory.max", std::to_string(budget.memory_bytes));
        // No swap beyond the budget: where swap is accounted, a call at its budget is killed,
        // not pushed out to disk at the host's expense.
        if (::faccessat(dir, "memory.swap.max", F_OK, 0) == 0) {
            write(dir, "memory.swap.max", "0");
        }
    }
    if (pids) {
        write(dir, "pids.max", std::to_string(budget.processes));
    }
}

void read_v2_counts(int dir, bool memory, bool pids, BudgetReport &report) {
    if (memory) {
        report.oom_kills = read_key(dir, "memory.events", "oom_kill");
        report.memory_peak_bytes = read_number(dir, "memory.peak");
    }
    if (pids) {
        report.refused_forks = read_key(dir, "pids.events", "max");
    }
}

}  // namespace cgroup_files

}  // namespace tea::exec
