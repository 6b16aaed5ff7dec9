// The audit end to end: the real tea-evaluate, real bwrap and real strace. Each listing rule is
// shown on a real process, with its control: the same read unobserved (--observer none, or the
// opt-out backend) is never claimed as observed, and a read the audit must not list is shown to
// have happened.
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <tea/plugin.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tea/json_bytes.hpp>
#include <thread>

#include "../backend-bubblewrap/harness.hpp"
#include "support/observers.hpp"
#include "support/process.hpp"
#include "support/sanitized.hpp"
#include "support/temp_dir.hpp"
#include "tea_fixtures.h"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class Audit : public Confinement {
   protected:
    void SetUp() override {
        Confinement::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }
        if (::access("/usr/bin/strace", X_OK) != 0) {
            GTEST_SKIP() << "strace is not installed (apt-get install strace)";
        }
        // A host directory outside every grant, readable by every identity.
        outside_ = host_dir() / "outside";
        fs::create_directory(outside_);
        fs::permissions(outside_, fs::perms{0755});
        make_file(outside_ / "id_rsa", "PRIVATE KEY " + random_token() + "\n", 0644);
        make_file(workspace() / "notes.txt", "workspace notes\n", 0644);
    }

    // `tea-evaluate exec --json [options] -- command`; the record is stdout, the target's
    // output stderr.
    std::pair<Result, json> audited(const std::vector<std::string> &command,
                                    std::vector<std::string> options = {},
                                    const std::vector<std::string> &withhold = {}) {
        if (!observer_.empty() &&
            std::find(options.begin(), options.end(), "--observer") == options.end()) {
            options.insert(options.begin(), {"--observer", observer_});
        }
        options.insert(options.begin(), "--json");
        const auto r = run({.command = command, .withhold = withhold, .options = options});
        auto record = json::parse(r.out, nullptr, false);
        EXPECT_FALSE(record.is_discarded()) << r;
        return {r, record};
    }

    static bool lists(const json &record, const std::string &path) {
        if (!record.contains("audit") || !record["audit"].contains("findings")) {
            return false;
        }
        for (const auto &f : record["audit"]["findings"]) {
            if (f.value("path", "") == path) {
                return true;
            }
        }
        return false;
    }

    [[nodiscard]] std::string key() const { return (outside_ / "id_rsa").string(); }

    fs::path outside_;
    std::string observer_;  // the observer audited() names; empty: the configuration's
};

// Who runs tea-evaluate, and which observer audits its calls.
struct AuditedBy {
    Identity identity = Identity::invoker;
    const char *observer = "strace";
};
void PrintTo(const AuditedBy &a, std::ostream *os) {
    *os << (a.identity == Identity::invoker ? "invoker" : "unprivileged") << "/" << a.observer;
}

// strace as either identity; the eBPF observer, where it is built, as root only (loading its
// programs needs root: as an unprivileged user it refuses with exit 12, see
// observer-ebpf/kernel_test.cpp); the seccomp observer, where it is built, as either.
std::vector<AuditedBy> audited_by(bool with_ebpf) {
    std::vector<AuditedBy> out{{Identity::invoker, "strace"}, {Identity::unprivileged, "strace"}};
#ifdef TEA_EBPF_OBSERVER
    if (with_ebpf) {
        out.push_back({Identity::invoker, "ebpf"});
    }
#else
    (void)with_ebpf;
#endif
#ifdef TEA_SECCOMP_OBSERVER
    // The seccomp observer needs no privilege: both identities, in every suite.
    out.push_back({Identity::invoker, "seccomp"});
    out.push_back({Identity::unprivileged, "seccomp"});
#endif
    return out;
}

class AuditEitherIdentity : public Audit, public ::testing::WithParamInterface<AuditedBy> {
   protected:
    void SetUp() override {
        Audit::SetUp();
        observer_ = GetParam().observer;
        if (!IsSkipped() && !HasFatalFailure() && GetParam().identity == Identity::unprivileged) {
            become_unprivileged();
        }
    }
};

TEST_P(AuditEitherIdentity, ReadOutsideTheGrantsIsListedAndStrictExits3) {
    const auto [r, record] = audited({"cat", key()}, {"--strict"});
    EXPECT_EQ(r.status, 3) << r;
    EXPECT_NE(r.err.find("PRIVATE KEY"), std::string::npos) << "the read happened" << r;
    EXPECT_TRUE(record["audit"]["audited"].get<bool>()) << r;
    EXPECT_TRUE(record["audit"]["complete"].get<bool>()) << r;
    EXPECT_TRUE(lists(record, key())) << r;
    EXPECT_EQ(record["callStatus"], 0) << r;

    // Control: the same read, unobserved, is not claimed as observed.
    const auto [u, unobserved] = audited({"cat", key()}, {"--observer", "none"});
    EXPECT_EQ(u.status, 0) << u;
    EXPECT_NE(u.err.find("PRIVATE KEY"), std::string::npos) << u;
    EXPECT_FALSE(unobserved["audit"]["audited"].get<bool>()) << u;
    EXPECT_FALSE(lists(unobserved, key())) << u;
}

TEST_P(AuditEitherIdentity, WorkspaceReadIsNotListed) {
    const auto [r, record] = audited({"cat", (workspace() / "notes.txt").string()}, {"--strict"});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_NE(r.err.find("workspace notes"), std::string::npos) << r;
    EXPECT_TRUE(record["audit"]["complete"].get<bool>()) << r;
    EXPECT_TRUE(record["audit"]["findings"].empty()) << r;
    EXPECT_GT(record["audit"]["events"].get<int>(), 0) << "the observer saw the call" << r;
}

// open and openat ignore the mode of a call that makes no file, and some runtimes pass one anyway
// (Bun, which the Claude Code CLI is built on, opens directories with 0666): every observer lets
// the open succeed, as the kernel does (the strace instance is the reference).
TEST_P(AuditEitherIdentity, AnOpenThatMakesNoFileIgnoresItsMode) {
    fs::create_directory(workspace() / "dir");
    hand_to_caller(workspace());
    const auto probe = python(R"PY(
AT_FDCWD = -100
SYS_openat = {"x86_64": 257, "aarch64": 56}[os.uname().machine]
for name, flags in (("DIR", os.O_RDONLY | os.O_DIRECTORY), ("FILE", os.O_RDONLY)):
    path = b"dir" if name == "DIR" else b"notes.txt"
    report(name, lambda: os.close(checked(libc.syscall(SYS_openat, AT_FDCWD, path, flags, 0o666))))
)PY");
    const auto r = run({.command = probe, .options = {"--observer", observer_}});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_TRUE(r.has("DIR-OK")) << r;
    EXPECT_TRUE(r.has("FILE-OK")) << r;
}

// A program of the workspace run by a relative name ("./run.sh", as bwrap's execvp names it): the
// audit sees the target start by that name, and is complete. The eBPF observer makes the exec's
// path absolute; it must still know the start by the name the exec was given.
TEST_P(AuditEitherIdentity, AProgramRunByARelativeNameIsAuditedWhole) {
    make_file(workspace() / "run.sh", "#!/bin/sh\nexec cat " + key() + "\n", 0755);
    hand_to_caller(workspace());
    const auto [r, record] = audited({"./run.sh"}, {"--strict"});
    EXPECT_NE(r.err.find("PRIVATE KEY"), std::string::npos) << "the read happened" << r;
    EXPECT_EQ(r.status, 3) << r;
    EXPECT_TRUE(record["audit"]["complete"].get<bool>()) << r;
    EXPECT_TRUE(lists(record, key())) << r;
    // Control: the same program by its absolute path.
    const auto [a, absolute] = audited({(workspace() / "run.sh").string()}, {"--strict"});
    EXPECT_EQ(a.status, 3) << a;
    EXPECT_TRUE(absolute["audit"]["complete"].get<bool>()) << a;
    EXPECT_TRUE(lists(absolute, key())) << a;
}

INSTANTIATE_TEST_SUITE_P(Identities, AuditEitherIdentity, ::testing::ValuesIn(audited_by(true)));

// bwrap starts the target itself through its PATH; the backend names the program the exec will
// find so the audit knows where the target starts. As root, a PATH entry only root can search
// (root's own bin directories) must be passed over as the sandbox identity's exec passes it over,
// or the audit would wait for an exec that never comes and call the trace incomplete.
TEST_F(Audit, TargetFoundThroughPathIsSeenStartingPastAnEntryTheSandboxCannotReach) {
    const auto hidden = host_dir() / "hidden-bin";
    const auto shown = host_dir() / "shown-bin";
    fs::create_directory(hidden);
    fs::create_directory(shown);
    fs::permissions(hidden, fs::perms{0700});
    fs::permissions(shown, fs::perms{0755});
    make_file(hidden / "tea-path-probe", "#!/bin/sh\necho HIDDEN-RAN\n", 0755);
    make_file(shown / "tea-path-probe", "#!/bin/sh\nexec cat " + key() + "\n", 0755);
    const auto r =
        run({.command = {"tea-path-probe"},
             .env = {"PATH=" + hidden.string() + ":" + shown.string() + ":/usr/bin:/bin"},
             .options = {"--json"}});
    const auto record = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(record.is_discarded()) << r;
    EXPECT_TRUE(record["audit"]["complete"].get<bool>()) << r;
    if (::geteuid() == 0) {
        // The sandbox identity cannot search hidden-bin: the shown program ran, and its read
        // outside the grants is the target's, judged and listed.
        EXPECT_NE(r.err.find("PRIVATE KEY"), std::string::npos) << r;
        EXPECT_TRUE(lists(record, key())) << r;
    } else {
        EXPECT_NE(r.err.find("HIDDEN-RAN"), std::string::npos) << r;
    }
}

// An observer of ABI 1.0 takes the targetStart process for a launcher and would drop what it
// does until its next exec: with a plan whose target starts itself, the target's own accesses.
TEST_F(Audit, AnObserverOlderThanTheTargetStartHintIsRefused) {
    const auto dir = base() / "observers.d";
    fs::create_directory(dir);
    const auto manifest = [&](const std::string &name, const std::string &abi,
                              const std::string &library) {
        make_file(dir / (name + ".toml"),
                  "name = \"" + name + "\"\nkind = \"observer\"\nabi = \"" + abi +
                      "\"\nlibrary = \"" + library + "\"\n",
                  0644);
    };
    manifest("observer-abi-1-0", "1.0", TEA_FIXTURE_OBSERVER_ABI_1_0);
    manifest("good-observer", "1." + std::to_string(TEA_ABI_MINOR), TEA_FIXTURE_GOOD_OBSERVER);
    const auto config = "[plugins]\npaths = [\"" + dir.string() + "\"]\n";
    const auto old =
        run({.command = {"true"}, .config = config, .options = {"--observer", "observer-abi-1-0"}});
    EXPECT_EQ(old.status, 12) << old;
    EXPECT_NE(old.err.find("(plugin ABI 1.0) cannot audit a plan whose target starts"),
              std::string::npos)
        << old;
    // The control: an observer of this ABI gets past the check (this fixture then fails on
    // its own, since it only echoes what it is given).
    const auto current =
        run({.command = {"true"}, .config = config, .options = {"--observer", "good-observer"}});
    EXPECT_EQ(current.err.find("cannot audit a plan whose target starts"), std::string::npos)
        << current;
    EXPECT_NE(current.err.find("good-observer"), std::string::npos) << current;
}

#ifdef TEA_EBPF_OBSERVER
// Loading the eBPF observer's programs needs root: an unprivileged user is told so (exit 12),
// never given an unaudited call; "auto" with it first in its order then audits with strace.
TEST_F(Audit, TheEbpfObserverRefusesAnUnprivilegedUserAndAutoPassesToTheNext) {
    become_unprivileged();
    const auto refused = run({.command = {"cat", key()}, .options = {"--observer", "ebpf"}});
    EXPECT_EQ(refused.status, 12) << refused;
    EXPECT_NE(refused.err.find("needs root"), std::string::npos) << refused;
    EXPECT_EQ(refused.err.find("PRIVATE KEY"), std::string::npos) << "nothing ran" << refused;
    const auto [r, record] = [&] {
        const auto res = run({.command = {"cat", key()},
                              .config = "[audit]\nauto_order = [\"ebpf\", \"strace\"]\n",
                              .options = {"--json"}});
        return std::pair{res, json::parse(res.out, nullptr, false)};
    }();
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_EQ(record["audit"].value("observer", ""), "strace") << r;
    EXPECT_TRUE(lists(record, key())) << r;
}

// Control: where its programs load (root), "auto" with it first audits with it.
TEST_F(Audit, AutoTakesTheEbpfObserverWhereItLoads) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "loading BPF programs needs root";
    }
    const auto r = run({.command = {"cat", key()},
                        .config = "[audit]\nauto_order = [\"ebpf\", \"strace\"]\n",
                        .options = {"--json"}});
    const auto record = json::parse(r.out, nullptr, false);
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_EQ(record["audit"].value("observer", ""), "ebpf") << r;
    EXPECT_TRUE(lists(record, key())) << r;
}
#endif

// The observer writes each event's paths into its JSON answer: quotes, backslashes, control
// bytes and bytes that are not UTF-8 must come back as the very names the target opened.
TEST_F(Audit, HostilePathNamesAreListedExactly) {
    const std::vector<std::string> names = {"a \"quoted\" name", "back\\slash", "line\nbreak",
                                            "ctrl\x01byte", std::string{"latin\xe9"}};
    std::vector<std::string> paths;
    for (const auto &n : names) {
        paths.push_back((outside_ / n).string());
        make_file(paths.back(), "x\n", 0644);
    }
    std::vector<std::string> command = {"python3", "-c",
                                        "import sys, os\nfor p in sys.argv[1:]:\n"
                                        "    open(os.fsencode(p), 'rb').read()\n"};
    command.insert(command.end(), paths.begin(), paths.end());
    const auto [r, record] = audited(command);
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_TRUE(record["audit"]["complete"].get<bool>()) << r;
    for (const auto &p : paths) {
        bool found = false;
        for (const auto &f : record["audit"]["findings"]) {
            found = found || tea::bytes::from_json(f["path"], "path") == p;
        }
        EXPECT_TRUE(found) << p << "\n" << r;
    }
}

// strace runs in the child that sets the call's limits, so a trace larger than the file-size
// limit stops it part-way; what it wrote must not pass for a complete audit.
TEST_F(Audit, ATraceCutShortByTheCallsLimitsIsIncomplete) {
    const std::vector<std::string> busy = {
        "sh", "-c", "for i in $(seq 300); do cat /etc/hostname; done >/dev/null; cat " + key()};
    const auto small = run(
        {.command = busy,
         .config =
             "[audit]\nauto_order = [\"strace\"]\n[plugin.bubblewrap]\nfile_size_bytes = 8192\n",
         .options = {"--json"}});
    const auto record = json::parse(small.out, nullptr, false);
    ASSERT_FALSE(record.is_discarded()) << small;
    EXPECT_FALSE(record["audit"]["complete"].get<bool>()) << small;
    EXPECT_NE(small.err.find("SIGXFSZ"), std::string::npos) << small;
    // The positive control: the same call under the default limit is audited to the end.
    const auto [r, full] = audited(busy);
    EXPECT_TRUE(full["audit"]["complete"].get<bool>()) << r;
    EXPECT_TRUE(lists(full, key())) << r;
}

TEST_F(Audit, TheObserversConfirmationIsNotCutByTheCallsFileSizeLimit) {
    // A strace of a path of its own, so no stamp remembers a confirmation and this call makes
    // one, under the same small file-size limit that cuts the call's own trace.
    const auto own_strace = base() / "strace";
    make_file(own_strace, "#!/bin/sh\nexec /usr/bin/strace \"$@\"\n", 0755);
    const std::vector<std::string> busy = {
        "sh", "-c", "for i in $(seq 300); do cat /etc/hostname; done >/dev/null; cat " + key()};
    const auto r =
        run({.command = busy,
             .config =
                 "[audit]\nauto_order = [\"strace\"]\n[plugin.bubblewrap]\nfile_size_bytes = 8192\n"
                 "[plugin.strace]\nstrace = \"" +
                 own_strace.string() + "\"\n",
             .options = {"--json"}});
    EXPECT_EQ(r.err.find("did not see a confined process read its probe file"), std::string::npos)
        << r;
    const auto record = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(record.is_discarded()) << r;
    EXPECT_FALSE(record["audit"]["complete"].get<bool>()) << r;  // the call's trace is cut
    EXPECT_NE(r.err.find("SIGXFSZ"), std::string::npos) << r;
}

TEST_F(Audit, DeclaredSystemPathIsNotListed) {
    const auto [r, record] = audited({"cat", key()}, {"--strict", "--system-path", outside_});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_NE(r.err.find("PRIVATE KEY"), std::string::npos) << r;
    EXPECT_FALSE(lists(record, key())) << r;
    // Control: without the declaration the same read is listed.
    const auto [c, control] = audited({"cat", key()});
    EXPECT_TRUE(lists(control, key())) << c;
}

TEST_P(AuditEitherIdentity, WithheldFolderIsListedEvenThoughTheReadFailed) {
    const auto [r, record] =
        audited({"cat", secret_file().string()}, {"--strict"}, {withheld().string()});
    EXPECT_EQ(r.status, 3) << r;
    EXPECT_EQ(r.err.find(secret()), std::string::npos) << "the secret stayed hidden" << r;
    EXPECT_EQ(record["callStatus"], 1) << "cat failed" << r;
    EXPECT_TRUE(lists(record, secret_file().string())) << r;
    // Even under a declared system path, the withheld folder is listed.
    const auto [d, declared] = audited({"cat", secret_file().string()},
                                       {"--system-path", workspace()}, {withheld().string()});
    EXPECT_TRUE(lists(declared, secret_file().string())) << d;
}

TEST_F(Audit, MissingFileAndMetadataProbeAreNotListed) {
    const auto missing = (outside_ / "missing").string();
    const auto [r, record] =
        audited({"sh", "-c", "cat \"$1\"; test -e \"$2\" && echo EXISTS", "sh", missing, key()},
                {"--strict"});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_NE(r.err.find("EXISTS"), std::string::npos) << "the probe saw the file" << r;
    EXPECT_TRUE(record["audit"]["complete"].get<bool>()) << r;
    EXPECT_TRUE(record["audit"]["findings"].empty()) << r;
}

TEST_F(Audit, EveryKindOfProcessIsSeenAlike) {
    const auto file = key();
    const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
        {"shell", {"sh", "-c", "read line < \"$1\"; echo \"$line\"", "sh", file}},
        {"python",
         {"/usr/bin/python3", "-I", "-c", "import sys; print(open(sys.argv[1]).read())", file}},
        {"node with an empty environment",
         {"env", "-i", "/usr/bin/node", "-e",
          "process.stdout.write(require('fs').readFileSync(process.argv[1]))", file}},
        {"native", {"/usr/bin/head", "-c", "11", file}},
    };
    for (const auto &[name, command] : cases) {
        const auto [r, record] = audited(command);
        EXPECT_EQ(r.status, 0) << name << r;
        EXPECT_NE(r.err.find("PRIVATE KEY"), std::string::npos) << name << r;
        EXPECT_TRUE(lists(record, file)) << name << r;
    }
}

TEST_P(AuditEitherIdentity, LinkInTheWorkspaceReportsWhereItLeads) {
    fs::create_symlink(key(), workspace() / "innocent.txt");
    const auto [r, record] = audited({"cat", (workspace() / "innocent.txt").string()});
    EXPECT_NE(r.err.find("PRIVATE KEY"), std::string::npos) << r;
    EXPECT_TRUE(lists(record, key())) << r;
    EXPECT_FALSE(lists(record, (workspace() / "innocent.txt").string())) << r;
}

TEST_P(AuditEitherIdentity, ExecAndRefusedWriteThroughAPlantedLinkAreJudgedByTheTarget) {
    // A binary outside the grants, reached through a link in the workspace.
    const auto tool = outside_ / "tool";
    fs::copy_file("/usr/bin/true", tool);
    fs::permissions(tool, fs::perms{0755});
    fs::create_symlink(tool, workspace() / "tool");
    fs::create_symlink("/etc/hostname", workspace() / "hostname-link");
    const auto [r, record] =
        audited({"sh", "-c", "./tool && echo RAN; echo x > hostname-link || echo REFUSED"});
    EXPECT_NE(r.err.find("RAN"), std::string::npos) << r;
    EXPECT_NE(r.err.find("REFUSED"), std::string::npos) << r;
    EXPECT_TRUE(lists(record, tool.string())) << "executing reads the binary" << r;
    EXPECT_TRUE(lists(record, "/etc/hostname")) << "the write the confinement refused" << r;
    EXPECT_FALSE(lists(record, (workspace() / "tool").string())) << r;
}

TEST_F(Audit, ASystemPathThatIsALinkGrantsWhereItLeads) {
    fs::create_symlink(outside_, base() / "declared");
    const auto [r, record] =
        audited({"cat", key()}, {"--strict", "--system-path", base() / "declared"});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_FALSE(lists(record, key())) << r;
}

TEST_F(Audit, PreflightWithholdsTheCopyOfAWithheldFolder) {
    const auto r = run({.command = {"cat", ".tea/secret"},
                        .withhold = {withheld().string()},
                        .subcommand = "preflight"});
    EXPECT_EQ(r.status, 3) << r;
    EXPECT_EQ(r.err.find(secret()), std::string::npos) << "the copy stayed hidden" << r;
    EXPECT_NE(r.err.find(".tea/secret"), std::string::npos) << "and was listed" << r;
}

TEST_F(Audit, OptOutIsNeverReportedAsAudited) {
    Call call{.backend = Backend::opt_out, .command = {"cat", key()}, .options = {"--json"}};
    const auto r = run(call);
    const auto record = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(record.is_discarded()) << r;
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_NE(r.err.find("PRIVATE KEY"), std::string::npos) << r;
    EXPECT_FALSE(record["audit"]["audited"].get<bool>()) << r;
    EXPECT_FALSE(record["audit"].contains("findings")) << "no list, not an empty one" << r;
    call.options = {"--strict"};
    EXPECT_EQ(run(call).status, 3) << "--strict cannot pass unaudited";
}

// A stand-in for strace that answers -V as told and runs the command untraced.
std::string fake_strace(const fs::path &dir, const std::string &version) {
    const auto path = dir / ("strace-" + random_token());
    make_file(path,
              "#!/bin/sh\nif [ \"$1\" = -V ]; then echo 'strace -- version " + version +
                  "'; exit 0; fi\nwhile [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n",
              0755);
    return path.string();
}

TEST_F(Audit, AnObserverThatSeesNothingIsRefused) {
    const auto blind = fake_strace(base(), "6.1");
    const auto r =
        run({.command = {"cat", key()},
             .config = "[audit]\nauto_order = [\"strace\"]\n[plugin.strace]\nstrace = \"" + blind +
                       "\"\n"});
    EXPECT_EQ(r.status, 12) << r;
    EXPECT_NE(r.err.find("did not see"), std::string::npos) << r;
    EXPECT_EQ(r.err.find("PRIVATE KEY"), std::string::npos) << "nothing ran unaudited" << r;
}

#if defined(TEA_EBPF_OBSERVER) || defined(TEA_SECCOMP_OBSERVER)
// Each kernel-side observer is confirmed by the same probe as strace before any call runs. Its
// program around the plan (the eBPF enter program, the seccomp supervisor) covered by one that runs
// the plan untraced, as a broken install or a host that refuses the mechanism would: the probe is
// not seen, the command stops with exit 12 and the target never runs.
class AuditBlindObserver : public Audit, public ::testing::WithParamInterface<const char *> {};

TEST_P(AuditBlindObserver, AnObserverThatSeesNothingIsRefusedBeforeTheTargetRuns) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "covering the observer's program takes a mount namespace of root's";
    }
    const std::string observer = GetParam();
    const auto program = fs::path{TEA_EVALUATE_BIN}.parent_path().parent_path() / "libexec" /
                         "tea-evaluate" /
                         (observer == "ebpf" ? "tea-ebpf-enter" : "tea-seccomp-supervise");
    ASSERT_TRUE(fs::exists(program)) << program;
    // Runs what follows its `--` untraced: no token claimed, no filter installed, no record.
    const auto blind = base() / ("blind-" + observer);
    make_file(blind,
              "#!/bin/sh\nunset TEA_EBPF_TOKEN TEA_SECCOMP_NONCE\n"
              "while [ $# -gt 0 ] && [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n",
              0755);
    const auto marker = workspace() / "ran";
    const std::vector<std::string> covering{
        "/usr/bin/unshare",
        "--mount",
        "--",
        "/bin/sh",
        "-c",
        "/bin/mount --bind \"$0\" \"$1\" && shift && exec \"$@\"",
        blind.string(),
        program.string()};
    const std::vector<std::string> command{"sh", "-c", "echo ran > " + marker.string()};
    const auto r =
        run({.command = command, .options = {"--observer", observer}, .wrapper = covering});
    EXPECT_EQ(r.status, 12) << r;
    EXPECT_NE(r.err.find("did not see a confined process read its probe file"), std::string::npos)
        << r;
    EXPECT_FALSE(fs::exists(marker)) << "nothing ran unaudited" << r;
    // The control: the same command with the observer's own program is confirmed and audited.
    const auto seen = run({.command = command, .options = {"--observer", observer}});
    EXPECT_EQ(seen.status, 0) << seen;
    EXPECT_TRUE(fs::exists(marker)) << seen;
}

std::vector<const char *> kernel_side_observers() {
    auto out = observers_of_the_build();
    std::erase_if(out, [](std::string_view name) { return name == "strace"; });
    return out;
}
INSTANTIATE_TEST_SUITE_P(Observers, AuditBlindObserver,
                         ::testing::ValuesIn(kernel_side_observers()));
#endif

TEST_F(Audit, AnOldOrMissingStraceIsRefusedByVersion) {
    // A strace the configuration names is the one to change: installing the package would not
    // help.
    const auto old = fake_strace(base(), "5.10");
    const auto r =
        run({.command = {"true"},
             .config = "[audit]\nauto_order = [\"strace\"]\n[plugin.strace]\nstrace = \"" + old +
                       "\"\n"});
    EXPECT_EQ(r.status, 12) << r;
    EXPECT_NE(r.err.find("version 5.10"), std::string::npos) << r;
    EXPECT_NE(r.err.find("set [plugin.strace] strace = \"" + old + "\" to a newer one"),
              std::string::npos)
        << r;
    EXPECT_EQ(r.err.find("apt-get"), std::string::npos) << r;
    const auto missing =
        run({.command = {"true"},
             .config = "[audit]\nauto_order = [\"strace\"]\n[plugin.strace]\nstrace = "
                       "\"/nonexistent/strace\"\n"});
    EXPECT_EQ(missing.status, 12) << missing;
    EXPECT_NE(missing.err.find(R"([plugin.strace] strace = "/nonexistent/strace" cannot be run )"
                               "(No such file or directory); set it to strace 6.1 or later, or "
                               "remove it to use the system's strace"),
              std::string::npos)
        << missing;
    EXPECT_EQ(missing.err.find("apt-get"), std::string::npos) << missing;
    const auto word = run(
        {.command = {"true"},
         .config =
             "[audit]\nauto_order = [\"strace\"]\n[plugin.strace]\nstrace = \"strace-nowhere\"\n"});
    EXPECT_EQ(word.status, 12) << word;
    EXPECT_NE(word.err.find(R"([plugin.strace] strace = "strace-nowhere" names no program in )"
                            "/usr/bin, /bin or /usr/local/bin"),
              std::string::npos)
        << word;
    // The control: the host's strace, named by the default, audits the call.
    EXPECT_EQ(run({.command = {"true"}}).status, 0);
}

TEST_F(Audit, AMissingOrOldSystemStraceIsRefusedWithTheWayToInstallIt) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "hiding the host's strace takes a mount namespace of root's";
    }
    const auto system_strace = fs::canonical("/usr/bin/strace");
    const std::vector<std::string> exec{
        TEA_EVALUATE_BIN, "exec",        "--backend",          "bubblewrap", "--observer",
        "strace",         "--workspace", workspace().string(), "--",         "true"};
    const auto missing = run_covering(system_strace, "/dev/null", exec);
    EXPECT_EQ(missing.status, 12) << missing;
    EXPECT_NE(missing.err.find("strace (strace) is not installed; the audit needs strace 6.1 or "
                               "later: apt-get install strace"),
              std::string::npos)
        << missing;
    // The system's strace too old: the package is the way out.
    const auto old = fake_strace(base(), "5.10");
    const auto outdated = run_covering(system_strace, old, exec);
    EXPECT_EQ(outdated.status, 12) << outdated;
    EXPECT_NE(outdated.err.find("version 5.10"), std::string::npos) << outdated;
    EXPECT_NE(outdated.err.find("apt-get install strace from Debian 12 or newer"),
              std::string::npos)
        << outdated;
    // The control: the same command line with the host's strace in place.
    const auto present = run_direct(exec);
    EXPECT_EQ(present.status, 0) << present;
}

// A stand-in for strace that counts its runs in `counter` and fails those whose number matches
// the shell pattern `failing` (before running anything, with bwrap's `message`), as a
// confinement that ends before the target starts; the other runs are the real strace.
std::filesystem::path counting_strace(const std::filesystem::path &dir, const std::string &failing,
                                      const std::string &message) {
    const auto counter = dir / "runs";
    // As root the observer runs as the sandbox identity: it must be able to count.
    make_file(counter, "0\n", 0666);
    auto script = dir / "counting-strace";
    make_file(script,
              "#!/bin/sh\nif [ \"$1\" = -V ]; then exec /usr/bin/strace -V; fi\n"
              "n=$(cat '" +
                  counter.string() + "' 2>/dev/null || echo 0); n=$((n+1)); echo $n >'" +
                  counter.string() + "'\ncase $n in " + failing + ") echo '" + message +
                  "' >&2; exit 1;; esac\nexec /usr/bin/strace \"$@\"\n",
              0755);
    return script;
}

// How many times counting_strace ran in `dir`.
int strace_runs(const std::filesystem::path &dir) {
    std::ifstream in{dir / "runs"};
    int runs = 0;
    in >> runs;
    return runs;
}

TEST_F(Audit, AConfinementThatFailsBeforeTheTargetStartsIsTriedOnceMore) {
    // The 1st and 3rd runs fail the way bwrap does when a host socket vanished between the scan
    // and the bind: before anything of the target ran.
    const auto flaky =
        counting_strace(base(), "1|3", "bwrap: Cannot create file at /tmp/gone.sock");
    const auto r =
        run({.command = {"cat", key()},
             .config = "[audit]\nauto_order = [\"strace\"]\n[plugin.strace]\nstrace = \"" +
                       flaky.string() + "\"\n"});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_NE(r.out.find("PRIVATE KEY"), std::string::npos) << r;
    EXPECT_NE(r.err.find(key()), std::string::npos) << "still audited" << r;
    EXPECT_EQ(strace_runs(base()), 4) << "the confirmation and the call each tried twice" << r;

    // Control: a confinement that never starts the target is not retried forever.
    const auto broken = base() / "broken-strace";
    make_file(broken,
              "#!/bin/sh\nif [ \"$1\" = -V ]; then exec /usr/bin/strace -V; fi\n"
              "echo 'bwrap: nothing works' >&2; exit 1\n",
              0755);
    const auto b =
        run({.command = {"cat", key()},
             .config = "[audit]\nauto_order = [\"strace\"]\n[plugin.strace]\nstrace = \"" +
                       broken.string() + "\"\n"});
    EXPECT_EQ(b.status, 12) << b;
}

TEST_F(Audit, AConfinementThatNeverStartsTheTargetIsAHostFailureNotTheTargetsStatus) {
    // The confirmation passes (the first run), then every confinement fails before the target
    // starts, as bwrap does when the sandbox account has reached its process limit.
    const auto failing =
        counting_strace(base(), "[2-9]|[1-9][0-9]*",
                        "bwrap: Creating new namespace failed: Resource temporarily unavailable");
    const auto r =
        run({.command = {"cat", key()},
             .config = "[audit]\nauto_order = [\"strace\"]\n[plugin.strace]\nstrace = \"" +
                       failing.string() + "\"\n"});
    EXPECT_EQ(r.status, 12) << r;
    EXPECT_NE(r.err.find("before the target started, twice"), std::string::npos) << r;
    EXPECT_EQ(r.out.find("PRIVATE KEY"), std::string::npos) << r;
    EXPECT_EQ(strace_runs(base()), 3) << "the confirmation once, the call twice" << r;
    // The control is AConfinementThatFailsBeforeTheTargetStartsIsTriedOnceMore: one failure,
    // then the target runs and its own status (0) comes back.
}

TEST_F(Audit, PreflightNamesWhatEveryLegOpened) {
    make_file(outside_ / "sometimes", "x\n", 0644);
    // The first leg alone also reads "sometimes": only "id_rsa" is opened by every leg.
    const std::string script =
        "case \"$PWD\" in *leg-1-*) cat \"$2\" >/dev/null;; esac; cat \"$1\" >/dev/null";
    const auto r =
        run({.command = {"sh", "-c", script, "sh", key(), (outside_ / "sometimes").string()},
             .subcommand = "preflight",
             .options = {"--json"}});
    EXPECT_EQ(r.status, 3) << r;
    const auto record = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(record.is_discarded()) << r;
    EXPECT_EQ(record["everyLeg"], json::array({key()})) << r;
    EXPECT_EQ(record["someLegs"], json::array({(outside_ / "sometimes").string()})) << r;
    EXPECT_EQ(record["legs"].size(), 2U) << r;
    // Two legs, two homes.
    EXPECT_NE(r.err.find("leg 2"), std::string::npos) << r;

    // Control: a target that stays in its workspace passes.
    const auto clean = run({.command = {"cat", "notes.txt"}, .subcommand = "preflight"});
    EXPECT_EQ(clean.status, 0) << clean;
}

int open_as_nobody(const fs::path &path) {
    return test::open_as(path.string(), test::kNobody, test::kNobody);
}

// Leg n's copy under a preflight's temp directory `tmp` (leg-n, or leg-n-<random>), once its
// target has started (it wrote `started`), in a legs' directory other than `besides`; empty after
// a minute without one.
fs::path wait_for_leg(const fs::path &tmp, int n, const fs::path &besides = {}) {
    const auto plain = "leg-" + std::to_string(n);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds{60};
    while (std::chrono::steady_clock::now() < until) {
        std::error_code ec;
        for (const auto &legs : fs::directory_iterator{tmp, ec}) {
            if (legs.path() == besides) {
                continue;
            }
            for (const auto &leg : fs::directory_iterator{legs.path(), ec}) {
                const auto name = leg.path().filename().string();
                if ((name == plain || name.rfind(plain + "-", 0) == 0) &&
                    fs::exists(leg.path() / "started", ec)) {
                    return leg.path();
                }
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    return {};
}

// A temp directory like /tmp under `base`, for a preflight's legs, and a preflight whose target, in
// each leg, writes `started` into its workspace and waits until a file `go` appears there.
fs::path shared_temp_directory(const fs::path &base) {
    auto tmp = base / "tmp";
    fs::create_directory(tmp);
    fs::permissions(tmp, fs::perms{01777});
    return tmp;
}

Call waiting_preflight(const fs::path &tmp) {
    return {.command = {"sh", "-c", "touch started; until [ -e go ]; do sleep 0.05; done"},
            .env = {"TMPDIR=" + tmp.string()},
            .subcommand = "preflight"};
}

// Lets a waiting preflight finish: `first` is its leg 1, and its leg 2 lies in a legs' directory
// other than `besides`.
Result release_both_legs(Process &preflight, const fs::path &tmp, const fs::path &first,
                         const fs::path &besides = {}) {
    make_file(first / "go", "", 0644);
    const auto second = wait_for_leg(tmp, 2, besides);
    EXPECT_FALSE(second.empty()) << "no second leg";
    if (second.empty()) {
        ::kill(preflight.pid(), SIGKILL);
    } else {
        make_file(second / "go", "", 0644);
    }
    return preflight.wait();
}

// The copy of a workspace is out of other users' reach while preflight runs: the invoker's alone
// when the runtime is unprivileged, and the invoker's and the sandbox account's group's when it is
// root (the sandbox account must reach it then). Its unguessable name is not enough: once a leg's
// call runs, `ps` shows the name to every user (the helper's --cwd).
class AuditPreflightLegs : public AuditEitherIdentity {};

TEST_P(AuditPreflightLegs, ALegsCopyIsOutOfOtherUsersReach) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "acting as another local user needs root";
    }
    // A temp directory like /tmp, so the legs' directory is the only thing in the way.
    const auto tmp = shared_temp_directory(base());
    auto preflight = start(waiting_preflight(tmp));
    const auto leg = wait_for_leg(tmp, 1);
    ASSERT_FALSE(leg.empty()) << preflight.wait(std::chrono::seconds{1});
    const auto legs = leg.parent_path();
    EXPECT_EQ(open_as_nobody(legs), EACCES) << "the legs' directory is not listable";
    const auto guessed = legs / "leg-1" / "notes.txt";  // a name a local user could guess
    if (GetParam().identity == Identity::unprivileged) {
        EXPECT_EQ(open_as_nobody(guessed), EACCES);
        EXPECT_EQ(open_as_nobody(leg / "notes.txt"), EACCES) << "only the invoker may search";
        // Control: the same open, with the legs' directory searchable by all, reaches the copy.
        fs::permissions(legs, fs::perms{0711});
        EXPECT_EQ(open_as_nobody(leg / "notes.txt"), 0);
        fs::permissions(legs, fs::perms{0700});
    } else {
        struct stat st {};
        ASSERT_EQ(::stat(legs.c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 07777U, 0710U);
        EXPECT_EQ(st.st_gid, sandbox_gid()) << "searchable by the sandbox account's group alone";
        EXPECT_EQ(open_as_nobody(guessed), EACCES);
        EXPECT_EQ(open_as_nobody(leg / "notes.txt"), EACCES) << "its real name does not help";
        // Controls: the sandbox account still reaches its copy, and another user would too,
        // were the directory searchable by all as it is before the first call.
        EXPECT_EQ(test::open_as((leg / "notes.txt").string(), sandbox_uid(), sandbox_gid()), 0);
        fs::permissions(legs, fs::perms{0711});
        EXPECT_EQ(open_as_nobody(leg / "notes.txt"), 0);
        fs::permissions(legs, fs::perms{0710});
    }
    const auto r = release_both_legs(preflight, tmp, leg);
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_FALSE(fs::exists(legs)) << "the copies are removed at the end";
}

INSTANTIATE_TEST_SUITE_P(Identities, AuditPreflightLegs, ::testing::ValuesIn(audited_by(false)));

// A preflight killed mid-leg leaves its copies; the next preflight of the same user removes them,
// and leaves a live one's alone.
TEST_F(Audit, AKilledPreflightsCopiesAreReclaimedByTheNext) {
    const auto tmp = shared_temp_directory(base());
    const auto waiting = waiting_preflight(tmp);
    auto killed = start(waiting);
    const auto killed_leg = wait_for_leg(tmp, 1);
    ASSERT_FALSE(killed_leg.empty()) << killed.wait(std::chrono::seconds{1});
    ::kill(killed.pid(), SIGKILL);
    killed.wait();
    const auto left = killed_leg.parent_path();
    ASSERT_TRUE(fs::exists(left / "lock")) << "the kill left the copies";

    auto live = start(waiting);
    const auto live_leg = wait_for_leg(tmp, 1, left);
    ASSERT_FALSE(live_leg.empty()) << live.wait(std::chrono::seconds{1});
    const auto next = run({.command = {"cat", "notes.txt"},
                           .env = {"TMPDIR=" + tmp.string()},
                           .subcommand = "preflight"});
    EXPECT_EQ(next.status, 0) << next;
    EXPECT_FALSE(fs::exists(left)) << "the killed run's copies are reclaimed";
    // Control: the live run's copy, in the same temp directory, is still there.
    EXPECT_TRUE(fs::exists(live_leg / "notes.txt"));

    const auto r = release_both_legs(live, tmp, live_leg, left);
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_TRUE(fs::is_empty(tmp)) << "every run's copies are gone";
}

TEST_F(Audit, PreflightRefusesAnUnauditedCall) {
    const auto r =
        run({.command = {"true"}, .subcommand = "preflight", .options = {"--observer", "none"}});
    EXPECT_EQ(r.status, 12) << r;
    EXPECT_NE(r.err.find("audit"), std::string::npos) << r;
}

// ---- the file an access really reached ----------------------------------------------------------

// Probes of what a target can do to be judged by another file than the one it read or ran. Each
// runs a binary outside the grants (a copy of echo under the fixture's outside folder) or reads the
// key there, by a way the audit once judged by the path asked for; the control shows the same probe
// doing it unobserved.
class AuditOfTheRealFile : public AuditEitherIdentity {
   protected:
    void SetUp() override {
        AuditEitherIdentity::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }
        tool_ = outside_ / "tool";
        fs::copy_file("/bin/echo", tool_);
        fs::permissions(tool_, fs::perms{0755});
        mark_ = "RAN-" + random_token(8);
    }

    static bool lists_unverified(const json &record) {
        for (const auto &f : record["audit"].value("findings", json::array())) {
            if (f.value("reason", "").find("could not be verified") != std::string::npos) {
                return true;
            }
        }
        return false;
    }

    // A shell command run in the workspace.
    [[nodiscard]] std::vector<std::string> in_workspace(const std::string &script) const {
        return {"/bin/sh", "-c", "cd '" + workspace().string() + "' && " + script};
    }

    // The eBPF observer reads, in the kernel, the file an exec runs: such an exec is judged by
    // that file, where strace has only the name it was given and lists it as unverified.
    [[nodiscard]] bool sees_the_file_run() const {
        return observer_ == "ebpf" || observer_ == "seccomp";
    }

    // The exec of the tool is listed: by its file, or as one whose file nobody could verify.
    [[nodiscard]] bool lists_the_tool(const json &record) const {
        return sees_the_file_run() ? lists(record, tool_.string()) : lists_unverified(record);
    }

    fs::path tool_;
    std::string mark_;
};

// The probes the eBPF observer also runs (where it is built): an exec through a descriptor link,
// which it judges by the file that ran, and the descriptor swap. The others of this suite follow
// what a name named on the host, which the eBPF observer reads in the kernel instead; its own
// exec tests are observer-ebpf/kernel_test.cpp.
class AuditOfTheRealFileEachObserver : public AuditOfTheRealFile {};

// execve("/dev/fd/N") of an O_PATH descriptor runs whatever N names, while the path lies under
// /dev; the same goes for /proc's descriptor links and /dev/stdin.
TEST_P(AuditOfTheRealFileEachObserver, ExecThroughADescriptorLinkIsListed) {
    const std::string probe =
        "import os, sys\n"
        "fd = os.open(sys.argv[1], os.O_PATH)\n"
        "os.set_inheritable(fd, True)\n"
        "link = sys.argv[2]\n"
        "if link == '/dev/stdin':\n"
        "    os.dup2(fd, 0)\n"
        "link = link.format(fd=fd, pid=os.getpid())\n"
        "os.execv(link, ['tool', sys.argv[3]])\n";
    for (const std::string link :
         {"/dev/fd/{fd}", "/proc/self/fd/{fd}", "/proc/thread-self/fd/{fd}", "/proc/{pid}/fd/{fd}",
          "/dev/stdin"}) {
        const std::vector<std::string> command{"python3", "-c", probe, tool_.string(), link, mark_};
        const auto [r, record] = audited(command, {"--strict"});
        EXPECT_NE(r.err.find(mark_), std::string::npos) << link << ": the tool ran" << r;
        EXPECT_EQ(r.status, 3) << link << r;
        EXPECT_TRUE(lists_the_tool(record)) << link << r;

        // Control: unobserved, the same exec runs the tool all the same.
        const auto [u, unobserved] = audited(command, {"--observer", "none"});
        EXPECT_EQ(u.status, 0) << link << u;
        EXPECT_NE(u.err.find(mark_), std::string::npos) << link << u;
    }
    // Control: the tool run by its own path is listed by that path.
    const auto [d, direct] = audited({tool_.string(), mark_}, {"--strict"});
    EXPECT_EQ(d.status, 3) << d;
    EXPECT_TRUE(lists(direct, tool_.string())) << d;
}

// strace shows only the path an execve asked for. A link the target plants in its workspace,
// runs and removes within the call, or plants in one call and removes in the next, leaves nothing
// on the host to follow after the call; the same with a directory link, and with a script whose #!
// line names the tool through a link.
TEST_P(AuditOfTheRealFile, ExecOfALinkPlantedAndRemovedIsListed) {
    const std::string tool = tool_.string();
    const std::string outside = outside_.string();
    const std::string ws = workspace().string();
    const std::vector<std::pair<std::string, std::string>> attacks = {
        {"a link made, run and removed", "ln -s " + tool + " x && ./x " + mark_ + "; rm x"},
        {"a directory link", "ln -s " + outside + " d && ./d/tool " + mark_ + "; rm d"},
        {"a script's interpreter through a link", "ln -s " + tool + " interp && printf '#!" + ws +
                                                      "/interp\\n' > s && chmod +x s && ./s " +
                                                      mark_ + "; rm interp"},
    };
    for (const auto &[what, script] : attacks) {
        const auto [r, record] = audited(in_workspace(script), {"--strict"});
        EXPECT_NE(r.err.find(mark_), std::string::npos) << what << ": the tool ran" << r;
        EXPECT_EQ(r.status, 3) << what << r;
        EXPECT_FALSE(record["audit"]["findings"].empty()) << what << r;
        fs::remove(workspace() / "s");

        // Control: unobserved, the same script runs the tool.
        const auto [u, unobserved] = audited(in_workspace(script), {"--observer", "none"});
        EXPECT_EQ(u.status, 0) << what << u;
        EXPECT_NE(u.err.find(mark_), std::string::npos) << what << u;
        fs::remove(workspace() / "s");
    }

    // A link planted by an earlier call and removed by this one.
    const auto [p, planted] = audited(in_workspace("ln -s " + tool + " y"), {"--strict"});
    EXPECT_EQ(p.status, 0) << "making a link reads nothing" << p;
    const auto [r, record] = audited(in_workspace("./y " + mark_ + "; rm y"), {"--strict"});
    EXPECT_NE(r.err.find(mark_), std::string::npos) << r;
    EXPECT_EQ(r.status, 3) << r;
    // By the file it ran where the observer sees it (seccomp: /proc/PID/exe), else unverified.
    EXPECT_TRUE(lists_the_tool(record)) << r;

    // Control: the link left in place is followed on the host after the call.
    ASSERT_EQ(audited(in_workspace("ln -s " + tool + " z"), {"--strict"}).first.status, 0);
    const auto [k, kept] = audited(in_workspace("./z " + mark_), {"--strict"});
    EXPECT_EQ(k.status, 3) << k;
    EXPECT_TRUE(lists(kept, tool)) << k;
}

// The kernel maps an ELF program's loader (its PT_INTERP) without any call the trace shows. A
// program in the workspace whose loader is a copy outside the grants runs that copy unseen by the
// trace; the audit reads the loader from the program after the call and judges it as an exec.
// The eBPF observer reports the loader the kernel mapped, so it lists the copy also when the call
// removed the program before anything could read it; strace's audit cannot.
TEST_P(AuditOfTheRealFileEachObserver, AProgramWhoseLoaderLiesOutsideTheGrantsIsListed) {
    std::ifstream in{"/bin/echo", std::ios::binary};
    std::string program{std::istreambuf_iterator<char>{in}, {}};
    std::string loader;
    for (const char *candidate : {"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"}) {
        if (program.find(std::string{candidate} + '\0') != std::string::npos) {
            loader = candidate;
        }
    }
    ASSERT_FALSE(loader.empty()) << "/bin/echo names no loader this test knows";
    // A copy of the loader under a name no longer than the original, outside every grant and
    // outside the host's temp directories, which the target sees as its call's own.
    const char *home = std::getenv("HOME");  // NOLINT(concurrency-mt-unsafe)
    std::string dir_template =
        std::string{::geteuid() == 0 || home == nullptr ? "/var/lib" : home} + "/tea-ld-XXXXXX";
    if (dir_template.size() + 3 > loader.size()) {
        GTEST_SKIP() << "no directory of a name as short as the loader's: " << dir_template;
    }
    ASSERT_NE(::mkdtemp(dir_template.data()), nullptr);
    const fs::path dir{dir_template};
    const RemovedAtEnd remove_dir{dir};
    fs::permissions(dir, fs::perms{0755});
    const auto copy = dir / "ld";
    ASSERT_LE(copy.string().size(), loader.size());
    fs::copy_file(fs::canonical(loader), copy);
    fs::permissions(copy, fs::perms{0755});
    std::string patched = program;
    const auto at = patched.find(loader + '\0');
    patched.replace(at, loader.size(),
                    copy.string() + std::string(loader.size() - copy.string().size(), '\0'));
    make_file(workspace() / "prog", patched, 0755);
    make_file(workspace() / "plain", program, 0755);
    hand_to_caller(workspace());

    const auto [r, record] = audited(in_workspace("./prog " + mark_), {"--strict"});
    EXPECT_NE(r.err.find(mark_), std::string::npos) << "the program ran" << r;
    EXPECT_EQ(r.status, 3) << r;
    EXPECT_TRUE(lists(record, copy.string())) << r;
    const auto [m, removed] =
        audited(in_workspace("cp prog mine && ./mine " + mark_ + "; rm mine"), {"--strict"});
    EXPECT_NE(m.err.find(mark_), std::string::npos) << "the program ran" << m;
    EXPECT_EQ(lists(removed, copy.string()), sees_the_file_run()) << m;
    // Controls: unobserved, the program runs through the copy all the same; and a program whose
    // loader is the system's is not listed.
    const auto [u, unobserved] = audited(in_workspace("./prog " + mark_), {"--observer", "none"});
    EXPECT_EQ(u.status, 0) << u;
    EXPECT_NE(u.err.find(mark_), std::string::npos) << u;
    const auto [c, plain] = audited(in_workspace("./plain " + mark_), {"--strict"});
    EXPECT_EQ(c.status, 0) << c;
    EXPECT_TRUE(plain["audit"]["findings"].empty()) << c;
}

// What the fail-closed rule leaves alone: a program the call builds (here, copies), runs and
// removes is a file of the workspace, not a link.
TEST_P(AuditOfTheRealFile, AFileTheCallMadeRanAndRemovedIsNotListed) {
    const auto [r, record] =
        audited(in_workspace("cp /bin/echo mine && ./mine " + mark_ + " && rm mine"), {"--strict"});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_NE(r.err.find(mark_), std::string::npos) << r;
    EXPECT_TRUE(record["audit"]["findings"].empty()) << r;

    // A file made by an earlier call, run and deleted by this one, cannot be checked by its name:
    // listed. An observer that sees the file run (seccomp) judges that file, in the workspace.
    ASSERT_EQ(audited(in_workspace("cp /bin/echo older"), {"--strict"}).first.status, 0);
    const auto [d, deleted] =
        audited(in_workspace("./older " + mark_ + "; rm older"), {"--strict"});
    EXPECT_EQ(d.status, sees_the_file_run() ? 0 : 3) << d;
    EXPECT_EQ(lists_unverified(deleted), !sees_the_file_run()) << d;
}

// A sibling thread that shares the reader's descriptor table replaces the descriptor an open
// returned (dup2, or close and dup) with one of a granted decoy before strace reads its path at
// the open's return, keeping a copy of the real one: the trace then names the decoy. The race is
// won in some calls only, so the probe runs several times; whenever it read the key, the key must
// be listed.
TEST_P(AuditOfTheRealFileEachObserver, ADescriptorSwappedBeforeTheTracerReadsItIsStillListed) {
    const auto probe = workspace() / "fd_swap_probe";
    fs::copy_file(TEA_FD_SWAP_PROBE, probe);
    fs::permissions(probe, fs::perms{0755});
    const std::string decoy = (workspace() / "notes.txt").string();
    for (const std::string mode : {"dup2", "close"}) {
        int leaked = 0;
        // Each call makes up to 200 attempts; under the eBPF observer a call leaks as often as
        // under strace but takes longer, so it gets fewer calls (the suite's time is bounded). The
        // sanitized build makes a quarter of them, more only until the race is won once.
        const int calls = observer_ == "ebpf" ? 12 : 25;
        for (int i = 0; i < calls && (i < repetitions(calls) || leaked == 0); ++i) {
            const auto [r, record] = audited({probe.string(), mode, key(), decoy}, {"--strict"});
            if (r.err.find("LEAKED:PRIVATE KEY") == std::string::npos) {
                continue;
            }
            ++leaked;
            EXPECT_EQ(r.status, 3) << mode << " call " << i << r;
            ASSERT_TRUE(lists(record, key())) << mode << " call " << i << r;
        }
        EXPECT_GT(leaked, 0) << mode << ": the probe never read the key";

        // Control: unobserved, the probe reads the key.
        const auto [u, unobserved] =
            audited({probe.string(), mode, key(), decoy}, {"--observer", "none"});
        EXPECT_NE(u.err.find("LEAKED:PRIVATE KEY"), std::string::npos) << mode << u;
    }
}

INSTANTIATE_TEST_SUITE_P(Identities, AuditOfTheRealFile, ::testing::ValuesIn(audited_by(false)));
INSTANTIATE_TEST_SUITE_P(Identities, AuditOfTheRealFileEachObserver,
                         ::testing::ValuesIn(audited_by(true)));

#ifdef TEA_SECCOMP_OBSERVER
// A process on the host (a sleep) as the given identity, whose root is the host's, with one
// environment entry; started when made (it has exec'd once this returns), killed and reaped with
// this object.
class HostDecoy {
   public:
    HostDecoy(uid_t uid, gid_t gid, const std::string &env) : pid_{::fork()} {
        if (pid_ == 0) {
            char *const envp[] = {const_cast<char *>(env.c_str()), nullptr};
            if (::setgid(gid) == 0 && ::setuid(uid) == 0) {
                ::execle("/bin/sleep", "sleep", "120", static_cast<char *>(nullptr), envp);
            }
            ::_exit(127);
        }
        for (int i = 0; pid_ > 0 && i < 100 && read_file(proc("comm")) != "sleep\n"; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds{10});
        }
    }
    HostDecoy(const HostDecoy &) = delete;
    HostDecoy &operator=(const HostDecoy &) = delete;
    ~HostDecoy() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    [[nodiscard]] pid_t pid() const { return pid_; }
    // Its /proc entry on the host: "/proc/PID/rest".
    [[nodiscard]] std::string proc(const std::string &rest) const {
        return "/proc/" + std::to_string(pid_) + "/" + rest;
    }

   private:
    pid_t pid_;
};

// The seccomp observer opens the process's own /proc/self links through its own procfs. A ".."
// after one must not climb that procfs to another process of the supervisor's identity and its
// root, which is the host's: the withheld folder stays hidden.
class AuditSeccompProcLinks : public AuditEitherIdentity {};

TEST_P(AuditSeccompProcLinks, ADotDotAfterAProcLinkReachesNoHostProcess) {
    // A process on the host as the identity the supervisor takes (the sandbox's), whose root is
    // the host's.
    const HostDecoy decoy{sandbox_uid(), sandbox_gid(), "DECOY=1"};
    ASSERT_GT(decoy.pid(), 0);
    // A withheld folder the sandbox's identity could read on the host.
    const auto held = host_dir() / "held";
    fs::create_directory(held);
    fs::permissions(held, fs::perms{0755});
    const auto token = "HELD " + random_token();
    make_file(held / "token", token + "\n", 0644);
    const std::string through =
        "/proc/self/ns/../../" + std::to_string(decoy.pid()) + "/root" + (held / "token").string();
    // Control: the route leads to the secret for a process on the host as that identity.
    const auto host =
        tea::test::run({"/usr/bin/setpriv", "--reuid=" + std::to_string(sandbox_uid()),
                        "--regid=" + std::to_string(sandbox_gid()), "--clear-groups", "--", "cat",
                        decoy.proc("root") + (held / "token").string()},
                       {"PATH=/usr/bin:/bin"});
    EXPECT_NE(host.out.find(token), std::string::npos) << host.err;

    const auto [r, record] = audited({"cat", through}, {}, {held.string()});
    EXPECT_EQ(r.err.find(token), std::string::npos) << "the token stayed hidden" << r;
    EXPECT_NE(record["callStatus"], 0) << r;
    // The mapping itself still serves a ".." that stays with the process.
    const auto [own, own_record] = audited({"cat", "/proc/self/ns/../comm"});
    EXPECT_EQ(own.status, 0) << own;
    EXPECT_NE(own.err.find("cat"), std::string::npos) << own;
}

// linkat with AT_SYMLINK_FOLLOW, performed by the supervisor: a link in the workspace to a host
// path the view withholds must be followed inside the process's root, where it leads nowhere.
// Followed from the supervisor's root it reached the host's file, and the answer (EXDEV for a
// file on another mount, ENOENT for none) told the target which withheld names exist.
TEST_P(AuditSeccompProcLinks, AHardLinkThroughASymlinkIsFollowedInsideTheRoot) {
    const auto held = host_dir() / "held";
    fs::create_directory(held);
    fs::permissions(held, fs::perms{0755});
    make_file(held / "token", "HELD\n", 0644);
    fs::create_symlink(held / "token", workspace() / "to-token");
    fs::create_symlink(held / "missing", workspace() / "to-missing");
    make_file(workspace() / "mine", "MINE\n", 0666);
    fs::permissions(workspace() / "mine", fs::perms{0666});
    fs::create_symlink("mine", workspace() / "to-mine");
    // linkat(AT_FDCWD, name, AT_FDCWD, copy-of-name, AT_SYMLINK_FOLLOW) for each name: its errno.
    const std::vector<std::string> probe{
        "/usr/bin/python3",
        "-I",
        "-c",
        "import ctypes, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "for name in sys.argv[1:]:\n"
        "    r = libc.linkat(-100, name.encode(), -100, ('copy-' + name).encode(), 0x400)\n"
        "    print(name, 0 if r == 0 else ctypes.get_errno(), file=sys.stderr)\n",
        "to-token",
        "to-missing",
        "to-mine"};
    const auto [r, record] = audited(probe, {}, {held.string()});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_NE(r.err.find("to-token 2\n"), std::string::npos) << "ENOENT, as for a name that is "
                                                                "nowhere"
                                                             << r;
    EXPECT_NE(r.err.find("to-missing 2\n"), std::string::npos) << r;
    // A link that stays inside the root is followed and linked as asked.
    EXPECT_NE(r.err.find("to-mine 0\n"), std::string::npos) << r;
    EXPECT_TRUE(fs::exists(workspace() / "copy-to-mine")) << r;
    // Control: the kernel's own answers, the same call under strace.
    fs::remove(workspace() / "copy-to-mine");
    const auto [k, kernel] = audited(probe, {"--observer", "strace"}, {held.string()});
    EXPECT_NE(k.err.find("to-token 2\n"), std::string::npos) << k;
    EXPECT_NE(k.err.find("to-mine 0\n"), std::string::npos) << k;
}

class AuditSeccompProcDirs : public AuditEitherIdentity {};

TEST_P(AuditSeccompProcDirs, AProcSelfDirectoryHandedOverIsTheProcesssOwnProcfs) {
    // A process on the host as the sandbox's identity, with a secret in its environment.
    const auto token = "HOSTENV" + random_token();
    const HostDecoy decoy{sandbox_uid(), sandbox_gid(), "DECOY_SECRET=" + token};
    ASSERT_GT(decoy.pid(), 0);
    const auto environ_path = decoy.proc("environ");
    // Control: that identity on the host reads the secret there.
    const auto host = tea::test::run(
        {"/usr/bin/setpriv", "--reuid=" + std::to_string(sandbox_uid()),
         "--regid=" + std::to_string(sandbox_gid()), "--clear-groups", "--", "cat", environ_path},
        {"PATH=/usr/bin:/bin"});
    EXPECT_NE(host.out.find(token), std::string::npos) << host.err;

    // The attack: a directory opened as /proc/self/ (or /dev/fd/.), made the working directory,
    // and its ".." taken; then the decoy's environ, opened relative to it.
    const std::string probe =
        "import os, sys\n"
        "for name in ('/proc/self/', '/proc/self/fd/.', '/dev/fd/.', '/proc/thread-self/ns'):\n"
        "    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY)\n"
        "    os.fchdir(fd)\n"
        "    os.chdir('../..' if name.endswith(('/.', 'ns')) else '..')\n"
        "    try:\n"
        "        sys.stderr.write(open(sys.argv[1] + '/environ', 'rb').read().decode('latin-1'))\n"
        "    except OSError as e:\n"
        "        sys.stderr.write('refused %s\\n' % e)\n"
        "own = os.open('/proc/self/', os.O_RDONLY | os.O_DIRECTORY)\n"
        "print(os.read(os.open('status', os.O_RDONLY, dir_fd=own), 64).decode().split()[0],\n"
        "      file=sys.stderr)\n";
    const auto [r, record] = audited({"python3", "-c", probe, std::to_string(decoy.pid())});
    EXPECT_EQ(r.err.find(token), std::string::npos) << "the secret stayed hidden" << r;
    // The directory handed over still serves the process's own files.
    EXPECT_NE(r.err.find("Name:"), std::string::npos) << r;
    std::size_t refused = 0;
    for (auto at = r.err.find("refused"); at != std::string::npos;
         at = r.err.find("refused", at + 1)) {
        ++refused;
    }
    EXPECT_EQ(refused, 4U) << "each of the four routes led nowhere" << r;
}

// Another process's procfs entries answer the target as the kernel answers it, whichever observer
// opens them: the seccomp observer's supervisor owns the sandbox's user namespace (every
// capability there) and must not lend that standing. Under strace and eBPF the target opens them
// itself: the kernel's own answer, the control.
class AuditOtherProcessesProc : public AuditEitherIdentity {};

TEST_P(AuditOtherProcessesProc, TheUndumpableHoldersEntriesStayRefused) {
    const std::string probe =
        "import os, sys, time\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    time.sleep(30)\n"
        "    os._exit(0)\n"
        "def read(path):\n"
        "    try:\n"
        "        with open(path, 'rb') as f:\n"
        "            return 'ok' if f.read(64) else 'empty'\n"
        "    except OSError:\n"
        "        return 'refused'\n"
        "def link(path):\n"
        "    try:\n"
        "        return 'ok' if os.readlink(path) else 'empty'\n"
        "    except OSError:\n"
        "        return 'refused'\n"
        "own = os.getpid()\n"
        "for label, path in (('own', '/proc/%d/maps' % own), ('child', '/proc/%d/maps' % child),\n"
        "                    ('holder', '/proc/1/maps'), ('dotdot', '/proc/self/../1/maps'),\n"
        "                    ('task', '/proc/self/task/../../1/smaps')):\n"
        "    print(label, read(path), file=sys.stderr)\n"
        "for label, path in (('own-exe', '/proc/%d/exe' % own), ('child-exe', '/proc/%d/exe' % "
        "child),\n"
        "                    ('holder-exe', '/proc/1/exe'), ('holder-cwd', '/proc/1/cwd')):\n"
        "    print(label, link(path), file=sys.stderr)\n"
        "os.kill(child, 9)\n";
    const auto [r, record] = audited({"python3", "-c", probe});
    // Control: the process's own entries and its child's, by their numbers, are read.
    EXPECT_NE(r.err.find("own ok\n"), std::string::npos) << r;
    EXPECT_NE(r.err.find("child ok\n"), std::string::npos) << r;
    EXPECT_NE(r.err.find("own-exe ok\n"), std::string::npos) << r;
    EXPECT_NE(r.err.find("child-exe ok\n"), std::string::npos) << r;
    // The holder (the sandbox's pid 1) is undumpable: its memory map and links stay closed.
    EXPECT_NE(r.err.find("holder refused\n"), std::string::npos) << r;
    EXPECT_NE(r.err.find("dotdot refused\n"), std::string::npos) << r;
    EXPECT_NE(r.err.find("task refused\n"), std::string::npos) << r;
    EXPECT_NE(r.err.find("holder-exe refused\n"), std::string::npos) << r;
    EXPECT_NE(r.err.find("holder-cwd refused\n"), std::string::npos) << r;
}

// procfs answers some files from the namespaces of whoever opens them: /proc/sys/net from the
// opener's network namespace, /proc/sysvipc and the IPC limits from its IPC namespace,
// /proc/sys/user from its user namespace. The seccomp observer's supervisor opens them for the
// target from the host's namespaces; the target must read its own sandbox's, as it does under
// strace and eBPF, where it opens them itself (the kernel's own answer, the control).
class AuditProcNamespaces : public AuditEitherIdentity {};

TEST_P(AuditProcNamespaces, SysctlsAndIpcListingsAreTheSandboxsOwn) {
    // A System V segment of the host's, under a key of this test's.
    const auto host_key = static_cast<key_t>(0x7e000000 | (::getpid() & 0xffffff));
    const int host_segment = ::shmget(host_key, 4096, IPC_CREAT | IPC_EXCL | 0600);
    ASSERT_GE(host_segment, 0) << std::strerror(errno);
    struct Removed {
        int id;
        ~Removed() { ::shmctl(id, IPC_RMID, nullptr); }
    } removed{host_segment};
    const auto probe = python(R"PY(
host_key = int(sys.argv[1])
own_key = host_key ^ 0x5a5a
own = checked(libc.shmget(own_key, 4096, 0o1000 | 0o600))
keys = [int(l.split()[0]) for l in open("/proc/sysvipc/shm").read().splitlines()[1:]]
print("HOST-SEGMENT" if host_key in keys else "NO-HOST-SEGMENT", flush=True)
print("OWN-SEGMENT" if own_key in keys else "NO-OWN-SEGMENT", flush=True)
libc.shmctl(own, 0, None)
conf = set(os.listdir("/proc/sys/net/ipv4/conf")) - {"all", "default"}
names = {n for _, n in socket.if_nameindex()}
print("INTERFACES-" + ("SAME" if conf == names else "DIFFER:%s/%s" % (sorted(conf), sorted(names))), flush=True)
report("FORWARDING", lambda: open("/proc/sys/net/ipv4/conf/lo/forwarding").read().strip())
report("NET-DEV", lambda: "lo:" in open("/proc/net/dev").read())
report("MOUNTS", lambda: len(open("/proc/mounts").read().splitlines()) > 0)
report("USERNS-MAX", lambda: open("/proc/sys/user/max_user_namespaces").read().strip())
report("HOSTNAME", lambda: open("/proc/sys/kernel/hostname").read().strip() == socket.gethostname())
)PY",
                              {std::to_string(host_key)});
    const auto r = run({.command = probe, .options = {"--observer", observer_}});
    EXPECT_EQ(r.status, 0) << r;
    // The host's segment stays unseen; the control: the target's own is listed.
    EXPECT_TRUE(r.has("NO-HOST-SEGMENT")) << r;
    EXPECT_TRUE(r.has("OWN-SEGMENT")) << r;
    // The interfaces /proc/sys/net lists are the ones the target's own netlink names.
    EXPECT_TRUE(r.has("INTERFACES-SAME")) << r;
    EXPECT_TRUE(r.has("FORWARDING-OK")) << r;
    // procfs's links to the reader's own entries lead to the target's.
    EXPECT_TRUE(r.has("NET-DEV-OK:True")) << r;
    EXPECT_TRUE(r.has("MOUNTS-OK:True")) << r;
    EXPECT_TRUE(r.has("HOSTNAME-OK:True")) << r;
    // A new user namespace's limit is its own, never the host's (unless the host's is the same).
    std::ifstream host_max{"/proc/sys/user/max_user_namespaces"};
    std::string host_value;
    host_max >> host_value;
    EXPECT_TRUE(r.has("USERNS-MAX-OK")) << r;
    if (host_value != "2147483647") {
        EXPECT_FALSE(r.has("USERNS-MAX-OK:" + host_value)) << r;
    }
}

// A link that leads into the process's own procfs entries (/etc/mtab -> ../proc/self/mounts on
// many systems) leads to the target's own, as the kernel's lookup does under strace and eBPF (the
// control). The seccomp observer's supervisor looked such a link up as itself, a process the
// sandbox's procfs does not know: ENOENT. A link the target may not follow stays refused.
TEST_P(AuditProcNamespaces, LinksIntoTheProcesssOwnEntriesLeadToThem) {
    const auto probe = python(R"PY(
def pid_in(path):
    return [l.split()[1] for l in open(path) if l.startswith("Pid:")][0] == str(os.getpid())
os.symlink("/proc/self/status", "absolute")
os.makedirs("d/e")
os.symlink("../" * 16 + "proc/self/status", "d/e/relative")
os.symlink("second", "first")
os.symlink("/proc/thread-self/comm", "second")
os.symlink("/proc/self", "self-dir")
os.symlink("/proc/mounts", "mounts")
report("ABSOLUTE", lambda: pid_in("absolute"))
report("FROM-ROOT", lambda: pid_in(os.path.abspath("absolute")))
report("RELATIVE", lambda: pid_in("d/e/relative"))
report("CHAIN", lambda: open("first").read().strip())
report("DIRECTORY", lambda: pid_in("self-dir/status"))
report("MOUNTS", lambda: len(open("mounts").read().splitlines()) > 0)
report("NOFOLLOW", lambda: os.open("absolute", os.O_RDONLY | os.O_NOFOLLOW))
report("EXCL", lambda: os.open("absolute", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
report("ABSENT", lambda: open("d/e/none").read())
)PY");
    const auto r = run({.command = probe, .options = {"--observer", observer_}});
    EXPECT_EQ(r.status, 0) << r;
    for (const char *token :
         {"ABSOLUTE-OK:True", "FROM-ROOT-OK:True", "RELATIVE-OK:True", "CHAIN-OK:python3",
          "DIRECTORY-OK:True", "MOUNTS-OK:True", "NOFOLLOW-DENIED:ELOOP", "EXCL-DENIED:EEXIST",
          "ABSENT-DENIED:ENOENT"}) {
        EXPECT_TRUE(r.has(token)) << token << "\n" << r;
    }
}

// A truncate grows a file as far as the process's own RLIMIT_FSIZE allows: past it, EFBIG and
// SIGXFSZ, as the kernel answers the process. The seccomp observer's supervisor performs the
// truncate: under its own limit (the call's) a target would grow a file past a limit it set
// itself, and a growth past the call's limit ended the supervisor (SIGXFSZ), the audit with it.
class AuditFileSizeLimit : public AuditEitherIdentity {};

TEST_P(AuditFileSizeLimit, ATruncateStopsAtTheProcesssOwnLimit) {
    const auto probe = python(R"PY(
import resource
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
open("grown", "w").close()
hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
if hard == resource.RLIM_INFINITY:
    print("NO-CALL-LIMIT", flush=True)
else:
    report("PAST-CALL-LIMIT", lambda: os.truncate("grown", hard + 4096))
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
report("PAST-OWN-LIMIT", lambda: os.truncate("grown", 2 << 20))
report("WITHIN", lambda: os.truncate("grown", 4096))
print("SIZE:%d" % os.stat("grown").st_size, flush=True)
child = os.fork()
if child == 0:
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    try:
        os.truncate("grown", 2 << 20)
    except OSError:
        pass
    os._exit(0)
_, status = os.waitpid(child, 0)
print("CHILD-SIGNAL:%d" % (os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0), flush=True)
caught = []
signal.signal(signal.SIGXFSZ, lambda signum, frame: caught.append(signum))
report("CAUGHT", lambda: os.truncate("grown", 2 << 20))
time.sleep(0.2)
print("HANDLED:%d" % len(caught), flush=True)
)PY");
    const auto [r, record] = audited(probe);
    EXPECT_EQ(r.status, 0) << r;
    const auto out = target_output(r);
    EXPECT_TRUE(out.has("PAST-CALL-LIMIT-DENIED:EFBIG") || out.has("NO-CALL-LIMIT")) << r;
    EXPECT_TRUE(out.has("PAST-OWN-LIMIT-DENIED:EFBIG")) << r;
    // Left to its default action, SIGXFSZ ends the process; caught, it is handled once and the
    // call answers EFBIG.
    EXPECT_TRUE(out.has("CHILD-SIGNAL:" + std::to_string(SIGXFSZ))) << r;
    EXPECT_TRUE(out.has("CAUGHT-DENIED:EFBIG")) << r;
    EXPECT_TRUE(out.has("HANDLED:1")) << r;
    // The control: within the limit the file grows, and the audit stays whole.
    EXPECT_TRUE(out.has("WITHIN-OK")) << r;
    EXPECT_TRUE(out.has("SIZE:4096")) << r;
    EXPECT_TRUE(record["audit"]["complete"].get<bool>()) << r;
}

// A FIFO opened for reading waits for a writer in a worker the supervisor forks. A signal
// interrupts the process's open and its restart asks again: the first worker must not stay.
class AuditSeccompBlockedOpens : public AuditEitherIdentity {};

TEST_P(AuditSeccompBlockedOpens, AnInterruptedFifoOpenLeavesNoWorkerBehind) {
    constexpr int kSignals = 40;
    const auto marker = workspace() / "signalled";
    const std::string probe =
        "import os, signal, sys, threading, time\n"
        "fifo = os.path.join(sys.argv[1], 'fifo')\n"
        "os.mkfifo(fifo)\n"
        "signal.signal(signal.SIGUSR1, lambda *a: None)\n"
        "t = threading.Thread(target=lambda: os.open(fifo, os.O_RDONLY), daemon=True)\n"
        "t.start()\n"
        "time.sleep(0.3)\n"
        "for _ in range(int(sys.argv[2])):\n"
        "    signal.pthread_kill(t.ident, signal.SIGUSR1)\n"
        "    time.sleep(0.02)\n"
        "open(os.path.join(sys.argv[1], 'signalled'), 'w').close()\n"
        "time.sleep(3)\n"
        "os.close(os.open(fifo, os.O_WRONLY))\n"
        "t.join()\n"
        "print('released', file=sys.stderr)\n";
    auto call =
        start({.command = {"python3", "-c", probe, workspace().string(), std::to_string(kSignals)},
               .options = {"--observer", "seccomp", "--json"}});
    for (int i = 0; i < 300 && !fs::exists(marker); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
    ASSERT_TRUE(fs::exists(marker));
    // The supervisor and its workers: the call's processes named tea-seccomp-supervise.
    std::map<pid_t, pid_t> parent;
    std::vector<pid_t> supervisors;
    for (const auto &entry : fs::directory_iterator{"/proc"}) {
        const auto name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        const auto stat = read_file(entry.path() / "stat");
        const auto close = stat.rfind(')');
        if (close == std::string::npos) {
            continue;
        }
        const pid_t pid = std::stoi(name);
        parent[pid] = static_cast<pid_t>(std::strtol(stat.c_str() + close + 4, nullptr, 10));
        if (stat.find("(tea-seccomp-su") != std::string::npos) {
            supervisors.push_back(pid);
        }
    }
    std::size_t of_this_call = 0;
    for (pid_t pid : supervisors) {
        for (pid_t up = pid; up > 1; up = parent.count(up) != 0 ? parent[up] : 0) {
            if (up == call.pid()) {
                ++of_this_call;
                break;
            }
        }
    }
    const auto r = call.wait();
    // Control: the process blocked in the open, signalled, and its open then met its writer.
    EXPECT_NE(r.err.find("released"), std::string::npos) << r;
    EXPECT_GE(of_this_call, 1U) << r;
    // The supervisor, and at most the worker of the open still waiting.
    EXPECT_LE(of_this_call, 3U) << r;
}

class AuditSeccompFollowedLinks : public AuditEitherIdentity {};

TEST_P(AuditSeccompFollowedLinks, ALastLinkFollowedStaysInTheProcesssRoot) {
    // A withheld folder holding a file; links to it, and to a name it lacks.
    const auto held = host_dir() / "held";
    fs::create_directory(held);
    fs::permissions(held, fs::perms{0755});
    make_file(held / "token", "HELD " + random_token() + "\n", 0644);
    const auto links = host_dir() / "links";
    fs::create_directory(links);
    fs::permissions(links, fs::perms{0755});
    for (const auto &dir : {links, workspace()}) {
        fs::create_symlink(held / "token", dir / "present");
        fs::create_symlink(held / "absent", dir / "absent");
    }
    fs::create_symlink(workspace() / "inner", workspace() / "inside");
    // readlink("L/") and linkat(L, AT_SYMLINK_FOLLOW) follow L: their errno says whether what it
    // names exists.
    const std::string probe =
        "import os, sys\n"
        "os.chdir(sys.argv[1])\n"
        "d = os.open('.', os.O_RDONLY)\n"
        "if len(sys.argv) > 2:\n"
        "    open('inner', 'w').write('inner')\n"
        "for name in ('present', 'absent', 'inside'):\n"
        "    out = [name]\n"
        "    try:\n"
        "        os.readlink(name + '/')\n"
        "        out.append('readlink=ok')\n"
        "    except OSError as e:\n"
        "        out.append('readlink=' + e.strerror)\n"
        "    if len(sys.argv) > 2:\n"
        "        try:\n"
        "            os.link(name, name + '.hard', src_dir_fd=d, dst_dir_fd=d)\n"
        "            out.append('link=ok')\n"
        "        except OSError as e:\n"
        "            out.append('link=' + e.strerror)\n"
        "    print(' '.join(out), file=sys.stderr)\n";
    auto answers = [](const std::string &err, const std::string &name) {
        const auto at = err.find(name + " readlink=");
        return at == std::string::npos
                   ? std::string{"missing"}
                   : err.substr(at + name.size(), err.find('\n', at) - at - name.size());
    };
    // Control: where the host's root is the one followed, the answers tell the two apart.
    const auto host =
        tea::test::run({"/usr/bin/setpriv", "--reuid=" + std::to_string(sandbox_uid()),
                        "--regid=" + std::to_string(sandbox_gid()), "--clear-groups", "--",
                        "python3", "-c", probe, links.string()},
                       {"PATH=/usr/bin:/bin"});
    EXPECT_NE(answers(host.err, "present"), answers(host.err, "absent")) << host.err;
    EXPECT_NE(answers(host.err, "present"), "missing") << host.err;

    const auto [r, record] =
        audited({"python3", "-c", probe, workspace().string(), "link"}, {}, {held.string()});
    EXPECT_NE(answers(r.err, "present"), "missing") << r;
    EXPECT_EQ(answers(r.err, "present"), answers(r.err, "absent")) << "nothing told" << r;
    EXPECT_NE(r.err.find("present readlink=No such file or directory link=No such file"),
              std::string::npos)
        << r;
    // A link inside the root is still followed, and its file linked.
    EXPECT_NE(r.err.find("inside readlink=Not a directory link=ok"), std::string::npos) << r;
    EXPECT_EQ(fs::status(workspace() / "inside.hard").type(), fs::file_type::regular) << r;
}

#ifdef TEA_FORK_FIRST_PROBE
class AuditSeccompSetUp : public AuditEitherIdentity {};

TEST_P(AuditSeccompSetUp, ATargetThatForksBeforeAnyCallOfItsOwnIsJudged) {
    // The target start forks before any call the supervisor serves, and never makes one after:
    // its child's read must not pass as the confinement's set-up.
    const auto probe = workspace() / "fork_first_probe";
    fs::copy_file(TEA_FORK_FIRST_PROBE, probe);
    fs::permissions(probe, fs::perms{0755});
    const auto [r, record] = audited({probe.string(), key()});
    // Control: the child read the key.
    EXPECT_NE(r.err.find("PRIVATE KEY"), std::string::npos) << r;
    EXPECT_TRUE(lists(record, key())) << r;
    EXPECT_TRUE(record["targetStarted"].get<bool>()) << r;
}
#endif

class AuditSeccompCovers : public AuditEitherIdentity {};

// The supervisor makes the process's name changes from its own mount namespace, where the covers
// the view puts on withheld paths are no mount points: the kernel's EBUSY must hold all the same,
// or a target would delete the withheld file on the host, or move the withheld folder out from
// under its cover for the next call to read.
TEST_P(AuditSeccompCovers, AWithheldFileOrFolderIsNeitherMovedNorRemovedFromUnderItsCover) {
    const auto answers = workspace() / "sub" / "ans";
    fs::create_directories(answers);
    fs::create_directory(workspace() / "free");
    make_file(answers / "key.txt", "answer\n", 0644);
    const auto secret = workspace() / "secret.txt";
    make_file(secret, "secret\n", 0644);
    hand_to_caller(workspace());
    const auto probe = python(R"PY(
report("UNLINK", lambda: os.unlink("secret.txt"))
report("RENAME-FILE", lambda: os.rename("secret.txt", "moved.txt"))
report("MOVE-COVER", lambda: os.rename("sub/ans", "sub/x"))
report("MOVE-PARENT", lambda: os.rename("sub", ".s"))
report("RMDIR", lambda: os.rmdir("sub/ans"))
report("OVER", lambda: os.rename("free", "sub"))
report("FREE", lambda: os.rename("free", "free2"))
)PY");
    const auto r = run({.command = probe,
                        .withhold = {secret.string(), answers.string()},
                        .options = {"--observer", observer_}});
    EXPECT_EQ(r.status, 0) << r;
    for (const char *refused :
         {"UNLINK", "RENAME-FILE", "MOVE-COVER", "MOVE-PARENT", "RMDIR", "OVER"}) {
        EXPECT_TRUE(r.has(std::string{refused} + "-DENIED:EBUSY")) << refused << r;
    }
    // The control: a folder under no cover moves, through the same supervisor.
    EXPECT_TRUE(r.has("FREE-OK")) << r;
    EXPECT_TRUE(fs::exists(workspace() / "free2")) << r;
    EXPECT_TRUE(fs::exists(secret)) << r;
    EXPECT_TRUE(fs::exists(answers / "key.txt")) << r;
}

class AuditSeccompProcBudget : public AuditEitherIdentity {};

// A call at its process budget: procfs files outside every process's directory, and the
// process's own entries however named, are opened without a process of the supervisor's own,
// which the budget would refuse. The control: the target's own fork is refused there.
TEST_P(AuditSeccompProcBudget, AProcessAtItsBudgetStillReadsGlobalAndItsOwnProcfsEntries) {
    const std::string probe =
        "import os, sys, time\n"
        "children = []\n"
        "while True:\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError as e:\n"
        "        print('fork', e.errno, file=sys.stderr)\n"
        "        break\n"
        "    if pid == 0:\n"
        "        time.sleep(30)\n"
        "        os._exit(0)\n"
        "    children.append(pid)\n"
        "def read(path):\n"
        "    try:\n"
        "        with open(path, 'rb') as f:\n"
        "            return 'ok' if f.read(64) else 'empty'\n"
        "    except OSError as e:\n"
        "        return 'refused %d' % e.errno\n"
        "for label, path in (('meminfo', '/proc/meminfo'), ('cpuinfo', '/proc/cpuinfo'),\n"
        "                    ('own', '/proc/%d/comm' % os.getpid()),\n"
        "                    ('dotdot', '/proc/self/ns/../comm')):\n"
        "    print(label, read(path), file=sys.stderr)\n"
        "for pid in children:\n"
        "    os.kill(pid, 9)\n";
    const auto r = run({.command = {"python3", "-c", probe},
                        .config = "[budgets]\nprocesses = 32\n",
                        .options = {"--observer", observer_}});
    EXPECT_NE(r.err.find("fork 11\n"), std::string::npos) << "the call reached its budget" << r;
    for (const char *label : {"meminfo", "cpuinfo", "own", "dotdot"}) {
        EXPECT_NE(r.err.find(std::string{label} + " ok\n"), std::string::npos) << label << r;
    }
}

class AuditSeccompDotDot : public AuditEitherIdentity {};

// The supervisor opens a path with ".." beneath the process's root (RESOLVE_IN_ROOT), and the
// kernel answers such a lookup EAGAIN whenever a rename or a mount happens anywhere on the machine
// meanwhile, since it cannot tell the ".." stayed beneath (a sandbox being set up beside the call
// is enough). A host thread renaming a file in a loop makes that happen while the call opens its
// own entry through ".." again and again: every open must still succeed, as the kernel's own open
// would.
TEST_P(AuditSeccompDotDot, AnOpenThroughDotDotIsNotRefusedByARenameElsewhere) {
    const std::string probe =
        "import os, sys\n"
        "failed = {}\n"
        "for i in range(3000):\n"
        "    try:\n"
        "        os.close(os.open('/proc/self/ns/../comm', os.O_RDONLY))\n"
        "    except OSError as e:\n"
        "        failed[e.errno] = failed.get(e.errno, 0) + 1\n"
        "print('failed', sorted(failed.items()), file=sys.stderr)\n";
    const test::TempDir host{"tea-audit-renames"};
    std::ofstream{host.path() / "a"} << "x";
    std::atomic<bool> stop{false};
    std::thread renamer{[&host, &stop] {
        const auto a = host.path() / "a";
        const auto b = host.path() / "b";
        while (!stop.load()) {
            (void)::rename(a.c_str(), b.c_str());
            (void)::rename(b.c_str(), a.c_str());
        }
    }};
    const auto r = run({.command = {"python3", "-c", probe}, .options = {"--observer", observer_}});
    // The control: the kernel's own opens, unaudited, under the same renames.
    const auto own = run({.command = {"python3", "-c", probe}, .options = {"--observer", "none"}});
    stop = true;
    renamer.join();
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_NE(r.err.find("failed []\n"), std::string::npos) << r;
    EXPECT_NE(own.err.find("failed []\n"), std::string::npos) << own;
}

class AuditSeccompRecordSize : public AuditEitherIdentity {};

TEST_P(AuditSeccompRecordSize, DistinctLongPathsStopBeingKeptAtTheByteBound) {
    // Each open names a distinct path of nearly 4 KiB: kept whole, 20000 of them would grow the
    // supervisor outside the sandbox by their size, without end as their number grows.
    const std::string probe =
        "import os, sys\n"
        "for i in range(int(sys.argv[1])):\n"
        "    try:\n"
        "        os.open('/nonexistent-%d/%s' % (i, 'p' * 3900), os.O_RDONLY)\n"
        "    except OSError:\n"
        "        pass\n"
        "print('opened', sys.argv[1], file=sys.stderr)\n";
    // Control: a few of them are all kept.
    const auto [few, few_record] = audited({"python3", "-c", probe, "100"});
    EXPECT_NE(few.err.find("opened 100"), std::string::npos) << few;
    EXPECT_TRUE(few_record["audit"]["complete"].get<bool>()) << few;

    const auto [r, record] = audited({"python3", "-c", probe, "20000"});
    EXPECT_NE(r.err.find("opened 20000"), std::string::npos) << r;
    EXPECT_FALSE(record["audit"]["complete"].get<bool>()) << r;
    EXPECT_NE(record["audit"]["reason"].get<std::string>().find("MiB of them) were not kept"),
              std::string::npos)
        << r;
    EXPECT_LT(record["audit"]["events"].get<int>(), 10000) << r;
}

std::vector<AuditedBy> seccomp_only() {
    return {{Identity::invoker, "seccomp"}, {Identity::unprivileged, "seccomp"}};
}
INSTANTIATE_TEST_SUITE_P(Identities, AuditSeccompProcLinks, ::testing::ValuesIn(seccomp_only()));
INSTANTIATE_TEST_SUITE_P(Identities, AuditOtherProcessesProc,
                         ::testing::ValuesIn(audited_by(true)));
INSTANTIATE_TEST_SUITE_P(Identities, AuditProcNamespaces, ::testing::ValuesIn(audited_by(true)));
INSTANTIATE_TEST_SUITE_P(Identities, AuditFileSizeLimit, ::testing::ValuesIn(audited_by(true)));
INSTANTIATE_TEST_SUITE_P(Identities, AuditSeccompProcDirs, ::testing::ValuesIn(seccomp_only()));
INSTANTIATE_TEST_SUITE_P(Identities, AuditSeccompFollowedLinks,
                         ::testing::ValuesIn(seccomp_only()));
INSTANTIATE_TEST_SUITE_P(Identities, AuditSeccompRecordSize, ::testing::ValuesIn(seccomp_only()));
INSTANTIATE_TEST_SUITE_P(Identities, AuditSeccompCovers, ::testing::ValuesIn(seccomp_only()));
INSTANTIATE_TEST_SUITE_P(Identities, AuditSeccompProcBudget, ::testing::ValuesIn(seccomp_only()));
INSTANTIATE_TEST_SUITE_P(Identities, AuditSeccompDotDot, ::testing::ValuesIn(seccomp_only()));
INSTANTIATE_TEST_SUITE_P(Identities, AuditSeccompBlockedOpens, ::testing::ValuesIn(seccomp_only()));
#ifdef TEA_FORK_FIRST_PROBE
INSTANTIATE_TEST_SUITE_P(Identities, AuditSeccompSetUp, ::testing::ValuesIn(seccomp_only()));
#endif
#endif

}  // namespace
}  // namespace tea::test::bwrap
