// A login's files (ABI 1.8: the launch spec's loginFiles) shown read-only in the target's private
// home: the target reads exactly the content the host read, cannot change or replace it, writes
// beside it, and nothing of it is left on the host's disk; the audit of a traced call lists
// neither its read nor its refused write. Each for a home provided inside the view (unmade) and
// for one the host made and lends, as the invoker and as an unprivileged account.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "exec/exec_plan.hpp"
#include "harness.hpp"
#include "support/process.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

constexpr const char *kLoginPath = ".claude/.credentials.json";

// Argument 1: the login file, 2: the home. Each attempt the brief's attack names, on the login
// and (the control) on a plain file of the home; the login read before and after as hex.
constexpr const char *kProbe = R"PY(
import binascii
login, home = sys.argv[1], sys.argv[2]
def hexof(path):
    with open(path, "rb") as f:
        return binascii.hexlify(f.read()).decode() or "EMPTY"
def write(path):
    with open(path, "w") as f:
        f.write("x")
def link_over(path):
    # ln -sf over an existing name: a new link renamed over it.
    tmp = path + ".link"
    os.symlink("/etc/passwd", tmp)
    try:
        os.rename(tmp, path)
    except OSError:
        os.unlink(tmp)
        raise
def attacks(name, path):
    report(name + "-WRITE", lambda: write(path))
    report(name + "-CHMOD", lambda: os.chmod(path, 0o666))
    report(name + "-LN", lambda: link_over(path))
    report(name + "-MV", lambda: os.rename(path, home + "/moved-" + name))
    report(name + "-RM", lambda: os.unlink(path if os.path.lexists(path) else home + "/moved-" + name))
report("READ", lambda: hexof(login))
report("EMPTY", lambda: hexof(home + "/.claude/empty"))
report("MODE", lambda: oct(os.stat(login).st_mode & 0o777))
attacks("LOGIN", login)
report("AGAIN", lambda: hexof(login))
def projects():
    os.makedirs(home + "/.claude/projects/x")
    write(home + "/.claude/projects/x/session.jsonl")
    write(home + "/.claude.json")
report("PROJECTS", projects)
write(home + "/plain")
attacks("PLAIN", home + "/plain")
)PY";

std::string hex(const std::string &bytes) {
    static const char *digits = "0123456789abcdef";
    std::string out;
    for (const char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        out += digits[b >> 4];
        out += digits[b & 15];
    }
    return out;
}

// Content the host read: JSON with a token, then bytes that are not UTF-8 and a NUL.
std::string credentials(const std::string &token) {
    return std::string{R"({"claudeAiOauth":{"accessToken":")"} + token + "\"}}\n\xff\xfe" +
           std::string(1, '\0') + "\x80";
}

void add_logins(tea::exec::LaunchSpec &spec, const std::string &content) {
    spec.login_files = {{kLoginPath, content}, {".claude/empty", ""}};
}

// Whether any file under `dir` holds `needle`.
bool tree_holds(const fs::path &dir, const std::string &needle) {
    for (const auto &entry : fs::recursive_directory_iterator(dir)) {
        if (entry.is_regular_file() && !entry.is_symlink() &&
            read_file(entry.path()).find(needle) != std::string::npos) {
            return true;
        }
    }
    return false;
}

void expect_shown_read_only(const Result &r, const std::string &content) {
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_EQ(r.value("READ-OK"), hex(content)) << r;
    EXPECT_EQ(r.value("EMPTY-OK"), "EMPTY") << r;
    EXPECT_EQ(r.value("MODE-OK"), "0o400") << r;
    EXPECT_TRUE(r.has("LOGIN-WRITE-DENIED:EROFS")) << r;
    EXPECT_TRUE(r.has("LOGIN-CHMOD-DENIED:EROFS")) << r;
    EXPECT_TRUE(r.has("LOGIN-LN-DENIED:EBUSY")) << r;
    EXPECT_TRUE(r.has("LOGIN-MV-DENIED:EBUSY")) << r;
    EXPECT_TRUE(r.has("LOGIN-RM-DENIED:EBUSY")) << r;
    EXPECT_EQ(r.value("AGAIN-OK"), hex(content)) << "unchanged\n" << r;
    EXPECT_TRUE(r.has("PROJECTS-OK")) << r;
    // Control: the same attempts on a plain file of the home all succeed.
    for (const auto *attempt : {"WRITE", "CHMOD", "LN", "MV", "RM"}) {
        EXPECT_TRUE(r.has(std::string{"PLAIN-"} + attempt + "-OK")) << attempt << "\n" << r;
    }
}

// A run directory under the private root with a home the host made, as a trial lays one out; its
// lock held so that another test's reclaim leaves it be.
class MadeHome {
   public:
    MadeHome(const fs::path &root, uid_t uid, gid_t gid) {
        for (const auto &dir : {root.parent_path().parent_path(), root.parent_path(), root}) {
            if (!fs::exists(dir)) {
                EXPECT_EQ(::mkdir(dir.c_str(), dir == root ? (uid == 0 ? 0711 : 0700) : 0755), 0);
                EXPECT_EQ(::chown(dir.c_str(), uid, gid), 0) << dir;
            }
        }
        run_ = root / ("run-" + random_token(12));
        EXPECT_EQ(::mkdir(run_.c_str(), 0711), 0) << run_;
        lock_ = ::open((run_ / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        EXPECT_TRUE(lock_ >= 0 && ::flock(lock_, LOCK_EX | LOCK_NB) == 0) << run_;
        home_ = run_ / ("tea-evaluate-target-home-" + random_token(12));
        EXPECT_EQ(::mkdir(home_.c_str(), 0700), 0) << home_;
        EXPECT_EQ(::chown(run_.c_str(), uid, gid), 0);
        EXPECT_EQ(::chown(home_.c_str(), uid, gid), 0);
    }
    MadeHome(const MadeHome &) = delete;
    MadeHome &operator=(const MadeHome &) = delete;
    ~MadeHome() {
        ::close(lock_);
        std::error_code ec;
        fs::remove_all(run_, ec);
    }
    [[nodiscard]] const fs::path &home() const { return home_; }

   private:
    fs::path run_;
    fs::path home_;
    int lock_ = -1;
};

// A home provided inside the view, made for the call alone.
TEST_P(EitherIdentity, ALoginInAnUnmadeHomeIsReadExactlyAndCannotBeChanged) {
    auto spec = target_spec({});
    const auto content = credentials(random_token(24));
    add_logins(spec, content);
    spec.argv = python(kProbe, {(fs::path{spec.home} / kLoginPath).string(), spec.home});
    expect_shown_read_only(run_spec(spec), content);
    // Control: without the login the place is empty, so READ above saw what the spec carried.
    auto without = spec;
    without.login_files.clear();
    const auto none = run_spec(without);
    EXPECT_TRUE(none.has("READ-DENIED:ENOENT")) << none;
}

// A home the host made (lent to the sandbox account as root): the same, nothing of the content
// on the host's disk afterwards, the next call's content read in its place, and a link planted on
// the way refused rather than followed.
TEST_P(EitherIdentity, ALoginInAMadeHomeLeavesNothingOnDiskAndRotatesBetweenCalls) {
    const MadeHome made{private_root(), call_uid(), call_gid()};
    const auto home = made.home();
    auto spec = target_spec({});
    spec.home = home.string();
    spec.unmade = {spec.temp_dir};
    const auto token = random_token(24);
    add_logins(spec, credentials(token));
    spec.argv = python(kProbe, {(home / kLoginPath).string(), home.string()});
    expect_shown_read_only(run_spec(spec), credentials(token));

    // The host's home holds the target's own files and, for the login, empty mount points.
    EXPECT_TRUE(fs::is_regular_file(home / ".claude/projects/x/session.jsonl"));
    EXPECT_TRUE(fs::is_regular_file(home / ".claude.json"));
    EXPECT_FALSE(tree_holds(home, token)) << "the login's content reached the host's disk";
    for (const auto *name : {kLoginPath, ".claude/empty"}) {
        std::error_code ec;
        EXPECT_TRUE(!fs::exists(home / name, ec) || fs::file_size(home / name, ec) == 0) << name;
    }

    // The next call of the trial reads the next spec's content, a rotated token.
    const auto rotated = random_token(24);
    add_logins(spec, credentials(rotated));
    spec.argv = python(R"PY(
with open(sys.argv[1], "rb") as f:
    print("READ-OK:" + f.read().decode("utf-8", "replace").split('"')[5])
)PY",
                       {(home / kLoginPath).string()});
    const auto second = run_spec(spec);
    EXPECT_EQ(second.value("READ-OK"), rotated) << second;
    EXPECT_FALSE(tree_holds(home, rotated));

    // A call that moved .claude away and left a link at the login's place: bwrap would follow it
    // and show the login over the file the link names. Refused before anything runs.
    fs::rename(home / ".claude", home / ".claude-moved");
    fs::create_directory(home / ".claude");
    fs::create_symlink("/etc/hostname", home / kLoginPath);
    hand_to_caller(home);
    const auto planted = run_spec(spec, Backend::bubblewrap, true);
    EXPECT_EQ(planted.status, 12) << planted;
    EXPECT_NE(planted.err.find("is a symbolic link"), std::string::npos) << planted;
    // Control: the same spec with its place a plain directory again plans.
    fs::remove(home / kLoginPath);
    EXPECT_EQ(run_spec(spec, Backend::bubblewrap, true).status, 0);
}

// A traced call through the runtime's session: the login's read and its refused write are not
// listed; the same refused write of another read-only place is.
TEST_P(EitherIdentity, TheAuditListsNeitherTheLoginsReadNorItsRefusedWrite) {
    const MadeHome made{private_root(), call_uid(), call_gid()};
    auto spec = target_spec({});
    spec.home = made.home().string();
    spec.unmade.clear();
    spec.temp_dir.clear();
    const auto content = credentials(random_token(24));
    add_logins(spec, content);
    const auto login = (made.home() / kLoginPath).string();
    spec.argv = python(R"PY(
def write(path):
    with open(path, "w") as f:
        f.write("x")
report("READ", lambda: len(open(sys.argv[1], "rb").read()))
report("LOGIN-WRITE", lambda: write(sys.argv[1]))
report("ETC-WRITE", lambda: write("/etc/tea-login-probe"))
)PY",
                       {login});
    const auto r = run_session(spec);
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_TRUE(r.has("READ-OK:" + std::to_string(content.size()))) << r;
    EXPECT_TRUE(r.has("LOGIN-WRITE-DENIED:EROFS")) << r;
    EXPECT_TRUE(r.has("ETC-WRITE-DENIED:EROFS")) << r;
    const auto line = r.err.find("AUDIT:");
    ASSERT_NE(line, std::string::npos) << r;
    const auto audit =
        nlohmann::json::parse(r.err.substr(line + 6, r.err.find('\n', line) - line - 6));
    bool etc_listed = false;
    for (const auto &finding : audit.at("findings")) {
        const auto path = finding.at("path").get<std::string>();
        EXPECT_EQ(path.find(".credentials.json"), std::string::npos) << audit.dump(2);
        etc_listed = etc_listed || path == "/etc/tea-login-probe";
    }
    EXPECT_TRUE(etc_listed) << "the control: a refused write elsewhere is listed\n"
                            << audit.dump(2);
}

// As root with [confinement] uid_range, the target runs as the call's own identity, in a home
// lent to it by an idmap: it reads the login and writes beside it all the same.
TEST_F(Confinement, ALoginIsShownToTheCallsOwnIdentity) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "an identity per call is taken by a root runtime only";
    }
    constexpr unsigned first = 2147418112 + 96;  // beyond the ranges of call_identity_test.cpp
    const MadeHome made{private_root(), call_uid(), call_gid()};
    auto spec = target_spec({});
    spec.home = made.home().string();
    spec.unmade.clear();
    const auto content = credentials(random_token(24));
    add_logins(spec, content);
    spec.argv = python(std::string{kProbe} + "report(\"UID\", os.getuid)\n",
                       {(made.home() / kLoginPath).string(), spec.home});
    const auto r = run_session(spec, "strace",
                               "[confinement]\nuid_range = [" + std::to_string(first) + ", " +
                                   std::to_string(first + 7) + "]\n");
    expect_shown_read_only(r, content);
    const auto uid = r.value("UID-OK");
    ASSERT_TRUE(uid) << r;
    EXPECT_GE(std::stoul(*uid), first);
    EXPECT_LE(std::stoul(*uid), first + 7);
    EXPECT_NE(r.err.find("AUDIT:"), std::string::npos) << r;
    EXPECT_FALSE(tree_holds(made.home(), content.substr(0, 40)));
}

// An unaudited call with a login is built by the view builder and staged (ABI 1.5), as one
// without: bwrap's --ro-bind-data re-reads the mount table after its mount, which cost such a call
// about a third more. The builder reads each file's descriptor; the staged answer carries them.
TEST_F(Confinement, AnUnauditedCallWithALoginIsStagedAndBuiltByTheViewBuilder) {
    auto spec = target_spec({"/bin/true"});
    add_logins(spec, credentials(random_token(24)));
    const auto staged = run_spec(spec, Backend::bubblewrap, true, -1);
    ASSERT_EQ(staged.status, 0) << staged;
    const auto plan = tea::exec::exec_plan_from_json(staged.out);
    EXPECT_NE(std::find(plan.argv.begin(), plan.argv.end(), "/proc/self/fd/19"), plan.argv.end())
        << "bwrap runs the view builder\n"
        << staged.out;
    bool view_deferred = false;
    std::vector<std::string> logins;
    for (const auto &f : plan.files) {
        view_deferred = view_deferred || (f.child_fd == 18 && f.deferred);
        if (f.child_fd >= 20) {
            logins.push_back(f.content);
        }
    }
    EXPECT_TRUE(view_deferred) << "the view comes in the complete plan\n" << staged.out;
    EXPECT_EQ(logins, (std::vector<std::string>{spec.login_files[0].content, ""}));
}

// More files than any login has, or a place the confinement refuses to carry, is refused before
// anything runs.
TEST_F(Confinement, LoginFilesTheViewCannotCarryAreRefused) {
    auto spec = target_spec({"/bin/true"});
    for (int i = 0; i <= 16; ++i) {
        spec.login_files.push_back({".claude/file-" + std::to_string(i), "x"});
    }
    const auto many = run_spec(spec, Backend::bubblewrap, true);
    EXPECT_EQ(many.status, 12) << many;
    EXPECT_NE(many.err.find("17 login files"), std::string::npos) << many;
    spec.login_files.resize(16);
    EXPECT_EQ(run_spec(spec, Backend::bubblewrap, true).status, 0) << "the control: 16 plan";
    spec.login_files = {{".claude/a'quote", "x"}};
    const auto quoted = run_spec(spec, Backend::bubblewrap, true);
    EXPECT_EQ(quoted.status, 12) << quoted;
    EXPECT_NE(quoted.err.find("login file path holds a quote"), std::string::npos) << quoted;
}

// A login is the target's: a grader's spec that names one is refused.
TEST_F(Confinement, AGraderTakesNoLogin) {
    auto spec = grader_spec({"/bin/true"}, {});
    spec.home = (base() / "grader-home").string();
    add_logins(spec, "{}");
    const auto refused = run_spec(spec, Backend::bubblewrap, true);
    EXPECT_EQ(refused.status, 12) << refused;
    EXPECT_NE(refused.err.find("a grader takes no login"), std::string::npos) << refused;
    // Control: the same grader without it plans.
    spec.login_files.clear();
    EXPECT_EQ(run_spec(spec, Backend::bubblewrap, true).status, 0);
}

}  // namespace
}  // namespace tea::test::bwrap
