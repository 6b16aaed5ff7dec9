// The runtime's prefix in a target's view: a skill target runs <prefix>/bin/tea-skill-runner, so a
// runtime installed or built under the host's /tmp (which every call sees as its own) is shown
// back read-only at its host path, and nothing else of that /tmp with it.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

// The program a prefix holds: it says it ran, then runs the rest of its arguments (a probe).
constexpr const char *kRunner = "#!/bin/sh\necho RUNNER-RAN\nexec \"$@\"\n";

// A prefix in a fresh directory of the host's /tmp, beside a directory that is not the prefix:
// <tmp>/prefix/bin/tea-prefix-runner, <tmp>/prefix/share/note, the folder
// <tmp>/prefix/share/kept holding a secret, and <tmp>/beside/note.
struct PrefixTree {
    tea::test::TempDir tmp{"tea-bwt-prefix", fs::perms{0755}};
    fs::path prefix = tmp / "prefix";
    fs::path runner = prefix / "bin" / "tea-prefix-runner";
    fs::path note = prefix / "share" / "note";
    fs::path kept = prefix / "share" / "kept";
    fs::path beside = tmp / "beside" / "note";

    PrefixTree() {
        for (const auto &dir : {runner.parent_path(), kept, beside.parent_path()}) {
            fs::create_directories(dir);
        }
        make_file(runner, kRunner, 0755);
        make_file(note, "prefix-note\n", 0644);
        make_file(kept / "secret", "kept-secret\n", 0644);
        make_file(beside, "beside-note\n", 0644);
        // Every directory searchable by the sandbox identity, as an installed runtime is.
        for (const auto &entry : fs::recursive_directory_iterator{tmp.path()}) {
            if (entry.is_directory()) {
                fs::permissions(entry.path(), fs::perms{0755});
            }
        }
    }
};

// Reads in the prefix, a file created in it and the runner opened for writing, the withheld
// folder inside it, the note beside it, and what the prefix's parent holds.
const char *const kProbe = R"PY(
def create(path):
    with open(path, "w") as f:
        f.write("planted")
report("READ", lambda: open(sys.argv[1]).read().strip())
report("CREATE", lambda: create(sys.argv[2] + "/bin/planted"))
report("REWRITE", lambda: os.close(os.open(sys.argv[3], os.O_WRONLY)))
report("WITHHELD", lambda: open(sys.argv[4] + "/secret").read().strip())
report("BESIDE", lambda: open(sys.argv[5]).read().strip())
report("PARENT", lambda: ",".join(sorted(os.listdir(os.path.dirname(sys.argv[2])))))
)PY";

TEST_P(EitherIdentity, ARuntimePrefixUnderTheHostsTmpIsShownReadOnlyAndNothingBesideIt) {
    const PrefixTree tree;
    ASSERT_EQ(tree.tmp.path().string().rfind("/tmp/", 0), 0U)
        << "the test's temp directory must lie in the host's /tmp (TMPDIR unset)";
    hand_to_caller(tree.tmp.path());
    std::vector<std::string> argv{tree.runner.string()};
    const auto probe =
        python(kProbe, {tree.note.string(), tree.prefix.string(), tree.runner.string(),
                        tree.kept.string(), tree.beside.string()});
    argv.insert(argv.end(), probe.begin(), probe.end());
    auto spec = target_spec(argv);
    spec.runtime_prefix = tree.prefix.string();
    spec.withhold.push_back(tree.kept.string());

    const auto confined = run_spec(spec);
    EXPECT_EQ(confined.status, 0) << "the runner is found (127 when the prefix is not shown)\n"
                                  << confined;
    EXPECT_TRUE(confined.has("RUNNER-RAN")) << confined;
    EXPECT_EQ(confined.value("READ-OK"), "prefix-note") << confined;
    EXPECT_TRUE(confined.has("CREATE-DENIED:EROFS")) << confined;
    EXPECT_TRUE(confined.has("REWRITE-DENIED:EROFS") || confined.has("REWRITE-DENIED:EACCES"))
        << confined;
    EXPECT_TRUE(confined.has("WITHHELD-DENIED:ENOENT")) << confined;
    EXPECT_TRUE(confined.has("BESIDE-DENIED:ENOENT")) << confined;
    EXPECT_EQ(confined.value("PARENT-OK"), "prefix") << "only the prefix of its parent\n"
                                                     << confined;
    EXPECT_FALSE(fs::exists(tree.prefix / "bin" / "planted"));

    // Control: on the host the same probe reads the withheld folder and the note beside, and
    // writes into the prefix.
    const auto control = run_spec(spec, Backend::opt_out);
    EXPECT_TRUE(control.has("RUNNER-RAN")) << control;
    EXPECT_TRUE(control.has("CREATE-OK")) << control;
    EXPECT_EQ(control.value("WITHHELD-OK"), "kept-secret") << control;
    EXPECT_EQ(control.value("BESIDE-OK"), "beside-note") << control;
    EXPECT_EQ(control.value("PARENT-OK"), "beside,prefix") << control;
}

// Audited, the runner's start and its reads are the runtime's grant: nothing under the prefix is
// listed, while a refused write elsewhere is.
TEST_F(Confinement, AnAuditedCallRunsTheRunnerOfAPrefixUnderTheHostsTmpUnlisted) {
    const PrefixTree tree;
    std::vector<std::string> argv{tree.runner.string()};
    const auto probe = python(R"PY(
def write(path):
    with open(path, "w") as f:
        f.write("x")
report("READ", lambda: open(sys.argv[1]).read().strip())
report("ETC-WRITE", lambda: write("/etc/tea-prefix-probe"))
)PY",
                              {tree.note.string()});
    argv.insert(argv.end(), probe.begin(), probe.end());
    auto spec = target_spec(argv);
    spec.runtime_prefix = tree.prefix.string();
    // A home the host made, in a run directory whose lock is held, as a trial's.
    const OtherRun run{private_root(), "unused"};
    spec.home = (run.run_dir() / ("tea-evaluate-target-home-" + random_token(12))).string();
    fs::create_directory(spec.home);
    fs::permissions(run.run_dir(), fs::perms{0711});
    hand_to_caller(spec.home);
    spec.unmade.clear();
    spec.temp_dir.clear();

    const auto r = run_session(spec);
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_TRUE(r.has("RUNNER-RAN")) << r;
    EXPECT_EQ(r.value("READ-OK"), "prefix-note") << r;
    const auto line = r.err.find("AUDIT:");
    ASSERT_NE(line, std::string::npos) << r;
    const auto audit =
        nlohmann::json::parse(r.err.substr(line + 6, r.err.find('\n', line) - line - 6));
    EXPECT_EQ(audit.at("audited"), true) << audit.dump(2);
    bool etc_listed = false;
    for (const auto &finding : audit.at("findings")) {
        const auto path = finding.at("path").get<std::string>();
        EXPECT_NE(path.rfind(tree.prefix.string(), 0), 0U) << audit.dump(2);
        etc_listed = etc_listed || path == "/etc/tea-prefix-probe";
    }
    EXPECT_TRUE(etc_listed) << "the control: a refused write elsewhere is listed\n"
                            << audit.dump(2);
}

// A prefix that holds the workspace, the private root and the withheld folder (the fixture's whole
// tree) shadows none of them: the workspace stays writable, the withheld folder and another run
// stay hidden, and what lies beside them in the prefix is shown read-only.
TEST_F(Confinement, ARuntimePrefixHoldingTheCallsPlacesShadowsNoneOfThem) {
    make_file(base() / "beside", "beside-note\n", 0644);
    const OtherRun other{private_root(), "other-home-" + random_token()};
    auto spec = target_spec(python(R"PY(
def write(path):
    with open(path, "w") as f:
        f.write("mine")
    return open(path).read()
report("WORKSPACE", lambda: write(sys.argv[1] + "/written"))
report("WITHHELD", lambda: open(sys.argv[2]).read().strip())
report("OTHER-RUN", lambda: open(sys.argv[3]).read().strip())
report("BESIDE", lambda: open(sys.argv[4]).read().strip())
report("BESIDE-WRITE", lambda: write(sys.argv[4]))
report("HOME", lambda: write(os.environ["HOME"] + "/written"))
)PY",
                                   {workspace().string(), secret_file().string(),
                                    other.secret_file().string(), (base() / "beside").string()}));
    spec.runtime_prefix = base().string();
    const auto confined = run_spec(spec);
    EXPECT_EQ(confined.status, 0) << confined;
    EXPECT_EQ(confined.value("WORKSPACE-OK"), "mine") << confined;
    EXPECT_TRUE(confined.has("WITHHELD-DENIED:ENOENT")) << confined;
    EXPECT_TRUE(confined.has("OTHER-RUN-DENIED:ENOENT")) << confined;
    EXPECT_EQ(confined.value("BESIDE-OK"), "beside-note") << confined;
    EXPECT_TRUE(confined.has("BESIDE-WRITE-DENIED:EROFS") ||
                confined.has("BESIDE-WRITE-DENIED:EACCES"))
        << confined;
    EXPECT_EQ(confined.value("HOME-OK"), "mine") << confined;
    EXPECT_EQ(read_file(workspace() / "written"), "mine");

    // Control: without the prefix, the same place beside is hidden like the rest of /tmp.
    auto without = spec;
    without.runtime_prefix = "/usr";
    const auto hidden = run_spec(without);
    EXPECT_TRUE(hidden.has("BESIDE-DENIED:ENOENT")) << hidden;
}

// A prefix that is the host's /tmp itself is not shown: the call's /tmp stays its own.
TEST_F(Confinement, ARuntimePrefixOfTheHostsTmpItselfLeavesTheCallsTmpItsOwn) {
    make_file(base() / "beside", "beside-note\n", 0644);
    const auto scratch = "tea-bwt-scratch-" + random_token();
    const RemovedAtEnd on_host{fs::path{"/tmp"} / scratch};
    auto spec = target_spec(python(R"PY(
def write(path):
    with open(path, "w") as f:
        f.write("mine")
    return open(path).read()
report("TMP", lambda: write("/tmp/" + sys.argv[1]))
report("BESIDE", lambda: open(sys.argv[2]).read().strip())
)PY",
                                   {scratch, (base() / "beside").string()}));
    spec.runtime_prefix = "/tmp";
    const auto confined = run_spec(spec);
    EXPECT_EQ(confined.status, 0) << confined;
    EXPECT_EQ(confined.value("TMP-OK"), "mine") << confined;
    EXPECT_TRUE(confined.has("BESIDE-DENIED:ENOENT")) << confined;
    EXPECT_FALSE(fs::exists(fs::path{"/tmp"} / scratch)) << "the call's /tmp reached the host";
}

// A prefix the view would have to show that is a link (or passes through one), or that holds a
// quote, is refused before anything runs; a relative one names no place and is not shown.
TEST_F(Confinement, ARuntimePrefixThatIsALinkOrHoldsAQuoteIsRefused) {
    const PrefixTree tree;
    const auto link = tree.tmp / "link";
    fs::create_directory_symlink(tree.prefix, link);
    const auto quoted = tree.tmp / "it's";
    fs::create_directory(quoted);
    const std::pair<fs::path, std::string> refusals[] = {
        {link, "is a symbolic link"},
        {link / "bin", "passes through a symbolic link"},
        {quoted, "holds a quote"}};
    for (const auto &[prefix, reason] : refusals) {
        auto spec = target_spec({"/bin/true"});
        spec.runtime_prefix = prefix.string();
        const auto refused = run_spec(spec, Backend::bubblewrap, true);
        EXPECT_EQ(refused.status, 12) << prefix << "\n" << refused;
        EXPECT_NE(refused.err.find(reason), std::string::npos) << prefix << "\n" << refused;
    }
    // Control: the prefix itself, named as it is, is taken.
    auto spec = target_spec({"/bin/true"});
    spec.runtime_prefix = tree.prefix.string();
    const auto taken = run_spec(spec);
    EXPECT_EQ(taken.status, 0) << taken;

    auto relative = target_spec({"/bin/true"});
    relative.runtime_prefix = "tmp/prefix";
    const auto ran = run_spec(relative);
    EXPECT_EQ(ran.status, 0) << ran;
}

}  // namespace
}  // namespace tea::test::bwrap
