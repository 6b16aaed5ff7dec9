// The strace observer: runs a call's whole plan under `strace -f` and turns the trace into the
// access events the core's judge decides on.
//
// wrap   puts strace in front of the plan's argv, tracing only the calls the judge needs
//        (seccomp-bpf lets every other syscall run at full speed), writing the trace into the
//        directory the core names (beneath the run's private parent, out of the target's view).
// collect parses that trace as a stream. Events before the plan's targetStart exec belong to
//        the confinement's own set-up (bwrap mounting the view the target gets) and are not the
//        target's; when that exec starts a launcher (targetStartKind "launcher"), the launcher's
//        own work until its exec of the target is not either. Everything after is reported,
//        merged into distinct events with a count.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <tea/documents.hpp>
#include <tea/plugin.hpp>
#include <tea/program_path.hpp>
#include <tea/setup_separator.hpp>
#include <tea/stamp.hpp>
#include <vector>

#include "strace_parser.hpp"

namespace {

using nlohmann::json;

constexpr const char *kDefaultStrace = "strace";
constexpr int kMinMajor = 6;
constexpr int kMinMinor = 1;
constexpr const char *kTraceFile = "trace";
// Distinct events a call may report before the audit gives up as lossy: a target that touches
// millions of distinct paths must not exhaust the runtime's memory.
constexpr std::size_t kDefaultMaxDistinct = std::size_t{1} << 20;

// A fixed list, not the invoker's PATH: a planted "strace" earlier on PATH would be the program
// that decides what the audit sees.
constexpr std::array<const char *, 3> kStraceDirs{"/usr/bin", "/bin", "/usr/local/bin"};

std::string find_on_path(const std::string &name) {
    if (name.find('/') != std::string::npos) {
        return ::access(name.c_str(), X_OK) == 0 ? name : std::string{};
    }
    for (const char *dir : kStraceDirs) {
        std::string candidate = std::string{dir} + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
    }
    return {};
}

// Why find_on_path found nothing for `name`, as the end of a sentence naming it.
std::string not_found(const std::string &name) {
    if (name.find('/') != std::string::npos) {
        return "cannot be run (" +
               std::generic_category().message(
                   tea::program_path::executable_by_this_process(name)) +
               ")";
    }
    return std::string{"names no program in "} + kStraceDirs[0] + ", " + kStraceDirs[1] + " or " +
           kStraceDirs[2];
}

// Runs `program -V` with no environment and returns the first line it printed.
std::string version_line(const std::string &program) {
    std::array<int, 2> out{};
    if (::pipe2(out.data(), O_CLOEXEC) != 0) {
        throw tea::sdk::Unavailable(std::string{"pipe: "} + std::generic_category().message(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    std::string arg0 = program;
    std::string arg1 = "-V";
    std::array<char *, 3> argv{arg0.data(), arg1.data(), nullptr};
    std::array<char *, 1> envp{nullptr};
    pid_t pid = 0;
    const int rc =
        ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    std::string text;
    if (rc == 0) {
        std::array<char, 512> buf{};
        ssize_t n = 0;
        while ((n = ::read(out[0], buf.data(), buf.size())) > 0 || (n < 0 && errno == EINTR)) {
            if (n > 0 && text.size() < 4096) {
                text.append(buf.data(), static_cast<std::size_t>(n));
            }
        }
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    ::close(out[0]);
    if (rc != 0) {
        throw tea::sdk::Unavailable(program +
                                    " cannot be started: " + std::generic_category().message(rc));
    }
    return text.substr(0, text.find('\n'));
}

// "strace -- version 6.1" -> {6, 1}; {-1, -1} when the line says no version.
std::pair<int, int> parse_version(std::string_view line) {
    const auto at = line.find("version ");
    if (at == std::string_view::npos) {
        return {-1, -1};
    }
    int major = -1;
    int minor = -1;
    if (std::sscanf(std::string{line.substr(at + 8)}.c_str(), "%d.%d", &major, &minor) != 2) {
        return {-1, -1};
    }
    return {major, minor};
}

// The judge's kinds are the parser's, except that a chdir names a file without reading it.
tea::documents::Access access_of(tea::strace::AccessKind kind) {
    using tea::documents::Access;
    using tea::strace::AccessKind;
    switch (kind) {
        case AccessKind::Read:
            return Access::read;
        case AccessKind::Write:
            return Access::write;
        case AccessKind::Create:
            return Access::create;
        case AccessKind::Remove:
            return Access::remove;
        case AccessKind::Exec:
            return Access::exec;
        case AccessKind::List:
            return Access::list;
        case AccessKind::ReadLink:
            return Access::readlink;
        case AccessKind::ChangeDir:
        case AccessKind::Other:
            break;
    }
    return Access::other;
}

// A request the host sent, decoded; a malformed one is refused naming its field.
template <class Decode>
auto decoded(Decode decode, std::string_view text) {
    try {
        return decode(text);
    } catch (const tea::documents::DocumentError &e) {
        throw tea::sdk::Invalid(e.what());
    }
}

// The reason quotes trace text and paths, which may hold any byte; the record keeps it readable.
std::string printable(std::string reason) {
    for (char &ch : reason) {
        const auto u = static_cast<unsigned char>(ch);
        if (u < 0x20 || u >= 0x7f) {
            ch = '?';
        }
    }
    return reason;
}

bool is_exec(const tea::strace::AccessEvent &e) {
    return e.kind == tea::strace::AccessKind::Exec;
}

class StraceObserver {
   public:
    StraceObserver(tea::sdk::Host /*host*/, std::string_view config_json) {
        const auto config = json::parse(config_json, nullptr, false);
        if (!config.is_object()) {
            throw tea::sdk::Invalid("[plugin.strace]: expected a table");
        }
        for (const auto &[key, value] : config.items()) {
            if (key == "strace") {
                // A relative path would name a different program from every directory.
                if (!value.is_string() || value.get<std::string>().empty() ||
                    (value.get<std::string>().find('/') != std::string::npos &&
                     value.get<std::string>()[0] != '/')) {
                    throw tea::sdk::Invalid(
                        "[plugin.strace] strace: expected a program name or "
                        "an absolute path");
                }
                strace_name_ = value.get<std::string>();
            } else if (key == "max_distinct_events") {
                if (!value.is_number_unsigned() || value.get<std::uint64_t>() == 0) {
                    throw tea::sdk::Invalid(
                        "[plugin.strace] max_distinct_events: expected a positive integer");
                }
                max_distinct_ = value.get<std::size_t>();
            } else {
                throw tea::sdk::Invalid("[plugin.strace] " + key +
                                        ": unknown key (known: strace, max_distinct_events)");
            }
        }
    }

    void probe() {
        strace_ = find_on_path(strace_name_);
        if (strace_.empty() && !configured()) {
            throw tea::sdk::Unavailable(
                "strace (" + strace_name_ +
                ") is not installed; the audit needs strace 6.1 or later: apt-get install strace");
        }
        // Installing the package would not help: the configuration names another program.
        if (strace_.empty()) {
            throw tea::sdk::Unavailable(setting() + " " + not_found(strace_name_) +
                                        "; set it to strace 6.1 or later, or remove it to use "
                                        "the system's strace");
        }
        // Running strace costs a process per command: a version once found good is remembered
        // for this very binary (its inode, size and time) until the next boot.
        const auto stamp = tea::stamp::path_for(
            "strace-version", tea::stamp::file_key(strace_) + tea::stamp::boot_id());
        if (tea::stamp::present(stamp)) {
            return;
        }
        const auto line = version_line(strace_);
        const auto [major, minor] = parse_version(line);
        if (major < kMinMajor || (major == kMinMajor && minor < kMinMinor)) {
            throw tea::sdk::Unavailable(
                strace_ + " reports \"" + line +
                "\"; the audit needs strace 6.1 or later (for --seccomp-bpf and "
                "--decode-pids=pidns): " +
                (configured() ? "set " + setting() +
                                    " to a newer one, or remove it to use the system's strace"
                              : std::string{"apt-get install strace from Debian 12 or newer"}));
        }
        tea::stamp::write(stamp);
    }

    std::string wrap(std::string_view request_text) {
        auto request = decoded(tea::documents::decode_wrap_request, request_text);
        if (request.trace_dir.empty() || request.trace_dir[0] != '/') {
            throw tea::sdk::Invalid("traceDir: expected an absolute path");
        }
        if (strace_.empty()) {
            probe();
        }
        auto &plan = request.plan;
        auto argv = tea::strace::strace_command(strace_, request.trace_dir + "/" + kTraceFile);
        argv.insert(argv.end(), plan.argv.begin(), plan.argv.end());
        plan.argv = std::move(argv);
        return tea::documents::encode(plan);
    }

    std::string collect(std::string_view request_text) const {
        const auto request = decoded(tea::documents::decode_collect_request, request_text);
        const auto path = request.trace_dir + "/" + kTraceFile;
        // O_NOFOLLOW: the trace is the runtime's own file; a link there is not its trace.
        const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            tea::documents::Observation none;
            none.reason = printable("no trace was written (" + path + ": " +
                                    std::generic_category().message(errno) + ")");
            return tea::documents::encode(none);
        }
        struct stat st {};
        std::size_t trace_size = 0;
        if (::fstat(fd, &st) == 0 && st.st_size >= 0) {
            trace_size = static_cast<std::size_t>(st.st_size);
        }
        // A count never exceeds the trace's lines, nor so its bytes: its room is their digits.
        Collector c{request.target_start, request.target_start_is_target, max_distinct_,
                    std::to_string(trace_size + 1).size()};
        // A distinct access costs about its trace line as JSON; reserved at once, the document is
        // never moved as it grows (untouched pages cost nothing).
        c.events.reserve(trace_size + trace_size / 2 + 256);
        tea::strace::Parser parser{request.initial_cwd};
        const auto sink = [&c](const tea::strace::AccessEvent &e) { c.take(e); };
        // Left uninitialised and no larger than the trace: zeroing 256 KiB for a trace of a few
        // kilobytes cost 64 page faults on every audited call.
        const std::size_t buf_size =
            std::clamp(trace_size + 1, std::size_t{4} << 10U, std::size_t{256} << 10U);
        const auto buf = std::make_unique_for_overwrite<char[]>(buf_size);
        std::string read_error;
        for (;;) {
            const ssize_t n = ::read(fd, buf.get(), buf_size);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0) {
                read_error =
                    std::string{"reading the trace: "} + std::generic_category().message(errno);
                break;
            }
            if (n == 0) {
                break;
            }
            parser.feed(std::string_view{buf.get(), static_cast<std::size_t>(n)}, sink);
        }
        ::close(fd);
        parser.finish(sink);

        std::string reason = read_error;
        auto add_reason = [&reason](const std::string &r) {
            if (!r.empty()) {
                reason += reason.empty() ? "" : "; ";
                reason += r;
            }
        };
        if (parser.lossy()) {
            add_reason("the trace could not be read to the end: " + parser.lossy_reason());
        }
        if (c.overflow > 0) {
            add_reason(std::to_string(c.overflow) + " accesses beyond " +
                       std::to_string(max_distinct_) + " distinct ones were not kept");
        }
        tea::documents::Observation rest;
        rest.complete = reason.empty();
        rest.reason = printable(std::move(reason));
        rest.target_started = request.target_start.empty() || c.setup.started();
        rest.counters = {{"lines", parser.lines()}};
        return c.events.finish(rest);
    }

   private:
    // Separates the confinement's set-up from the target (tea/setup_separator.hpp) and merges
    // repeated accesses.
    struct Collector {
        tea::SetupSeparator setup;
        // Each distinct access once, at its first sight, with the number of times it was seen.
        tea::documents::DistinctEvents events;
        std::uint64_t overflow = 0;

        Collector(std::string start, bool is_target, std::size_t max_distinct,
                  std::size_t count_width)
            : setup{std::move(start), is_target}, events{max_distinct, count_width} {}

        void take(const tea::strace::AccessEvent &e) {
            if (!setup.is_target(e.pid, is_exec(e), e.success, e.path_asked)) return;
            if (!events.add({e.pid, e.syscall, e.path_lexical, e.path_resolved, access_of(e.kind),
                             e.success, e.error, e.path_named, e.unverified, 1})) {
                ++overflow;
            }
        }
    };

    // Whether the configuration names a strace other than the default.
    [[nodiscard]] bool configured() const { return strace_name_ != kDefaultStrace; }
    // The setting as the configuration holds it, for a message that asks to change it.
    [[nodiscard]] std::string setting() const {
        return "[plugin.strace] strace = \"" + strace_name_ + "\"";
    }

    std::string strace_name_ = kDefaultStrace;
    std::string strace_;
    std::size_t max_distinct_ = kDefaultMaxDistinct;
};

}  // namespace

TEA_SDK_OBSERVER_PLUGIN(StraceObserver, "strace", "1.0.0", TEA_ABI_1_6)
