// A project of a test's own for the run, score and report tests (run_test.cpp, report_test.cpp):
// a fresh git repository with an example or the test's files, run with the tea-evaluate binary as
// a user runs it.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace tea {
namespace fs = std::filesystem;
using nlohmann::json;

inline const fs::path kSource{TEA_SOURCE_DIR};

// A project of its own: a temp directory every identity can reach, a private root and a
// configuration directory of its own, so neither the developer's files nor another test count.
class Project {
   public:
    explicit Project(const std::string &name) {
        base_ = test::make_temp_dir("tea-run-test-" + name);
        ::chmod(base_.c_str(), 0755);
        root_ = base_ / "project";
        fs::create_directories(root_);
    }
    Project(const Project &) = delete;
    Project &operator=(const Project &) = delete;
    ~Project() {
        std::error_code ec;
        fs::remove_all(base_, ec);
    }

    // Copies an example (its files and its .tea) into the project.
    void copy_example(const std::string &example) {
        fs::copy(kSource / "examples" / example, root_,
                 fs::copy_options::recursive | fs::copy_options::copy_symlinks);
        std::error_code ec;
        fs::remove_all(root_ / ".tea" / "runs", ec);
    }
    void write(const std::string &rel, const std::string &content, bool executable = false) {
        fs::create_directories((root_ / rel).parent_path());
        test::write_file((root_ / rel).string(), content);
        if (executable) ::chmod((root_ / rel).c_str(), 0755);
    }
    void commit() {
        for (const std::vector<std::string> &argv :
             {std::vector<std::string>{"git", "init", "-q", root_.string()},
              {"git", "-C", root_.string(), "add", "-A"},
              {"git", "-C", root_.string(), "-c", "user.name=t", "-c", "user.email=t@t", "commit",
               "-q", "-m", "fixture"}}) {
            const auto o = test::run(argv, test::environment_with({}));
            ASSERT_EQ(o.status, 0) << argv[1] << ": " << o.err;
        }
    }

    // The test's environment, with `host` ("NAME=VALUE") set on top of it.
    [[nodiscard]] std::vector<std::string> env(std::vector<std::string> host = {}) const {
        host.insert(host.begin(), {"XDG_CONFIG_HOME=/nonexistent-tea-test",
                                   "TEA_EVALUATE_PRIVATE_ROOT=" + (base_ / "private").string()});
        return test::environment_with(host);
    }
    [[nodiscard]] test::Outcome tea(std::vector<std::string> args,
                                    std::vector<std::string> host = {}) const {
        args.insert(args.begin(), TEA_EVALUATE_BIN);
        return test::run(args, env(std::move(host)));
    }
    [[nodiscard]] test::Outcome run(std::vector<std::string> host = {}) const {
        return tea({"--json", "run", eval().string()}, std::move(host));
    }
    [[nodiscard]] fs::path eval() const { return root_ / ".tea"; }
    [[nodiscard]] const fs::path &root() const { return root_; }
    [[nodiscard]] fs::path private_root() const { return base_ / "private"; }
    [[nodiscard]] std::size_t leftover_run_dirs() const {
        std::size_t n = 0;
        std::error_code ec;
        for (const auto &e : fs::directory_iterator(private_root(), ec)) {
            n += e.path().filename().string().rfind("run-", 0) == 0 ? 1U : 0U;
        }
        return n;
    }

   private:
    fs::path base_;
    fs::path root_;
};

inline fs::path run_dir_of(const test::Outcome &o) {
    const auto doc = json::parse(o.out, nullptr, false);
    if (!doc.is_object() || !doc.contains("runDir")) return {};
    return doc["runDir"].get<std::string>();
}

inline json read_json(const fs::path &p) {
    std::ifstream in{p};
    return json::parse(in, nullptr, false);
}

}  // namespace tea
