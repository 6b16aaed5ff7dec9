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
#include <charconv>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <tea/json_bytes.hpp>
#include <tea/plugin.hpp>
#include <tea/stamp.hpp>
#include <unordered_set>
#include <vector>

#include "strace_parser.hpp"

namespace {

using nlohmann::json;

constexpr int kMinMajor = 6;
constexpr int kMinMinor = 1;
constexpr const char *kTraceFile = "trace";
// Distinct events a call may report before the audit gives up as lossy: a target that touches
// millions of distinct paths must not exhaust the runtime's memory.
constexpr std::size_t kDefaultMaxDistinct = std::size_t{1} << 20;

std::string find_on_path(const std::string &name) {
    if (name.find('/') != std::string::npos) {
        return ::access(name.c_str(), X_OK) == 0 ? name : std::string{};
    }
    // A fixed list, not the invoker's PATH: a planted "strace" earlier on PATH would be the
    // program that decides what the audit sees.
    for (const char *dir : {"/usr/bin", "/bin", "/usr/local/bin"}) {
        std::string candidate = std::string{dir} + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
    }
    return {};
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

// The judge's names are the parser's, except that a chdir names a file without reading it.
std::string_view access_name(tea::strace::AccessKind kind) {
    return kind == tea::strace::AccessKind::ChangeDir ? "other" : tea::strace::to_string(kind);
}

// Appends a byte string as a JSON value: a string when it is UTF-8, {"base64": ...} otherwise,
// as tea/json_bytes.hpp reads it. Written by hand: an audit of a busy call carries tens of
// thousands of events, and building a JSON tree for each cost more than tracing them.
void append_json_bytes(std::string &out, std::string_view bytes) {
    if (!tea::bytes::is_valid_utf8(bytes)) {
        out += R"({"base64":")";
        out += tea::bytes::base64_encode(bytes);
        out += "\"}";
        return;
    }
    static constexpr char hex[] = "0123456789abcdef";
    out += '"';
    std::size_t run = 0;  // the start of the bytes that need no escape, appended in one piece
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        const auto u = static_cast<unsigned char>(bytes[i]);
        if (u >= 0x20 && u != '"' && u != '\\') {
            continue;
        }
        out.append(bytes.substr(run, i - run));
        if (u < 0x20) {
            out += "\\u00";
            out += hex[u >> 4U];
            out += hex[u & 0xFU];
        } else {
            out += '\\';
            out += static_cast<char>(u);
        }
        run = i + 1;
    }
    out.append(bytes.substr(run));
    out += '"';
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
        if (strace_.empty()) {
            throw tea::sdk::Unavailable(
                "strace (" + strace_name_ +
                ") is not installed; the audit needs strace 6.1 or later: apt-get install strace");
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
                "--decode-pids=pidns): apt-get install strace from Debian 12 or newer");
        }
        tea::stamp::write(stamp);
    }

    std::string wrap(std::string_view request_text) {
        const auto request = json::parse(request_text);
        auto plan = request.at("plan");
        const auto trace_dir = tea::bytes::from_json(request.at("traceDir"), "traceDir");
        if (trace_dir.empty() || trace_dir[0] != '/') {
            throw tea::sdk::Invalid("traceDir: expected an absolute path");
        }
        if (strace_.empty()) {
            probe();
        }
        auto argv = tea::strace::strace_command(strace_, trace_dir + "/" + kTraceFile);
        const auto inner = tea::bytes::list_from_json(plan.at("argv"), "plan.argv");
        argv.insert(argv.end(), inner.begin(), inner.end());
        plan["argv"] = tea::bytes::list_to_json(argv);
        return plan.dump();
    }

    std::string collect(std::string_view request_text) const {
        const auto request = json::parse(request_text);
        const auto trace_dir = tea::bytes::from_json(request.at("traceDir"), "traceDir");
        const auto initial_cwd = tea::bytes::from_json(request.at("initialCwd"), "initialCwd");
        const auto target_start = request.contains("targetStart")
                                      ? tea::bytes::from_json(request["targetStart"], "targetStart")
                                      : std::string{};
        // "target" (ABI 1.1): the process that makes the targetStart exec is the target itself.
        const bool start_is_target =
            request.contains("targetStartKind") && request["targetStartKind"] == "target";
        Collector c{target_start, start_is_target, max_distinct_};
        const auto path = trace_dir + "/" + kTraceFile;
        // O_NOFOLLOW: the trace is the runtime's own file; a link there is not its trace.
        const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            return json{{"complete", false},
                        {"reason", "no trace was written (" + path + ": " +
                                       std::generic_category().message(errno) + ")"},
                        {"targetStarted", false},
                        {"events", json::array()}}
                .dump();
        }
        struct stat st {};
        std::size_t trace_size = 0;
        if (::fstat(fd, &st) == 0 && st.st_size >= 0) {
            const auto size = static_cast<std::size_t>(st.st_size);
            trace_size = size;
            c.count_width = std::to_string(size + 1).size();
            // A distinct access costs about its trace line as JSON; reserved at once, the text is
            // never moved as it grows (untouched pages cost nothing).
            c.body.reserve(size + size / 2 + 256);
        }
        c.begin();
        tea::strace::Parser parser{initial_cwd};
        const auto sink = [&c](const tea::strace::AccessEvent &e) { c.take(e); };
        // Left uninitialised and no larger than the trace: zeroing 256 KiB for a trace of a few
        // kilobytes cost 64 page faults, over 1 ms on a VM, on every audited call.
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
        c.finish_counts();
        // The reason quotes trace text, which may hold any byte; the record keeps it readable.
        for (char &ch : reason) {
            const auto u = static_cast<unsigned char>(ch);
            if (u < 0x20 || u >= 0x7f) {
                ch = '?';
            }
        }
        // The events were written in place as they came (a trace of ten thousand distinct
        // accesses makes megabytes: copying them once more costs more than the parse here);
        // the rest of the document follows them.
        std::string &out = c.body;
        out += R"(],"complete":)";
        out += reason.empty() ? "true" : "false";
        out += R"(,"reason":)";
        append_json_bytes(out, reason);
        out += R"(,"targetStarted":)";
        out += target_start.empty() || c.started ? "true" : "false";
        out += R"(,"lines":)";
        out += std::to_string(parser.lines());
        out += '}';
        return std::move(out);
    }

   private:
    // Separates the confinement's set-up from the target and merges repeated accesses.
    struct Collector {
        std::string target_start;
        bool start_is_target = false;
        std::size_t max_distinct;
        bool started = false;
        // The process that ran the in-sandbox helper, until it executes the target.
        int helper_pid = 0;
        // The document's text: the distinct count, then the events array, each distinct event
        // written once at first sight with a blank count that finish_counts fills in; collect
        // appends the rest. An event's identity (everything but its pid and count) is looked up
        // in the text itself, so no second copy of it is kept: on a VM each page a process
        // touches first costs a fault of 10-20 us, and ten thousand events make megabytes.
        std::string body;
        std::vector<std::uint64_t> counts;  // per slot
        std::vector<std::size_t> key_at;    // per slot: where its identity starts in body
        std::vector<std::size_t> count_at;  // per slot: where its identity ends, its count starts
        std::size_t distinct_at = 0;        // offset of the distinct count
        std::string scratch;
        std::uint64_t overflow = 0;
        // The room left for a count: a count never exceeds the trace's lines, nor so its bytes,
        // so collect narrows it to their digits (20 fits any uint64).
        std::size_t count_width = 20;

        [[nodiscard]] std::string_view identity(std::size_t slot) const {
            return std::string_view{body}.substr(key_at[slot], count_at[slot] - key_at[slot]);
        }
        // Slots hashed and compared by their identity's text; a text looks one up directly.
        struct SlotHash {
            using is_transparent = void;
            const Collector *c;
            std::size_t operator()(std::string_view text) const {
                return std::hash<std::string_view>{}(text);
            }
            std::size_t operator()(std::size_t slot) const { return (*this)(c->identity(slot)); }
        };
        struct SlotEqual {
            using is_transparent = void;
            const Collector *c;
            [[nodiscard]] std::string_view text(std::string_view t) const { return t; }
            [[nodiscard]] std::string_view text(std::size_t slot) const {
                return c->identity(slot);
            }
            template <typename A, typename B>
            bool operator()(const A &a, const B &b) const {
                return text(a) == text(b);
            }
        };
        std::unordered_set<std::size_t, SlotHash, SlotEqual> index;

        Collector(std::string start, bool is_target, std::size_t max)
            : target_start{std::move(start)},
              start_is_target{is_target},
              max_distinct{max},
              index{1024, SlotHash{this}, SlotEqual{this}} {
            started = target_start.empty();
            body.reserve(std::size_t{64} << 10U);
        }

        // Starts the document, with room for the distinct count; called once count_width is set.
        void begin() {
            body += R"({"distinct":)";
            distinct_at = body.size();
            body.append(count_width, ' ');
            body += R"(,"events":[)";
        }
        Collector(const Collector &) = delete;
        Collector &operator=(const Collector &) = delete;
        Collector(Collector &&) = delete;
        Collector &operator=(Collector &&) = delete;
        ~Collector() = default;

        void take(const tea::strace::AccessEvent &e) {
            if (!started) {
                // Nothing of the target exists before this exec: these are the mechanism's own
                // accesses (bwrap reading the host to build the view). Only the first such exec
                // counts; a target cannot run before it to fake one.
                if (!is_exec(e) || !e.success || e.path_asked != target_start) {
                    return;
                }
                started = true;
                if (!start_is_target) {
                    helper_pid = e.pid;  // a launcher: its own work until its next exec is not
                    return;              // the target's
                }
                // The target itself: its exec reads its binary, and is judged as such.
            }
            if (helper_pid != 0 && e.pid == helper_pid) {
                if (!is_exec(e)) {
                    return;  // the helper's own work before it hands over to the target
                }
                if (e.success) {
                    helper_pid = 0;  // from here on this process is the target
                }
                // Each exec attempt (a PATH search) is the target's: it is judged.
            }
            // The identity as the document writes it: JSON strings encode bytes one to one, so
            // two events share this text exactly when they are the same access.
            auto &key = scratch;  // reused: most events repeat one already seen
            key.clear();
            key += R"(,"syscall":)";
            append_json_bytes(key, e.syscall);
            key += R"(,"asked":)";
            append_json_bytes(key, e.path_lexical);
            key += R"(,"resolved":)";
            append_json_bytes(key, e.path_resolved);
            key += R"(,"access":")";
            key += access_name(e.kind);
            key += R"(","ok":)";
            key += e.success ? "true" : "false";
            if (!e.error.empty()) {  // optional: absent is no error
                key += R"(,"error":)";
                append_json_bytes(key, e.error);
            }
            if (!e.path_named.empty()) {  // optional: what the asked path names, to follow
                key += R"(,"named":)";
                append_json_bytes(key, e.path_named);
            }
            if (!e.unverified.empty()) {  // optional: why the file reached is not known
                key += R"(,"unverified":)";
                append_json_bytes(key, e.unverified);
            }
            key += R"(,"count":)";
            if (const auto it = index.find(std::string_view{key}); it != index.end()) {
                ++counts[*it];
                return;
            }
            if (counts.size() >= max_distinct) {
                ++overflow;
                return;
            }
            body += counts.empty() ? "{" : ",{";
            body += R"("pid":)";
            std::array<char, 16> pid{};
            body.append(pid.data(), std::to_chars(pid.data(), pid.data() + pid.size(), e.pid).ptr);
            key_at.push_back(body.size());
            body += key;
            count_at.push_back(body.size());
            body.append(count_width, ' ');  // JSON allows the blanks left after the number
            body += '}';
            counts.push_back(1);
            index.insert(counts.size() - 1);
        }

        void finish_counts() {
            const auto put = [this](std::size_t at, std::uint64_t n) {
                const auto digits = std::to_string(n);
                if (digits.size() > count_width) {  // cannot happen (see count_width): fail closed
                    throw std::length_error(
                        "an access count outgrew the room the trace's size left");
                }
                body.replace(at, digits.size(), digits);
            };
            for (std::size_t i = 0; i < counts.size(); ++i) {
                put(count_at[i], counts[i]);
            }
            put(distinct_at, counts.size());
        }
    };

    std::string strace_name_ = "strace";
    std::string strace_;
    std::size_t max_distinct_ = kDefaultMaxDistinct;
};

}  // namespace

TEA_SDK_OBSERVER_PLUGIN(StraceObserver, "strace", "1.0.0", TEA_ABI_1_6)
