// The eBPF observer: kernel programs, attached once per session, report what each audited call's
// processes opened, executed, listed and named, as the kernel saw it.
//
// probe   loads the programs (root, or CAP_BPF with CAP_PERFMON), or takes those an earlier
//         session kept loaded (kept_programs.hpp), attaches them and starts the thread that
//         drains their ring buffer; it says why when the kernel refuses them.
// wrap    registers a one-time token for the call and puts tea-ebpf-enter in front of the plan's
//         argv: that process claims the call with the token, and the programs follow everything
//         it starts. The plan runs as whatever identity the backend chose; the enter program
//         needs no privilege.
// collect forgets the call's processes, drains the ring buffer up to where it stood once they
//         were gone, drops the confinement's set-up as the strace observer does (everything
//         before the first exec of targetStart, and a launcher's own work), merges repeats and
//         reads the call's counters: any record lost, any process still running at the call's
//         end, any record the drain could not reach, any io_uring instance, any path that could
//         not be read makes the audit incomplete.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <system_error>
#include <tea/documents.hpp>
#include <tea/plugin.hpp>
#include <tea/setup_separator.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "build_kernel_btf.hpp"
#include "ebpf_event.h"
#include "ebpf_events.hpp"
#include "kept_programs.hpp"
#include "object_digest.hpp"
#include "observer.skel.h"
#include "owned_fd.hpp"
#include "ring_reader.hpp"

namespace {

using nlohmann::json;
using tea::ebpf::MapSlot;
using tea::ebpf::OwnedFd;
using tea::ebpf::ProgramSlot;

// The variable that hands tea-ebpf-enter its call's token (ebpf_enter.c reads and removes it).
constexpr const char *kTokenVariable = "TEA_EBPF_TOKEN=";
constexpr std::size_t kDefaultMaxDistinct = std::size_t{1} << 20;
// Records a call may hold before it is reported lossy: a target that opens without end must not
// exhaust the runtime's memory.
constexpr std::size_t kDefaultMaxRecordBytes = std::size_t{1} << 30;
// The ring buffer every call's records pass through on their way out of the kernel.
constexpr std::uint64_t kMinRingBytes = 4096;
constexpr std::uint64_t kMaxRingBytes = std::uint64_t{1} << 30;
// Calls registered at once (wrapped, not yet collected or reclaimed).
constexpr std::uint64_t kMaxCalls = 65536;
// The programs' own sizes (observer.bpf.c), which the configuration may change.
constexpr std::uint32_t kDefaultRingBytes = std::uint32_t{1} << 24;
constexpr std::uint32_t kDefaultMaxCalls = 1024;

// A request the host sent, decoded; a malformed one is refused naming its field.
template <class Decode>
auto decoded(Decode decode, std::string_view text) {
    try {
        return decode(text);
    } catch (const tea::documents::DocumentError &e) {
        throw tea::sdk::Invalid(e.what());
    }
}

// The enter program, beside the plugin as installed and as built.
std::string enter_program() {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void *>(&enter_program), &info) == 0 ||
        info.dli_fname == nullptr) {
        return {};
    }
    const auto path =
        std::filesystem::path{info.dli_fname}.parent_path() / TEA_EBPF_ENTER_FROM_PLUGIN;
    return path.lexically_normal().string();
}

// Why the kernel refused the programs, as a sentence with the way out.
std::string load_failure(int error) {
    std::string why =
        "the kernel refused its BPF programs (" + std::generic_category().message(error) + ")";
    if (error == EPERM || error == EACCES) {
        why += ": loading them needs root, or CAP_BPF with CAP_PERFMON";
    }
    return why;
}

// Whether this process may load tracing programs: CAP_SYS_ADMIN, or CAP_BPF with CAP_PERFMON, in
// its effective set. Asked first, so that an unprivileged user is told at once, without libbpf
// parsing the kernel's BTF for a load the kernel would refuse.
bool may_load_tracing_programs() {
    constexpr unsigned kSysAdmin = 21;
    constexpr unsigned kPerfmon = 38;
    constexpr unsigned kBpf = 39;
    const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return true;  // the kernel will say
    }
    std::string text(8192, '\0');
    const ssize_t n = ::read(fd, text.data(), text.size());
    ::close(fd);
    text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    const auto at = text.find("CapEff:\t");
    if (at == std::string::npos) {
        return true;
    }
    const auto caps = std::strtoull(text.c_str() + at + 8, nullptr, 16);
    const auto has = [caps](unsigned cap) { return ((caps >> cap) & 1U) != 0; };
    return has(kSysAdmin) || (has(kBpf) && has(kPerfmon));
}

// A file holding the BTF cut at build time for the relocations, when the running kernel is the
// one it was cut from (same build-id notes, same BTF size): libbpf then relocates against a few
// kilobytes instead of parsing the kernel's whole BTF. -1 on any other kernel, where libbpf reads
// the running kernel's own: never a relocation against another kernel's layout.
int build_kernel_btf() {
    namespace k = tea::ebpf::build_kernel;
    struct stat st {};
    if (::stat("/sys/kernel/btf/vmlinux", &st) != 0 ||
        static_cast<std::uint64_t>(st.st_size) != k::btf_size) {
        return -1;
    }
    const int notes = ::open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
    if (notes < 0) {
        return -1;
    }
    std::array<unsigned char, sizeof k::notes + 1> seen{};
    const ssize_t n = ::read(notes, seen.data(), seen.size());
    ::close(notes);
    if (n != static_cast<ssize_t>(sizeof k::notes) ||
        std::memcmp(seen.data(), k::notes, sizeof k::notes) != 0) {
        return -1;
    }
    const int fd = ::memfd_create("tea-ebpf-btf", MFD_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    if (::write(fd, k::min_btf, sizeof k::min_btf) != static_cast<ssize_t>(sizeof k::min_btf)) {
        ::close(fd);
        return -1;
    }
    return fd;
}

int no_libbpf_log(enum libbpf_print_level /*level*/, const char * /*format*/, va_list /*args*/) {
    return 0;
}

// A duplicate of a libbpf object's descriptor, for the set to own once the skeleton is let go.
int own_copy(int fd) {
    const int copy = fd >= 0 ? ::fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (copy < 0) {
        throw tea::sdk::Unavailable("its loaded programs could not be kept (" +
                                    std::generic_category().message(errno) + ")");
    }
    return copy;
}

// Opens, sizes and loads the programs (the kernel verifies them here), unattached. The set owns
// copies of their descriptors; the skeleton is let go.
tea::ebpf::LoadedSet load_programs(std::uint32_t ring_bytes, std::uint32_t max_calls) {
    // Kept open until the load has relocated against it.
    const OwnedFd btf{build_kernel_btf()};
    const std::string btf_path =
        btf.get() >= 0 ? "/proc/self/fd/" + std::to_string(btf.get()) : std::string{};
    // libbpf's LIBBPF_OPTS, written in C++: zeroed, with its size set.
    bpf_object_open_opts opts{};
    opts.sz = sizeof(opts);
    opts.btf_custom_path = btf.get() >= 0 ? btf_path.c_str() : nullptr;
    const std::unique_ptr<observer_bpf, void (*)(observer_bpf *)> skel{
        observer_bpf__open_opts(&opts), observer_bpf__destroy};
    if (skel == nullptr) {
        throw tea::sdk::Unavailable(load_failure(errno));
    }
    (void)bpf_map__set_max_entries(skel->maps.events, ring_bytes);
    (void)bpf_map__set_max_entries(skel->maps.pending, max_calls);
    (void)bpf_map__set_max_entries(skel->maps.calls, max_calls);
    // Readers are woken a quarter of the way up; the rest waits for the call's end.
    skel->rodata->wake_at_bytes = ring_bytes / 4;
    if (const int rc = observer_bpf__load(skel.get()); rc != 0) {
        throw tea::sdk::Unavailable(load_failure(-rc));
    }
    tea::ebpf::LoadedSet set;
    const std::array<bpf_program *, tea::ebpf::kProgramSlots> programs{
        skel->progs.on_fork, skel->progs.on_exit, skel->progs.on_exec, skel->progs.on_sys_enter,
        skel->progs.on_sys_exit};
    for (std::size_t i = 0; i < programs.size(); ++i) {
        const auto &named = tea::ebpf::kPrograms.at(i);
        // The table the attachments follow must say what the object says.
        if (named.name != bpf_program__name(programs.at(i)) ||
            "raw_tp/" + std::string{named.tracepoint} !=
                bpf_program__section_name(programs.at(i))) {
            throw tea::sdk::Unavailable("its program " + std::string{named.name} +
                                        " is not the one the plugin attaches");
        }
        set.set_program(static_cast<ProgramSlot>(i), own_copy(bpf_program__fd(programs.at(i))));
    }
    const std::array<bpf_map *, tea::ebpf::kMapSlots> maps{skel->maps.tracked,
                                                           skel->maps.pending,
                                                           skel->maps.calls,
                                                           skel->maps.events,
                                                           skel->maps.tables,
                                                           skel->maps.open_flights,
                                                           skel->maps.displacer_flights,
                                                           skel->maps.bss};
    for (std::size_t i = 0; i < maps.size(); ++i) {
        if (tea::ebpf::kMaps.at(i) != bpf_map__name(maps.at(i))) {
            throw tea::sdk::Unavailable("its map " + std::string{tea::ebpf::kMaps.at(i)} +
                                        " is not the one the plugin reads");
        }
        set.set_map(static_cast<MapSlot>(i), own_copy(bpf_map__fd(maps.at(i))));
    }
    return set;
}

// The records of one call, as the drain thread routes them.
struct CallRecords {
    std::string bytes;
    std::uint64_t dropped = 0;  // records past the call's memory bound
};

class EbpfObserver {
   public:
    EbpfObserver(tea::sdk::Host host, std::string_view config_json) : host_(host) {
        const auto config = json::parse(config_json, nullptr, false);
        if (!config.is_object()) {
            throw tea::sdk::Invalid("[plugin.ebpf]: expected a table");
        }
        for (const auto &[key, value] : config.items()) {
            if (key == "max_distinct_events") {
                if (!value.is_number_unsigned() || value.get<std::uint64_t>() == 0) {
                    throw tea::sdk::Invalid(
                        "[plugin.ebpf] max_distinct_events: expected a positive integer");
                }
                max_distinct_ = value.get<std::size_t>();
            } else if (key == "ring_buffer_bytes") {
                // The kernel takes a power of two of whole pages.
                const auto bytes = value.is_number_unsigned() ? value.get<std::uint64_t>() : 0;
                if (bytes < kMinRingBytes || bytes > kMaxRingBytes || (bytes & (bytes - 1)) != 0) {
                    throw tea::sdk::Invalid(
                        "[plugin.ebpf] ring_buffer_bytes: expected a power of two from 4096 to "
                        "1073741824");
                }
                ring_bytes_ = static_cast<std::uint32_t>(bytes);
            } else if (key == "max_calls") {
                const auto calls = value.is_number_unsigned() ? value.get<std::uint64_t>() : 0;
                if (calls == 0 || calls > kMaxCalls) {
                    throw tea::sdk::Invalid(
                        "[plugin.ebpf] max_calls: expected an integer from 1 to 65536");
                }
                max_calls_ = static_cast<std::uint32_t>(calls);
            } else if (key == "keep_loaded") {
                if (!value.is_boolean()) {
                    throw tea::sdk::Invalid("[plugin.ebpf] keep_loaded: expected true or false");
                }
                keep_loaded_ = value.get<bool>();
            } else {
                throw tea::sdk::Invalid("[plugin.ebpf] " + key +
                                        ": unknown key (known: keep_loaded, max_calls, "
                                        "max_distinct_events, ring_buffer_bytes)");
            }
        }
    }

    EbpfObserver(const EbpfObserver &) = delete;
    EbpfObserver &operator=(const EbpfObserver &) = delete;

    ~EbpfObserver() {
        if (stop_fd_ >= 0) {
            const std::uint64_t one = 1;
            (void)::write(stop_fd_, &one, sizeof one);
        }
        if (drain_.joinable()) {
            drain_.join();
        }
        ring_.reset();
        // Detached before the set is closed and its lock let go.
        for (int &link : links_) {
            if (link >= 0) {
                ::close(link);
            }
        }
        if (stop_fd_ >= 0) {
            ::close(stop_fd_);
        }
        if (epoll_fd_ >= 0) {
            ::close(epoll_fd_);
        }
    }

    void probe() {
        if (loaded_) {
            return;
        }
        enter_ = enter_program();
        if (enter_.empty() || ::access(enter_.c_str(), X_OK) != 0) {
            throw tea::sdk::Unavailable("its enter program " +
                                        (enter_.empty() ? std::string{"(not found)"} : enter_) +
                                        " is missing; reinstall the plugin");
        }
        if (!may_load_tracing_programs()) {
            throw tea::sdk::Unavailable(load_failure(EPERM));
        }
        libbpf_set_print(no_libbpf_log);
        const auto ring_bytes = ring_bytes_ != 0 ? ring_bytes_ : kDefaultRingBytes;
        const auto max_calls = max_calls_ != 0 ? max_calls_ : kDefaultMaxCalls;
        const tea::ebpf::SetSizes sizes{ring_bytes, max_calls};
        std::string not_kept;
        set_ = tea::ebpf::load_or_take(
            tea::ebpf::kept_set_name(tea::ebpf::object_digest, sizes), sizes, keep_loaded_,
            [ring_bytes, max_calls] { return load_programs(ring_bytes, max_calls); }, &not_kept);
        if (!not_kept.empty()) {
            // Said, since each session then pays the kernel's verification (tens of ms).
            host_.info("its programs are loaded for this session alone: " + not_kept);
        }
        attach();
        loaded_ = true;
        stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
        epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
        if (stop_fd_ < 0 || epoll_fd_ < 0) {
            throw tea::sdk::Unavailable("its ring buffer could not be waited for (" +
                                        std::generic_category().message(errno) + ")");
        }
        try {
            ring_ = std::make_unique<tea::ebpf::RingReader>(set_.map(MapSlot::events), ring_bytes);
        } catch (const std::system_error &e) {
            throw tea::sdk::Unavailable(std::string{"its ring buffer could not be read: "} +
                                        e.what());
        }
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = set_.map(MapSlot::events);
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, ev.data.fd, &ev);
        ev.data.fd = stop_fd_;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd_, &ev);
        // What a kept set's ring still holds of an earlier session is read and dropped before
        // any call of this one is registered: its call numbers would be taken for this session's.
        consume();
        if (!ring_->unmapped().empty()) {
            // Left unread, an earlier session's records would be taken for this one's calls.
            throw tea::sdk::Unavailable("its ring buffer's earlier records could not be read: " +
                                        ring_->unmapped());
        }
        if (ring_->inconsistent()) {
            throw tea::sdk::Unavailable(
                "its ring buffer's positions are not the kernel's (a kept set another process "
                "changed?); remove " +
                std::string{tea::ebpf::kKeptSetsDir} + " or set keep_loaded = false");
        }
        drain_ = std::thread{[this] { drain(); }};
    }

    std::string wrap(std::string_view request_text) {
        auto request = decoded(tea::documents::decode_wrap_request, request_text);
        if (request.trace_dir.empty() || request.trace_dir[0] != '/') {
            throw tea::sdk::Invalid("traceDir: expected an absolute path");
        }
        if (!loaded_) {
            probe();
        }
        std::uint64_t token = 0;
        struct stat st {};
        // A directory that does not exist is the host asking what the plan would look like
        // (for a stamp's key): nothing runs it, so nothing is registered.
        const bool runs = ::stat(request.trace_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
        if (runs) {
            token = register_call(request.trace_dir, st);
        }
        char token_text[17];
        (void)std::snprintf(token_text, sizeof token_text, "%016llx",
                            static_cast<unsigned long long>(token));
        auto &plan = request.plan;
        std::vector<std::string> argv{enter_, "--"};
        argv.insert(argv.end(), plan.argv.begin(), plan.argv.end());
        plan.argv = std::move(argv);
        // In the environment, not the command line: any user of the host can read a process's
        // command line, and a process that claimed the call first would be traced in its place.
        std::erase_if(plan.env,
                      [](const std::string &e) { return e.rfind(kTokenVariable, 0) == 0; });
        plan.env.push_back(std::string{kTokenVariable} + token_text);
        return tea::documents::encode(plan);
    }

    std::string collect(std::string_view request_text) {
        const auto request = decoded(tea::documents::decode_collect_request, request_text);
        tea::documents::Observation rest;
        std::uint32_t id = 0;
        {
            std::lock_guard lock{mutex_};
            const auto it = call_of_dir_.find(request.trace_dir);
            if (it == call_of_dir_.end() || !loaded_) {
                rest.reason = "the observer did not prepare this call";
                return tea::documents::encode(rest);
            }
            id = it->second.id;
            call_of_dir_.erase(it);
        }
        // Its processes are forgotten first: once none is tracked, no new record of the call can
        // be written, and the drain below reaches every one that was.
        const auto still_running = forget_processes(id);
        CallRecords records;
        bool drained = false;
        std::string unmapped;
        {
            std::lock_guard lock{mutex_};
            drained = drain_to_producer();
            unmapped = ring_->unmapped();
            records = std::move(records_[id]);
            records_.erase(id);
        }
        const auto counts = forget_call(id);

        Collector c{request.target_start, request.target_start_is_target, max_distinct_};
        tea::ebpf::DecodeTally tally;
        const tea::ebpf::EventSink sink = [&c, &tally](const tea::documents::ObservedEventView &e) {
            c.take(e, tally.exec_name);
        };
        std::string_view rest_bytes{records.bytes};
        while (rest_bytes.size() >= sizeof(std::uint32_t)) {
            std::uint32_t size = 0;
            std::memcpy(&size, rest_bytes.data(), sizeof size);
            if (size < sizeof(std::uint32_t) || size > rest_bytes.size()) {
                ++tally.malformed;
                break;
            }
            tea_ebpf_event head{};
            std::memcpy(&head, rest_bytes.data(), std::min<std::size_t>(size, sizeof head));
            c.loader = head.kind == TEA_EBPF_LOADER;
            tea::ebpf::decode_record(rest_bytes.substr(0, size), tally, sink);
            rest_bytes.remove_prefix(size);
        }

        std::string reason;
        auto add = [&reason](const std::string &r) {
            reason += reason.empty() ? "" : "; ";
            reason += r;
        };
        if (counts.lost > 0 || records.dropped > 0) {
            add(std::to_string(counts.lost + records.dropped) +
                " records or processes of the call were lost (the ring buffer, the map of "
                "tracked processes or the call's memory bound was full)");
        }
        if (still_running > 0) {
            add(std::to_string(still_running) +
                " processes of the call were still running when it ended; what they did after is "
                "not in the audit");
        }
        if (!drained) {
            add(!unmapped.empty() ? unmapped + ", so the call's last records were not read"
                                  : "records other processes were still writing kept the final "
                                    "drain from the call's last records");
        }
        if (counts.io_uring > 0) {
            add("the call set up io_uring " + std::to_string(counts.io_uring) +
                " times, whose operations reach files without the system calls this observer "
                "sees");
        }
        if (tally.unreadable > 0) {
            add(std::to_string(tally.unreadable) + " paths a call named could not be read back");
        }
        if (tally.malformed > 0) {
            add(std::to_string(tally.malformed) + " records could not be read");
        }
        if (counts.unclaimed) {
            add("the call's first process never claimed its token");
        }
        if (c.overflow > 0) {
            add(std::to_string(c.overflow) + " accesses beyond " + std::to_string(max_distinct_) +
                " distinct ones were not kept");
        }
        rest.complete = reason.empty();
        rest.reason = std::move(reason);
        rest.target_started = request.target_start.empty() || c.setup.started();
        rest.counters = {{"records", tally.records}};
        return c.events.finish(rest);
    }

   private:
    // Attaches every program to its raw tracepoint, in the set's order.
    void attach() {
        for (std::size_t i = 0; i < tea::ebpf::kProgramSlots; ++i) {
            const std::string tracepoint{tea::ebpf::kPrograms.at(i).tracepoint};
            const int link = bpf_raw_tracepoint_open(tracepoint.c_str(),
                                                     set_.program(static_cast<ProgramSlot>(i)));
            if (link < 0) {
                const int error = errno;
                for (int &attached : links_) {
                    if (attached >= 0) {
                        ::close(std::exchange(attached, -1));
                    }
                }
                set_ = {};
                throw tea::sdk::Unavailable("the kernel refused to attach its programs (" +
                                            std::generic_category().message(error) + ")");
            }
            links_.at(i) = link;
        }
    }

    // Separates the confinement's set-up from the target (tea/setup_separator.hpp, as the strace
    // observer does) and merges repeated accesses.
    struct Collector {
        tea::SetupSeparator setup;
        tea::documents::DistinctEvents events;
        std::uint64_t overflow = 0;

        Collector(std::string start, bool is_target, std::size_t max_distinct)
            : setup{std::move(start), is_target}, events{max_distinct} {}

        bool loader = false;  // the event is the loader the exec before it mapped

        void take(const tea::documents::ObservedEventView &e, std::string_view exec_name) {
            // A loader is part of the exec before it, in the same process: judged with it, never
            // taken for a new exec that would end a launcher's set-up.
            const bool exec = e.access == tea::documents::Access::exec && !loader;
            // The target start is the name bwrap's execvp gives ("./run.sh" for a program in the
            // working directory), as strace shows it; the event's path is made absolute.
            const std::string_view start_name = exec && !exec_name.empty() ? exec_name : e.asked;
            if (!setup.is_target(e.pid, exec, e.ok, start_name)) return;
            if (!events.add(e)) {
                ++overflow;
            }
        }
    };

    struct Registered {
        std::uint32_t id = 0;
        std::uint64_t token = 0;
        dev_t dev = 0;  // the trace directory's, when the call was registered
        ino_t ino = 0;
    };

    struct Counts {
        std::uint64_t lost = 0;
        std::uint64_t io_uring = 0;
        bool unclaimed = false;
    };

    // Whether a call registered and never collected is abandoned: its owner (the process that
    // claimed it) has ended, or, never claimed, its trace directory is gone or replaced. Either
    // way no collect of it can follow a run.
    [[nodiscard]] bool abandoned(const std::string &trace_dir, const Registered &r) const {
        tea_ebpf_call_counts counts{};
        if (bpf_map_lookup_elem(set_.map(MapSlot::calls), &r.id, &counts) == 0 &&
            counts.owner_tgid != 0) {
            return counts.owner_ended != 0;
        }
        struct stat st {};
        return ::stat(trace_dir.c_str(), &st) != 0 || st.st_dev != r.dev || st.st_ino != r.ino;
    }

    // Removes everything the plugin and the kernel's maps hold of a call. With the mutex held.
    void release(const Registered &r) {
        (void)bpf_map_delete_elem(set_.map(MapSlot::calls), &r.id);
        (void)bpf_map_delete_elem(set_.map(MapSlot::pending), &r.token);
        (void)forget_processes(r.id);
        records_.erase(r.id);
        tokens_.erase(r.id);
    }

    // A call whose runtime gave up on it between wrap and collect would hold its slots (1,024 of
    // them, max_calls) for the whole session: the next registrations reclaim it, so that abandoned
    // calls never exhaust the maps and stop the session with exit 12.
    void reclaim_abandoned(const std::string &trace_dir) {
        for (auto it = call_of_dir_.begin(); it != call_of_dir_.end();) {
            if (it->first == trace_dir || abandoned(it->first, it->second)) {
                release(it->second);
                it = call_of_dir_.erase(it);
            } else {
                ++it;
            }
        }
    }

    std::uint64_t register_call(const std::string &trace_dir, const struct stat &dir) {
        std::uint64_t token = 0;
        // The token is the call's key: a process that guessed it would be taken for the call's.
        if (::getrandom(&token, sizeof token, 0) != sizeof token) {
            throw tea::sdk::Unavailable("no random token for the call (" +
                                        std::generic_category().message(errno) + ")");
        }
        std::lock_guard lock{mutex_};
        reclaim_abandoned(trace_dir);
        const std::uint32_t id = ++last_id_;
        const tea_ebpf_call_counts zero{};
        if (bpf_map_update_elem(set_.map(MapSlot::calls), &id, &zero, BPF_ANY) != 0 ||
            bpf_map_update_elem(set_.map(MapSlot::pending), &token, &id, BPF_ANY) != 0) {
            throw tea::sdk::Unavailable(
                "the call could not be registered with the kernel's "
                "programs (" +
                std::generic_category().message(errno) + ")");
        }
        call_of_dir_[trace_dir] = {id, token, dir.st_dev, dir.st_ino};
        records_[id];
        tokens_[id] = token;
        return token;
    }

    // Reads the call's counters and removes everything the kernel's maps hold of it.
    Counts forget_call(std::uint32_t id) {
        Counts out;
        tea_ebpf_call_counts counts{};
        if (bpf_map_lookup_elem(set_.map(MapSlot::calls), &id, &counts) == 0) {
            out.lost = counts.lost;
            out.io_uring = counts.io_uring;
        }
        (void)bpf_map_delete_elem(set_.map(MapSlot::calls), &id);
        std::uint64_t token = 0;
        {
            std::lock_guard lock{mutex_};
            token = tokens_[id];
            tokens_.erase(id);
        }
        out.unclaimed = bpf_map_delete_elem(set_.map(MapSlot::pending), &token) == 0;
        return out;
    }

    // Forgets the call's processes still tracked and says how many there were: none once its
    // last process has ended, as a normal call's has when it is collected. One that outlived the
    // call must not be taken for a later call's, and what it does from now on goes unseen.
    std::size_t forget_processes(std::uint32_t id) {
        std::vector<std::uint32_t> leftover;
        std::uint32_t key = 0;
        std::uint32_t next = 0;
        const std::uint32_t *prev = nullptr;
        while (bpf_map_get_next_key(set_.map(MapSlot::tracked), prev, &next) == 0) {
            std::uint32_t value = 0;
            if (bpf_map_lookup_elem(set_.map(MapSlot::tracked), &next, &value) == 0 &&
                value == id) {
                leftover.push_back(next);
            }
            key = next;
            prev = &key;
        }
        for (const auto tgid : leftover) {
            (void)bpf_map_delete_elem(set_.map(MapSlot::tracked), &tgid);
        }
        return leftover.size();
    }

    // Consumes the ring buffer until the reader has passed every record reserved so far. A
    // record another CPU has reserved but not yet written stops a consume short of the records
    // behind it; those are waited for, a bounded time. With the mutex held.
    bool drain_to_producer() {
        const auto target = ring_->producer();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds{200};
        for (;;) {
            consume();
            if (ring_->consumer() >= target) {
                return true;
            }
            if (std::chrono::steady_clock::now() > deadline) {
                return false;
            }
            std::this_thread::yield();
        }
    }

    // Routes every record the ring holds to its call. With the mutex held.
    void consume() {
        ring_->consume([this](std::string_view record) { take_record(record); });
    }

    // Keeps a record with its call's. With the mutex held.
    void take_record(std::string_view record) {
        const std::size_t size = record.size();
        if (size < sizeof(tea_ebpf_event)) {
            return;
        }
        tea_ebpf_event e{};
        std::memcpy(&e, record.data(), sizeof e);
        const auto it = records_.find(e.call_id);
        if (it == records_.end()) {
            return;  // a call already collected, or one this session never made
        }
        auto &call = it->second;
        if (call.bytes.size() + size > kDefaultMaxRecordBytes) {
            ++call.dropped;
            return;
        }
        // The record's own size field says where it ends; the ring's length is the truth.
        const auto length = static_cast<std::uint32_t>(size);
        const auto at = call.bytes.size();
        call.bytes.append(record);
        std::memcpy(call.bytes.data() + at, &length, sizeof length);
    }

    void drain() {
        for (;;) {
            epoll_event ev{};
            const int n = ::epoll_wait(epoll_fd_, &ev, 1, -1);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0 || ev.data.fd == stop_fd_) {
                return;
            }
            bool unmapped = false;
            {
                std::lock_guard lock{mutex_};
                consume();
                unmapped = !ring_->unmapped().empty();
            }
            if (unmapped) {
                // The ring still signals what could not be read: tried again a while later, not
                // at once and for ever.
                std::this_thread::sleep_for(std::chrono::milliseconds{10});
            }
        }
    }

    std::size_t max_distinct_ = kDefaultMaxDistinct;
    std::uint32_t ring_bytes_ = 0;  // 0: the programs' own (16 MiB)
    std::uint32_t max_calls_ = 0;   // 0: the programs' own (1,024)
    std::string enter_;
    bool keep_loaded_ = true;
    tea::sdk::Host host_;
    tea::ebpf::LoadedSet set_;
    std::array<int, tea::ebpf::kProgramSlots> links_{-1, -1, -1, -1, -1};
    bool loaded_ = false;
    std::unique_ptr<tea::ebpf::RingReader> ring_;
    int stop_fd_ = -1;
    int epoll_fd_ = -1;
    std::thread drain_;
    std::mutex mutex_;  // the ring buffer's reader and everything below
    std::uint32_t last_id_ = 0;
    std::map<std::string, Registered> call_of_dir_;
    std::map<std::uint32_t, CallRecords> records_;
    std::map<std::uint32_t, std::uint64_t> tokens_;
};

}  // namespace

TEA_SDK_OBSERVER_PLUGIN(EbpfObserver, "ebpf", "1.0.0", TEA_ABI_1_6)
