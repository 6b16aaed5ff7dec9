// The git module's boundary (core/git/module_abi.h): every value survives the JSON trip, and a
// bad request or a failing operation comes back as an error answer, never as a crash.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "git/module_abi.h"
#include "git/wire.hpp"

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

class GitModuleTest : public ::testing::Test {
   protected:
    void SetUp() override {
        handle_ = ::dlopen(TEA_GIT_MODULE_FILE, RTLD_NOW | RTLD_LOCAL);
        ASSERT_NE(handle_, nullptr) << ::dlerror();
        using Entry = const tea_git_module *(*)();
        auto entry = reinterpret_cast<Entry>(::dlsym(handle_, "tea_git_module_v1"));
        ASSERT_NE(entry, nullptr);
        module_ = entry();
        ASSERT_EQ(module_->abi, unsigned{TEA_GIT_MODULE_ABI});
    }
    void TearDown() override {
        if (handle_ != nullptr) {
            ::dlclose(handle_);
        }
    }

    std::pair<int, json> call(const char *operation, const std::string &request) {
        char *raw = nullptr;
        std::size_t length = 0;
        const int status = module_->call(operation, request.data(), request.size(), &raw, &length);
        EXPECT_NE(raw, nullptr);
        auto doc = json::parse(std::string{raw, length});
        module_->release(raw);
        return {status, doc};
    }

    void *handle_ = nullptr;
    const tea_git_module *module_ = nullptr;
};

TEST_F(GitModuleTest, BadRequestsAreErrorAnswers) {
    for (const auto &[op, request] : std::vector<std::pair<const char *, std::string>>{
             {"no_such_operation", "{}"},
             {"open_workspace_source", "{not json"},
             {"open_workspace_source", R"({"projectRoot": 5, "excluded": []})"},
             {"materialize", R"({"source": {}, "destination": "/nowhere"})"},
             {"build_private_repository", std::string(1 << 16, '[')}}) {
        const auto [status, doc] = call(op, request);
        EXPECT_EQ(status, 1) << op << " " << request.substr(0, 40);
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
        call("open_workspace_source",
             json{{"projectRoot", dir.string()}, {"excluded", {".tea"}}, {"requireCommit", true}}
                 .dump());
    EXPECT_EQ(status, 1);
    EXPECT_EQ(doc["kind"], "workspace_source") << doc.dump();
    // The positive control: once it has a commit, the same request answers with its source.
    ASSERT_EQ(std::system(("git -C " + dir.string() +
                           " -c user.name=t -c user.email=t@t commit -q --allow-empty -m one")
                              .c_str()),
              0);
    std::tie(status, doc) =
        call("open_workspace_source",
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
