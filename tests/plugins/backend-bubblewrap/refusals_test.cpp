// Calls the backend refuses (exit 12, naming the problem) rather than run
// less confined than promised.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "support/fake_bwrap.hpp"
#include "support/process.hpp"
#include "util/fd.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;
using tea::UniqueFd;

constexpr int exit_no_confine = 12;

TEST_F(Confinement, WorkspacePathWithAQuoteOrANewlineIsRefused) {
    for (const std::string name : {"ws\"q", "ws\nq", "ws'q", "ws\\q"}) {
        const auto odd = base() / name;
        fs::create_directory(odd);
        fs::permissions(odd, fs::perms{0755});
        const auto r = run({.command = {"true"}, .workspace = odd.string()});
        EXPECT_EQ(r.status, exit_no_confine) << r;
        EXPECT_NE(r.err.find("quote, a backslash or a control character"), std::string::npos) << r;
    }
    // The positive control: a plain name beside them runs.
    const auto plain = base() / "plain";
    fs::create_directory(plain);
    fs::permissions(plain, fs::perms{0755});
    const auto r = run({.command = {"true"}, .workspace = plain.string()});
    EXPECT_EQ(r.status, 0) << r;
}

TEST_F(Confinement, TempDirInsideTheWithheldFolderIsRefused) {
    const auto inside = run({.command = {"true"},
                             .withhold = {withheld().string()},
                             .env = {"TMPDIR=" + (withheld() / "tmp").string()}});
    EXPECT_EQ(inside.status, exit_no_confine) << inside;
    EXPECT_NE(inside.err.find("TMPDIR"), std::string::npos) << inside;
    EXPECT_NE(inside.err.find(withheld().string()), std::string::npos) << inside;

    const auto elsewhere = run({.command = {"true"},
                                .withhold = {withheld().string()},
                                .env = {"TMPDIR=" + base().string()}});
    EXPECT_EQ(elsewhere.status, 0) << elsewhere;
}

// Attack: a configuration that names bwrap by a relative path has it found from whatever directory
// the process that looks stands in: the runtime's working directory (a workspace a target may
// have written) for the probe, the identity helper's for the call (without this check,
// "bin/bwrap" here passed the probe as the planted program and ran as the system's /bin/bwrap).
// Such a path is refused, naming the key, and nothing is run. Control: the same program named by
// its absolute path is the operator's choice, and runs.
TEST_F(Confinement, AConfiguredBwrapByARelativePathIsRefusedAndNotRun) {
    const auto cwd = base() / "cwd";
    fs::create_directories(cwd / "bin");
    fs::permissions(cwd, fs::perms{0755});
    fs::permissions(cwd / "bin", fs::perms{0755});
    // Where the planted program, run as the calls' identity, can leave its mark.
    fs::create_directories(base() / "marks");
    fs::permissions(base() / "marks", fs::perms{01777});
    const auto marker = base() / "marks" / "planted-ran";
    const std::string system_bwrap = fs::exists("/usr/bin/bwrap") ? "/usr/bin/bwrap" : "/bin/bwrap";
    {
        std::ofstream planted{cwd / "bin" / "bwrap"};
        planted << "#!/bin/sh\ntouch " << marker.string() << "\nexec " << system_bwrap
                << " \"$@\"\n";
    }
    fs::permissions(cwd / "bin" / "bwrap", fs::perms{0755});
    hand_to_caller(cwd);
    const auto in_cwd = [&](const std::string &toml) {
        const auto config = write_config(toml);
        return run_direct({"/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh", cwd.string(),
                           TEA_EVALUATE_BIN, "--config", config, "exec", "--backend", "bubblewrap",
                           "--workspace", workspace().string(), "--", "true"});
    };
    const auto relative = in_cwd("[plugin.bubblewrap]\nbwrap = \"bin/bwrap\"\n");
    EXPECT_EQ(relative.status, 2) << relative;
    EXPECT_NE(relative.err.find("plugin.bubblewrap.bwrap: expected an absolute path or a program "
                                "name, not the relative path \"bin/bwrap\""),
              std::string::npos)
        << relative;
    EXPECT_FALSE(fs::exists(marker));
    const auto absolute =
        in_cwd("[plugin.bubblewrap]\nbwrap = \"" + (cwd / "bin" / "bwrap").string() + "\"\n");
    EXPECT_EQ(absolute.status, 0) << absolute;
    EXPECT_TRUE(fs::exists(marker));
}

TEST_F(Confinement, AConfiguredBwrapThatCannotRunIsNamedWithItsKey) {
    // Installing bubblewrap would not help: the configuration names another program.
    const std::string missing = "[plugin.bubblewrap]\nbwrap = \"/nonexistent/bwrap\"\n";
    const std::string named =
        R"(plugin.bubblewrap.bwrap = "/nonexistent/bwrap" cannot be run (No such file or )"
        R"(directory); set it to bubblewrap's bwrap, or remove it to use the system's)";
    const auto by_auto = run({.command = {"true"}, .config = missing});
    EXPECT_EQ(by_auto.status, exit_no_confine) << by_auto;
    EXPECT_NE(by_auto.err.find(named), std::string::npos) << by_auto;
    EXPECT_EQ(by_auto.err.find("apt-get"), std::string::npos) << by_auto;

    const auto config = write_config(missing);
    const auto by_name =
        run_direct({TEA_EVALUATE_BIN, "--config", config, "exec", "--backend", "bubblewrap",
                    "--workspace", workspace().string(), "--", "true"});
    EXPECT_EQ(by_name.status, exit_no_confine) << by_name;
    EXPECT_NE(by_name.err.find(named), std::string::npos) << by_name;
    EXPECT_EQ(by_name.err.find("apt-get"), std::string::npos) << by_name;

    const auto listed = run_direct({TEA_EVALUATE_BIN, "--config", config, "plugins"});
    EXPECT_EQ(listed.status, 0) << listed;
    const auto line = listed.out.find("bubblewrap ");
    ASSERT_NE(line, std::string::npos) << listed;
    const auto entry =
        listed.out.substr(line, listed.out.find('\n', listed.out.find('\n', line) + 1) - line);
    EXPECT_NE(entry.find("unavailable"), std::string::npos) << listed;
    EXPECT_NE(entry.find("reason: " + named), std::string::npos) << listed;

    // A name, looked for in the system's directories only.
    const auto by_word =
        run({.command = {"true"}, .config = "[plugin.bubblewrap]\nbwrap = \"bwrap-nowhere\"\n"});
    EXPECT_EQ(by_word.status, exit_no_confine) << by_word;
    EXPECT_NE(by_word.err.find(R"(plugin.bubblewrap.bwrap = "bwrap-nowhere" names no program in )"
                               "/usr/bin, /bin, /usr/local/bin, /usr/sbin or /sbin"),
              std::string::npos)
        << by_word;

    // The positive control: with the host's bwrap it is available and runs.
    const auto present = run_direct({TEA_EVALUATE_BIN, "plugins"});
    const auto at = present.out.find("bubblewrap ");
    ASSERT_NE(at, std::string::npos) << present;
    EXPECT_NE(present.out.substr(at, present.out.find('\n', at) - at).find(" available"),
              std::string::npos)
        << present;
    EXPECT_EQ(run({.command = {"true"}}).status, 0);
}

TEST_F(Confinement, MissingBubblewrapIsRefusedWithTheWayToInstallIt) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "hiding the host's bwrap takes a mount namespace of root's";
    }
    const auto system_bwrap =
        fs::canonical(fs::exists("/usr/bin/bwrap") ? "/usr/bin/bwrap" : "/bin/bwrap");
    const std::vector<std::string> exec{
        TEA_EVALUATE_BIN, "exec",        "--backend",          "bubblewrap", "--observer",
        "none",           "--workspace", workspace().string(), "--",         "true"};
    const auto r = run_covering(system_bwrap, "/dev/null", exec);
    EXPECT_EQ(r.status, exit_no_confine) << r;
    EXPECT_NE(r.err.find("bubblewrap (bwrap) is not installed: apt-get install bubblewrap"),
              std::string::npos)
        << r;
    // The control: the same command line with the host's bwrap in place.
    const auto present = run_direct(exec);
    EXPECT_EQ(present.status, 0) << present;
}

TEST_F(Confinement, TheProbeHoldsWhateverDescriptorsTheRuntimeWasStartedWith) {
    // The probe places its programs and files at fixed descriptor numbers in bwrap. A runtime
    // started with descriptors of its own open shifts the numbers its own files get, and one
    // placed before another's source was moved overwrote it (the view builder ran the helper's
    // program). Each count gets a bwrap of its own path, so the probe is not skipped by a stamp.
    // Above every number placed in the child, so placing one never moves the source.
    const UniqueFd null{
        ::fcntl(UniqueFd{::open("/dev/null", O_RDONLY | O_CLOEXEC)}.get(), F_DUPFD_CLOEXEC, 100)};
    ASSERT_TRUE(null);
    for (int extra = 0; extra <= 16; ++extra) {
        const auto dir = base() / ("bwrap-" + std::to_string(extra));
        fs::create_directory(dir);
        fs::permissions(dir, fs::perms{0755});
        write_file((dir / "bwrap").string(), "#!/bin/sh\nexec /usr/bin/bwrap \"$@\"\n");
        fs::permissions(dir / "bwrap", fs::perms{0755});
        const auto config =
            write_config("[plugin.bubblewrap]\nbwrap = \"" + (dir / "bwrap").string() + "\"\n");
        // One open file at every number from 3 up, as an invoker's shell or a supervisor leaves.
        std::vector<std::pair<int, int>> inherit;
        for (int fd = 3; fd < 3 + extra; ++fd) {
            inherit.emplace_back(null.get(), fd);
        }
        const auto r = run_direct(
            {TEA_EVALUATE_BIN, "--config", config, "exec", "--backend", "bubblewrap", "--observer",
             "none", "--workspace", workspace().string(), "--", "/bin/echo", "CONFINED"},
            inherit);
        EXPECT_EQ(r.status, 0) << extra << " descriptors open\n" << r;
        EXPECT_NE(r.out.find("CONFINED"), std::string::npos) << extra << " descriptors open\n" << r;
    }
}

TEST_F(Confinement, AnUnauditedCallWhoseConfinementFailsBeforeTheTargetIsTriedOnceMore) {
    const auto dir = base() / "fake-bwrap";
    const auto r = run({.command = {"/bin/sh", "-c", "echo TARGET-RAN"},
                        .config = tea::test::bwrap_failing_once(dir),
                        .options = {"--observer", "none"}});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_TRUE(r.has("TARGET-RAN")) << r;
    EXPECT_NE(r.err.find("trying once more"), std::string::npos) << r;
    EXPECT_EQ(tea::test::bwrap_tries(dir), 2U) << r;
}

TEST_F(Confinement, ATargetThatFailsByItselfIsNotTriedAgain) {
    // The control of the retry: the same bwrap, already past its one failure, and a target
    // that fails on its own. Its status is its own, and it runs once.
    const auto dir = base() / "fake-bwrap";
    const auto config = tea::test::bwrap_failing_once(dir);
    tea::test::write_file((dir / "failed").string(), "");
    const auto r = run({.command = {"/bin/sh", "-c", "echo TARGET-RAN; exit 1"},
                        .config = config,
                        .options = {"--observer", "none"}});
    EXPECT_EQ(r.status, 1) << r;
    EXPECT_TRUE(r.has("TARGET-RAN")) << r;
    EXPECT_EQ(r.err.find("trying once more"), std::string::npos) << r;
    EXPECT_EQ(tea::test::bwrap_tries(dir), 1U) << r;
}

}  // namespace
}  // namespace tea::test::bwrap
