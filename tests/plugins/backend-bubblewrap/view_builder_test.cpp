// The view builder (plugins/backend-bubblewrap/view/view.cpp) on its own, under the real bwrap
// with the options the backend gives it: a view it cannot read whole, or that says something it
// does not know, starts no target; paths no layer should have to quote are mounted as given; and a
// mount the host holds read-only beneath a writable bind stays read-only. The protections of the
// view it builds are shown by the whole suite run unaudited (see CMakeLists.txt), where every
// `exec` goes through it.
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "exec/exec_plan.hpp"
#include "harness.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

constexpr int args_fd = 11;
constexpr int view_fd = 18;
constexpr int mark_fd = 15;
constexpr int builder_fd = 19;

std::string nul_joined(const std::vector<std::string> &items) {
    std::string out;
    for (const auto &i : items) {
        out += i;
        out += '\0';
    }
    return out;
}

class ViewBuilder : public Confinement {
   protected:
    // The backend's own plan for a call in the fixture's workspace: bwrap with its options, up to
    // the view builder, then the builder's options up to "--" (the value of --exec replaced).
    void SetUp() override {
        Confinement::SetUp();
        const auto r = run_spec(target_spec({"/bin/true"}), Backend::bubblewrap, true);
        ASSERT_EQ(r.status, 0) << r;
        plan_ = tea::exec::exec_plan_from_json(r.out);
        const auto builder = std::find(plan_.argv.begin(), plan_.argv.end(), "/proc/self/fd/19");
        ASSERT_NE(builder, plan_.argv.end()) << "an unaudited call's bwrap runs the builder";
        const auto dashes = std::find(builder, plan_.argv.end(), "--");
        ASSERT_NE(dashes, plan_.argv.end());
        bwrap_.assign(plan_.argv.begin(), builder + 1);
        options_.assign(builder + 1, dashes + 1);
    }

    // bwrap as the plan starts it, as the plan's identity, with `stream` as the view and
    // `options` as the builder's (the plan's, running command, unless given).
    Result build(const std::string &stream, const std::vector<std::string> &command,
                 std::vector<std::string> options = {},
                 const std::vector<std::pair<int, int>> &more_fds = {}) {
        const auto args_file = base() / ("args-" + random_token());
        const auto view_file = base() / ("view-" + random_token());
        for (const auto &f : plan_.files) {
            if (f.child_fd == args_fd) {
                make_file(args_file, f.content, 0644);
            }
        }
        make_file(view_file, stream, 0644);
        const int args = ::open(args_file.c_str(), O_RDONLY | O_CLOEXEC);
        const int view = ::open(view_file.c_str(), O_RDONLY | O_CLOEXEC);
        const int builder = ::open(TEA_SANDBOX_VIEW_BIN, O_RDONLY | O_CLOEXEC);
        int mark[2] = {-1, -1};
        EXPECT_EQ(::pipe2(mark, O_CLOEXEC), 0);
        EXPECT_EQ(::write(mark[1], "m", 1), 1);
        ::close(mark[1]);
        EXPECT_GE(args, 0);
        EXPECT_GE(view, 0);
        EXPECT_GE(builder, 0);
        std::vector<std::string> argv;
        if (plan_.run_as.requested) {
            argv = {TEA_SANDBOX_HELPER_BIN,
                    "drop",
                    "--uid",
                    std::to_string(plan_.run_as.uid),
                    "--gid",
                    std::to_string(plan_.run_as.gid),
                    "--"};
        }
        argv.insert(argv.end(), bwrap_.begin(), bwrap_.end());
        if (options.empty()) {
            options = options_;
            *(std::find(options.begin(), options.end(), "--exec") + 1) = command.front();
        }
        argv.insert(argv.end(), options.begin(), options.end());
        argv.insert(argv.end(), command.begin(), command.end());
        std::vector<std::pair<int, int>> fds{
            {args, args_fd}, {view, view_fd}, {mark[0], mark_fd}, {builder, builder_fd}};
        fds.insert(fds.end(), more_fds.begin(), more_fds.end());
        auto r = run_direct(argv, fds);
        for (const int fd : {args, view, builder, mark[0]}) {
            ::close(fd);
        }
        return r;
    }

    tea::exec::ExecPlan plan_;
    std::vector<std::string> bwrap_;
    std::vector<std::string> options_;

    // A tree the test made, handed to the identity the target runs as (bwrap's own when the test
    // is not root): what a call's loan of its workspace does.
    void hand_to_target(const fs::path &tree) const {
        if (::geteuid() != 0) {
            return;
        }
        for (const auto &entry : fs::recursive_directory_iterator{tree}) {
            ASSERT_EQ(::lchown(entry.path().c_str(), sandbox_uid(), sandbox_gid()), 0);
        }
        ASSERT_EQ(::lchown(tree.c_str(), sandbox_uid(), sandbox_gid()), 0);
    }

    // A view as a call's: /dev made, the withheld folder covered, then `extra`, then /dev
    // read-only and the workspace as the working directory.
    std::vector<std::string> view(const std::vector<std::string> &extra = {}) const {
        std::vector<std::string> v{"--dev",        "/dev",
                                   "--size",       "4096",
                                   "--tmpfs",      withheld().string(),
                                   "--remount-ro", withheld().string()};
        v.insert(v.end(), extra.begin(), extra.end());
        v.insert(v.end(), {"--remount-ro", "/dev", "--chdir", workspace().string()});
        return v;
    }
    // The same view whole, as the builder reads it: NUL-separated, ending with --end.
    std::string stream(const std::vector<std::string> &extra = {}) const {
        auto v = view(extra);
        v.emplace_back("--end");
        return nul_joined(v);
    }
};

TEST_F(ViewBuilder, AViewItCannotReadWholeOrDoesNotKnowStartsNoTarget) {
    const auto token = "VIEW-TARGET-RAN-" + random_token();
    const std::vector<std::string> command{"/bin/sh", "-c",
                                           "echo " + token + "; cat \"$1\" 2>&1 || true", "sh",
                                           secret_file().string()};
    const auto whole = stream();

    // Control: the whole view runs the target, and covers the withheld folder.
    const auto ran = build(whole, command);
    EXPECT_EQ(ran.status, 0) << ran;
    EXPECT_TRUE(ran.has(token)) << ran;
    EXPECT_EQ(ran.out.find(secret()), std::string::npos) << ran;

    const auto with = [&](const std::vector<std::string> &extra) { return stream(extra); };
    const std::vector<std::pair<std::string, std::string>> refused{
        {"empty", ""},
        {"no --end", nul_joined(view())},
        {"--end without its NUL", whole.substr(0, whole.size() - 1)},
        {"unknown option", with({"--dev-bind", "/", "/"})},
        {"an option without its value", with({"--tmpfs"})},
        {"a bind without its destination", with({"--ro-bind", "/etc"})},
        {"a mode that is not octal", with({"--perms", "0789", "--tmpfs", "/dev/x"})},
        {"a size that is not a number", with({"--size", "12k", "--tmpfs", "/dev/x"})},
        {"a relative directory", with({"--chdir", "relative"})},
        {"no working directory", nul_joined({"--remount-ro", "/dev", "--end"})},
        {"a missing source", with({"--ro-bind", "/nonexistent-" + random_token(), "/dev/y"})},
        {"a mount point it cannot make", with({"--tmpfs", "/etc/tea-" + random_token()})},
        {"a NUL-less tail", whole + "--bind"},
        {"a second /dev", with({"--dev", "/dev"})},
        {"a relative mount point", with({"--tmpfs", "dev/x"})},
        // Checked whole before the first mount: an unknown option after valid ones.
        {"an unknown option last", with({"--tmpfs", "/dev/x", "--overlay", "/a"})},
    };
    for (const auto &[what, stream] : refused) {
        const auto r = build(stream, command);
        EXPECT_EQ(r.status, 125) << what << "\n" << r;
        EXPECT_FALSE(r.has(token)) << what << "\n" << r;
        EXPECT_NE(r.err.find("tea-sandbox-view: "), std::string::npos) << what << "\n" << r;
    }

    // Its own options: the target never runs as the call's uid 0, which held capabilities, and
    // nothing runs without every option.
    const auto view_fd_text = std::to_string(view_fd);
    const auto mark_text = std::to_string(mark_fd);
    for (const auto &options : std::vector<std::vector<std::string>>{
             {"--view-fd", view_fd_text, "--setup-mark", mark_text, "--uid", "0", "--gid", "0",
              "--exec", command.front(), "--"},
             {"--view-fd", view_fd_text, "--setup-mark", mark_text, "--exec", command.front(),
              "--"},
             {"--view-fd", "2", "--setup-mark", mark_text, "--uid", "1", "--gid", "1", "--exec",
              command.front(), "--"},
             {"--view-fd", view_fd_text, "--setup-mark", mark_text, "--uid", "1", "--gid", "1",
              "--unknown", "x", "--exec", command.front(), "--"}}) {
        const auto r = build(whole, command, options);
        EXPECT_EQ(r.status, 125) << options[5] << "\n" << r;
        EXPECT_FALSE(r.has(token)) << r;
    }
}

TEST_F(ViewBuilder, PathsWithQuotesNewlinesAndOtherBytesAreMountedAsGiven) {
    const std::string name = std::string{"odd \"'\\\n\t"} + "\xff\xfe" + "-" + random_token();
    const auto dir = workspace() / name;
    fs::create_directory(dir);
    make_file(dir / "inside", "SEEN", 0644);
    hand_to_target(dir);
    // Read-only over itself, then a cover over a file of it: both must find the odd path.
    const auto r = build(stream({"--ro-bind", dir.string(), dir.string(), "--ro-bind", "/dev/null",
                                 (dir / "inside").string()}),
                         {"/bin/sh", "-c",
                          "ls \"$1\" && [ -c \"$1/inside\" ] && echo MASKED; touch \"$1/new\" "
                          "2>/dev/null && echo WROTE || echo READ-ONLY",
                          "sh", dir.string()});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_TRUE(r.has("inside")) << r;
    EXPECT_TRUE(r.has("MASKED")) << "the file is covered by /dev/null\n" << r;
    EXPECT_TRUE(r.has("READ-ONLY")) << r;
    // Control: without the binds the same directory shows its file and takes a write.
    const auto c = build(stream({"--bind", dir.string(), dir.string()}),
                         {"/bin/sh", "-c",
                          "wc -c < \"$1/inside\"; touch \"$1/new\" "
                          "2>/dev/null && echo WROTE || echo READ-ONLY",
                          "sh", dir.string()});
    EXPECT_EQ(c.status, 0) << c;
    EXPECT_TRUE(c.has("4")) << c;
    EXPECT_TRUE(c.has("WROTE")) << c;
}

// A writable bind whose tree holds a mount the host keeps read-only: the kernel locks that mount
// read-only in the call's namespace, so the builder makes only the rest writable.
TEST_F(ViewBuilder, AReadOnlyHostMountBeneathAWritableBindStaysReadOnly) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "only root can mount the read-only tmpfs the test needs";
    }
    const auto dir = workspace() / ("tree-" + random_token());
    const auto sub = dir / "locked";
    const auto source = workspace() / ("source-" + random_token());
    fs::create_directories(sub);
    fs::create_directories(source);
    hand_to_target(dir);
    hand_to_target(source);
    // Read-only in the mount alone, not in its file system: only the lock keeps it so inside.
    ASSERT_EQ(::mount(source.c_str(), sub.c_str(), nullptr, MS_BIND, nullptr), 0);
    const struct Unmount {
        const fs::path &at;
        ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
    } unmount{sub};
    ASSERT_EQ(::mount(nullptr, sub.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr), 0);
    const auto r = build(stream({"--bind", dir.string(), dir.string()}),
                         {"/bin/sh", "-c",
                          "touch \"$1/top\" && echo TOP-WROTE; touch "
                          "\"$1/locked/x\" 2>&1 || echo LOCKED-READ-ONLY",
                          "sh", dir.string()});
    EXPECT_EQ(r.status, 0) << r;
    EXPECT_TRUE(r.has("TOP-WROTE")) << r;
    EXPECT_TRUE(r.has("LOCKED-READ-ONLY")) << r;
    EXPECT_NE(r.out.find("Read-only file system"), std::string::npos) << r;
    // Control: the directory beneath the mount takes the same write.
    const auto c =
        build(stream({"--bind", source.string(), source.string()}),
              {"/bin/sh", "-c", "touch \"$1/x\" && echo SOURCE-WROTE", "sh", source.string()});
    EXPECT_TRUE(c.has("SOURCE-WROTE")) << c;
}

// A file of given content (a login's, --ro-bind-data) in a directory a target of an earlier call
// could write: a link it planted on the way to the file's place, or at the place itself, would
// carry the mount over the file the link names. The builder refuses both before the target runs;
// the control, the same place made of plain directories, shows the content read-only and 0400.
TEST_F(ViewBuilder, AFileOfGivenContentIsNeverMountedThroughALink) {
    const auto home = workspace() / ("home-" + random_token());
    const auto elsewhere = workspace() / ("elsewhere-" + random_token());
    fs::create_directories(home);
    fs::create_directories(elsewhere);
    make_file(elsewhere / "creds", "ORIGINAL", 0644);
    const auto content = "LOGIN-" + random_token();
    const auto data = base() / ("data-" + random_token());
    make_file(data, content, 0600);
    constexpr int data_fd = 20;
    const auto place = (home / ".claude" / "creds").string();
    const std::vector<std::string> command{
        "/bin/sh",
        "-c",
        "echo TARGET-RAN; cat \"$1\"; echo; cat \"$2\"; echo; stat -c MODE-%a \"$1\"; "
        "echo x > \"$1\" 2>/dev/null && echo WROTE || echo READ-ONLY",
        "sh",
        place,
        (elsewhere / "creds").string()};
    const auto run = [&] {
        hand_to_target(home);
        hand_to_target(elsewhere);
        const int fd = ::open(data.c_str(), O_RDONLY | O_CLOEXEC);
        EXPECT_GE(fd, 0);
        auto r = build(stream({"--bind", home.string(), home.string(), "--perms", "0400",
                               "--ro-bind-data", std::to_string(data_fd), place}),
                       command, {}, {{fd, data_fd}});
        ::close(fd);
        return r;
    };

    // The attack: .claude a link to another directory of the view.
    fs::create_directory_symlink(elsewhere, home / ".claude");
    const auto on_the_way = run();
    EXPECT_EQ(on_the_way.status, 125) << on_the_way;
    EXPECT_FALSE(on_the_way.has("TARGET-RAN")) << on_the_way;
    EXPECT_NE(on_the_way.err.find("a link or a file that is no directory lies on the way to"),
              std::string::npos)
        << on_the_way;
    // And the place itself a link to that file.
    fs::remove(home / ".claude");
    fs::create_directory(home / ".claude");
    fs::create_symlink(elsewhere / "creds", place);
    const auto at_the_place = run();
    EXPECT_EQ(at_the_place.status, 125) << at_the_place;
    EXPECT_FALSE(at_the_place.has("TARGET-RAN")) << at_the_place;
    EXPECT_NE(at_the_place.err.find("is no regular file"), std::string::npos) << at_the_place;

    // Control: plain directories on the way, the place made by the builder.
    fs::remove(place);
    const auto shown = run();
    EXPECT_EQ(shown.status, 0) << shown;
    EXPECT_TRUE(shown.has(content)) << shown;
    EXPECT_TRUE(shown.has("ORIGINAL")) << "the other file is as it was\n" << shown;
    EXPECT_TRUE(shown.has("MODE-400")) << shown;
    EXPECT_TRUE(shown.has("READ-ONLY")) << shown;
    // Nothing of the content reached the host's disk: the place is the empty mount point.
    EXPECT_EQ(fs::file_size(place), 0U);
}

}  // namespace
}  // namespace tea::test::bwrap
