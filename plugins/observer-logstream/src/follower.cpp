// tea-logstream-follow: the log-stream observer's process in front of the plan, outside the
// sandbox. It follows the unified log for sandbox reports while the call runs, into the trace
// directory, and brackets the call with canary reads whose reports must come back:
//
//   tea-logstream-follow --trace-dir D --log LOG --sandbox-exec SBX -- PLAN ARGV...
//   tea-logstream-follow --probe --trace-dir D --log LOG --sandbox-exec SBX   (steps 1, 2 and 5)
//
//   1. starts `LOG stream --style ndjson --predicate 'sender == "Sandbox"'`, its output copied
//      into D/log.ndjson (through a pipe, so the stream ends at its next write if this process
//      is killed, and in a process group of its own, so the call's group kill does not end it);
//   2. the readiness probe: a canary read refused by a profile of its own (SBX), whose report must
//      arrive within 5 seconds, or the call is not run (D/follow.json says why; exit 12);
//   3. runs the plan, passing on SIGTERM, SIGINT and SIGHUP;
//   4. a closing canary read, waited for up to 5 seconds, then the stream ended;
//   5. D/follow.json: whether the log was followed, and each canary with the time it was sent.
//
// It exits with the plan's status (128 + the signal that ended it). POSIX only, so it is tested
// on Linux against stand-in programs; what it names is looked up when it runs.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "log_parser.hpp"

extern char **environ;

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kCannotObserve = 12;

volatile sig_atomic_t g_pending_signal = 0;

void remember_signal(int sig) {
    g_pending_signal = sig;
}

struct Options {
    std::string trace_dir;
    std::string log = "/usr/bin/log";
    std::string sandbox_exec = "/usr/bin/sandbox-exec";
    // How long a canary's report may take; the spec's readiness probe allows 5 seconds.
    std::chrono::milliseconds canary_wait{5000};
    bool probe_only = false;  // the readiness probe alone, for the plugin's probe
    std::vector<std::string> argv;
};

[[noreturn]] void usage(const std::string &why) {
    (void)std::fprintf(stderr,
                       "tea-logstream-follow: %s (usage: tea-logstream-follow --trace-dir D --log "
                       "LOG --sandbox-exec SBX -- PROGRAM ARGS...)\n",
                       why.c_str());
    std::exit(2);  // NOLINT(concurrency-mt-unsafe): single-threaded
}

Options parse(int argc, char **argv) {
    Options o;
    int i = 1;
    for (; i < argc; ++i) {
        const std::string_view a{argv[i]};
        if (a == "--") {
            ++i;
            break;
        }
        if (a == "--probe") {
            o.probe_only = true;
            continue;
        }
        if (i + 1 >= argc) {
            usage(std::string{a} + ": expected a value");
        }
        const std::string v{argv[++i]};
        if (a == "--trace-dir") {
            o.trace_dir = v;
        } else if (a == "--log") {
            o.log = v;
        } else if (a == "--sandbox-exec") {
            o.sandbox_exec = v;
        } else if (a == "--canary-wait-ms") {
            char *end = nullptr;
            const auto ms = std::strtoul(v.c_str(), &end, 10);
            if (end == v.c_str() || *end != '\0' || ms == 0 || ms > 60000) {
                usage("--canary-wait-ms: expected 1 to 60000");
            }
            o.canary_wait = std::chrono::milliseconds{ms};
        } else {
            usage("unknown option " + std::string{a});
        }
    }
    for (; i < argc; ++i) {
        o.argv.emplace_back(argv[i]);
    }
    if (o.trace_dir.empty() || (o.argv.empty() && !o.probe_only)) {
        usage("--trace-dir and a program are required");
    }
    return o;
}

pid_t spawn(const std::vector<std::string> &argv, posix_spawn_file_actions_t *actions,
            posix_spawnattr_t *attr) {
    std::vector<char *> args;
    args.reserve(argv.size() + 1);
    for (const auto &a : argv) {
        args.push_back(const_cast<char *>(a.c_str()));  // NOLINT: posix_spawn's signature
    }
    args.push_back(nullptr);
    pid_t pid = -1;
    if (::posix_spawnp(&pid, argv[0].c_str(), actions, attr, args.data(), environ) != 0) {
        return -1;
    }
    return pid;
}

int wait_status(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
}

// The log's bytes, copied to the trace file and scanned line by line for canary reports.
class Stream {
   public:
    Stream(int pipe_fd, int file_fd) : pipe_(pipe_fd), file_(file_fd) {}

    // Reads what arrives within `wait`; false once the stream has ended.
    bool pump(std::chrono::milliseconds wait) {
        if (pipe_ < 0) {
            return false;
        }
        pollfd p{pipe_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) {
            return true;
        }
        char buffer[65536];
        const auto n = ::read(pipe_, buffer, sizeof buffer);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) {
                return true;
            }
            ::close(pipe_);
            pipe_ = -1;
            return false;
        }
        write_all(std::string_view{buffer, static_cast<std::size_t>(n)});
        pending_.append(buffer, static_cast<std::size_t>(n));
        std::size_t start = 0;
        for (auto end = pending_.find('\n'); end != std::string::npos;
             end = pending_.find('\n', start)) {
            const auto line = tea::logstream::parse_log_line(
                std::string_view{pending_}.substr(start, end - start));
            if (line.kind == tea::logstream::LineKind::violation) {
                seen_.push_back(line.violation.path);
            }
            start = end + 1;
        }
        pending_.erase(0, start);
        return true;
    }

    [[nodiscard]] bool reported(const std::string &path) const {
        for (const auto &s : seen_) {
            if (s == path) {
                return true;
            }
        }
        return false;
    }

    void close() {
        if (pipe_ >= 0) {
            ::close(pipe_);
            pipe_ = -1;
        }
    }

   private:
    void write_all(std::string_view bytes) const {
        while (!bytes.empty()) {
            const auto w = ::write(file_, bytes.data(), bytes.size());
            if (w < 0 && errno == EINTR) {
                continue;
            }
            if (w <= 0) {
                return;  // the trace file failed: collect finds it short, and the canaries missing
            }
            bytes.remove_prefix(static_cast<std::size_t>(w));
        }
    }

    int pipe_;
    int file_;
    std::string pending_;
    std::vector<std::string> seen_;
};

class Follower {
   public:
    explicit Follower(Options options) : o_(std::move(options)) {}

    int run() {
        char real[PATH_MAX];
        // Seatbelt reports the real path of what it refused: the canaries are named by theirs.
        if (::realpath(o_.trace_dir.c_str(), real) == nullptr) {
            return fail("the trace directory " + o_.trace_dir + " cannot be resolved");
        }
        real_dir_ = real;
        for (const char ch : real_dir_) {
            const auto c = static_cast<unsigned char>(ch);
            // The canary's profile quotes the path: a quote in it would write rules of its own.
            if (c == '"' || c == '\\' || c < 0x20 || c == 0x7f) {
                return fail("the trace directory " + real_dir_ +
                            " holds a quote, a backslash or a control character");
            }
        }
        if (!start_stream()) {
            return fail("`" + o_.log + " stream` could not be started");
        }
        if (!canary(true)) {
            stop_stream();
            return fail("the unified log did not deliver the readiness probe's report within " +
                        std::to_string(o_.canary_wait.count()) +
                        " ms; run tea-evaluate in a session that may read the log (an admin user's "
                        "terminal), or set \"confinement\": false");
        }
        if (o_.probe_only) {
            stop_stream();
            write_follow(true, "");
            return 0;
        }
        const int status = run_plan();
        canary(false);
        stop_stream();
        write_follow(true, "");
        if (WIFSIGNALED(status)) {
            return 128 + WTERMSIG(status);
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }

   private:
    bool start_stream() {
        const auto file = o_.trace_dir + "/log.ndjson";
        const auto errors = o_.trace_dir + "/log.stderr";
        file_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        int p[2];
        if (file_ < 0 || ::pipe(p) != 0) {
            return false;
        }
        ::fcntl(p[0], F_SETFD, FD_CLOEXEC);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&actions, p[1], 1);
        posix_spawn_file_actions_addclose(&actions, p[1]);
        // What `log` says of itself goes beside the trace, never into the target's own stderr.
        posix_spawn_file_actions_addopen(&actions, 2, errors.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                         0600);
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        // Its own group, so a kill of the call's group does not end it before the closing canary.
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
        posix_spawnattr_setpgroup(&attr, 0);
        stream_pid_ = spawn({o_.log, "stream", "--style", "ndjson", "--level", "debug",
                             "--predicate", "sender == \"Sandbox\""},
                            &actions, &attr);
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
        ::close(p[1]);
        stream_.emplace(p[0], file_);
        return stream_pid_ > 0;
    }

    void stop_stream() {
        if (stream_pid_ > 0) {
            ::kill(stream_pid_, SIGTERM);
            stream_->close();
            (void)wait_status(stream_pid_);
            stream_pid_ = -1;
        }
    }

    // One canary read, refused by a profile of its own; true when its report came back in time.
    bool canary(bool readiness) {
        const auto name = "/canary-" + std::to_string(canaries_.size());
        const auto path = o_.trace_dir + name;
        const auto reported_path = real_dir_ + name;
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
            (void)::write(fd, "canary\n", 7);
            ::close(fd);
        }
        const auto sent_at = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
        canaries_.push_back({{"path", reported_path},
                             {"sentAtMs", sent_at},
                             {"kind", readiness ? "readiness" : "closing"}});
        const auto profile =
            "(version 1)(allow default)(deny file-read-data (literal \"" + reported_path + "\"))";
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
        const pid_t pid =
            spawn({o_.sandbox_exec, "-p", profile, "/bin/cat", path}, &actions, nullptr);
        posix_spawn_file_actions_destroy(&actions);
        if (pid < 0) {
            return false;
        }
        (void)wait_status(pid);
        const auto deadline = Clock::now() + o_.canary_wait;
        while (!stream_->reported(reported_path)) {
            if (Clock::now() >= deadline || !stream_->pump(std::chrono::milliseconds{50})) {
                return stream_->reported(reported_path);
            }
        }
        return true;
    }

    int run_plan() {
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        sigset_t none;
        sigemptyset(&none);
        posix_spawnattr_setsigmask(&attr, &none);
        // This process ignores SIGPIPE; the plan gets the default back, as the host gave it.
        sigset_t defaults;
        sigemptyset(&defaults);
        sigaddset(&defaults, SIGPIPE);
        posix_spawnattr_setsigdefault(&attr, &defaults);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        const pid_t target = spawn(o_.argv, nullptr, &attr);
        posix_spawnattr_destroy(&attr);
        if (target < 0) {
            return 127 << 8;  // as a shell reports a program it cannot start
        }
        int status = 0;
        for (;;) {
            if (g_pending_signal != 0) {
                ::kill(target, g_pending_signal);
                g_pending_signal = 0;
            }
            const pid_t done = ::waitpid(target, &status, WNOHANG);
            if (done == target) {
                return status;
            }
            // The stream is drained while the target runs, so the log never waits on this process.
            stream_->pump(std::chrono::milliseconds{50});
        }
    }

    int fail(const std::string &reason) {
        write_follow(false, reason);
        (void)std::fprintf(stderr, "tea-logstream-follow: %s\n", reason.c_str());
        return kCannotObserve;
    }

    // Written to a temporary name and renamed, so collect never reads half of it.
    void write_follow(bool followed, const std::string &reason) {
        const nlohmann::json doc{
            {"followed", followed}, {"reason", reason}, {"canaries", canaries_}};
        const auto final_path = o_.trace_dir + "/follow.json";
        const auto temp_path = final_path + ".tmp";
        const auto text = doc.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) + "\n";
        const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
            return;
        }
        const bool whole =
            ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
        const bool synced = ::fsync(fd) == 0;
        ::close(fd);
        if (whole && synced) {
            (void)::rename(temp_path.c_str(), final_path.c_str());
        }
    }

    Options o_;
    std::string real_dir_;
    int file_ = -1;
    pid_t stream_pid_ = -1;
    std::optional<Stream> stream_;  // made once the pipe exists
    nlohmann::json canaries_ = nlohmann::json::array();
};

}  // namespace

int main(int argc, char **argv) {
    try {
        auto options = parse(argc, argv);
        struct sigaction action {};
        action.sa_handler = remember_signal;
        sigemptyset(&action.sa_mask);
        for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
            ::sigaction(sig, &action, nullptr);
        }
        (void)::signal(SIGPIPE, SIG_IGN);
        return Follower{std::move(options)}.run();
    } catch (const std::exception &e) {
        // No follow.json: collect says the log could not be followed, and the call fails.
        (void)std::fprintf(stderr, "tea-logstream-follow: %s\n", e.what());
        return kCannotObserve;
    }
}
