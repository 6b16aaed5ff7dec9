// The seccomp observer: an unprivileged supervisor outside the sandbox performs every open the
// call's processes make, and records what it opened (tea-seccomp-supervise, supervise.cpp).
//
// probe   asks the kernel, in a forked child, for a user-notification listener, for ADDFD with
//         SEND and for SYNC_WAKE_UP: without any of them the observer is unavailable.
// wrap    puts tea-seccomp-supervise in front of the plan's argv, with the call's target start
//         and a one-time nonce that marks the record as this call's.
// collect reads the record the supervisor wrote into the trace directory; a record that is
//         missing, cut short or another call's makes the audit incomplete.
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <system_error>
#include <tea/documents.hpp>
#include <tea/plugin.hpp>
#include <tea/send_descriptors.hpp>
#include <vector>

#include "listener_handoff.hpp"
#include "record.hpp"

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP 1UL
#endif

namespace {

using nlohmann::json;
namespace so = tea::seccomp_observer;

constexpr std::size_t kDefaultMaxDistinct = std::size_t{1} << 20;
constexpr std::size_t kMaxRecordBytes = std::size_t{1} << 30;

template <class Decode>
auto decoded(Decode decode, std::string_view text) {
    try {
        return decode(text);
    } catch (const tea::documents::DocumentError &e) {
        throw tea::sdk::Invalid(e.what());
    }
}

// The supervisor, beside the plugin as installed and as built.
std::string supervisor_program() {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void *>(&supervisor_program), &info) == 0 ||
        info.dli_fname == nullptr) {
        return {};
    }
    const auto path =
        std::filesystem::path{info.dli_fname}.parent_path() / TEA_SECCOMP_SUPERVISE_FROM_PLUGIN;
    return path.lexically_normal().string();
}

// What the kernel answers, in a forked child under a filter that notifies on getppid, to the
// three things the observer needs. "" when all hold, else why not.
std::string kernel_support() {
    std::array<int, 2> sv{};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv.data()) != 0) {
        return "no socket pair (" + std::generic_category().message(errno) + ")";
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(sv[0]);
        ::close(sv[1]);
        return "no child process (" + std::generic_category().message(errno) + ")";
    }
    if (pid == 0) {
        ::close(sv[0]);
        // One instruction pair: getppid notifies, everything else runs.
        std::array<sock_filter, 4> insns{{
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),  // seccomp_data.nr
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        }};
        sock_fprog prog{static_cast<unsigned short>(insns.size()), insns.data()};
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
            _exit(10);
        }
        const int listener = static_cast<int>(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                                        SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
        if (listener < 0) {
            _exit(11);
        }
        if (tea::send_descriptors(sv[1], {listener}) != 1) {
            _exit(12);
        }
        ::close(listener);
        // Answered by the parent with a descriptor added to this process's table.
        const long fd = ::syscall(SYS_getppid);
        _exit(fd >= 0 && ::fcntl(static_cast<int>(fd), F_GETFD) >= 0 ? 0 : 13);
    }
    ::close(sv[1]);
    std::string why;
    const int listener = tea::seccomp_observer::receive_listener(sv[0]);
    ::close(sv[0]);
    if (listener >= 0) {
        std::uint64_t flags = SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;
        if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, flags) != 0) {
            why = "the kernel has no SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux 6.6 or later)";
        }
        seccomp_notif notif{};
        if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &notif) == 0) {
            const int fd = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            seccomp_notif_addfd add{};
            add.id = notif.id;
            add.flags = SECCOMP_ADDFD_FLAG_SEND;
            add.srcfd = static_cast<std::uint32_t>(fd);
            if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) < 0 && why.empty()) {
                why =
                    "the kernel refused SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND "
                    "(Linux 5.14 or later): " +
                    std::generic_category().message(errno);
                seccomp_notif_resp resp{};
                resp.id = notif.id;
                resp.error = -ENOSYS;
                (void)::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
            }
            ::close(fd);
        } else if (why.empty()) {
            why = "no notification came from the listener (" +
                  std::generic_category().message(errno) + ")";
        }
        ::close(listener);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!why.empty()) {
        return why;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (code == 10) {
            return "no_new_privs could not be set";
        }
        if (code == 11) {
            return "the kernel refused a seccomp filter with a user-notification listener "
                   "(SECCOMP_FILTER_FLAG_NEW_LISTENER, Linux 5.0; or seccomp is forbidden here)";
        }
        return "the kernel's user notification did not answer a test process (status " +
               std::to_string(status) + ")";
    }
    return {};
}

// The record's fields, in order, each read up to its NUL.
class Fields {
   public:
    explicit Fields(std::string_view text) : rest_{text} {}
    bool next(std::string_view &out) {
        const auto nul = rest_.find('\0');
        if (nul == std::string_view::npos) {
            return false;
        }
        out = rest_.substr(0, nul);
        rest_.remove_prefix(nul + 1);
        return true;
    }
    [[nodiscard]] bool empty() const { return rest_.empty(); }

   private:
    std::string_view rest_;
};

bool to_number(std::string_view text, std::uint64_t &out) {
    if (text.empty() || text.size() > 19) {
        return false;
    }
    out = 0;
    for (char c : text) {
        if (c < '0' || c > '9') {
            return false;
        }
        out = out * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return true;
}

class SeccompObserver {
   public:
    SeccompObserver(tea::sdk::Host /*host*/, std::string_view config_json) {
        const auto config = json::parse(config_json, nullptr, false);
        if (!config.is_object()) {
            throw tea::sdk::Invalid("[plugin.seccomp]: expected a table");
        }
        for (const auto &[key, value] : config.items()) {
            if (key == "max_distinct_events") {
                if (!value.is_number_unsigned() || value.get<std::uint64_t>() == 0) {
                    throw tea::sdk::Invalid(
                        "[plugin.seccomp] max_distinct_events: expected a positive integer");
                }
                max_distinct_ = value.get<std::size_t>();
            } else {
                throw tea::sdk::Invalid("[plugin.seccomp] " + key +
                                        ": unknown key (known: max_distinct_events)");
            }
        }
    }

    void probe() {
        if (probed_) {
            return;
        }
        supervisor_ = supervisor_program();
        if (supervisor_.empty() || ::access(supervisor_.c_str(), X_OK) != 0) {
            throw tea::sdk::Unavailable(
                "its supervisor " +
                (supervisor_.empty() ? std::string{"(not found)"} : supervisor_) +
                " is missing; reinstall the plugin");
        }
        if (const auto why = kernel_support(); !why.empty()) {
            throw tea::sdk::Unavailable(why);
        }
        probed_ = true;
    }

    std::string wrap(std::string_view request_text) {
        auto request = decoded(tea::documents::decode_wrap_request, request_text);
        if (request.trace_dir.empty() || request.trace_dir[0] != '/') {
            throw tea::sdk::Invalid("traceDir: expected an absolute path");
        }
        if (!probed_) {
            probe();
        }
        std::string nonce(16, '0');
        struct stat st {};
        // A directory that does not exist is the host asking what the plan would look like:
        // nothing runs it, so no nonce is registered.
        if (::stat(request.trace_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            std::uint64_t value = 0;
            // The nonce tells this call's record from one a process of another call wrote.
            if (::getrandom(&value, sizeof value, 0) != sizeof value) {
                throw tea::sdk::Unavailable("no random nonce for the call (" +
                                            std::generic_category().message(errno) + ")");
            }
            std::array<char, 17> text{};
            (void)std::snprintf(text.data(), text.size(), "%016llx",
                                static_cast<unsigned long long>(value));
            nonce = text.data();
            std::lock_guard lock{mutex_};
            nonces_[request.trace_dir] = nonce;
        }
        auto &plan = request.plan;
        std::vector<std::string> argv{supervisor_, "--record",
                                      request.trace_dir + "/" + so::kRecordFile};
        if (!plan.audit.target_start.empty()) {
            argv.insert(argv.end(), {"--target-start", plan.audit.target_start, "--start-kind",
                                     plan.audit.target_start_is_target ? "target" : "launcher"});
        }
        argv.emplace_back("--");
        argv.insert(argv.end(), plan.argv.begin(), plan.argv.end());
        plan.argv = std::move(argv);
        // In the environment, not on the command line, which any user of the host can read.
        std::erase_if(plan.env,
                      [](const std::string &e) { return e.rfind(so::kNonceVariable, 0) == 0; });
        plan.env.push_back(std::string{so::kNonceVariable} + nonce);
        return tea::documents::encode(plan);
    }

    std::string collect(std::string_view request_text) {
        const auto request = decoded(tea::documents::decode_collect_request, request_text);
        tea::documents::Observation rest;
        std::string nonce;
        {
            std::lock_guard lock{mutex_};
            const auto it = nonces_.find(request.trace_dir);
            if (it == nonces_.end()) {
                rest.reason = "the observer did not prepare this call";
                return tea::documents::encode(rest);
            }
            nonce = it->second;
            nonces_.erase(it);
        }
        const auto path = request.trace_dir + "/" + so::kRecordFile;
        std::string text;
        const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            rest.reason = "the supervisor wrote no record (" +
                          std::generic_category().message(errno) +
                          "): it did not start, or it was killed";
            return tea::documents::encode(rest);
        }
        std::array<char, 65536> buf{};
        ssize_t n = 0;
        while ((n = ::read(fd, buf.data(), buf.size())) > 0 && text.size() < kMaxRecordBytes) {
            text.append(buf.data(), static_cast<std::size_t>(n));
        }
        ::close(fd);

        std::uint64_t overflow = 0;
        Fields f{text};
        std::string_view magic;
        std::string_view seen_nonce;
        if (!f.next(magic) || magic != so::kRecordMagic || !f.next(seen_nonce) ||
            seen_nonce != nonce) {
            rest.reason = "the record in the trace directory is not this call's";
            return tea::documents::encode(rest);
        }
        bool ended = false;
        bool malformed = false;
        std::string reason;
        bool target_started = false;
        std::uint64_t notifications = 0;
        std::string_view kind;
        while (!ended && f.next(kind)) {
            if (kind == "e") {
                std::array<std::string_view, 10> v{};
                for (auto &field : v) {
                    if (!f.next(field)) {
                        malformed = true;
                        break;
                    }
                }
                std::uint64_t pid = 0;
                std::uint64_t count = 0;
                const auto access = tea::documents::access_from_string(v[4]);
                if (malformed || !to_number(v[0], pid) || pid > 0x7fffffff ||
                    !to_number(v[9], count) || count == 0 || !access) {
                    malformed = true;
                    break;
                }
                // The supervisor merged the repeats: each event is a distinct access.
                if (rest.events.size() >= max_distinct_) {
                    ++overflow;
                    continue;
                }
                rest.events.push_back({static_cast<int>(pid), std::string{v[1]}, std::string{v[2]},
                                       std::string{v[3]}, *access, v[5] == "1", std::string{v[6]},
                                       std::string{v[7]}, std::string{v[8]}, count});
            } else if (kind == "end") {
                std::string_view complete;
                std::string_view why;
                std::string_view started;
                std::string_view notes;
                if (!f.next(complete) || !f.next(why) || !f.next(started) || !f.next(notes) ||
                    !to_number(notes, notifications) || !f.empty()) {
                    malformed = true;
                    break;
                }
                reason = std::string{why};
                target_started = started == "1";
                ended = true;
            } else {
                malformed = true;
                break;
            }
        }
        auto add = [&reason](const std::string &r) {
            reason += reason.empty() ? "" : "; ";
            reason += r;
        };
        if (!ended || malformed) {
            add("the supervisor's record is cut short or could not be read: the supervisor "
                "died, or something else wrote it");
        }
        if (overflow > 0) {
            add(std::to_string(overflow) + " accesses beyond " + std::to_string(max_distinct_) +
                " distinct ones were not kept");
        }
        rest.complete = reason.empty();
        rest.reason = std::move(reason);
        rest.target_started = request.target_start.empty() || target_started;
        rest.counters = {{"notifications", notifications}};
        return tea::documents::encode(rest);
    }

   private:
    std::size_t max_distinct_ = kDefaultMaxDistinct;
    bool probed_ = false;
    std::string supervisor_;
    std::mutex mutex_;
    std::map<std::string, std::string> nonces_;
};

}  // namespace

TEA_SDK_OBSERVER_PLUGIN(SeccompObserver, "seccomp", "1.0.0", TEA_ABI_1_6)
