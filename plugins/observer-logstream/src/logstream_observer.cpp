// The log-stream observer (macOS): the audit of a Seatbelt call read from the unified log.
//
// wrap     puts tea-logstream-follow in front of the plan: it follows `log stream` into the trace
//          directory, proves the log delivers with a canary read (5 seconds at most) before the
//          plan runs, and sends a closing canary after it (follower.cpp).
// collect  reads what the follower wrote: the sandbox's refusals during the call as events, and
//          whether the channel was complete or lossy (log_audit.hpp), or fails (exit 12) when
//          the log could not be followed.
// probe    on macOS runs the follower's readiness probe alone; elsewhere answers "macOS only".
//
// Nothing of macOS is needed to build it: the programs it names are looked up when it runs.
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tea/documents.hpp>
#include <tea/helper_path.hpp>
#include <tea/plugin.hpp>

#include "log_audit.hpp"

extern char **environ;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char *kMacOsOnly =
    "macOS only: the unified log and `log stream` exist only there (use the strace observer on "
    "Linux)";

std::string read_file(const std::string &path, bool &found) {
    std::ifstream in{path, std::ios::binary};
    found = static_cast<bool>(in);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

template <class Decode>
auto decoded(Decode decode, std::string_view text) {
    try {
        return decode(text);
    } catch (const tea::documents::DocumentError &e) {
        throw tea::sdk::Invalid(e.what());
    }
}

class LogStreamObserver {
   public:
    LogStreamObserver(tea::sdk::Host /*host*/, std::string_view config_json) {
        const auto config = json::parse(config_json, nullptr, false);
        if (!config.is_object()) {
            throw tea::sdk::Invalid("[plugin.logstream]: expected a table");
        }
        for (const auto &[key, value] : config.items()) {
            if (key != "log" && key != "sandbox_exec") {
                throw tea::sdk::Invalid("[plugin.logstream] " + key +
                                        ": unknown key (known: log, sandbox_exec)");
            }
            if (!value.is_string() || value.get<std::string>().empty() ||
                value.get<std::string>().front() != '/') {
                throw tea::sdk::Invalid("[plugin.logstream] " + key +
                                        ": expected an absolute path");
            }
            (key == "log" ? log_ : sandbox_exec_) = value.get<std::string>();
        }
    }

    void probe() const {
#if defined(__APPLE__)
        probe_readiness();
#else
        throw tea::sdk::Unavailable(kMacOsOnly);
#endif
    }

    std::string wrap(std::string_view request_text) const {
        auto request = decoded(tea::documents::decode_wrap_request, request_text);
        if (request.trace_dir.empty() || request.trace_dir.front() != '/') {
            throw tea::sdk::Invalid("traceDir: expected an absolute path");
        }
        auto &plan = request.plan;
        // The log carries Seatbelt's reports and nothing else: under another confinement it would
        // see no access at all, and an empty list would pass for evidence.
        if (plan.confinement != "seatbelt") {
            throw tea::sdk::Invalid(
                "the logstream observer audits Seatbelt calls only; this plan's "
                "confinement is \"" +
                plan.confinement + "\"");
        }
        std::vector<std::string> argv{tea::helper_path::beside_plugin("tea-logstream-follow"),
                                      "--trace-dir",
                                      request.trace_dir,
                                      "--log",
                                      log_,
                                      "--sandbox-exec",
                                      sandbox_exec_,
                                      "--"};
        argv.insert(argv.end(), plan.argv.begin(), plan.argv.end());
        plan.argv = std::move(argv);
        return tea::documents::encode(plan);
    }

    std::string collect(std::string_view request_text) const {
        const auto request = decoded(tea::documents::decode_collect_request, request_text);
        bool found = false;
        const auto follow = read_file(request.trace_dir + "/follow.json", found);
        if (!found) {
            // The follower never finished: the call's reports cannot be told from none at all.
            throw std::runtime_error("the log-stream follower left no record in " +
                                     request.trace_dir + "; the log could not be followed");
        }
        const auto record = tea::logstream::read_follow_record(follow);
        if (!record.followed) {
            throw std::runtime_error("the unified log could not be followed: " + record.reason);
        }
        const auto log = read_file(request.trace_dir + "/log.ndjson", found);
        if (!found) {
            throw std::runtime_error("the followed log " + request.trace_dir +
                                     "/log.ndjson is missing");
        }
        return tea::documents::encode(tea::logstream::audit_log(log, record.canaries));
    }

   private:
    void probe_readiness() const;
    std::string log_ = "/usr/bin/log";
    std::string sandbox_exec_ = "/usr/bin/sandbox-exec";
};

// The spec's readiness probe: a sandboxed read whose report must come back within 5 seconds.
// Compiled on every host, so it builds where the tests run; only macOS calls it.
[[maybe_unused]] void LogStreamObserver::probe_readiness() const {
    char dir_template[] = "/tmp/tea-logstream-probe-XXXXXX";
    if (::mkdtemp(dir_template) == nullptr) {
        throw tea::sdk::Unavailable("cannot make a directory for the log's readiness probe");
    }
    const std::string dir = dir_template;
    const std::vector<std::string> argv{tea::helper_path::beside_plugin("tea-logstream-follow"),
                                        "--probe",
                                        "--trace-dir",
                                        dir,
                                        "--log",
                                        log_,
                                        "--sandbox-exec",
                                        sandbox_exec_};
    std::vector<char *> args;
    for (const auto &a : argv) {
        args.push_back(const_cast<char *>(a.c_str()));  // NOLINT: posix_spawn's signature
    }
    args.push_back(nullptr);
    pid_t pid = -1;
    int status = -1;
    if (::posix_spawn(&pid, argv[0].c_str(), nullptr, nullptr, args.data(), environ) == 0) {
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    bool found = false;
    const auto record = tea::logstream::read_follow_record(read_file(dir + "/follow.json", found));
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (status != 0 || !record.followed) {
        throw tea::sdk::Unavailable(record.reason.empty()
                                        ? "the log's readiness probe could not run " + argv[0]
                                        : record.reason);
    }
}

}  // namespace

TEA_SDK_OBSERVER_PLUGIN(LogStreamObserver, "logstream", "1.0.0", TEA_ABI_1_6)
