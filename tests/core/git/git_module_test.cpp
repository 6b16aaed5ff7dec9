// The git module's boundary (core/git/module_abi.h): every value survives the JSON trip, the
// module loads through the plugins' loader, and a bad request or a failing operation comes back
// as an error answer, never as a crash.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "git/module_abi.h"
#include "git/wire.hpp"
#include "plugins/host_services.hpp"
#include "plugins/library.hpp"

namespace tea::git {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(GitWire, HostileValuesSurviveTheTrip) {
    WorkspaceSource s;
    s.project_root = "/tmp/a \"quoted\"\nname\xff\xfe";  // a newline and bytes that are not UTF-8
    s.git = true;
    s.commit = "0123456789abcdef0123456789abcdef01234567";
    s.git_dir = "/r/.git";
    s.worktree_git_dir = "/r/.git/worktrees/w\n";
    s.worktree = "/r";
    s.enclosing_git_dir = "/outer/.git\xff";
    s.prefix = "sub/\x80";
    s.protected_paths = {"/r/.husky/_", "/r/.git"};
    s.excluded = {".tea", "x\ny"};
    const auto back = wire::source_from_json(json::parse(wire::to_json(s).dump()));
    EXPECT_EQ(back.project_root, s.project_root);
    EXPECT_EQ(back.git, s.git);
    EXPECT_EQ(back.commit, s.commit);
    EXPECT_EQ(back.git_dir, s.git_dir);
    EXPECT_EQ(back.worktree_git_dir, s.worktree_git_dir);
    EXPECT_EQ(back.worktree, s.worktree);
    EXPECT_EQ(back.enclosing_git_dir, s.enclosing_git_dir);
    EXPECT_EQ(back.prefix, s.prefix);
    EXPECT_EQ(back.protected_paths, s.protected_paths);
    EXPECT_EQ(back.excluded, s.excluded);

    PrivateRepositoryResult r;
    r.commit_id = s.commit;
    r.commits = 3;
    r.trees = 4;
    r.blobs = 5;
    r.tags = 1;
    r.missing_objects = {"abc"};
    r.reused_from_cache = true;
    const auto rb = wire::result_from_json(json::parse(wire::to_json(r).dump()));
    EXPECT_EQ(rb.commit_id, r.commit_id);
    EXPECT_EQ(rb.commits + rb.trees + rb.blobs + rb.tags, 13U);
    EXPECT_EQ(rb.missing_objects, r.missing_objects);
    EXPECT_TRUE(rb.reused_from_cache);
}

TEST(GitWire, AMissingOrMistypedFieldIsRefused) {
    EXPECT_THROW((void)wire::source_from_json(json::object()), std::invalid_argument);
    auto doc = wire::to_json(WorkspaceSource{});
    doc["git"] = "yes";
    EXPECT_THROW((void)wire::source_from_json(doc), std::invalid_argument);
    EXPECT_THROW((void)wire::materialized_from_json(json{{"files", -1}, {"skipped", 0}}),
                 std::invalid_argument);
}

// The module as the runtime loads it: through the plugins' loader, with a host services table.
class GitModuleTest : public ::testing::Test {
   protected:
    void SetUp() override {
        void *entry = plugins::load_library(TEA_GIT_MODULE_FILE, TEA_GIT_MODULE_ENTRY_SYMBOL,
                                            plugins::TrustPolicy::for_this_process());
        ASSERT_NE(entry, nullptr);
        module_ = reinterpret_cast<tea_git_module_entry_fn>(entry)();
        ASSERT_NE(module_, nullptr);
        ASSERT_EQ(module_->struct_size, sizeof(tea_git_module));
        ASSERT_EQ(module_->abi, std::uint32_t{TEA_GIT_MODULE_ABI});
        host_ = plugins::host_services_for("git module test");
    }

    std::pair<int, json> call(tea_git_operation_fn tea_git_module::*operation,
                              const std::string &request) {
        tea_buffer answer;
        answer.limit = std::size_t{64} << 20U;
        const int status =
            (module_->*operation)(host_, tea_str{request.data(), request.size()}, &answer);
        return {status, json::parse(answer.data)};
    }

    const tea_git_module *module_ = nullptr;
    const tea_host_services *host_ = nullptr;
};

TEST_F(GitModuleTest, BadRequestsAreErrorAnswers) {
    using Op = tea_git_operation_fn tea_git_module::*;
    for (const auto &[op, request] : std::vector<std::pair<Op, std::string>>{
             {&tea_git_module::open_workspace_source, "{not json"},
             {&tea_git_module::open_workspace_source, R"({"projectRoot": 5, "excluded": []})"},
             {&tea_git_module::materialize, R"({"source": {}, "destination": "/nowhere"})"},
             {&tea_git_module::attach_in_place, "{}"},
             {&tea_git_module::apply_patch, R"({"source": {}, "patch": "x"})"},
             {&tea_git_module::build_private_repository, std::string(1 << 16, '[')}}) {
        const auto [status, doc] = call(op, request);
        EXPECT_EQ(status, TEA_FAILED) << request.substr(0, 40);
        EXPECT_EQ(doc["kind"], "other") << doc.dump();
        EXPECT_FALSE(doc["message"].get<std::string>().empty());
    }
}

TEST_F(GitModuleTest, OperationErrorsKeepTheirKindAndGoodRequestsAnswer) {
    std::string pattern = (fs::temp_directory_path() / "tea-git-module-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    const fs::path dir = pattern;
    // A repository with no commit: the workspace source refuses it by name.
    ASSERT_EQ(std::system(("git init -q " + dir.string()).c_str()), 0);
    auto [status, doc] =
        call(&tea_git_module::open_workspace_source,
             json{{"projectRoot", dir.string()}, {"excluded", {".tea"}}, {"requireCommit", true}}
                 .dump());
    EXPECT_EQ(status, TEA_FAILED);
    EXPECT_EQ(doc["kind"], "workspace_source") << doc.dump();
    // The positive control: once it has a commit, the same request answers with its source.
    ASSERT_EQ(std::system(("git -C " + dir.string() +
                           " -c user.name=t -c user.email=t@t commit -q --allow-empty -m one")
                              .c_str()),
              0);
    std::tie(status, doc) =
        call(&tea_git_module::open_workspace_source,
             json{{"projectRoot", dir.string()}, {"excluded", {".tea"}}, {"requireCommit", true}}
                 .dump());
    EXPECT_EQ(status, 0) << doc.dump();
    const auto source = wire::source_from_json(doc);
    EXPECT_TRUE(source.git);
    EXPECT_EQ(source.commit.size(), 40U);
    fs::remove_all(dir);
}

}  // namespace
}  // namespace tea::git
