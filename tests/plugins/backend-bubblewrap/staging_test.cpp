// A call started before its plan is complete (ABI 1.5), against the real bwrap: the runtime starts
// bwrap as soon as the backend has named its process, and writes the view (bwrap's argument
// stream) once the complete plan exists. A runtime killed while writing it leaves bwrap a stream
// cut short, and bwrap must then refuse to start the target rather than build part of the view.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "exec/exec_plan.hpp"
#include "harness.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

class Staging : public Confinement {
   protected:
    // A target's launch spec as an unaudited exec sends it: the workspace, the call's temp
    // directory and home provided inside the view (unmade), under the private root.
    tea::exec::LaunchSpec spec(std::vector<std::string> argv) {
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
    static tea::exec::ExecPlan plan_of(const Result &r) {
        EXPECT_EQ(r.status, 0) << r;
        return tea::exec::exec_plan_from_json(r.out);
    }
    static const tea::exec::PlanFile *file(const tea::exec::ExecPlan &plan, int fd) {
        for (const auto &f : plan.files) {
            if (f.child_fd == fd) {
                return &f;
            }
        }
        return nullptr;
    }
    static constexpr int args_fd = 11;
};

// The staged answer names the very process of the complete plan, and defers only bwrap's
// argument stream; that stream ends with its only --unshare-uts, which the host name on bwrap's
// own command line requires.
TEST_F(Staging, TheStagedAnswerNamesTheCompletePlansProcessAndDefersOnlyTheView) {
    const auto s = spec({"/bin/echo", "ran"});
    const auto staged = plan_of(run_spec(s, Backend::bubblewrap, true, -1));
    const auto complete = plan_of(run_spec(s, Backend::bubblewrap, true));

    EXPECT_EQ(staged.argv, complete.argv);
    EXPECT_EQ(staged.env, complete.env);
    EXPECT_EQ(staged.cwd, complete.cwd);
    EXPECT_EQ(staged.run_as, complete.run_as);
    EXPECT_EQ(staged.child, complete.child);
    EXPECT_EQ(staged.lend, complete.lend);
    EXPECT_EQ(staged.setup_mark_fd, complete.setup_mark_fd);
    ASSERT_EQ(staged.files.size(), complete.files.size());
    for (const auto &f : staged.files) {
        const auto *other = file(complete, f.child_fd);
        ASSERT_NE(other, nullptr) << f.child_fd;
        EXPECT_FALSE(other->deferred) << "the complete plan defers nothing";
        if (f.child_fd == args_fd) {
            EXPECT_TRUE(f.deferred);
        } else {
            EXPECT_FALSE(f.deferred) << f.child_fd;
            EXPECT_EQ(f, *other) << f.child_fd;
        }
    }

    const auto &argv = complete.argv;
    const auto dashes = std::find(argv.begin(), argv.end(), "--");
    ASSERT_NE(dashes, argv.end());
    const std::vector<std::string> options(argv.begin() + 1, dashes);
    EXPECT_EQ(options, (std::vector<std::string>{"--args", std::to_string(args_fd), "--hostname",
                                                 "tea-sandbox"}));
    const auto *stream = file(complete, args_fd);
    ASSERT_NE(stream, nullptr);
    std::vector<std::string> elements;
    std::string::size_type begin = 0;
    for (auto end = stream->content.find('\0'); end != std::string::npos;
         end = stream->content.find('\0', begin)) {
        elements.push_back(stream->content.substr(begin, end - begin));
        begin = end + 1;
    }
    EXPECT_EQ(begin, stream->content.size()) << "each element ends with a NUL";
    ASSERT_FALSE(elements.empty());
    EXPECT_EQ(elements.back(), "--unshare-uts");
    EXPECT_EQ(std::count(elements.begin(), elements.end(), "--unshare-uts"), 1);
    EXPECT_EQ(std::count(elements.begin(), elements.end(), "--hostname"), 0);
}

// Every cut of the stream is refused by bwrap before anything of the target runs: at each
// element's end (the stream stops between two options or inside an option's values) and inside
// an element. The control is the whole stream, written the same way, which runs the target.
TEST_F(Staging, AStreamCutShortStartsNoTarget) {
    const auto token = "STAGED-TARGET-RAN-" + random_token();
    const auto s = spec({"/bin/echo", token});
    const auto whole = run_spec(s, Backend::bubblewrap, false, -1);
    ASSERT_EQ(whole.status, 0) << whole;
    ASSERT_TRUE(whole.has(token)) << whole;

    const auto complete = plan_of(run_spec(s, Backend::bubblewrap, true));
    const auto *stream = file(complete, args_fd);
    ASSERT_NE(stream, nullptr);
    const auto &content = stream->content;
    std::vector<long> cuts{0};
    int element = 0;
    // The stream is NUL-terminated elements; its last, "--unshare-uts\0", whole or without its
    // NUL, is the whole stream.
    ASSERT_GT(content.size(), 15U);
    const auto last = content.size() - std::string{"--unshare-uts"}.size() - 1;
    for (std::string::size_type at = content.find('\0'); at < last;
         at = content.find('\0', at + 1), ++element) {
        cuts.push_back(static_cast<long>(at));      // the element without its end
        cuts.push_back(static_cast<long>(at) + 1);  // the element whole, the next one missing
        if (element % 4 == 0 && at > 2) {
            cuts.push_back(static_cast<long>(at) - 2);  // inside the element
        }
    }
    cuts.push_back(static_cast<long>(content.size()) - 2);  // "--unshare-ut"
    cuts.push_back(static_cast<long>(last) + 2);            // "--"
    cuts.push_back(static_cast<long>(last) + 3);            // "--u"
    std::string started;
    for (const long cut : cuts) {
        const auto r = run_spec(s, Backend::bubblewrap, false, cut);
        if (r.status == 0 || r.has(token)) {
            started += "cut at " + std::to_string(cut) + " of " + std::to_string(content.size()) +
                       ": status " + std::to_string(r.status) + "\n";
        }
    }
    EXPECT_TRUE(started.empty()) << started;
    EXPECT_GT(cuts.size(), 20U) << "a stream of a target's view has many elements";
}

}  // namespace
}  // namespace tea::test::bwrap
