// A call started before its plan is complete (ABI 1.5), against the real bwrap: the runtime starts
// bwrap as soon as the backend has named its process, and writes the view (the stream the view
// builder reads) once the complete plan exists. A runtime killed while writing it leaves the
// builder a stream cut short, and the builder must then refuse to start the target rather than
// build part of the view.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "exec/exec_plan.hpp"
#include "harness.hpp"
#include "support/sanitized.hpp"

namespace tea::test::bwrap {
namespace {

namespace fs = std::filesystem;

class Staging : public Confinement {
   protected:
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
    static std::vector<std::string> elements(const std::string &content) {
        std::vector<std::string> out;
        std::string::size_type begin = 0;
        for (auto end = content.find('\0'); end != std::string::npos;
             end = content.find('\0', begin)) {
            out.push_back(content.substr(begin, end - begin));
            begin = end + 1;
        }
        EXPECT_EQ(begin, content.size()) << "each element ends with a NUL";
        return out;
    }
    static constexpr int args_fd = 11;
    static constexpr int view_fd = 18;
};

// The staged answer names the very process of the complete plan, and defers only the view; bwrap's
// argument stream, whole in both, ends with its only --unshare-uts, which the host name on
// bwrap's own command line requires, and the view with its only --end.
TEST_F(Staging, TheStagedAnswerNamesTheCompletePlansProcessAndDefersOnlyTheView) {
    const auto s = target_spec({"/bin/echo", "ran"});
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
        if (f.child_fd == view_fd) {
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
    const auto args = elements(stream->content);
    ASSERT_FALSE(args.empty());
    EXPECT_EQ(args.back(), "--unshare-uts");
    EXPECT_EQ(std::count(args.begin(), args.end(), "--unshare-uts"), 1);
    EXPECT_EQ(std::count(args.begin(), args.end(), "--hostname"), 0);
    const auto *view = file(complete, view_fd);
    ASSERT_NE(view, nullptr);
    const auto view_elements = elements(view->content);
    ASSERT_FALSE(view_elements.empty());
    EXPECT_EQ(view_elements.back(), "--end");
    EXPECT_EQ(std::count(view_elements.begin(), view_elements.end(), "--end"), 1);
}

// Every cut of the view is refused by the view builder before anything of the target runs: at
// each element's end (the stream stops between two options or inside an option's values) and
// inside an element. The control is the whole view, written the same way, which runs the target.
TEST_F(Staging, AStreamCutShortStartsNoTarget) {
    const auto token = "STAGED-TARGET-RAN-" + random_token();
    const auto s = target_spec({"/bin/echo", token});
    const auto whole = run_spec(s, Backend::bubblewrap, false, -1);
    ASSERT_EQ(whole.status, 0) << whole;
    ASSERT_TRUE(whole.has(token)) << whole;

    const auto complete = plan_of(run_spec(s, Backend::bubblewrap, true));
    const auto *stream = file(complete, view_fd);
    ASSERT_NE(stream, nullptr);
    const auto &content = stream->content;
    std::vector<long> cuts{0};
    int element = 0;
    // The stream is NUL-terminated elements; its last, "--end\0", whole, is the whole stream.
    ASSERT_GT(content.size(), 7U);
    const auto last = content.size() - std::string{"--end"}.size() - 1;
    for (std::string::size_type at = content.find('\0'); at < last;
         at = content.find('\0', at + 1), ++element) {
        cuts.push_back(static_cast<long>(at));      // the element without its end
        cuts.push_back(static_cast<long>(at) + 1);  // the element whole, the next one missing
        if (element % 4 == 0 && at > 2) {
            cuts.push_back(static_cast<long>(at) - 2);  // inside the element
        }
    }
    cuts.push_back(static_cast<long>(content.size()) - 1);  // "--end" without its NUL
    cuts.push_back(static_cast<long>(content.size()) - 2);  // "--en"
    cuts.push_back(static_cast<long>(last) + 2);            // "--"
    EXPECT_GT(cuts.size(), 20U) << "a stream of a target's view has many elements";
    // The sanitized build tries every fourth cut, from a phase drawn afresh at each run.
    const auto stride = static_cast<std::size_t>(sanitized ? 4 : 1);
    const auto phase = std::random_device{}() % stride;
    std::string started;
    for (std::size_t i = phase; i < cuts.size(); i += stride) {
        const long cut = cuts[i];
        const auto r = run_spec(s, Backend::bubblewrap, false, cut);
        if (r.status == 0 || r.has(token)) {
            started += "cut at " + std::to_string(cut) + " of " + std::to_string(content.size()) +
                       ": status " + std::to_string(r.status) + "\n";
        }
    }
    EXPECT_TRUE(started.empty()) << started;
}

}  // namespace
}  // namespace tea::test::bwrap
