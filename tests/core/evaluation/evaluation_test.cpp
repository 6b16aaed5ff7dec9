#include "evaluation/evaluation.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "evaluation/skill_target.hpp"
#include "support/process.hpp"

namespace tea::evaluation {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A project with a target and an evaluation folder (.tea) holding a valid evaluation; each test
// changes one thing and looks for the problem it makes.
class EvaluationTest : public ::testing::Test {
   protected:
    void SetUp() override {
        root_ = test::make_temp_dir("tea-evaluation-test");
        project_ = fs::path{root_} / "project";
        folder_ = project_ / ".tea";
        fs::create_directories(folder_ / "probes");
        fs::create_directories(folder_ / "evaluator");
        fs::create_directories(project_ / "bin");
        put(project_ / "bin/greet.sh", "#!/bin/sh\necho hello\n");
        put(folder_ / "evaluator/grade.sh", "#!/bin/sh\necho '{\"verdict\":\"pass\"}'\n");
        fs::permissions(project_ / "bin/greet.sh", fs::perms{0755});
        fs::permissions(folder_ / "evaluator/grade.sh", fs::perms{0755});
        put(folder_ / "probes/01-hello.json",
            R"({"entry": "greeter", "args": ["hello", "world"], "stdin": "hi\n",
                "files": {"in/name.txt": "Ada"}})");
        put(folder_ / "probes/00-bye.json", R"({"entry": "greeter", "args": ["bye"]})");
        put(folder_ / "probes/README.md", "not a probe");
        doc_ = json::parse(R"({
            "trials": 3,
            "confinement": true,
            "registry": [{
                "interfaceId": "greeter",
                "executable": "greet",
                "target": "bin/greet.sh",
                "subcommandPaths": [["hello"], ["bye"]],
                "artifacts": {"greeting": "out/greeting.txt"},
                "environmentKeys": ["LANG"],
                "maxElapsedMs": 5000,
                "infrastructureExitCodes": [75],
                "systemPaths": ["/usr/share/zoneinfo/"],
                "egress": [{"host": "api.example.com", "port": 443, "addresses": ["192.0.2.1"]}],
                "login": "claude"
            }],
            "evaluator": {"command": ["evaluator/grade.sh", "--strict"], "maxElapsedMs": 30000}
        })");
    }
    void TearDown() override { fs::remove_all(root_); }

    static void put(const fs::path &path, const std::string &content) {
        fs::create_directories(path.parent_path());
        test::write_file(path.string(), content);
    }
    json &entry() { return doc_["registry"][0]; }
    Loaded load_doc() {
        put(folder_ / "evaluation.json", doc_.dump(2));
        return load(folder_);
    }
    Loaded load_text(const std::string &text) {
        put(folder_ / "evaluation.json", text);
        return load(folder_);
    }

    std::string root_;
    fs::path project_;
    fs::path folder_;
    json doc_;
};

std::string all(const Loaded &loaded) {
    std::string out;
    for (const auto &p : loaded.problems) {
        out += to_string(p) + "\n";
    }
    return out.empty() ? "(no problems)" : out;
}

// A problem in the file named `file` (its file name), whose where holds `where` and whose
// message holds `message`.
::testing::AssertionResult has(const Loaded &loaded, const std::string &file,
                               const std::string &where, const std::string &message) {
    for (const auto &p : loaded.problems) {
        if (p.file.filename() == file && p.where.find(where) != std::string::npos &&
            p.message.find(message) != std::string::npos) {
            return ::testing::AssertionSuccess();
        }
    }
    return ::testing::AssertionFailure() << "no problem in " << file << " at '" << where
                                         << "' saying '" << message << "' among:\n"
                                         << all(loaded);
}

constexpr const char *kEval = "evaluation.json";

TEST_F(EvaluationTest, ValidFolderLoadsWithItsValues) {
    const auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    const auto &e = loaded.evaluation;
    EXPECT_EQ(e.folder, fs::canonical(folder_));
    EXPECT_EQ(e.project_root, fs::canonical(project_));
    EXPECT_EQ(e.trials, 3);
    EXPECT_TRUE(e.confinement);
    ASSERT_EQ(e.registry.size(), 1U);
    const auto &r = e.registry[0];
    EXPECT_EQ(r.interface_id, "greeter");
    EXPECT_EQ(r.kind, "command");
    EXPECT_EQ(r.executable, "greet");
    EXPECT_EQ(r.target, "bin/greet.sh");
    EXPECT_EQ(r.subcommand_paths, (std::vector<std::vector<std::string>>{{"hello"}, {"bye"}}));
    EXPECT_EQ(r.artifacts.at("greeting"), "out/greeting.txt");
    EXPECT_EQ(r.environment_keys, std::vector<std::string>{"LANG"});
    EXPECT_EQ(r.max_elapsed_ms, 5000);
    EXPECT_EQ(r.infrastructure_exit_codes, std::vector<int>{75});
    EXPECT_EQ(r.system_paths, std::vector<std::string>{"/usr/share/zoneinfo"});
    ASSERT_EQ(r.egress.size(), 1U);
    EXPECT_EQ(r.egress[0].host, "api.example.com");
    EXPECT_EQ(r.egress[0].port, 443);
    EXPECT_EQ(r.egress[0].addresses, std::vector<std::string>{"192.0.2.1"});
    EXPECT_EQ(r.login, "claude");
    EXPECT_EQ(e.entry("greeter"), &r);
    EXPECT_EQ(e.entry("nobody"), nullptr);
    // Probes in name order; README.md is not one.
    ASSERT_EQ(e.probes.size(), 2U);
    EXPECT_EQ(e.probes[0].name, "00-bye");
    EXPECT_EQ(e.probes[1].name, "01-hello");
    EXPECT_EQ(e.probes[1].entry, "greeter");
    EXPECT_EQ(e.probes[1].args, (std::vector<std::string>{"hello", "world"}));
    EXPECT_EQ(e.probes[1].stdin_text, "hi\n");
    EXPECT_EQ(e.probes[1].files.at("in/name.txt"), "Ada");
    EXPECT_EQ(e.probes[1].file, fs::canonical(folder_ / "probes/01-hello.json"));
    EXPECT_EQ(e.probes_dir, fs::canonical(folder_ / "probes"));
    EXPECT_EQ(e.evaluator.command, (std::vector<std::string>{"evaluator/grade.sh", "--strict"}));
    EXPECT_EQ(e.evaluator.max_elapsed_ms, 30000);
    EXPECT_EQ(e.evaluator_program(), fs::canonical(folder_ / "evaluator/grade.sh"));
}

TEST_F(EvaluationTest, DefaultsApplyWhenFieldsAreLeftOut) {
    const auto loaded = load_text(R"({
        "registry": [{"interfaceId": "greeter", "executable": "greet", "target": "bin/greet.sh",
                      "maxElapsedMs": 1000}],
        "evaluator": {"command": ["evaluator/grade.sh"]}})");
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    const auto &e = loaded.evaluation;
    EXPECT_EQ(e.trials, 1);
    EXPECT_TRUE(e.confinement);
    EXPECT_EQ(e.project_root, fs::canonical(project_));
    EXPECT_EQ(e.registry[0].subcommand_paths, std::vector<std::vector<std::string>>{{}});
    EXPECT_EQ(e.evaluator.max_elapsed_ms, 60000);
    EXPECT_FALSE(e.registry[0].login.has_value());
}

TEST_F(EvaluationTest, SyntaxErrorHasLineAndColumn) {
    const auto loaded = load_text("{\n  \"trials\": 1,\n  oops\n}\n");
    ASSERT_EQ(loaded.problems.size(), 1U) << all(loaded);
    const auto &p = loaded.problems[0];
    EXPECT_EQ(p.file, fs::canonical(folder_) / kEval);
    EXPECT_EQ(p.line, 3U);
    EXPECT_EQ(p.column, 3U);
    EXPECT_NE(to_string(p).find("evaluation.json:3:3: "), std::string::npos) << to_string(p);
}

TEST_F(EvaluationTest, NumberBeyondRangeIsAProblem) {
    const auto loaded = load_text(R"({"trials": 1e400})");
    EXPECT_TRUE(has(loaded, kEval, "", "number overflow"));
}

TEST_F(EvaluationTest, SyntaxErrorInAProbe) {
    put(folder_ / "probes/00-bye.json", "{\"entry\": \"greeter\",\n\"args\": [}");
    const auto loaded = load_doc();
    ASSERT_EQ(loaded.problems.size(), 1U) << all(loaded);
    EXPECT_EQ(loaded.problems[0].file.filename(), "00-bye.json");
    EXPECT_EQ(loaded.problems[0].line, 2U);
    EXPECT_EQ(loaded.problems[0].column, 10U);
}

TEST_F(EvaluationTest, UnknownFieldsAreRefusedEverywhere) {
    doc_["colour"] = "blue";
    entry()["timeout"] = 5;
    entry()["egress"][0]["scheme"] = "https";
    doc_["evaluator"]["shell"] = true;
    put(folder_ / "probes/00-bye.json", R"({"entry": "greeter", "env": {}})");
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, kEval, "field 'colour'", "unknown"));
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'timeout'", "unknown"));
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'egress[0].scheme'", "unknown"));
    EXPECT_TRUE(has(loaded, kEval, "evaluator field 'shell'", "unknown"));
    EXPECT_TRUE(has(loaded, "00-bye.json", "probe '00-bye' field 'env'", "unknown"));
}

// "canaries" opts a run into the grading-string detector; only a boolean says so.
TEST_F(EvaluationTest, CanariesIsABooleanAndOffByDefault) {
    auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty());
    EXPECT_FALSE(loaded.evaluation.canaries);
    doc_["canaries"] = true;
    loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty());
    EXPECT_TRUE(loaded.evaluation.canaries);
    doc_["canaries"] = "yes";
    EXPECT_TRUE(has(load_doc(), kEval, "field 'canaries'", "must be true or false"));
}

TEST_F(EvaluationTest, AnUnknownFieldNamesTheFieldsThereAndTheOneMeant) {
    doc_["trails"] = 3;
    entry()["maxElapsed"] = 5000;
    entry()["egress"][0]["prot"] = 443;
    doc_["evaluator"]["comand"] = json::array({"grade.sh"});
    doc_["budgets"] = {{"memoryByte", 268435456}};
    put(folder_ / "probes/00-bye.json", R"({"entry": "greeter", "arg": ["bye"]})");
    const auto loaded = load_doc();
    EXPECT_TRUE(
        has(loaded, kEval, "field 'trails'",
            "is unknown: not a field of this format (fields here: confinement, canaries, trials, "
            "budgets, project, registry, evaluator, probes); did you mean 'trials'?"));
    EXPECT_TRUE(
        has(loaded, kEval, "entry 'greeter' field 'maxElapsed'", "did you mean 'maxElapsedMs'?"));
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'egress[0].prot'",
                    "(fields here: host, port, addresses, pinned); did you mean 'port'?"));
    EXPECT_TRUE(has(loaded, kEval, "evaluator field 'comand'",
                    "(fields here: kind, command, maxElapsedMs); did you mean 'command'?"));
    EXPECT_TRUE(has(loaded, kEval, "field 'budgets.memoryByte'", "did you mean 'memoryBytes'?"));
    EXPECT_TRUE(has(loaded, "00-bye.json", "probe '00-bye' field 'arg'", "did you mean 'args'?"));
}

TEST_F(EvaluationTest, ARemovedOrMisplacedFieldIsNeverOffered) {
    entry()["netwrk"] = true;
    entry()["budgets"] = {{"diskByte", 1073741824}};
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'netwrk'", "is unknown"));
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'budgets.diskByte'",
                    "(fields here: memoryBytes, processes)"));
    for (const auto &p : loaded.problems) {
        EXPECT_EQ(p.message.find("network"), std::string::npos) << to_string(p);
        EXPECT_EQ(p.message.find("diskBytes"), std::string::npos) << to_string(p);
    }
}

TEST_F(EvaluationTest, AProbesUnknownEntryNamesTheEntriesAndTheOneMeant) {
    doc_["registry"].push_back({{"interfaceId", "counter"},
                                {"executable", "count"},
                                {"target", "bin/greet.sh"},
                                {"maxElapsedMs", 1000},
                                {"systemPaths", json::array({"/usr/share/zoneinfo/"})}});
    put(folder_ / "probes/00-bye.json", R"({"entry": "greter"})");
    put(folder_ / "probes/01-hello.json", R"({"entry": "adder"})");
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, "00-bye.json", "probe '00-bye' field 'entry'",
                    "'greter' names no entry of the registry (entries: greeter, counter); did "
                    "you mean 'greeter'?"));
    EXPECT_TRUE(has(loaded, "01-hello.json", "probe '01-hello' field 'entry'",
                    "'adder' names no entry of the registry (entries: greeter, counter)"));
    EXPECT_FALSE(has(loaded, "01-hello.json", "", "did you mean"));
}

TEST_F(EvaluationTest, NetworkIsRemovedInFavourOfEgress) {
    entry()["network"] = true;
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'network'", "was removed"));
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'network'", "'egress'"));
}

TEST_F(EvaluationTest, BudgetsPerRunAndPerEntryAreRead) {
    doc_["budgets"] = {{"memoryBytes", 268435456}, {"processes", 256}, {"diskBytes", 1073741824}};
    entry()["budgets"] = {{"memoryBytes", 1073741824}};
    const auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    const auto &b = loaded.evaluation.budgets;
    EXPECT_EQ(b.memory_bytes, 268435456U);
    EXPECT_EQ(b.processes, 256U);
    EXPECT_EQ(b.disk_bytes, 1073741824U);
    const auto &own = loaded.evaluation.registry.at(0).budgets;
    EXPECT_EQ(own.memory_bytes, 1073741824U);
    EXPECT_FALSE(own.processes.has_value());  // the run's, then the configuration's
    EXPECT_FALSE(own.disk_bytes.has_value());
}

TEST_F(EvaluationTest, ABadBudgetIsNamedWithItsFileEntryAndField) {
    doc_["budgets"] = {
        {"memoryBytes", 4096}, {"processes", 0}, {"diskBytes", "1G"}, {"swapBytes", 1}};
    entry()["budgets"] = {{"diskBytes", 1073741824}, {"processes", -3}};
    auto loaded = load_doc();
    EXPECT_TRUE(
        has(loaded, kEval, "field 'budgets.memoryBytes'", "must be an integer from 16777216 to"));
    EXPECT_TRUE(has(loaded, kEval, "field 'budgets.processes'", "must be an integer from 1 to"));
    EXPECT_TRUE(has(loaded, kEval, "field 'budgets.diskBytes'", "must be an integer"));
    EXPECT_TRUE(has(loaded, kEval, "field 'budgets.swapBytes'", "unknown"));
    // A trial's file system is shared by every entry's calls: an entry has no disk budget.
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'budgets.diskBytes'",
                    "set it in the budgets of evaluation.json"));
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'budgets.processes'", "must be"));
    doc_["budgets"] = 5;
    loaded = load_doc();
    EXPECT_TRUE(has(loaded, kEval, "field 'budgets'", "must be an object"));
}

TEST_F(EvaluationTest, EntryWithoutAnIdIsNamedByItsIndex) {
    entry().erase("interfaceId");
    doc_["registry"].push_back("not an entry");
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, kEval, "registry[0] field 'interfaceId'", "required"));
    EXPECT_TRUE(has(loaded, kEval, "registry[1]", "must be an object"));
}

// One egress item per test case: the host or port, and the message its refusal must carry.
struct EgressCase {
    json item;
    std::string field;
    std::string message;
};

TEST_F(EvaluationTest, EgressItemsAreRefused) {
    const std::vector<EgressCase> cases{
        {{{"host", "API.example.com"}, {"port", 443}}, "egress[0].host", "otherwise than a URL"},
        {{{"host", "*.example.com"}, {"port", 443}}, "egress[0].host", "wildcard"},
        {{{"host", "api.*"}, {"port", 443}}, "egress[0].host", "wildcard"},
        {{{"host", std::string(250, 'a') + ".com"}, {"port", 443}}, "egress[0].host", "254 bytes"},
        {{{"host", "api.exa mple.com"}, {"port", 443}}, "egress[0].host", "character other"},
        {{{"host", "api/example.com"}, {"port", 443}}, "egress[0].host", "character other"},
        {{{"host", "[2001:db8::1]"}, {"port", 443}}, "egress[0].host", "without brackets"},
        {{{"host", "2001:db8::zz"}, {"port", 443}}, "egress[0].host", "IPv6"},
        {{{"host", ".example.com"}, {"port", 443}}, "egress[0].host", "empty label"},
        {{{"host", "a..b"}, {"port", 443}}, "egress[0].host", "empty label"},
        {{{"host", "api.example.com"}, {"port", 0}}, "egress[0].port", "1 to 65535"},
        {{{"host", "api.example.com"}, {"port", 70000}}, "egress[0].port", "1 to 65535"},
        {{{"host", "api.example.com"}, {"port", "443"}}, "egress[0].port", "integer"},
        {{{"host", "api.example.com"}, {"port", 443}, {"addresses", {"10.0.0.300"}}},
         "egress[0].addresses[0]",
         "not an IPv4 or IPv6"},
        {{{"host", "api.example.com"},
          {"port", 443},
          {"addresses", {"127.0.0.1"}},
          {"pinned", {"127.0.0.1"}}},
         "egress[0].pinned",
         "excludes 'addresses'"},
        {{{"host", "api.example.com"}, {"port", 443}, {"pinned", json::array()}},
         "egress[0].pinned",
         "at least one address"},
        {{{"host", "api.example.com"}, {"port", 443}, {"pinned", {"localhost"}}},
         "egress[0].pinned",
         "not a literal IPv4 or IPv6"},
        {{{"host", "api.example.com"}, {"port", 443}, {"pinned", "127.0.0.1"}},
         "egress[0].pinned",
         "array of strings"},
        {{{"host", "192.0.2.7"}, {"port", 443}, {"pinned", {"127.0.0.1"}}},
         "egress[0].pinned",
         "cannot be pinned to another"},
    };
    for (const auto &c : cases) {
        entry()["egress"] = json::array({c.item});
        const auto loaded = load_doc();
        EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field '" + c.field + "'", c.message))
            << c.item.dump();
    }
}

TEST_F(EvaluationTest, EgressPinnedItemIsReadWithItsAddressesInOrder) {
    entry()["egress"] = json::parse(R"([{"host": "api.tea-evaluate.test", "port": 8443,
                                         "pinned": ["127.0.0.1", "::1"]},
                                        {"host": "a.example", "port": 443,
                                         "addresses": ["192.0.2.1"]}])");
    const auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    const auto &egress = loaded.evaluation.registry.at(0).egress;
    ASSERT_EQ(egress.size(), 2U);
    EXPECT_TRUE(egress[0].pinned);
    EXPECT_EQ(egress[0].addresses, (std::vector<std::string>{"127.0.0.1", "::1"}));
    EXPECT_FALSE(egress[1].pinned);
}

TEST_F(EvaluationTest, EgressHostAndPortTwiceIsRefused) {
    entry()["egress"] = json::parse(R"([{"host": "a.example", "port": 443},
                                        {"host": "a.example", "port": 80},
                                        {"host": "a.example", "port": 443}])");
    const auto loaded = load_doc();
    ASSERT_EQ(loaded.problems.size(), 1U) << all(loaded);
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'egress[2]'", "second time"));
}

TEST_F(EvaluationTest, EgressAcceptsIpv6AndLiteralHosts) {
    entry()["egress"] = json::parse(R"([{"host": "2001:db8::1", "port": 443,
                                         "addresses": ["2001:db8::1"]},
                                        {"host": "192.0.2.7", "port": 8080},
                                        {"host": "my_host-1.internal", "port": 1}])");
    const auto loaded = load_doc();
    EXPECT_TRUE(loaded.problems.empty()) << all(loaded);
    EXPECT_EQ(loaded.evaluation.registry[0].egress[0].host, "2001:db8::1");
}

TEST_F(EvaluationTest, SameTargetWithOtherSystemPathsIsRefused) {
    // The same set, spelled otherwise, is the same grant.
    auto same = entry();
    same["interfaceId"] = "greeter-2";
    same["systemPaths"] = json::array({"/usr/share/zoneinfo", "/usr/share/zoneinfo/."});
    doc_["registry"].push_back(same);
    const auto accepted = load_doc();
    EXPECT_TRUE(accepted.problems.empty()) << all(accepted);

    auto other = entry();
    other["interfaceId"] = "greeter-3";
    other["systemPaths"] = json::array({"/opt/data"});
    doc_["registry"].push_back(other);
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter-3' field 'systemPaths'", "entry 'greeter' "));
    EXPECT_EQ(loaded.problems.size(), 1U) << all(loaded);
}

TEST_F(EvaluationTest, SystemPathsMustBeAbsoluteAndNotTheRoot) {
    entry()["systemPaths"] = json::array({"usr/share", "/", "/opt/../"});
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'systemPaths[0]'", "relative"));
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'systemPaths[1]'", "whole file system"));
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'systemPaths[2]'", "whole file system"));
}

TEST_F(EvaluationTest, TargetOutsideTheProjectIsRefused) {
    put(fs::path{root_} / "outside.sh", "#!/bin/sh\n");
    entry()["target"] = "../outside.sh";
    EXPECT_TRUE(has(load_doc(), kEval, "entry 'greeter' field 'target'", "'..'"));
    entry()["target"] = "/bin/sh";
    EXPECT_TRUE(has(load_doc(), kEval, "entry 'greeter' field 'target'", "absolute"));
    fs::create_symlink(fs::path{root_} / "outside.sh", project_ / "bin/link.sh");
    entry()["target"] = "bin/link.sh";
    EXPECT_TRUE(has(load_doc(), kEval, "entry 'greeter' field 'target'", "leads outside"));
    entry()["target"] = "bin/missing.sh";
    EXPECT_TRUE(has(load_doc(), kEval, "entry 'greeter' field 'target'", "not a regular file"));
    // A link that stays inside the project is followed and accepted.
    fs::create_symlink("greet.sh", project_ / "bin/alias.sh");
    entry()["target"] = "bin/alias.sh";
    const auto inside = load_doc();
    EXPECT_TRUE(inside.problems.empty()) << all(inside);
}

TEST_F(EvaluationTest, EvaluatorOutsideTheProjectIsRefused) {
    put(fs::path{root_} / "grade-outside.sh", "#!/bin/sh\n");
    doc_["evaluator"]["command"] = json::array({"../../grade-outside.sh"});
    EXPECT_TRUE(has(load_doc(), kEval, "evaluator field 'command[0]'", "leads outside"));
    fs::create_symlink(fs::path{root_} / "grade-outside.sh", folder_ / "evaluator/link.sh");
    doc_["evaluator"]["command"] = json::array({"evaluator/link.sh"});
    EXPECT_TRUE(has(load_doc(), kEval, "evaluator field 'command[0]'", "leads outside"));
    doc_["evaluator"]["command"] = json::array({"/bin/true"});
    EXPECT_TRUE(has(load_doc(), kEval, "evaluator field 'command[0]'", "relative"));
    doc_["evaluator"]["command"] = json::array();
    EXPECT_TRUE(has(load_doc(), kEval, "evaluator field 'command'", "program"));
    // Elsewhere in the project is fine.
    doc_["evaluator"]["command"] = json::array({"../bin/greet.sh"});
    const auto loaded = load_doc();
    EXPECT_TRUE(loaded.problems.empty()) << all(loaded);
}

// A target or evaluator the kernel will not execute would start no call: every call would end
// with 126, and the run would blame the target (or find no verdict) for the author's mistake.
TEST_F(EvaluationTest, ProgramsTheKernelCannotExecuteAreRefusedNamingTheFile) {
    const auto target = (project_ / "bin/greet.sh").string();
    const auto grader = (folder_ / "evaluator/grade.sh").string();
    fs::permissions(project_ / "bin/greet.sh", fs::perms{0644});
    auto loaded = load_doc();
    EXPECT_TRUE(has(
        loaded, kEval, "entry 'greeter' field 'target'",
        "'bin/greet.sh' (" + fs::canonical(target).string() + ") is not executable (mode 0644)"));
    EXPECT_EQ(loaded.problems.size(), 1U) << all(loaded);

    // Executable, and neither a script with its interpreter line nor an ELF program.
    fs::permissions(project_ / "bin/greet.sh", fs::perms{0755});
    put(project_ / "bin/greet.sh", "echo hello\n");
    EXPECT_TRUE(has(load_doc(), kEval, "entry 'greeter' field 'target'",
                    "has neither an interpreter line (#!) nor an ELF header"));
    put(project_ / "bin/greet.sh", "");
    EXPECT_TRUE(has(load_doc(), kEval, "entry 'greeter' field 'target'",
                    "has neither an interpreter line (#!) nor an ELF header"));
    fs::copy_file("/bin/true", project_ / "bin/greet.sh", fs::copy_options::overwrite_existing);
    loaded = load_doc();
    EXPECT_TRUE(loaded.problems.empty()) << "an ELF program is executable\n" << all(loaded);

    fs::permissions(grader, fs::perms{0600});
    EXPECT_TRUE(has(load_doc(), kEval, "evaluator field 'command[0]'",
                    "'evaluator/grade.sh' (" + fs::canonical(grader).string() +
                        ") is not executable (mode 0600)"));
    fs::permissions(grader, fs::perms{0700});
    put(grader, "{\"verdict\": \"pass\"}\n");
    EXPECT_TRUE(has(load_doc(), kEval, "evaluator field 'command[0]'",
                    "has neither an interpreter line (#!) nor an ELF header"));

    // The control: both with their interpreter line and execute bit pass.
    put(grader, "#!/bin/sh\necho '{\"verdict\":\"pass\"}'\n");
    put(project_ / "bin/greet.sh", "#!/bin/sh\necho hello\n");
    loaded = load_doc();
    EXPECT_TRUE(loaded.problems.empty()) << all(loaded);
}

TEST_F(EvaluationTest, MaxElapsedMsMustBePositive) {
    for (const json &bad : {json(0), json(-5), json(1.5), json("100")}) {
        entry()["maxElapsedMs"] = bad;
        doc_["evaluator"]["maxElapsedMs"] = bad;
        const auto loaded = load_doc();
        EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'maxElapsedMs'", "positive")) << bad;
        EXPECT_TRUE(has(loaded, kEval, "evaluator field 'maxElapsedMs'", "positive")) << bad;
    }
    entry()["maxElapsedMs"] = 86'400'001;
    EXPECT_TRUE(has(load_doc(), kEval, "entry 'greeter' field 'maxElapsedMs'", "86400000"));
    entry().erase("maxElapsedMs");
    EXPECT_TRUE(has(load_doc(), kEval, "entry 'greeter' field 'maxElapsedMs'", "required"));
}

TEST_F(EvaluationTest, ProbeNamingAnUnknownEntryIsRefused) {
    put(folder_ / "probes/00-bye.json", R"({"entry": "greter", "args": ["bye"]})");
    EXPECT_TRUE(has(load_doc(), "00-bye.json", "probe '00-bye' field 'entry'", "'greter'"));
}

TEST_F(EvaluationTest, ProbeArgsMustStartWithASubcommandPath) {
    put(folder_ / "probes/00-bye.json", R"({"entry": "greeter", "args": ["delete", "bye"]})");
    put(folder_ / "probes/02-empty.json", R"({"entry": "greeter"})");
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, "00-bye.json", "probe '00-bye' field 'args'", "[hello], [bye]"));
    EXPECT_TRUE(has(loaded, "02-empty.json", "probe '02-empty' field 'args'", "subcommandPaths"));
    EXPECT_EQ(loaded.problems.size(), 2U) << all(loaded);
}

TEST_F(EvaluationTest, ProbeLimitsAndPaths) {
    json probe{{"entry", "greeter"},
               {"args", {"bye"}},
               {"stdin", std::string((1U << 20U) + 1, 'x')},
               {"files", {{"../escape", "x"}, {"a//b", "y"}, {"/etc/passwd", "z"}}}};
    put(folder_ / "probes/00-bye.json", probe.dump());
    put(folder_ / "probes/bad name.json", "{}");
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, "00-bye.json", "field 'stdin'", "1 MiB"));
    EXPECT_TRUE(has(loaded, "00-bye.json", "field 'files.../escape'", "'..'"));
    EXPECT_TRUE(has(loaded, "00-bye.json", "field 'files.a//b'", "named components"));
    EXPECT_TRUE(has(loaded, "00-bye.json", "field 'files./etc/passwd'", "absolute"));
    EXPECT_TRUE(has(loaded, "bad name.json", "", "probe's name"));
}

TEST_F(EvaluationTest, DuplicateKeysAreRefused) {
    const auto loaded = load_text(R"({"trials": 1, "trials": 2,
        "registry": [{"interfaceId": "greeter", "executable": "greet", "target": "bin/greet.sh",
                      "maxElapsedMs": 1000, "maxElapsedMs": 2000}],
        "evaluator": {"command": ["evaluator/grade.sh"]}})");
    EXPECT_TRUE(has(loaded, kEval, "", "'trials' appears twice"));
    EXPECT_TRUE(has(loaded, kEval, "", "'maxElapsedMs' appears twice"));
    // The same key in two different objects is no duplicate.
    EXPECT_EQ(loaded.problems.size(), 2U) << all(loaded);
}

TEST_F(EvaluationTest, EveryProblemIsReportedAtOnce) {
    doc_["trials"] = 0;
    entry()["network"] = "none";
    entry()["egress"][0]["host"] = "*.example.com";
    entry()["systemPaths"] = json::array({"relative"});
    doc_["evaluator"]["maxElapsedMs"] = -1;
    put(folder_ / "probes/00-bye.json", R"({"entry": "nobody"})");
    const auto loaded = load_doc();
    EXPECT_EQ(loaded.problems.size(), 6U) << all(loaded);
    EXPECT_TRUE(has(loaded, kEval, "field 'trials'", "1 to 1000"));
    EXPECT_TRUE(has(loaded, kEval, "field 'network'", "removed"));
    EXPECT_TRUE(has(loaded, kEval, "field 'egress[0].host'", "wildcard"));
    EXPECT_TRUE(has(loaded, kEval, "field 'systemPaths[0]'", "relative"));
    EXPECT_TRUE(has(loaded, kEval, "evaluator field 'maxElapsedMs'", "positive"));
    EXPECT_TRUE(has(loaded, "00-bye.json", "field 'entry'", "'nobody'"));
}

// The names the runtime sets for a confined call are accepted in environmentKeys: its own values
// replace the host's later (tests/cli/run_test.cpp shows the runtime's value winning).
TEST_F(EvaluationTest, EnvironmentKeysMayNameTheRuntimesOwnVariables) {
    const std::vector<std::string> keys{"HOME",
                                        "XDG_CONFIG_HOME",
                                        "XDG_CACHE_HOME",
                                        "XDG_DATA_HOME",
                                        "XDG_RUNTIME_DIR",
                                        "TMPDIR",
                                        "TMP",
                                        "TEMP",
                                        "HTTPS_PROXY",
                                        "https_proxy",
                                        "NODE_USE_ENV_PROXY"};
    entry()["environmentKeys"] = keys;
    const auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    EXPECT_EQ(loaded.evaluation.registry.at(0).environment_keys, keys);
    // Control: the same list with one name twice is still refused, at that name.
    auto twice = keys;
    twice.push_back("HOME");
    entry()["environmentKeys"] = twice;
    EXPECT_TRUE(has(load_doc(), kEval, "field 'environmentKeys[11]'", "twice"));
}

TEST_F(EvaluationTest, EntryFieldRefusals) {
    entry()["environmentKeys"] = json::array({"HOME", "1BAD", "LANG", "LANG"});
    entry()["infrastructureExitCodes"] = json::array({0, 75, 75, 256});
    entry()["artifacts"] = json::object({{"bad name", "out"}, {"ok", "../up"}});
    entry()["login"] = "git hub";
    entry()["executable"] = "greet me";
    entry()["subcommandPaths"] = json::array();
    auto twin = entry();
    twin["kind"] = "ftp";
    doc_["registry"].push_back(twin);
    auto http = twin;
    http["kind"] = "http";
    doc_["registry"].push_back(http);
    const auto loaded = load_doc();
    const std::string g = "entry 'greeter' field ";
    EXPECT_FALSE(has(loaded, kEval, g + "'kind'", "not supported")) << all(loaded);
    EXPECT_FALSE(has(loaded, kEval, g + "'environmentKeys[0]'", ""));  // HOME: accepted
    EXPECT_TRUE(has(loaded, kEval, g + "'environmentKeys[1]'", "variable name"));
    EXPECT_TRUE(has(loaded, kEval, g + "'environmentKeys[3]'", "twice"));
    EXPECT_TRUE(has(loaded, kEval, g + "'infrastructureExitCodes[0]'", "1 to 255"));
    EXPECT_TRUE(has(loaded, kEval, g + "'infrastructureExitCodes[2]'", "twice"));
    EXPECT_TRUE(has(loaded, kEval, g + "'infrastructureExitCodes[3]'", "1 to 255"));
    EXPECT_TRUE(has(loaded, kEval, g + "'artifacts.bad name'", "not a name"));
    EXPECT_TRUE(has(loaded, kEval, g + "'artifacts.ok'", "'..'"));
    EXPECT_TRUE(has(loaded, kEval, g + "'login'", "not a login adapter's name"));
    EXPECT_TRUE(has(loaded, kEval, g + "'executable'", "not a name"));
    EXPECT_TRUE(has(loaded, kEval, g + "'subcommandPaths'", "non-empty"));
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'interfaceId'", "earlier entry"));
    EXPECT_TRUE(has(loaded, kEval, g + "'kind'", "'ftp' is not a kind"));
}

// A toolServer entry and its probes (tool_server_probe.hpp), made from the valid folder.
class ToolServerEvaluation : public EvaluationTest {
   protected:
    void SetUp() override {
        EvaluationTest::SetUp();
        entry()["kind"] = "toolServer";
        entry().erase("subcommandPaths");
        entry()["args"] = json::array({"."});
        fs::remove(folder_ / "probes/00-bye.json");
        probe(R"({"entry": "greeter", "method": "tools/call",
                  "params": {"name": "list_directory", "arguments": {"path": "."}},
                  "expect": {"result": {"content": [{"type": "text"}]}}, "timeoutMs": 4000,
                  "files": {"hello.txt": "hi"}})");
    }
    void probe(const std::string &text) { put(folder_ / "probes/01-hello.json", text); }
};

TEST_F(ToolServerEvaluation, LoadsWithItsRequest) {
    const auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    const auto &e = loaded.evaluation;
    EXPECT_EQ(e.registry.at(0).kind, "toolServer");
    EXPECT_EQ(e.registry.at(0).args, std::vector<std::string>{"."});
    ASSERT_EQ(e.probes.size(), 1U);
    const auto &p = e.probes[0];
    ASSERT_TRUE(p.tool_server);
    EXPECT_EQ(p.tool_server->method, "tools/call");
    EXPECT_EQ(p.tool_server->params["name"], "list_directory");
    EXPECT_EQ(p.tool_server->timeout_ms, 4000);
    ASSERT_TRUE(p.tool_server->expect);
    EXPECT_TRUE(p.args.empty());
    EXPECT_EQ(p.files.at("hello.txt"), "hi");
}

TEST_F(ToolServerEvaluation, AnEntryTakesNoSubcommandPaths) {
    entry()["subcommandPaths"] = json::array({json::array({"x"})});
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'subcommandPaths'", "'args'"));
}

TEST_F(ToolServerEvaluation, ArgsOnACommandEntryAreUnknown) {
    entry()["kind"] = "command";
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'args'", "unknown"));
}

TEST_F(ToolServerEvaluation, TheTransportIsStdioUnlessNamed) {
    const auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    EXPECT_EQ(loaded.evaluation.registry.at(0).transport, "stdio");
    EXPECT_EQ(loaded.evaluation.registry.at(0).endpoint_path, "/mcp");
}

TEST_F(ToolServerEvaluation, AnHttpTransportTakesItsEndpointPath) {
    entry()["transport"] = "http";
    entry()["path"] = "/rpc/v1?x=1";
    const auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    EXPECT_EQ(loaded.evaluation.registry.at(0).transport, "http");
    EXPECT_EQ(loaded.evaluation.registry.at(0).endpoint_path, "/rpc/v1?x=1");
}

TEST_F(ToolServerEvaluation, TransportRefusalsNameTheField) {
    const std::string g = "entry 'greeter' field ";
    const auto refused = [&](const json &transport, const json &path, const std::string &field,
                             const std::string &message) {
        entry()["transport"] = transport;
        entry()["path"] = path;
        return has(load_doc(), kEval, g + "'" + field + "'", message);
    };
    EXPECT_TRUE(refused("smtp", "/mcp", "transport", "'smtp' is not a transport (stdio, http)"));
    EXPECT_TRUE(refused(7, "/mcp", "transport", "string"));
    EXPECT_TRUE(refused("stdio", "/mcp", "path", "endpoint of an http transport"));
    EXPECT_TRUE(refused("http", "mcp", "path", "does not start with '/'"));
    EXPECT_TRUE(refused("http", "/a b", "path", "visible ASCII"));
    EXPECT_TRUE(refused("http", "/a\r\nX-Injected: 1", "path", "visible ASCII"));
    EXPECT_TRUE(refused("http", json::array(), "path", "string"));
    entry()["kind"] = "command";
    entry().erase("args");
    entry().erase("path");
    EXPECT_TRUE(has(load_doc(), kEval, g + "'transport'", "unknown"));
}

TEST_F(ToolServerEvaluation, ProbeRefusalsNameTheField) {
    const std::string f = "probe '01-hello' field ";
    const auto refused = [&](const std::string &text, const std::string &field,
                             const std::string &message) {
        probe(text);
        return has(load_doc(), "01-hello.json", f + "'" + field + "'", message);
    };
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "tools/list", "args": ["x"]})", "args",
                        "entry's 'args'"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "tools/list", "stdin": "x"})", "stdin",
                        "runtime's requests"));
    EXPECT_TRUE(refused(R"({"entry": "greeter"})", "method", "is required"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "prompts/list"})", "method",
                        "one of initialize"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": 7})", "method", "one of initialize"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "tools/call"})", "params",
                        "required for tools/call"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "tools/call", "params": {}})",
                        "params.name", "name the tool"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "tools/call",
                            "params": {"name": "x", "arguments": []}})",
                        "params.arguments", "object"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "tools/list", "params": [1]})", "params",
                        "must be an object"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "resources/read", "params": {}})",
                        "params.uri", "name the resource"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "initialize", "params": {}})", "params",
                        "its own"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "tools/list", "expect": {"x": 1}})",
                        "expect", "'result' or 'error'"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "tools/list",
                            "expect": {"result": 1, "error": {}}})",
                        "expect", "exactly one"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "tools/list", "expect": {"error": 3}})",
                        "expect.error", "object"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "tools/list", "timeoutMs": 5001})",
                        "timeoutMs", "1 to 5000"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "tools/list", "timeoutMs": 0})",
                        "timeoutMs", "1 to 5000"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "method": "tools/list", "timeoutMs": "9"})",
                        "timeoutMs", "1 to 5000"));
}

TEST(ToolServerExpect, AnObjectMatchesOneHoldingAtLeastItsMembers) {
    const auto expect = json::parse(R"({"result": {"content": [{"type": "text"}]}})");
    const auto answer =
        json::parse(R"({"content": [{"type": "text", "text": "[FILE] a"}], "isError": false})");
    EXPECT_TRUE(expect_differences(expect, true, false, answer).empty());
    const auto two = json::parse(R"({"content": [{"type": "text"}, {"type": "text"}]})");
    EXPECT_EQ(expect_differences(expect, true, false, two).size(), 1U);
    const auto other = json::parse(R"({"content": [{"type": "image"}]})");
    const auto d = expect_differences(expect, true, false, other);
    ASSERT_EQ(d.size(), 1U);
    EXPECT_NE(d[0].find("result.content[0].type"), std::string::npos) << d[0];
    EXPECT_EQ(expect_differences(expect, true, true, json{{"code", -1}}).size(), 1U);
    EXPECT_EQ(expect_differences(expect, false, false, nullptr).size(), 1U);
    const auto error = json::parse(R"({"error": {"code": -32602}})");
    EXPECT_TRUE(
        expect_differences(error, true, true, json{{"code", -32602}, {"message", "x"}}).empty());
}

// An http entry and its probes (http_probe.hpp), made from the valid folder.
class HttpEvaluation : public EvaluationTest {
   protected:
    void SetUp() override {
        EvaluationTest::SetUp();
        entry()["kind"] = "http";
        entry().erase("subcommandPaths");
        entry()["args"] = json::array({"--quiet"});
        fs::remove(folder_ / "probes/00-bye.json");
        probe(R"({"entry": "greeter",
                  "request": {"method": "PUT", "path": "/notes/today?x=1",
                              "headers": {"Content-Type": "text/plain"}, "body": "milk"},
                  "expect": {"status": 201, "headers": {"content-type": "text/plain"},
                             "body": "stored"},
                  "timeoutMs": 4000, "files": {"notes/.keep": ""}})");
    }
    void probe(const std::string &text) { put(folder_ / "probes/01-hello.json", text); }
};

TEST_F(HttpEvaluation, LoadsWithItsRequestAndExpectation) {
    const auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    const auto &e = loaded.evaluation;
    EXPECT_EQ(e.registry.at(0).kind, "http");
    EXPECT_EQ(e.registry.at(0).args, std::vector<std::string>{"--quiet"});
    ASSERT_EQ(e.probes.size(), 1U);
    const auto &p = e.probes[0];
    ASSERT_TRUE(p.http);
    EXPECT_EQ(p.http->request.method, "PUT");
    EXPECT_EQ(p.http->request.target, "/notes/today?x=1");
    ASSERT_EQ(p.http->request.headers.size(), 1U);
    EXPECT_EQ(p.http->request.headers[0].name, "Content-Type");
    EXPECT_EQ(p.http->request.body, "milk");
    ASSERT_TRUE(p.http->expect);
    EXPECT_EQ(p.http->expect->status, 201);
    EXPECT_EQ(p.http->expect->body, "stored");
    EXPECT_EQ(p.http->timeout_ms, 4000);
    EXPECT_TRUE(p.args.empty());
}

TEST_F(HttpEvaluation, AnEntryWithoutItsServerIsRefused) {
    entry().erase("target");
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'target'", "names no server"))
        << all(loaded);
}

TEST_F(HttpEvaluation, ProbeRefusalsNameTheField) {
    const std::string f = "probe '01-hello' field ";
    const auto refused = [&](const std::string &text, const std::string &field,
                             const std::string &message) {
        probe(text);
        const auto loaded = load_doc();
        const bool found = has(loaded, "01-hello.json", f + "'" + field + "'", message);
        if (!found) ADD_FAILURE() << text << "\n" << all(loaded);
        return found;
    };
    const std::string get = R"("request": {"method": "GET", "path": "/"})";
    EXPECT_TRUE(refused(R"({"entry": "greeter"})", "request", "is required"));
    EXPECT_TRUE(
        refused(R"({"entry": "greeter", "args": ["x"], )" + get + "}", "args", "entry's 'args'"));
    EXPECT_TRUE(
        refused(R"({"entry": "greeter", "stdin": "x", )" + get + "}", "stdin", "'request'"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "request": []})", "request", "object"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "request": {"path": "/"}})", "request.method",
                        "is required"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "request": {"method": "GET"}})", "request.path",
                        "is required"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "request": {"method": "G T", "path": "/"}})",
                        "request.method", ""));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "request": {"method": "CONNECT", "path": "/"}})",
                        "request.method", ""));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "request": {"method": "GET", "path": "x"}})",
                        "request.path", ""));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "request": {"method": "GET", "path": "/a b"}})",
                        "request.path", ""));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "request": {"method": "GET", "path": "/",
                            "headers": {"Host": "evil"}}})",
                        "request.headers.Host", ""));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "request": {"method": "GET", "path": "/",
                            "headers": {"X-A": "1\r\nX-B: 2"}}})",
                        "request.headers.X-A", ""));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "request": {"method": "GET", "path": "/",
                            "headers": {"X-A": "1", "x-a": "2"}}})",
                        "request.headers.x-a", "twice"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "request": {"method": "GET", "path": "/",
                            "headers": {"X-A": 1}}})",
                        "request.headers.X-A", "string"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", "request": {"method": "GET", "path": "/",
                            "query": "x"}})",
                        "request.query", "not a field"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", )" + get + R"(, "expect": {"status": 42}})",
                        "expect.status", "100 to 999"));
    EXPECT_TRUE(
        refused(R"({"entry": "greeter", )" + get + R"(, "expect": {"headers": {"a b": "x"}}})",
                "expect.headers.a b", "header name"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", )" + get + R"(, "expect": {"body": 1}})",
                        "expect.body", "string"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", )" + get + R"(, "expect": {"json": 1}})",
                        "expect.json", "not a field"));
    EXPECT_TRUE(refused(R"({"entry": "greeter", )" + get + R"(, "timeoutMs": 5001})", "timeoutMs",
                        "1 to 5000"));
    const std::string big(std::size_t{1} << 20U | 1U, 'x');
    EXPECT_TRUE(refused(R"({"entry": "greeter", "request": {"method": "POST", "path": "/",
                            "body": ")" +
                            big + R"("}})",
                        "request.body", "1 MiB"));
}

TEST(HttpExpect, TheDifferencesAreNamed) {
    HttpExpect expect{201, {{"Content-Type", "text/plain"}, {"X-Id", "7"}}, "stored"};
    http::Response answer{
        201, "Created", {{"content-type", "text/plain"}, {"x-id", "7"}}, "stored"};
    EXPECT_TRUE(http_differences(expect, answer).empty());
    // A header sent twice is one list: either the joined value or one of them meets it.
    answer.headers.push_back({"X-Id", "8"});
    EXPECT_TRUE(http_differences(expect, answer).empty());
    expect.headers[1].value = "7, 8";
    EXPECT_TRUE(http_differences(expect, answer).empty());
    answer = {500, "Oops", {{"X-Id", "9"}}, "stores"};
    const auto d = http_differences(expect, answer);
    ASSERT_EQ(d.size(), 4U);
    EXPECT_NE(d[0].find("status 500, expected 201"), std::string::npos) << d[0];
    EXPECT_NE(d[1].find("Content-Type missing"), std::string::npos) << d[1];
    EXPECT_NE(d[2].find("X-Id is \"9\""), std::string::npos) << d[2];
    EXPECT_NE(d[3].find("from byte 5"), std::string::npos) << d[3];
}

TEST_F(EvaluationTest, HostileStringsAreProblemsNotCrashes) {
    entry()["target"] = "bin/greet.sh\nfake: line";
    entry()["systemPaths"] = json::array({"/opt/it's"});
    entry()["artifacts"] = json::object({{"out", std::string("a\0b", 3)}});
    entry()["executable"] = "a\\b";
    auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'target'", "control character"));
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'systemPaths[0]'", "quote"));
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'artifacts.out'", "NUL"));
    EXPECT_TRUE(has(loaded, kEval, "entry 'greeter' field 'executable'", "not a name"));

    // Bytes that are not UTF-8 are refused by the parser, with their place.
    loaded = load_text("{\"trials\": 1, \"project\": \"\xff\xfe..\"}");
    ASSERT_EQ(loaded.problems.size(), 1U) << all(loaded);
    EXPECT_EQ(loaded.problems[0].line, 1U);
    EXPECT_NE(loaded.problems[0].message.find("UTF-8"), std::string::npos) << all(loaded);

    // A hostile interface id never names the entry.
    doc_ = json::parse(R"({"registry": [{"interfaceId": "x\ny"}],
                           "evaluator": {"command": ["evaluator/grade.sh"]}})");
    loaded = load_doc();
    EXPECT_TRUE(has(loaded, kEval, "registry[0] field 'interfaceId'", "not a name"));
}

TEST_F(EvaluationTest, OversizedFileIsRefusedUnread) {
    std::string big(16U << 20U, ' ');
    big += "{}";
    const auto loaded = load_text(big);
    EXPECT_TRUE(has(loaded, kEval, "", "16 MiB"));
}

TEST_F(EvaluationTest, MissingPiecesAreProblems) {
    fs::remove_all(folder_ / "probes");
    auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, kEval, "field 'probes'", "cannot be read"));
    fs::create_directories(folder_ / "probes");
    loaded = load_doc();
    EXPECT_TRUE(has(loaded, kEval, "field 'probes'", "no probe"));
    doc_["probes"] = "../bin";
    EXPECT_TRUE(has(load_doc(), kEval, "field 'probes'", "inside the evaluation folder"));
    fs::remove(folder_ / "evaluation.json");
    loaded = load(folder_);
    EXPECT_TRUE(has(loaded, kEval, "",
                    "does not exist; EVAL_DIR is the folder that holds evaluation.json"));
    EXPECT_EQ(loaded.problems.size(), 1U) << all(loaded);  // not one per field it lacks
    fs::create_directory(folder_ / "evaluation.json");
    EXPECT_TRUE(has(load(folder_), kEval, "", "is not a regular file"));
    fs::remove(folder_ / "evaluation.json");
    loaded = load(folder_ / "nowhere");
    EXPECT_TRUE(has(loaded, kEval, "", "does not exist"));
    loaded = load(project_ / "bin/greet.sh");
    EXPECT_TRUE(has(loaded, kEval, "", "is not a directory"));
    doc_ = json::array();
    EXPECT_TRUE(has(load_doc(), kEval, "", "JSON object"));
}

TEST_F(EvaluationTest, FolderMustLieInsideTheProject) {
    doc_["project"] = ".";
    EXPECT_TRUE(has(load_doc(), kEval, "field 'project'", "inside the project root"));
    doc_["project"] = "missing";
    EXPECT_TRUE(has(load_doc(), kEval, "field 'project'", "not a directory"));
}

TEST_F(EvaluationTest, HostilePathsOfTheFolderAndTmpdir) {
    const auto quoted = project_ / "it's";
    fs::create_directories(quoted);
    EXPECT_TRUE(has(load(quoted), kEval, "", "quote"));

    const char *old = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe)
    const std::string saved = old == nullptr ? "" : old;
    ::setenv("TMPDIR", "/tmp/a\nb", 1);  // NOLINT(concurrency-mt-unsafe)
    const auto loaded = load_doc();
    if (old == nullptr) {
        ::unsetenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe)
    } else {
        ::setenv("TMPDIR", saved.c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
    }
    EXPECT_TRUE(has(loaded, "", "TMPDIR", "control character"));
}

// Random damage to a valid evaluation never makes load() throw: byte edits (mostly syntax
// errors) and value swaps (which reach every field's checks).
TEST_F(EvaluationTest, RandomMutationsNeverThrow) {
    put(folder_ / "evaluation.json", doc_.dump(2));
    const auto valid = doc_.dump(2);
    std::mt19937 rng{20240611};
    const std::vector<json> values{json(nullptr),
                                   json(true),
                                   json(-1),
                                   json(0),
                                   json(1U << 31U),
                                   json(1e300),
                                   json("x"),
                                   json("../../etc"),
                                   json("/"),
                                   json("a\nb"),
                                   json(std::string(300, 'a')),
                                   json::array(),
                                   json::array({1, "a"}),
                                   json::object()};
    const auto pick = [&](std::size_t n) {
        return std::uniform_int_distribution<std::size_t>{0, n - 1}(rng);
    };
    for (int round = 0; round < 2000; ++round) {
        std::string text;
        if (round % 2 == 0) {
            text = valid;
            for (std::size_t k = 0, edits = 1 + pick(4); k < edits; ++k) {
                const auto at = pick(text.size());
                switch (pick(3)) {
                    case 0:
                        text[at] = static_cast<char>(pick(256));
                        break;
                    case 1:
                        text.erase(at, 1 + pick(8));
                        break;
                    default:
                        text.insert(at, 1, "{}[]\",:0\\"[pick(9)]);
                }
            }
        } else {
            auto doc = doc_;
            const auto flat = doc.flatten();
            auto it = flat.begin();
            std::advance(it, static_cast<std::ptrdiff_t>(pick(flat.size())));
            auto pointer = json::json_pointer{it.key()};
            if (pick(2) == 0 && !pointer.empty()) {
                pointer = pointer.parent_pointer();
            }
            doc[pointer] = values[pick(values.size())];
            text = doc.dump();
        }
        put(folder_ / "evaluation.json", text);
        EXPECT_NO_THROW((void)load(folder_)) << text;
    }
}

// ---- contract.json ----

// The fixture's probes call greeter, whose one artifact is "greeting".
constexpr const char *kHonestContract =
    R"({"interfaces": ["greeter"], "probes": ["00-bye", "01-hello"],
    "artifacts": {"greeter": ["greeting"]}})";

TEST_F(EvaluationTest, HonestContractLoadsClean) {
    put(folder_ / "contract.json", kHonestContract);
    const auto loaded = load_doc();
    EXPECT_TRUE(loaded.problems.empty()) << all(loaded);
}

TEST_F(EvaluationTest, ContractThatNamesWhatDoesNotExistIsRefused) {
    put(folder_ / "contract.json", R"({"interfaces": ["greeter", "graeter"],
        "probes": ["00-bye", "01-hello", "02-gone"], "artifacts": {"greeter": ["greeting", "log"]}})");
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, "contract.json", "field 'interfaces[1]'",
                    "entry 'graeter' is called by no probe"));
    EXPECT_TRUE(has(loaded, "contract.json", "field 'probes[2]'", "probe '02-gone' is no probe"));
    EXPECT_TRUE(has(loaded, "contract.json", "field 'artifacts.greeter[1]'",
                    "artifact 'log' is not declared by the entry"));
}

TEST_F(EvaluationTest, ContractThatOmitsWhatExistsIsRefused) {
    put(folder_ / "contract.json",
        R"({"interfaces": [], "probes": ["01-hello"], "artifacts": {}})");
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, "contract.json", "field 'interfaces'",
                    "omits entry 'greeter', which probe '00-bye' calls"));
    EXPECT_TRUE(has(loaded, "contract.json", "field 'probes'", "omits probe '00-bye'"));
    EXPECT_TRUE(has(loaded, "contract.json", "field 'artifacts'", "omits entry 'greeter'"));
}

TEST_F(EvaluationTest, ContractFieldsAreCheckedForShape) {
    put(folder_ / "contract.json", R"({"interface": ["greeter"], "probes": "00-bye"})");
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, "contract.json", "field 'interface'", "did you mean 'interfaces'"));
    EXPECT_TRUE(has(loaded, "contract.json", "field 'interfaces'", "is required"));
    EXPECT_TRUE(has(loaded, "contract.json", "field 'probes'", "must be an array of strings"));
    put(folder_ / "contract.json", R"({"interfaces": ["greeter", "greeter"]})");
    EXPECT_TRUE(has(load(folder_), "contract.json", "field 'interfaces[1]'", "listed twice"));
    put(folder_ / "contract.json", "[1]");
    EXPECT_TRUE(has(load(folder_), "contract.json", "", "must hold a JSON object"));
}

// ---- conversations (conversation_probe.hpp) ----

TEST_F(EvaluationTest, ACommandProbesConversationLoadsWithItsBriefAndRefusesStdin) {
    put(folder_ / "briefs/customer.md", "You want a refund.\n");
    const std::string conversation =
        R"("conversation": {"brief": "briefs/customer.md", "maxTurns": 3,
                            "agent": {"program": "/bin/sh", "model": "m", "login": "claude"}})";
    put(folder_ / "probes/00-bye.json",
        R"({"entry": "greeter", "args": ["bye"], )" + conversation + "}");
    auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    const auto &probe = loaded.evaluation.probes.at(0);
    ASSERT_TRUE(probe.conversation);
    EXPECT_EQ(probe.conversation->brief, "You want a refund.\n");
    EXPECT_EQ(probe.conversation->max_turns, 3);
    EXPECT_EQ(probe.conversation->turn_timeout_ms, 5000) << "bounded by the entry's maxElapsedMs";

    put(folder_ / "probes/00-bye.json",
        R"({"entry": "greeter", "args": ["bye"], "stdin": "x", )" + conversation + "}");
    loaded = load_doc();
    EXPECT_TRUE(
        has(loaded, "00-bye.json", "probe '00-bye' field 'stdin'", "carries the agent's messages"));

    put(folder_ / "probes/00-bye.json",
        R"({"entry": "greeter", "args": ["bye"], "conversation": {"brief": "briefs/none.md",
            "agent": {"program": "/bin/sh", "model": "m"}}})");
    loaded = load_doc();
    EXPECT_TRUE(has(loaded, "00-bye.json", "probe '00-bye' field 'conversation.brief'",
                    "\"briefs/none.md\""));

    // agent.login names a login adapter, as the judge's login does; a probe's file says which.
    put(folder_ / "probes/00-bye.json",
        R"({"entry": "greeter", "args": ["bye"], "conversation": {"brief": "briefs/customer.md",
            "agent": {"program": "/bin/sh", "model": "m", "login": 7}}})");
    loaded = load_doc();
    EXPECT_TRUE(has(loaded, "00-bye.json", "probe '00-bye' field 'conversation.agent.login'",
                    "must name a login adapter"))
        << all(loaded);
}

TEST_F(ToolServerEvaluation, AConversationIsNoFieldOfAToolServersProbe) {
    probe(R"({"entry": "greeter", "method": "tools/list",
              "conversation": {"brief": "b.md"}})");
    EXPECT_TRUE(
        has(load_doc(), "01-hello.json", "probe '01-hello' field 'conversation'", "unknown"));
}

// ---- corpus/ ----

TEST_F(EvaluationTest, CorpusFileReachesItsProbeAsAWorkspaceFile) {
    put(folder_ / "corpus/names/ada.txt", "Ada Lovelace\n");
    put(folder_ / "probes/00-bye.json",
        R"({"entry": "greeter", "args": ["bye"], "corpus": {"in/who.txt": "names/ada.txt"}})");
    put(folder_ / "contract.json", R"({"interfaces": ["greeter"], "probes": ["00-bye", "01-hello"],
        "corpus": ["names/ada.txt"]})");
    const auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    EXPECT_TRUE(loaded.notes.empty());
    EXPECT_EQ(loaded.evaluation.probes[0].files.at("in/who.txt"), "Ada Lovelace\n");
    EXPECT_EQ(loaded.evaluation.corpus_files, std::vector<std::string>{"names/ada.txt"});
}

TEST_F(EvaluationTest, CorpusReferenceToNoFileNamesProbeAndField) {
    put(folder_ / "corpus/ada.txt", "Ada");
    put(folder_ / "probes/00-bye.json",
        R"({"entry": "greeter", "args": ["bye"], "corpus": {"who.txt": "adda.txt"}})");
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, "00-bye.json", "probe '00-bye' field 'corpus.who.txt'",
                    "'adda.txt' is no file of"));
    EXPECT_TRUE(has(loaded, "00-bye.json", "", "did you mean 'ada.txt'"));
    fs::remove_all(folder_ / "corpus");
    EXPECT_TRUE(has(load(folder_), "00-bye.json", "field 'corpus.who.txt'", "(it holds none)"));
}

TEST_F(EvaluationTest, CorpusLinksAndSpecialFilesAreRefused) {
    // The attack: a corpus entry that leads out of the evaluation folder would have the runtime
    // copy a host file (here /etc/passwd) into the target's workspace.
    fs::create_directories(folder_ / "corpus");
    fs::create_symlink("/etc/passwd", folder_ / "corpus/passwd");
    ASSERT_EQ(::mkfifo((folder_ / "corpus/pipe").c_str(), 0600), 0);
    put(folder_ / "probes/00-bye.json",
        R"({"entry": "greeter", "args": ["bye"], "corpus": {"p": "passwd"}})");
    auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, "passwd", "", "is a symbolic link"));
    EXPECT_TRUE(has(loaded, "pipe", "", "is not a regular file"));
    EXPECT_TRUE(has(loaded, "00-bye.json", "field 'corpus.p'", "'passwd' is no file of"));
    for (const auto &probe : loaded.evaluation.probes) EXPECT_EQ(probe.files.count("p"), 0U);

    fs::remove_all(folder_ / "corpus");
    fs::create_directories(root_ + "/elsewhere");
    fs::create_symlink(root_ + "/elsewhere", folder_ / "corpus");
    EXPECT_TRUE(has(load(folder_), "corpus", "", "must be a directory of the evaluation folder"));
}

TEST_F(EvaluationTest, CorpusNamesAndSizesAreBounded) {
    put(folder_ / "corpus/-rf", "x");
    put(folder_ / "corpus/ok.txt", "x");
    {
        std::ofstream big{folder_ / "corpus/big.bin", std::ios::binary};
        big.seekp((std::streamoff{16} << 20));
        big.put('x');  // 16 MiB and one byte, sparse
    }
    const auto loaded = load_doc();
    EXPECT_TRUE(has(loaded, "-rf", "", "is not a corpus name"));
    EXPECT_TRUE(has(loaded, "big.bin", "", "the limit is 16 MiB"));
}

TEST_F(EvaluationTest, UnusedCorpusFileIsANoteNotAProblem) {
    put(folder_ / "corpus/spare.txt", "x");
    const auto loaded = load_doc();
    EXPECT_TRUE(loaded.problems.empty()) << all(loaded);
    ASSERT_EQ(loaded.notes.size(), 1U);
    EXPECT_EQ(loaded.notes[0].file.filename(), "spare.txt");
    EXPECT_NE(loaded.notes[0].message.find("named by no probe"), std::string::npos);
}

TEST_F(EvaluationTest, CorpusAndFilesMayNotWriteTheSamePath) {
    put(folder_ / "corpus/ada.txt", "Ada");
    put(folder_ / "probes/00-bye.json", R"({"entry": "greeter", "args": ["bye"],
        "files": {"who.txt": "x"}, "corpus": {"who.txt": "ada.txt"}})");
    EXPECT_TRUE(has(load_doc(), "00-bye.json", "field 'corpus.who.txt'", "\"files\" writes too"));
}

// ---- revision ----

TEST_F(EvaluationTest, RevisionIsACommitOrANameWithSteps) {
    for (const char *fine : {"v1.0", "main~2", "a1b2c3d", "release/2.x^2", "HEAD~1^2"}) {
        put(folder_ / "probes/00-bye.json",
            R"({"entry": "greeter", "args": ["bye"], "revision": ")" + std::string{fine} + "\"}");
        const auto loaded = load_doc();
        EXPECT_TRUE(loaded.problems.empty()) << fine << ": " << all(loaded);
        EXPECT_EQ(loaded.evaluation.probes[0].revision, fine);
    }
    for (const char *bad : {"", "HEAD:.tea/evaluator/grade.sh", "--upload-pack=x", "main..v1",
                            "HEAD@{1}", ":/fix", "v1^{tree}", "a b"}) {
        put(folder_ / "probes/00-bye.json",
            R"({"entry": "greeter", "args": ["bye"], "revision": ")" + std::string{bad} + "\"}");
        EXPECT_TRUE(has(load_doc(), "00-bye.json", "probe '00-bye' field 'revision'", "")) << bad;
    }
}

// Skill targets (evaluation/skill_target.hpp): a command entry whose executable is
// tea-skill-runner names a skill folder as its target.
class SkillTargetTest : public EvaluationTest {
   protected:
    void SetUp() override {
        EvaluationTest::SetUp();
        put(project_ / "skills/notes/SKILL.md", "---\nname: notes\n---\nWrite notes.\n");
        entry()["executable"] = "tea-skill-runner";
        entry()["target"] = "skills/notes";
        entry().erase("subcommandPaths");
    }
};

TEST_F(SkillTargetTest, ASkillFolderLoadsWithExit4AnInfrastructureCodeAndTheTranscriptAnArtifact) {
    const auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    const auto &e = loaded.evaluation.registry[0];
    EXPECT_EQ(e.infrastructure_exit_codes, (std::vector<int>{75, 4, 126, 127}));
    EXPECT_EQ(e.artifacts.at("transcript"), "transcript.jsonl");
    EXPECT_EQ(e.artifacts.at("greeting"), "out/greeting.txt");
    EXPECT_EQ(skill_call_argv("/opt/tea", "/ws", e, {"--agent", "claude"}),
              (std::vector<std::string>{"/opt/tea/bin/tea-skill-runner", "--skill",
                                        "/ws/skills/notes", "--agent", "claude"}));
    EXPECT_EQ(skill_exit_meaning(4), "the agent could not authenticate");
    EXPECT_EQ(skill_exit_meaning(6), "turn or time budget reached");
    EXPECT_NE(skill_exit_meaning(127).find("did not start in the confinement"), std::string::npos);
    EXPECT_EQ(skill_exit_meaning(5), "the agent failed");
}

TEST_F(SkillTargetTest, AnEntryNamingItsOwnTranscriptArtifactKeepsIt) {
    entry()["artifacts"]["transcript"] = "logs/session.jsonl";
    const auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    EXPECT_EQ(loaded.evaluation.registry[0].artifacts.at("transcript"), "logs/session.jsonl");
}

TEST_F(SkillTargetTest, AMalformedSkillFolderIsAProblemOfTheTargetField) {
    // Control above: the same entry with a sound folder loads. Each fault below is named.
    fs::create_symlink("/etc/passwd", project_ / "skills/notes/passwd");
    EXPECT_TRUE(has(load_doc(), kEval, "entry 'greeter' field 'target'",
                    "the skill folder 'skills/notes' holds a link at passwd"));
    fs::remove(project_ / "skills/notes/passwd");
    ASSERT_EQ(::mkfifo((project_ / "skills/notes/pipe").c_str(), 0644), 0);
    EXPECT_TRUE(has(load_doc(), kEval, "field 'target'", "neither a folder nor a regular file"));
    fs::remove(project_ / "skills/notes/pipe");
    fs::remove(project_ / "skills/notes/SKILL.md");
    EXPECT_TRUE(has(load_doc(), kEval, "field 'target'", "holds no SKILL.md"));
    entry()["target"] = "bin/greet.sh";
    EXPECT_TRUE(has(load_doc(), kEval, "field 'target'", "is named 'greet.sh'"));
    fs::create_directory_symlink(project_ / "skills/notes", project_ / "skills/linked");
    entry()["target"] = "skills/linked";
    EXPECT_TRUE(has(load_doc(), kEval, "field 'target'", "skills/linked"));
    entry()["target"] = "../outside";
    EXPECT_TRUE(has(load_doc(), kEval, "field 'target'", ""));
}

// ---- the rubric judge (evaluator kind "rubric") ----

json rubric_evaluator() {
    return json::parse(R"({"kind": "rubric", "rubric": "rubric.md", "agent": "claude",
        "program": "sh", "model": "claude-judge-1", "login": "claude",
        "environmentKeys": ["ANTHROPIC_BASE_URL"], "artifacts": ["greeter/greeting"],
        "retries": 1, "maxScore": 5, "passThreshold": 0.75, "maxElapsedMs": 20000})");
}

constexpr const char *kRubricText = "# Rubric\n\n## names (required)\nNames the user.\n";

TEST_F(EvaluationTest, ARubricJudgeLoadsWithItsValues) {
    put(folder_ / "rubric.md", kRubricText);
    doc_["evaluator"] = rubric_evaluator();
    const auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    const auto &e = loaded.evaluation.evaluator;
    EXPECT_EQ(e.kind, "rubric");
    ASSERT_TRUE(e.rubric.has_value());
    EXPECT_EQ(e.rubric->rubric_file, "rubric.md");
    ASSERT_EQ(e.rubric->rubric.criteria.size(), 1U);
    EXPECT_TRUE(e.rubric->rubric.criteria[0].required);
    EXPECT_TRUE(e.rubric->program_path.is_absolute());
    // The file PATH's sh leads to, links followed: what every trial runs.
    EXPECT_EQ(e.rubric->program_path, fs::canonical("/usr/bin/sh"));
    EXPECT_EQ(e.rubric->model, "claude-judge-1");
    EXPECT_EQ(e.rubric->login, "claude");
    EXPECT_EQ(e.rubric->environment_keys, std::vector<std::string>{"ANTHROPIC_BASE_URL"});
    EXPECT_EQ(e.rubric->artifacts, std::vector<std::string>{"greeter/greeting"});
    EXPECT_EQ(e.rubric->retries, 1);
    EXPECT_EQ(e.rubric->max_score, 5);
    EXPECT_EQ(e.rubric->pass_threshold_permille, 750);
    EXPECT_EQ(e.max_elapsed_ms, 20000);
    EXPECT_TRUE(e.command.empty());
}

TEST_F(EvaluationTest, ARubricJudgesBadFieldsAreRefusedByName) {
    put(folder_ / "rubric.md", kRubricText);
    const auto refused = [&](const std::string &field, const json &value,
                             const std::string &message) {
        doc_["evaluator"] = rubric_evaluator();
        if (value.is_null()) {
            doc_["evaluator"].erase(field);
        } else {
            doc_["evaluator"][field] = value;
        }
        return has(load_doc(), kEval, "evaluator field '" + field + "'", message);
    };
    EXPECT_TRUE(refused("kind", "llm", "is not an evaluator kind (command, rubric)"));
    EXPECT_TRUE(refused("temperature", 0, "cannot be pinned: Claude Code 2.1.332"));
    EXPECT_TRUE(refused("agent", "gpt", "is not an agent a judge can run"));
    EXPECT_TRUE(refused("program", "bin/claude", "an absolute path or a name on PATH"));
    EXPECT_TRUE(refused("program", "no-such-judge-cli-here", "is not found on PATH"));
    EXPECT_TRUE(refused("program", "/etc/hostname", "the kernel cannot execute it"));
    EXPECT_TRUE(refused("model", "", "must name the model"));
    EXPECT_TRUE(refused("model", nullptr, "is required"));
    EXPECT_TRUE(refused("retries", 9, "must be an integer from 0 to 5"));
    EXPECT_TRUE(refused("maxScore", 0, "must be an integer from 1 to 100"));
    EXPECT_TRUE(refused("passThreshold", 1.5, "from 0 to 1 with at most three decimals"));
    EXPECT_TRUE(refused("passThreshold", 0.12345, "at most three decimals"));
    doc_["evaluator"] = rubric_evaluator();
    doc_["evaluator"]["artifacts"] = json::array({"greeting"});
    EXPECT_TRUE(has(load_doc(), kEval, "evaluator field 'artifacts[0]'",
                    "must be '<entry>/<artifact name>'"));
    EXPECT_TRUE(refused("command", json::array({"evaluator/grade.sh"}), "is unknown"));
    EXPECT_TRUE(refused("rubric", "../rubric.md", "named components"));
    EXPECT_TRUE(refused("rubric", "missing.md", "cannot be opened"));
    put(folder_ / "bad.md", "no criterion here\n");
    EXPECT_TRUE(refused("rubric", "bad.md", "holds no criterion"));
}

// A judge's and a conversation agent's egress are read as an entry's, their problems named by
// their own fields.
TEST_F(EvaluationTest, AnAgentsEgressIsReadAsAnEntrysAndItsProblemsNamed) {
    put(folder_ / "rubric.md", kRubricText);
    doc_["evaluator"] = rubric_evaluator();
    doc_["evaluator"]["egress"] = json::array(
        {{{"host", "api.example.test"}, {"port", 443}, {"pinned", json::array({"127.0.0.1"})}}});
    auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    const auto &egress = loaded.evaluation.evaluator.rubric->egress;
    ASSERT_EQ(egress.size(), 1U);
    EXPECT_EQ(egress[0].host, "api.example.test");
    EXPECT_EQ(egress[0].port, 443);
    EXPECT_TRUE(egress[0].pinned);
    EXPECT_EQ(egress[0].addresses, std::vector<std::string>{"127.0.0.1"});

    doc_["evaluator"]["egress"] = json::array({{{"host", "api.example.test"}, {"port", 0}}});
    EXPECT_TRUE(has(load_doc(), kEval, "evaluator field 'egress[0].port'", "from 1 to 65535"));
    doc_["evaluator"]["egress"] = "api.example.test:443";
    EXPECT_TRUE(has(load_doc(), kEval, "evaluator field 'egress'", "must be an array"));
    // Written to cut the judge off, [] would leave it the invoker's network: refused.
    doc_["evaluator"]["egress"] = json::array();
    EXPECT_TRUE(has(load_doc(), kEval, "evaluator field 'egress'", "is empty"));
    doc_["evaluator"] = rubric_evaluator();

    put(folder_ / "briefs/customer.md", "You want a refund.\n");
    const auto probe = [&](const json &items) {
        json doc{{"entry", "greeter"},
                 {"args", {"bye"}},
                 {"conversation",
                  {{"brief", "briefs/customer.md"},
                   {"agent", {{"program", "/bin/sh"}, {"model", "m"}, {"egress", items}}}}}};
        put(folder_ / "probes/00-bye.json", doc.dump());
        return load_doc();
    };
    loaded = probe(json::array({{{"host", "api.example.test"}, {"port", 443}}}));
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    const auto &agent = loaded.evaluation.probes.at(0).conversation->agent;
    ASSERT_EQ(agent.egress.size(), 1U);
    EXPECT_EQ(agent.egress[0].host, "api.example.test");
    EXPECT_FALSE(agent.egress[0].pinned);
    EXPECT_TRUE(has(probe(json::array({{{"host", "api example"}, {"port", 443}}})), "00-bye.json",
                    "probe '00-bye' field 'conversation.agent.egress[0].host'",
                    "holds a character other than"));
    EXPECT_TRUE(has(probe(json::array()), "00-bye.json",
                    "probe '00-bye' field 'conversation.agent.egress'", "is empty"));
}

TEST_F(EvaluationTest, ARubricReachedThroughALinkIsRefused) {
    put(fs::path{root_} / "outside.md", kRubricText);
    fs::create_symlink(fs::path{root_} / "outside.md", folder_ / "rubric.md");
    doc_["evaluator"] = rubric_evaluator();
    EXPECT_TRUE(has(load_doc(), kEval, "evaluator field 'rubric'", "passes through the link"));
    // A directory link on the way is refused too.
    fs::create_directories(fs::path{root_} / "elsewhere");
    put(fs::path{root_} / "elsewhere/rubric.md", kRubricText);
    fs::create_directory_symlink(fs::path{root_} / "elsewhere", folder_ / "judging");
    doc_["evaluator"]["rubric"] = "judging/rubric.md";
    EXPECT_TRUE(has(load_doc(), kEval, "evaluator field 'rubric'", "passes through the link"));
    // The control: the same file, not linked, loads.
    fs::remove(folder_ / "rubric.md");
    put(folder_ / "rubric.md", kRubricText);
    doc_["evaluator"]["rubric"] = "rubric.md";
    const auto loaded = load_doc();
    EXPECT_TRUE(loaded.problems.empty()) << all(loaded);
}

TEST_F(EvaluationTest, ACommandEvaluatorMayNameItsKind) {
    doc_["evaluator"]["kind"] = "command";
    const auto loaded = load_doc();
    ASSERT_TRUE(loaded.problems.empty()) << all(loaded);
    EXPECT_EQ(loaded.evaluation.evaluator.kind, "command");
    EXPECT_FALSE(loaded.evaluation.evaluator.rubric.has_value());
    doc_["evaluator"]["rubric"] = "rubric.md";
    EXPECT_TRUE(has(load_doc(), kEval, "evaluator field 'rubric'", "is unknown"));
}

}  // namespace
}  // namespace tea::evaluation
