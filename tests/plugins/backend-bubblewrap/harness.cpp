#include "harness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/process.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char *test_user = "tea-test-user";

// Every probe starts with these: report() turns one attempt into one token.
constexpr const char *prelude = R"PY(import ctypes, errno, os, signal, socket, sys, time
def report(name, fn):
    try:
        r = fn()
    except OSError as e:
        print(name + "-DENIED:" + errno.errorcode.get(e.errno, str(e.errno)), flush=True)
    except Exception as e:
        print(name + "-ERROR:" + type(e).__name__ + ":" + str(e), flush=True)
    else:
        print(name + "-OK" + ("" if r is None else ":" + str(r)), flush=True)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def checked(rc):
    if rc < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return rc
def zero(rc):
    checked(rc)
def wait_for(path, bound=30):
    end = time.monotonic() + bound
    while not os.path.exists(path) and time.monotonic() < end:
        time.sleep(0.02)
)PY";

std::string errno_text(const std::string &what) {
    return what + ": " + std::strerror(errno);  // NOLINT(concurrency-mt-unsafe)
}

fs::path scratch_file(const fs::path &dir, const char *stem) {
    return dir / (std::string{stem} + "-" + random_token(8));
}

std::vector<std::string> split_lines(const std::string &text) {
    std::vector<std::string> lines;
    std::istringstream in{text};
    for (std::string line; std::getline(in, line);) {
        lines.push_back(line);
    }
    return lines;
}

// TEA_TEST_RUNTIME_WRAPPER, or nothing.
std::vector<std::string> runtime_wrapper() {
    const char *wrapper = std::getenv("TEA_TEST_RUNTIME_WRAPPER");  // NOLINT(concurrency-mt-unsafe)
    if (wrapper == nullptr || *wrapper == '\0') {
        return {};
    }
    return {wrapper};
}

std::optional<passwd> user_entry(const char *name, std::vector<char> &buffer) {
    passwd entry{};
    passwd *found = nullptr;
    buffer.resize(16384);
    if (::getpwnam_r(name, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) {
        return std::nullopt;
    }
    return entry;
}

}  // namespace

bool Result::has(const std::string &token) const {
    for (const auto &line : split_lines(out)) {
        if (line == token || line.rfind(token + ":", 0) == 0) {
            return true;
        }
    }
    return false;
}

std::optional<std::string> Result::value(const std::string &prefix) const {
    for (const auto &line : split_lines(out)) {
        if (line.rfind(prefix + ":", 0) == 0) {
            return line.substr(prefix.size() + 1);
        }
    }
    return std::nullopt;
}

Result target_output(const Result &r) {
    Result shown = r;
    shown.out = r.err;
    return shown;
}

std::ostream &operator<<(std::ostream &os, const Result &r) {
    return os << "status " << r.status << " after " << r.elapsed.count() << " ms\n--- stdout\n"
              << r.out << "--- stderr\n"
              << r.err;
}

Process::Process(const std::vector<std::string> &argv, const std::vector<std::string> &env,
                 const std::vector<std::pair<int, int>> &inherit, const fs::path &scratch)
    : out_(scratch_file(scratch, "out")), err_(scratch_file(scratch, "err")) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    for (const auto &[from, to] : inherit) {
        // dup2 onto the number clears FD_CLOEXEC there: the child inherits it.
        posix_spawn_file_actions_adddup2(&fa, from, to);
    }
    auto args = tea::test::c_strings(argv);
    auto envp = tea::test::c_strings(env);
    started_ = std::chrono::steady_clock::now();
    const int rc = ::posix_spawn(&pid_, argv.at(0).c_str(), &fa, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
    }
    pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
}

Process::Process(Process &&other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::exchange(other.pidfd_, -1)),
      out_(std::move(other.out_)),
      err_(std::move(other.err_)),
      started_(other.started_) {}

Process::~Process() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    if (pidfd_ >= 0) {
        ::close(pidfd_);
    }
}

Result Process::wait(std::chrono::milliseconds bound) {
    Result r;
    pollfd p{pidfd_, POLLIN, 0};
    const bool ended = pidfd_ >= 0 && ::poll(&p, 1, static_cast<int>(bound.count())) == 1;
    if (!ended) {
        ::kill(pid_, SIGKILL);
    }
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    r.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started_);
    r.status = !ended ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = tea::test::read_file(out_);
    r.err = tea::test::read_file(err_);
    if (!ended) {
        r.err += "\n[the test killed it after " + std::to_string(bound.count()) + " ms]";
    }
    std::error_code ec;
    fs::remove(out_, ec);
    fs::remove(err_, ec);
    // In a sanitized build, what the runtime, the plugin or the helper reports fails the test.
    for (const char *report :
         {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"}) {
        if (r.err.find(report) != std::string::npos) {
            ADD_FAILURE() << "a sanitizer reported an error\n" << r;
        }
    }
    return r;
}

Listener Listener::unix_path(const fs::path &path) {
    Listener l;
    l.fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (l.fd_ < 0 || ::bind(l.fd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
        ::listen(l.fd_, 64) != 0) {
        throw std::runtime_error(errno_text("binding " + path.string()));
    }
    // Anyone may connect: only the confinement may stand in the way.
    ::chmod(path.c_str(), 0777);
    l.path_ = path;
    return l;
}

Listener Listener::unix_abstract(const std::string &name) {
    Listener l;
    l.fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path + 1, name.data(), std::min(name.size(), sizeof addr.sun_path - 2));
    const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    if (l.fd_ < 0 || ::bind(l.fd_, reinterpret_cast<sockaddr *>(&addr), length) != 0 ||
        ::listen(l.fd_, 64) != 0) {
        throw std::runtime_error(errno_text("binding @" + name));
    }
    return l;
}

Listener Listener::tcp_loopback() {
    Listener l;
    l.fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof addr;
    if (l.fd_ < 0 || ::bind(l.fd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
        ::listen(l.fd_, 64) != 0 ||
        ::getsockname(l.fd_, reinterpret_cast<sockaddr *>(&addr), &length) != 0) {
        throw std::runtime_error(errno_text("listening on 127.0.0.1"));
    }
    l.port_ = ntohs(addr.sin_port);
    return l;
}

Listener::Listener(Listener &&other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_), path_(std::move(other.path_)) {}

Listener::~Listener() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
    if (!path_.empty()) {
        ::unlink(path_.c_str());
    }
}

OtherRun::OtherRun(const fs::path &private_root, const std::string &secret) {
    // As tea-evaluate lays a run out (fs/private_dirs.hpp), but readable by
    // all: permissions alone would let the target read it.
    ::mkdir(private_root.c_str(), 0711);
    run_ = private_root / ("run-other" + random_token(8));
    const auto home = run_ / ("tea-evaluate-target-home-other" + random_token(4));
    fs::create_directories(home);
    fs::permissions(run_, fs::perms{0755});
    fs::permissions(home, fs::perms{0755});
    secret_ = home / "secret";
    make_file(secret_, secret, 0644);
    lock_ = ::open((run_ / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_ < 0 || ::flock(lock_, LOCK_EX | LOCK_NB) != 0) {
        throw std::runtime_error(errno_text("locking " + run_.string()));
    }
}

OtherRun::~OtherRun() {
    ::close(lock_);
    std::error_code ec;
    fs::remove_all(run_, ec);
}

void PrintTo(Identity identity, std::ostream *os) {
    *os << (identity == Identity::invoker ? "the invoker" : "an unprivileged user");
}

std::string identity_name(const ::testing::TestParamInfo<Identity> &info) {
    return info.param == Identity::invoker ? "AsInvoker" : "AsUnprivilegedUser";
}

void Confinement::SetUp() {
    if (::access("/usr/bin/bwrap", X_OK) != 0 && ::access("/bin/bwrap", X_OK) != 0) {
        GTEST_SKIP() << "bubblewrap is not installed (apt-get install bubblewrap)";
    }
    std::string pattern = "/tmp/tea-bwt-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << std::strerror(errno);
    base_ = pattern;
    // Searchable by the sandbox identity, which must reach the workspace below.
    fs::permissions(base_, fs::perms{0755});
    workspace_ = base_ / "ws";
    fs::create_directories(withheld());
    fs::permissions(workspace_, fs::perms{0755});
    secret_ = "tea-secret-" + random_token();
    make_file(secret_file(), secret_ + "\n", 0644);
    private_root_ = base_ / "private";
    call_uid_ = ::geteuid();
    call_gid_ = ::getegid();
    sandbox_uid_ = call_uid_;
    sandbox_gid_ = call_gid_;
    if (call_uid_ == 0) {
        std::vector<char> buffer;
        const auto sandbox = user_entry("tea-sandbox", buffer);
        ASSERT_TRUE(sandbox) << "tea-evaluate runs as root here, and then needs the account "
                                "tea-sandbox (scripts/install-deps.sh creates it)";
        sandbox_uid_ = sandbox->pw_uid;
        sandbox_gid_ = sandbox->pw_gid;
    }
    const char *home = std::getenv("HOME");  // NOLINT(concurrency-mt-unsafe)
    // PATH without the invoker's own directories: probes use the system's
    // python3, which every identity can run. The configuration directory does
    // not exist, so a developer's config.toml never counts.
    base_env_ = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8",
                 "XDG_CONFIG_HOME=/nonexistent-tea-bwt-config",
                 "TEA_EVALUATE_PRIVATE_ROOT=" + private_root_.string(),
                 std::string{"HOME="} + (home != nullptr ? home : "/nonexistent")};
    for (const char *name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"}) {
        if (const char *v = std::getenv(name)) {  // NOLINT(concurrency-mt-unsafe)
            base_env_.push_back(std::string{name} + "=" + v);
        }
    }
}

void Confinement::TearDown() {
    std::error_code ec;
    if (!base_.empty()) {
        fs::remove_all(base_, ec);
    }
    if (!host_dir_.empty()) {
        fs::remove_all(host_dir_, ec);
    }
}

fs::path Confinement::host_dir() {
    if (host_dir_.empty()) {
        host_dir_ = tea::test::make_host_dir("tea-bwt-host");
    }
    return host_dir_;
}

void Confinement::become_unprivileged() {
    if (::geteuid() != 0) {
        return;  // the whole suite already runs as an unprivileged user
    }
    std::vector<char> buffer;
    auto user = user_entry(test_user, buffer);
    if (!user) {
        const auto made =
            tea::test::run({"/usr/sbin/useradd", "--create-home", "--shell", "/bin/sh", test_user},
                           {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"});
        user = user_entry(test_user, buffer);  // a parallel test may have made it first
        ASSERT_TRUE(user) << "cannot create the account " << test_user << ": " << made.err;
    }
    call_uid_ = user->pw_uid;
    call_gid_ = user->pw_gid;
    sandbox_uid_ = call_uid_;
    sandbox_gid_ = call_gid_;
    const fs::path home = user->pw_dir;
    launcher_ = {"/usr/bin/setpriv", "--reuid=" + std::to_string(call_uid_),
                 "--regid=" + std::to_string(call_gid_), "--init-groups", "--"};

    // The build tree must be usable by that account; copying it would test
    // something else than what was built, so a tree it cannot reach is a failure.
    const fs::path bin{TEA_EVALUATE_BIN};
    const auto prefix = bin.parent_path().parent_path();
    std::vector<std::string> check{"/bin/sh", "-c",
                                   "for p; do [ -r \"$p\" ] || { echo \"$p\"; exit 1; }; done",
                                   "sh", bin.string()};
    for (const auto &dir : {prefix / "lib/tea-evaluate/plugins.d",
                            prefix / "lib/tea-evaluate/plugins", prefix / "libexec/tea-evaluate"}) {
        std::error_code ec;
        for (const auto &entry : fs::directory_iterator{dir, ec}) {
            check.push_back(entry.path().string());
        }
    }
    std::vector<std::string> argv = launcher_;
    argv.insert(argv.end(), check.begin(), check.end());
    const auto reach = run_direct(argv);
    if (reach.status != 0) {
        GTEST_FAIL() << "the account " << test_user << " cannot read " << reach.out
                     << "of the build tree under " << prefix
                     << "; build in a directory every user can search (e.g. under /tmp)";
    }

    // Its own workspace, and its own private root in its home.
    const auto chown_tree =
        run_direct({"/bin/chown", "-R", std::to_string(call_uid_) + ":" + std::to_string(call_gid_),
                    workspace_.string()});
    ASSERT_EQ(chown_tree.status, 0) << chown_tree;
    private_root_ = home / ".local/state/tea-evaluate";
    std::erase_if(base_env_, [](const std::string &e) {
        return e.rfind("HOME=", 0) == 0 || e.rfind("TEA_EVALUATE_PRIVATE_ROOT=", 0) == 0;
    });
    base_env_.push_back("HOME=" + home.string());
}

void EitherIdentity::SetUp() {
    Confinement::SetUp();
    if (!IsSkipped() && !HasFatalFailure() && GetParam() == Identity::unprivileged) {
        become_unprivileged();
    }
}

std::string Confinement::write_config(const std::string &toml) {
    const auto path = base_ / ("config-" + std::to_string(++configs_) + ".toml");
    make_file(path, toml, 0644);
    return path.string();
}

::testing::AssertionResult Confinement::enforced_as_expected(const std::string &by) const {
    const bool cgroup = by == "cgroup2" || by == "cgroup1";
    const char *stated = std::getenv("TEA_TEST_CALL_CGROUP");  // NOLINT(concurrency-mt-unsafe)
    std::string expected;
    if (unprivileged_user()) {
        expected = "none";
    } else if (stated != nullptr && *stated != '\0') {
        expected = stated;
    } else if (::geteuid() == 0) {
        expected = "a cgroup";
    } else {
        return ::testing::AssertionSuccess();
    }
    const bool as_expected = expected == "a cgroup" ? cgroup
                             : expected == "none"   ? !cgroup && !by.empty()
                                                    : by == expected;
    if (as_expected) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "the budget was enforced by \"" << by << "\" where this host gives "
           << (expected == "none" ? std::string{"no cgroup"} : expected)
           << (unprivileged_user() ? " to the calls of tea-test-user"
               : stated != nullptr ? " (TEA_TEST_CALL_CGROUP)"
                                   : " to root");
}

std::vector<std::string> Confinement::command_line(const Call &call) {
    std::vector<std::string> argv = launcher_;
    const auto runtime = runtime_wrapper();
    argv.insert(argv.end(), runtime.begin(), runtime.end());
    argv.insert(argv.end(), call.wrapper.begin(), call.wrapper.end());
    argv.emplace_back(TEA_EVALUATE_BIN);
    if (!call.config.empty()) {
        argv.insert(argv.end(), {"--config", write_config(call.config)});
    }
    argv.emplace_back(call.subcommand);
    argv.insert(argv.end(), call.options.begin(), call.options.end());
    // The suite runs twice (see CMakeLists.txt): audited, where the holder's bwrap builds the view,
    // and unaudited, where the view builder does; a call that names its observer keeps it.
    if (call.subcommand == "exec" && std::getenv("TEA_TEST_UNAUDITED") != nullptr &&
        std::find(call.options.begin(), call.options.end(), "--observer") == call.options.end()) {
        argv.insert(argv.end(), {"--observer", "none"});
    }
    if (call.backend == Backend::opt_out) {
        argv.insert(argv.end(), {"--backend", "opt-out"});
    }
    argv.insert(argv.end(),
                {"--workspace", call.workspace.empty() ? workspace_.string() : call.workspace});
    for (const auto &w : call.withhold) {
        argv.insert(argv.end(), {"--withhold", w});
    }
    if (call.timeout_ms) {
        argv.insert(argv.end(), {"--timeout", std::to_string(*call.timeout_ms)});
    }
    argv.emplace_back("--");
    argv.insert(argv.end(), call.command.begin(), call.command.end());
    return argv;
}

Process Confinement::start(const Call &call) {
    std::vector<std::string> env = call.exact_env ? *call.exact_env : base_env_;
    for (const auto &item : call.env) {
        const auto name = item.substr(0, item.find('=') + 1);
        std::erase_if(env, [&](const std::string &e) { return e.rfind(name, 0) == 0; });
        env.push_back(item);
    }
    return Process{command_line(call), env, call.inherit, base_};
}

Result Confinement::run(const Call &call) {
    return start(call).wait();
}

std::pair<Result, Result> Confinement::run_both(Call call) {
    call.backend = Backend::bubblewrap;
    auto confined = run(call);
    call.backend = Backend::opt_out;
    auto control = run(call);
    return {std::move(confined), std::move(control)};
}

Process Confinement::plan_call(const std::string &spec_json, Backend backend, bool plan_only,
                               std::optional<long> staged_cut) {
    const auto file = base_ / ("spec-" + std::to_string(++specs_) + ".json");
    make_file(file, spec_json, 0644);
    std::vector<std::string> argv = launcher_;
    const auto runtime = runtime_wrapper();
    argv.insert(argv.end(), runtime.begin(), runtime.end());
    argv.emplace_back(TEA_PLAN_CALL_BIN);
    if (plan_only) {
        argv.emplace_back("--plan-only");
    }
    if (staged_cut) {
        argv.insert(argv.end(), {"--staged", std::to_string(*staged_cut)});
    }
    argv.insert(argv.end(),
                {backend == Backend::opt_out ? "opt-out" : "bubblewrap", file.string()});
    return Process{argv, base_env_, {}, base_};
}

Result Confinement::run_spec(const std::string &spec_json, Backend backend, bool plan_only,
                             std::optional<long> staged_cut) {
    return plan_call(spec_json, backend, plan_only, staged_cut).wait();
}

std::vector<std::string> Confinement::session_command(const tea::exec::LaunchSpec &spec,
                                                      Backend backend,
                                                      const std::string &observer) {
    const auto file = base_ / ("spec-" + std::to_string(++specs_) + ".json");
    make_file(file, tea::exec::to_json(spec), 0644);
    std::vector<std::string> argv = launcher_;
    const auto runtime = runtime_wrapper();
    argv.insert(argv.end(), runtime.begin(), runtime.end());
    argv.insert(argv.end(),
                {TEA_PLAN_CALL_BIN, "--session",
                 backend == Backend::opt_out ? "opt-out" : "bubblewrap", observer, file.string()});
    return argv;
}

Result Confinement::run_session(const tea::exec::LaunchSpec &spec, const std::string &observer,
                                const std::string &config) {
    auto argv = session_command(spec, Backend::bubblewrap, observer);
    if (!config.empty()) {
        argv.push_back(write_config(config));
    }
    return Process{argv, base_env_, {}, base_}.wait();
}

Result Confinement::run_bridged(const tea::exec::LaunchSpec &spec, Backend backend,
                                const std::string &observer, const std::string &client,
                                const fs::path &stop) {
    auto env = base_env_;
    env.push_back("TEA_TEST_BRIDGE_CLIENT=" + client);
    env.push_back("TEA_TEST_BRIDGE_STOP=" + stop.string());
    env.emplace_back("TEA_TEST_BRIDGE_PATIENCE_MS=5000");
    return Process{session_command(spec, backend, observer), env, {}, base_}.wait();
}

Process Confinement::start_spec(const tea::exec::LaunchSpec &spec, Backend backend) {
    return plan_call(tea::exec::to_json(spec), backend, false, std::nullopt);
}

Result Confinement::run_spec(const tea::exec::LaunchSpec &spec, Backend backend, bool plan_only,
                             std::optional<long> staged_cut) {
    return run_spec(tea::exec::to_json(spec), backend, plan_only, staged_cut);
}

tea::exec::LaunchSpec Confinement::target_spec(std::vector<std::string> argv) {
    const auto root = private_root();
    for (const auto &dir : {root.parent_path().parent_path(), root.parent_path(), root}) {
        if (!fs::exists(dir)) {
            EXPECT_EQ(::mkdir(dir.c_str(), dir == root ? 0711 : 0755), 0) << dir;
        }
    }
    const auto run_dir = root / ("run-" + random_token(12));
    tea::exec::LaunchSpec s;
    s.argv = std::move(argv);
    s.env = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
    s.workspace = s.cwd = workspace().string();
    s.temp_dir = (run_dir / ("tmp-" + random_token(12))).string();
    s.home = (run_dir / ("tea-evaluate-target-home-" + random_token(12))).string();
    s.unmade = {s.temp_dir, s.home};
    s.withhold = {withheld().string()};
    const auto prefix = fs::path{TEA_EVALUATE_BIN}.parent_path().parent_path();
    s.runtime_prefix = prefix.string();
    s.helper_dir = (prefix / "libexec/tea-evaluate").string();
    return s;
}

tea::exec::LaunchSpec Confinement::grader_spec(std::vector<std::string> command,
                                               std::vector<std::string> read_only) const {
    tea::exec::LaunchSpec spec;
    spec.role = "grader";
    spec.argv = std::move(command);
    spec.env = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
    spec.workspace = workspace_.string();
    spec.cwd = workspace_.string();
    spec.read_only = std::move(read_only);
    const auto prefix = fs::path{TEA_EVALUATE_BIN}.parent_path().parent_path();
    spec.runtime_prefix = prefix.string();
    spec.helper_dir = (prefix / "libexec/tea-evaluate").string();
    return spec;
}

void Confinement::hand_to_caller(const fs::path &path) {
    if (call_uid_ == ::geteuid()) {
        return;
    }
    const auto chown =
        run_direct({"/bin/chown", "-R", std::to_string(call_uid_) + ":" + std::to_string(call_gid_),
                    path.string()});
    ASSERT_EQ(chown.status, 0) << chown;
}

Result Confinement::run_direct(const std::vector<std::string> &argv,
                               const std::vector<std::pair<int, int>> &inherit) {
    return Process{argv, base_env_, inherit, base_}.wait();
}

Result Confinement::run_covering(const fs::path &covered, const fs::path &cover,
                                 const std::vector<std::string> &argv) {
    std::vector<std::string> wrapped{"/usr/bin/unshare",
                                     "--mount",
                                     "--",
                                     "/bin/sh",
                                     "-c",
                                     "/bin/mount --bind \"$0\" \"$1\" && shift && exec \"$@\"",
                                     cover.string(),
                                     covered.string()};
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    return run_direct(wrapped);
}

std::vector<std::string> Confinement::python(const std::string &code,
                                             const std::vector<std::string> &args) {
    std::vector<std::string> argv{"/usr/bin/python3", "-I", "-c", std::string{prelude} + code};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

RemovedAtEnd::~RemovedAtEnd() {
    std::error_code ec;
    fs::remove_all(path, ec);
}

const char *const process_survey_probe = R"PY(
me = os.getpid()
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
    if pid == me:
        continue
    status = dict(l.rstrip("\n").split(":\t", 1) for l in open("/proc/%d/status" % pid) if ":\t" in l)
    name = "CHILD" if pid == child else "PID%d" % pid
    print("%s-SECCOMP:%s" % (name, status.get("Seccomp")), flush=True)
    report(name + "-MEM", lambda: os.close(os.open("/proc/%d/mem" % pid, os.O_RDWR)))
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
)PY";

std::string random_token(std::size_t length) {
    static constexpr std::string_view alphabet =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static std::mt19937_64 engine{std::random_device{}()};
    std::uniform_int_distribution<std::size_t> pick{0, alphabet.size() - 1};
    std::string out;
    for (std::size_t i = 0; i < length; ++i) {
        out += alphabet[pick(engine)];
    }
    return out;
}

std::string sleep_marker() {
    static std::mt19937_64 engine{std::random_device{}()};
    std::uniform_int_distribution<int> digits{100000, 999999};
    return "1000." + std::to_string(digits(engine)) + std::to_string(digits(engine));
}

namespace {

std::vector<pid_t> processes_where(const std::function<bool(const std::string &)> &match) {
    std::vector<pid_t> found;
    std::error_code ec;
    for (fs::directory_iterator it{"/proc", ec}, end; !ec && it != end; it.increment(ec)) {
        const auto name = it->path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        if (match(tea::test::read_file(it->path() / "cmdline"))) {
            found.push_back(static_cast<pid_t>(std::stol(name)));
        }
    }
    return found;
}

}  // namespace

std::vector<pid_t> processes_with(const std::string &text) {
    return processes_where(
        [&](const std::string &cmdline) { return cmdline.find(text) != std::string::npos; });
}

std::vector<pid_t> processes_running(const std::vector<std::string> &argv) {
    std::string expected;
    for (const auto &a : argv) {
        expected += a;
        expected += '\0';
    }
    return processes_where([&](const std::string &cmdline) { return cmdline == expected; });
}

uid_t process_uid(pid_t pid) {
    std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("Uid:", 0) == 0) {
            std::istringstream fields{line.substr(4)};
            uid_t real = 0;
            fields >> real;
            return real;
        }
    }
    return static_cast<uid_t>(-1);
}

bool eventually(const std::function<bool()> &done, std::chrono::milliseconds bound) {
    const auto until = std::chrono::steady_clock::now() + bound;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= until) {
            return false;
        }
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

void make_file(const fs::path &path, const std::string &content, unsigned mode) {
    tea::test::write_file(path.string(), content);
    fs::permissions(path, static_cast<fs::perms>(mode));
}

}  // namespace tea::test::bwrap
