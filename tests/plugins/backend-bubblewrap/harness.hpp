// What the confinement tests share: the real tea-evaluate binary run against
// the real bwrap, a directory tree of its own per test, probes that print one
// token per attempt (NAME-OK[:value] or NAME-DENIED:<errno name>), listeners
// for the probes to connect to, and scans of the host's /proc.
//
// Every protection is shown twice: holding under the bubblewrap backend, and
// the same probe succeeding under --backend opt-out -- or, where the runtime
// stops it for every backend, in a process the test starts itself; a process
// that must not outlive a call is first seen running. A probe that could only
// ever report "denied" cannot make a test pass.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "exec/exec_plan.hpp"

namespace tea::test::bwrap {

enum class Backend { bubblewrap, opt_out };

// One `tea-evaluate [--config F] exec [--backend opt-out] ...` invocation.
struct Call {
    Backend backend = Backend::bubblewrap;
    std::vector<std::string> command;
    std::vector<std::string> withhold;
    std::string workspace;  // empty: the fixture's
    std::optional<int> timeout_ms;
    std::string config;            // TOML; when set it is written to a file and given with --config
    std::vector<std::string> env;  // NAME=VALUE over the fixture's base environment
    std::optional<std::vector<std::string>> exact_env;  // the whole environment instead
    std::vector<std::pair<int, int>> inherit;           // {descriptor here, number in the child}
    std::string subcommand = "exec";                    // or "preflight"
    std::vector<std::string> options;                   // more options, after the subcommand
    // In front of tea-evaluate: a command that runs the rest of its arguments (in a mount
    // namespace of its own, say). Every runtime the harness starts (tea-evaluate, tea-plan-call)
    // also has TEA_TEST_RUNTIME_WRAPPER in front of it, when that is set: a program that starts
    // its arguments as systemd-run --user --scope -p Delegate=yes would (tests/vm).
    std::vector<std::string> wrapper;
};

struct Result {
    int status = -1;  // exit code, or 128 + signal
    std::string out;
    std::string err;
    std::chrono::milliseconds elapsed{0};

    // A line that is the token, or starts with "token:".
    [[nodiscard]] bool has(const std::string &token) const;
    // What follows "prefix:" on the first line that starts with it; nullopt when none does.
    [[nodiscard]] std::optional<std::string> value(const std::string &prefix) const;
};
std::ostream &operator<<(std::ostream &os, const Result &r);
// With --json the target's output goes to stderr: the result with it in place of stdout, for has()
// and value().
Result target_output(const Result &r);

// A started process: its output goes to files, it is SIGKILLed if still
// running when this is destroyed.
class Process {
   public:
    Process(const std::vector<std::string> &argv, const std::vector<std::string> &env,
            const std::vector<std::pair<int, int>> &inherit, const std::filesystem::path &scratch);
    Process(const Process &) = delete;
    Process &operator=(const Process &) = delete;
    Process(Process &&other) noexcept;
    Process &operator=(Process &&) = delete;
    ~Process();

    // Waits at most `bound`; a process still running then is killed and the
    // result's status is -1.
    Result wait(std::chrono::milliseconds bound = std::chrono::seconds{60});
    [[nodiscard]] pid_t pid() const { return pid_; }

   private:
    pid_t pid_ = -1;
    int pidfd_ = -1;
    std::filesystem::path out_;
    std::filesystem::path err_;
    std::chrono::steady_clock::time_point started_;
};

// A listening socket the test owns; closed (and its file removed) on destruction.
class Listener {
   public:
    static Listener unix_path(const std::filesystem::path &path);
    static Listener unix_abstract(const std::string &name);  // without the leading NUL
    static Listener tcp_loopback();                          // 127.0.0.1, an ephemeral port
    Listener(const Listener &) = delete;
    Listener &operator=(const Listener &) = delete;
    Listener(Listener &&other) noexcept;
    Listener &operator=(Listener &&) = delete;
    ~Listener();
    [[nodiscard]] int port() const { return port_; }

   private:
    Listener() = default;
    int fd_ = -1;
    int port_ = 0;
    std::filesystem::path path_;
};

// A run directory of another, live run under a private root: its lock is held
// for this object's life, so tea-evaluate's reclaim leaves it alone and only
// the confinement's mounts can hide it.
class OtherRun {
   public:
    OtherRun(const std::filesystem::path &private_root, const std::string &secret);
    OtherRun(const OtherRun &) = delete;
    OtherRun &operator=(const OtherRun &) = delete;
    ~OtherRun();
    [[nodiscard]] const std::filesystem::path &run_dir() const { return run_; }
    [[nodiscard]] const std::filesystem::path &secret_file() const { return secret_; }

   private:
    std::filesystem::path run_;
    std::filesystem::path secret_;
    int lock_ = -1;
};

enum class Identity { invoker, unprivileged };
void PrintTo(Identity identity, std::ostream *os);  // for the test's name in ctest
// "AsInvoker" or "AsUnprivilegedUser": the name of a test instantiated for each identity.
std::string identity_name(const ::testing::TestParamInfo<Identity> &info);

// The per-test tree: <base>/ws (the workspace) holding .tea/secret (the
// folder withheld from the target), <base>/private (the private root).
class Confinement : public ::testing::Test {
   protected:
    void SetUp() override;
    void TearDown() override;

    // Makes the calls of this test run as the unprivileged account
    // tea-test-user (created when missing) with its own home and private root.
    // A no-op when the test itself is not root: it already is unprivileged.
    void become_unprivileged();

    Result run(const Call &call);
    Process start(const Call &call);
    // The same call under bubblewrap, then under opt-out.
    std::pair<Result, Result> run_both(Call call);
    // Prepares a launch spec (JSON) with a backend of the build and runs the plan as the calls'
    // identity, as the runtime's session would (plan_call.cpp): for the views the command line
    // does not offer. With plan_only the plan is printed instead; a refusal exits 12.
    // With staged_cut, as a staged call (tea-plan-call --staged CUT).
    Result run_spec(const std::string &spec_json, Backend backend = Backend::bubblewrap,
                    bool plan_only = false, std::optional<long> staged_cut = std::nullopt);
    Result run_spec(const tea::exec::LaunchSpec &spec, Backend backend = Backend::bubblewrap,
                    bool plan_only = false, std::optional<long> staged_cut = std::nullopt);
    // The spec's call made through the runtime's own session (tea-plan-call --session): the
    // observer ("strace" or "none") confirmed and wrapped around the plan, the audit judged with
    // the call's grants and printed on stderr as "AUDIT:<json>"; `config`, when set, the TOML of
    // a configuration file.
    Result run_session(const tea::exec::LaunchSpec &spec, const std::string &observer = "strace",
                       const std::string &config = "");
    // The spec's call as a started service's through the runtime's session, unaudited or
    // audited (`observer`), with the bridge (tea-plan-call's TEA_TEST_BRIDGE_CLIENT): `client`,
    // a shell command, runs on the host with BRIDGE_PORT once the bridge is open, and `stop` is
    // made afterwards for the service to end by.
    Result run_bridged(const tea::exec::LaunchSpec &spec, Backend backend,
                       const std::string &observer, const std::string &client,
                       const std::filesystem::path &stop);
    // The same, started: for a test that ends tea-plan-call (the runtime of the call) itself.
    Process start_spec(const tea::exec::LaunchSpec &spec, Backend backend = Backend::bubblewrap);
    // A target's launch spec as an unaudited exec sends it: the fixture's workspace, the call's
    // temp directory and home provided inside the view (unmade) under the private root, the
    // withheld folder, PATH and LANG.
    tea::exec::LaunchSpec target_spec(std::vector<std::string> argv);
    // A grader's launch spec: the fixture's workspace as its working directory, PATH and LANG.
    [[nodiscard]] tea::exec::LaunchSpec grader_spec(std::vector<std::string> command,
                                                    std::vector<std::string> read_only) const;
    // Hands a tree the test made to the calls' identity (a no-op when that is the test's own).
    void hand_to_caller(const std::filesystem::path &path);

    // Runs a command directly, not through tea-evaluate, as the calls' identity.
    Result run_direct(const std::vector<std::string> &argv,
                      const std::vector<std::pair<int, int>> &inherit = {});

    // The same, in a mount namespace of its own where the host file `covered` is bind-mounted
    // over by `cover`: with /dev/null, the host as it is without that program. Root only.
    Result run_covering(const std::filesystem::path &covered, const std::filesystem::path &cover,
                        const std::vector<std::string> &argv);

    // python3 -I -c <the probe prelude + code> args...
    static std::vector<std::string> python(const std::string &code,
                                           const std::vector<std::string> &args = {});
    std::string write_config(const std::string &toml);

    [[nodiscard]] std::filesystem::path base() const { return base_; }
    // A directory of the test's own on the host, outside every grant and outside the host's temp
    // directories (which a target sees as its call's own): what a test puts there, a target sees
    // as the host has it, read-only. Searchable by every identity; made at the first use and
    // removed with the test.
    std::filesystem::path host_dir();
    [[nodiscard]] std::filesystem::path workspace() const { return workspace_; }
    [[nodiscard]] std::filesystem::path withheld() const { return workspace_ / ".tea"; }
    [[nodiscard]] std::filesystem::path secret_file() const { return withheld() / "secret"; }
    [[nodiscard]] const std::string &secret() const { return secret_; }
    [[nodiscard]] const std::filesystem::path &private_root() const { return private_root_; }
    [[nodiscard]] uid_t call_uid() const { return call_uid_; }        // who the call runs as
    [[nodiscard]] uid_t sandbox_uid() const { return sandbox_uid_; }  // who the target runs as
    [[nodiscard]] gid_t call_gid() const { return call_gid_; }
    [[nodiscard]] gid_t sandbox_gid() const { return sandbox_gid_; }
    [[nodiscard]] const std::vector<std::string> &base_env() const { return base_env_; }
    [[nodiscard]] bool unprivileged_user() const { return !launcher_.empty(); }
    // Whether `by`, what a record names as the enforcer of a budget (memoryEnforcedBy or
    // processesEnforcedBy), is what this host gives this test's calls: "cgroup2" or "cgroup1" (a
    // cgroup of the call's own), or "rlimit" or "none" (no cgroup). Known for the calls a root
    // test runs as tea-test-user, whose runtime may write no cgroup of root's (no cgroup), and
    // for the rest where TEA_TEST_CALL_CGROUP says it ("cgroup2", "cgroup1" or "none"; set by
    // tests/vm for the guests it builds); otherwise a root runtime gets a cgroup of either kind,
    // and an unprivileged one whatever its host gives it.
    [[nodiscard]] ::testing::AssertionResult enforced_as_expected(const std::string &by) const;

   private:
    std::vector<std::string> command_line(const Call &call);
    Process plan_call(const std::string &spec_json, Backend backend, bool plan_only,
                      std::optional<long> staged_cut);
    // tea-plan-call --session BACKEND OBSERVER <the spec, written to a file>, as the calls'
    // identity.
    std::vector<std::string> session_command(const tea::exec::LaunchSpec &spec, Backend backend,
                                             const std::string &observer);

    std::filesystem::path base_;
    std::filesystem::path host_dir_;
    std::filesystem::path workspace_;
    std::filesystem::path private_root_;
    std::string secret_;
    std::vector<std::string> base_env_;
    std::vector<std::string> launcher_;  // setpriv ... when the calls run as another user
    uid_t call_uid_ = 0;
    gid_t call_gid_ = 0;
    uid_t sandbox_uid_ = 0;
    gid_t sandbox_gid_ = 0;
    int configs_ = 0;
    int specs_ = 0;
};

// The subset of protections shown both for the invoking user and for an
// unprivileged account (see identity_test.cpp for the instantiation).
class EitherIdentity : public Confinement, public ::testing::WithParamInterface<Identity> {
   protected:
    void SetUp() override;
};

// A tree removed with everything it holds when this goes out of scope, whatever the test did.
struct RemovedAtEnd {
    explicit RemovedAtEnd(std::filesystem::path tree) : path(std::move(tree)) {}
    std::filesystem::path path;
    RemovedAtEnd(const RemovedAtEnd &) = delete;
    RemovedAtEnd &operator=(const RemovedAtEnd &) = delete;
    ~RemovedAtEnd();
};

// A probe that looks at every other process of the target's pid namespace: for each, a line
// "NAME-SECCOMP:<Seccomp of /proc/PID/status>" and the token NAME-MEM (an open of /proc/PID/mem
// for writing), NAME being PID<n>, or CHILD for a child the probe forks as its control.
extern const char *const process_survey_probe;

// A token unique to this test run: letters and digits.
std::string random_token(std::size_t length = 10);
// "1000.<digits>": a sleep duration no other process on the host has.
std::string sleep_marker();
// Processes whose command line contains `text` (zombies have none).
std::vector<pid_t> processes_with(const std::string &text);
// Processes whose command line is exactly `argv`.
std::vector<pid_t> processes_running(const std::vector<std::string> &argv);
uid_t process_uid(pid_t pid);
// Polls `done` every 20 ms until it holds or `bound` passes.
bool eventually(const std::function<bool()> &done,
                std::chrono::milliseconds bound = std::chrono::seconds{10});
void make_file(const std::filesystem::path &path, const std::string &content, unsigned mode);

}  // namespace tea::test::bwrap
