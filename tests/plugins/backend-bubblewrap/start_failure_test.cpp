// A target that cannot start gets the shell's answer, the same under every backend and observer:
// 127 when its program is nowhere, 126 when it is there and cannot be executed. The suite runs
// audited and unaudited (CMakeLists.txt), and each call is compared with --backend opt-out.
#include <unistd.h>

#include <filesystem>
#include <string>

#include "harness.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

bool says(const Result &r, const std::string &text) {
    return r.err.find(text) != std::string::npos;
}

// The runtime's PATH begins with a folder only root may search, as root's own ~/.cargo/bin is. As
// root, the sandbox identity's search met it and answered "Permission denied" (126) for a command
// that exists nowhere, where opt-out said "not found" (127).
TEST_P(EitherIdentity, ACommandThatIsNowhereIsNotFoundUnderEveryBackend) {
    const auto root_only = host_dir() / "root-only-bin";
    const auto shown = host_dir() / "shown-bin";
    fs::create_directory(root_only);
    fs::create_directory(shown);
    fs::permissions(root_only, fs::perms{0700});
    fs::permissions(shown, fs::perms{0755});
    const std::string path = "PATH=" + root_only.string() + ":" + shown.string() + ":/usr/bin:/bin";
    const std::string name = "tea-no-such-command-" + random_token();

    const auto [confined, control] = run_both({.command = {name}, .env = {path}});
    EXPECT_EQ(confined.status, 127) << confined;
    EXPECT_TRUE(says(confined, name + ": command not found")) << confined;
    EXPECT_FALSE(says(confined, "Permission denied")) << confined;
    EXPECT_EQ(control.status, 127) << control;

    // The control: the same search finds a program of that name further on, under both.
    make_file(shown / name, "#!/bin/sh\necho FOUND-RAN\n", 0755);
    const auto [found, found_control] = run_both({.command = {name}, .env = {path}});
    EXPECT_EQ(found.status, 0) << found;
    EXPECT_TRUE(found.has("FOUND-RAN")) << found;
    EXPECT_EQ(found_control.status, 0) << found_control;
    EXPECT_TRUE(found_control.has("FOUND-RAN")) << found_control;
}

// A program that only the runtime's identity reaches: found, so not 127; the identity the target
// runs as may not execute it, which is 126, named as the target's exec and not the host's failure.
TEST_P(EitherIdentity, AProgramTheTargetsIdentityCannotReachIsFoundAndNotExecutable) {
    const auto root_only = host_dir() / "root-only-bin";
    fs::create_directory(root_only);
    fs::permissions(root_only, fs::perms{0700});
    const std::string name = "tea-root-only-" + random_token();
    make_file(root_only / name, "#!/bin/sh\necho ROOT-ONLY-RAN\n", 0755);
    const std::string path = "PATH=" + root_only.string() + ":/usr/bin:/bin";

    const auto [confined, control] = run_both({.command = {name}, .env = {path}});
    if (::geteuid() != 0) {
        // The runtime and the target are the folder's owner: both run it.
        EXPECT_EQ(confined.status, 0) << confined;
        EXPECT_TRUE(control.has("ROOT-ONLY-RAN")) << control;
    } else if (GetParam() == Identity::invoker) {
        // Root finds it and runs it unconfined; the sandbox identity cannot search the folder.
        EXPECT_EQ(confined.status, 126) << confined;
        EXPECT_FALSE(confined.has("ROOT-ONLY-RAN")) << confined;
        EXPECT_FALSE(says(confined, "cannot confine")) << confined;
        EXPECT_EQ(control.status, 0) << control;
        EXPECT_TRUE(control.has("ROOT-ONLY-RAN")) << control;
    } else {
        // An unprivileged runtime cannot see into the folder: nothing of that name is there.
        EXPECT_EQ(confined.status, 127) << confined;
        EXPECT_EQ(control.status, 127) << control;
    }
}

// A script without "#!": glibc's execvp runs it through /bin/sh, so the audited helper did, and the
// audit, waiting for the script's own exec, took the call for a confinement that never started
// (exit 12, "this host cannot confine"); the view builder and opt-out, which call execve, said
// 126. Now it is 126 everywhere, naming the missing line, and the script never runs.
TEST_P(EitherIdentity, AScriptWithoutAnInterpreterLineIsNotExecutableUnderEveryBackend) {
    const auto script = workspace() / "no-interpreter-line";
    make_file(script, "echo RAN-THROUGH-SH\n", 0755);
    const auto check = [&](const Result &r, const char *how) {
        EXPECT_EQ(r.status, 126) << how << "\n" << r;
        EXPECT_FALSE(r.has("RAN-THROUGH-SH")) << how << "\n" << r;
        EXPECT_TRUE(says(r, "interpreter line (#!)")) << how << "\n" << r;
        EXPECT_FALSE(says(r, "cannot confine")) << how << "\n" << r;
        EXPECT_FALSE(says(r, "trying once more")) << "the target's own answer\n"
                                                  << how << "\n"
                                                  << r;
    };
    const auto [confined, control] = run_both({.command = {script.string()}});
    check(confined, "bubblewrap");
    check(control, "opt-out");
    // Through the helper that stays in front of a target with a route out.
    check(run({.command = {script.string()}, .options = {"--egress", "127.0.0.1:9"}}),
          "bubblewrap, with a route out");
    // The evaluator's view starts its program through the same helper.
    check(run_spec(grader_spec({script.string()}, {})), "the grader's view");

    // The control: the same script with its interpreter line runs under each.
    make_file(script, "#!/bin/sh\necho RAN-THROUGH-SH\n", 0755);
    const auto [ran, ran_control] = run_both({.command = {script.string()}});
    EXPECT_TRUE(ran.has("RAN-THROUGH-SH")) << ran;
    EXPECT_TRUE(ran_control.has("RAN-THROUGH-SH")) << ran_control;
    EXPECT_TRUE(run({.command = {script.string()}, .options = {"--egress", "127.0.0.1:9"}})
                    .has("RAN-THROUGH-SH"));
    EXPECT_TRUE(run_spec(grader_spec({script.string()}, {})).has("RAN-THROUGH-SH"));
}

// A file without an execute bit: 126 under each, found and not executable.
TEST_P(EitherIdentity, AFileWithoutAnExecuteBitIsNotExecutableUnderEveryBackend) {
    const auto script = workspace() / "not-executable";
    make_file(script, "#!/bin/sh\necho RAN\n", 0644);
    const auto [confined, control] = run_both({.command = {script.string()}});
    EXPECT_EQ(confined.status, 126) << confined;
    EXPECT_FALSE(confined.has("RAN")) << confined;
    EXPECT_EQ(control.status, 126) << control;
}

}  // namespace
}  // namespace tea::test::bwrap
