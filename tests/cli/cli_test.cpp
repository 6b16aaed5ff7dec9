// The tea-evaluate binary as a user runs it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <tea/plugin.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <thread>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "tea_fixtures.h"

namespace tea {
namespace {

std::vector<std::string> cmd(std::initializer_list<std::string> args) {
    std::vector<std::string> out{TEA_EVALUATE_BIN};
    out.insert(out.end(), args);
    return out;
}

// A configuration directory of its own, so the developer's files never count.
std::vector<std::string> env(std::initializer_list<std::string> extra = {}) {
    std::vector<std::string> e{"XDG_CONFIG_HOME=/nonexistent-tea-test",
                               "HOME=/nonexistent-tea-test"};
    e.insert(e.end(), extra);
    return test::environment_with(e);
}

TEST(Cli, PluginsListsOptOutWithItsAbi) {
    const auto o = test::run(cmd({"plugins"}), env());
    EXPECT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.out.find("opt-out"), std::string::npos) << o.out;
    // The minor the opt-out backend declares it implements, not the header's newest.
    EXPECT_NE(o.out.find("ABI 1." + std::to_string(TEA_ABI_1_9)), std::string::npos) << o.out;
    const auto j = test::run(cmd({"plugins", "--json"}), env());
    const auto doc = nlohmann::json::parse(j.out);
    bool found = false;
    for (const auto &p : doc["plugins"]) {
        if (p["name"] == "opt-out") {
            found = true;
            EXPECT_EQ(p["kind"], "backend");
            EXPECT_EQ(p["abi"], "1." + std::to_string(TEA_ABI_1_9));
            EXPECT_EQ(p["available"], true);
        }
    }
    EXPECT_TRUE(found) << j.out;
}

// plugins says what a call would take: under "auto", the first name of the order that is installed
// as that kind and available; a name given, as given.
TEST(Cli, PluginsNamesWhatAutoWouldTake) {
    const test::TempDir dir{"tea-cli-selected"};
    const auto config = (dir.path() / "c.toml").string();
    test::write_file(config,
                     "[confinement]\nauto_order = [\"missing-one\", \"strace\"]\n"
                     "[audit]\nauto_order = [\"missing-one\", \"opt-out\", \"strace\"]\n");
    const auto j = test::run(cmd({"--config", config, "plugins", "--json"}), env());
    ASSERT_EQ(j.status, 0) << j.err;
    const auto doc = nlohmann::json::parse(j.out);
    bool strace_available = false;
    for (const auto &p : doc["plugins"]) {
        strace_available = strace_available || (p["name"] == "strace" && p["available"] == true);
    }
    EXPECT_EQ(doc["selected"]["backend"]["setting"], "auto");
    EXPECT_TRUE(doc["selected"]["backend"]["selected"].is_null()) << j.out;
    EXPECT_EQ(doc["selected"]["observer"]["order"],
              (std::vector<std::string>{"missing-one", "opt-out", "strace"}));
    if (strace_available) {
        EXPECT_EQ(doc["selected"]["observer"]["selected"], "strace") << j.out;
    } else {
        EXPECT_TRUE(doc["selected"]["observer"]["selected"].is_null()) << j.out;
    }
    const auto o = test::run(cmd({"--config", config, "plugins"}), env());
    EXPECT_NE(o.out.find("\nbackend: none (confinement.backend = \"auto\": none available of "
                         "missing-one, strace)\n"),
              std::string::npos)
        << o.out;
    // The opt-out backend is taken as the selection takes it; exec then refuses a backend "auto"
    // chose that confines nothing (Cli.AutoNeverPicksABackendThatConfinesNothing).
    const auto opt_out = (dir.path() / "o.toml").string();
    test::write_file(opt_out, "[confinement]\nauto_order = [\"strace\", \"opt-out\"]\n");
    const auto taken = test::run(cmd({"--config", opt_out, "plugins", "--json"}), env());
    EXPECT_EQ(nlohmann::json::parse(taken.out)["selected"]["backend"]["selected"], "opt-out")
        << taken.out;
    // Named on the command line: what is named, without an order.
    const auto named = test::run(cmd({"--config", config, "--backend", "opt-out", "--observer",
                                      "none", "plugins", "--json"}),
                                 env());
    const auto picked = nlohmann::json::parse(named.out)["selected"];
    EXPECT_EQ(picked["backend"]["selected"], "opt-out") << named.out;
    EXPECT_FALSE(picked["backend"].contains("order")) << named.out;
    EXPECT_TRUE(picked["observer"]["selected"].is_null()) << named.out;
    EXPECT_EQ(picked["observer"]["setting"], "none") << named.out;
}

TEST(Cli, ExecPassesOutputAndStatusThrough) {
    const auto o = test::run(
        cmd({"exec", "--backend", "opt-out", "--", "sh", "-c", "echo hi; exit 7"}), env());
    EXPECT_EQ(o.status, 7);
    EXPECT_EQ(o.out, "hi\n");
    EXPECT_NE(o.err.find("confines nothing"), std::string::npos) << o.err;
}

TEST(Cli, ExecEnvironmentIsExactlyTheInvokers) {
    // As `env -i FOO=1 tea-evaluate exec --backend opt-out -- /usr/bin/env`, in a workspace that
    // is no git repository (one gets its private repository's GIT_* variables; confinement.md).
    const test::TempDir workspace{"tea-cli-env"};
    const auto o = test::run(cmd({"exec", "--backend", "opt-out", "--workspace",
                                  workspace.path().string(), "--", "/usr/bin/env"}),
                             {"FOO=1"});
    EXPECT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(o.out, "FOO=1\n");
}

TEST(Cli, CleanEnvKeepsOnlyTheAllowlist) {
    const auto host = env(
        {"PYTHONPATH=/evil", "NODE_OPTIONS=--require=/evil.js", "LC_ALL=C", "PATH=/usr/bin:/bin"});
    const auto dirty = test::run(cmd({"exec", "--backend", "opt-out", "--", "/usr/bin/env"}), host);
    EXPECT_NE(dirty.out.find("PYTHONPATH=/evil"), std::string::npos);  // positive control
    const auto clean = test::run(cmd({"exec", "--backend", "opt-out", "--clean-env", "--env",
                                      "EXTRA=1", "--env", "NODE_OPTIONS", "--", "/usr/bin/env"}),
                                 host);
    EXPECT_EQ(clean.out.find("PYTHONPATH"), std::string::npos) << clean.out;
    EXPECT_NE(clean.out.find("PATH=/usr/bin:/bin"), std::string::npos);
    EXPECT_NE(clean.out.find("LC_ALL=C"), std::string::npos);
    EXPECT_NE(clean.out.find("EXTRA=1"), std::string::npos);
    // --env NAME brings the invoker's value back on purpose.
    EXPECT_NE(clean.out.find("NODE_OPTIONS=--require=/evil.js"), std::string::npos);
}

TEST(Cli, ExecJsonRecord) {
    const auto o = test::run(
        cmd({"exec", "--backend", "opt-out", "--json", "--", "sh", "-c", "echo out; exit 3"}),
        env());
    EXPECT_EQ(o.status, 3);
    const auto doc = nlohmann::json::parse(o.out);  // stdout is the record alone
    EXPECT_EQ(doc["confinement"], "opt-out");
    EXPECT_EQ(doc["exitCode"], 3);
    EXPECT_EQ(doc["stdoutBytes"], 4);
    EXPECT_NE(o.err.find("out\n"), std::string::npos);
}

TEST(Cli, ExecTimeoutEndsTheCall) {
    const auto o = test::run(
        cmd({"exec", "--backend", "opt-out", "--timeout", "200", "--", "sleep", "30"}), env());
    EXPECT_EQ(o.status, 124);
    EXPECT_NE(o.err.find("timeout"), std::string::npos) << o.err;
}

TEST(Cli, TimedOutIsNeverSuccessEvenIfTheTargetExitsZeroOnTerm) {
    const auto o = test::run(cmd({"exec", "--backend", "opt-out", "--timeout", "300", "--", "sh",
                                  "-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done"}),
                             env());
    EXPECT_EQ(o.status, 124) << o.err;
}

TEST(Cli, ATimeoutOrGraceWhoseDeadlineWouldPassTheClocksRangeIsRefused) {
    // Near 9.2e12 ms a deadline wraps past the steady clock's range into the past, and the call
    // would end at once.
    for (const char *ms : {"1000000000001", "9200000000000", "9223372036854775807"}) {
        const auto o =
            test::run(cmd({"exec", "--backend", "opt-out", "--timeout", ms, "--", "true"}), env());
        EXPECT_EQ(o.status, 2) << ms << "\n" << o.err;
        EXPECT_NE(o.err.find(std::string{"--timeout: expected at most 1000000000000 "
                                         "milliseconds (about 31 years), found "} +
                             ms),
                  std::string::npos)
            << o.err;
    }
    // The longest accepted runs the call as any other.
    const auto longest = test::run(cmd({"exec", "--backend", "opt-out", "--timeout",
                                        "1000000000000", "--", "sh", "-c", "sleep 0.2; exit 5"}),
                                   env());
    EXPECT_EQ(longest.status, 5) << longest.err;

    // The configuration's grace likewise, named by file, line and key.
    const auto dir = test::make_temp_dir("tea-cli-grace");
    test::write_file(dir + "/c.toml", "[call]\nkill_grace_ms = 9200000000000\n");
    const auto o = test::run(cmd({"--config", dir + "/c.toml", "exec", "--backend", "opt-out",
                                  "--timeout", "100", "--", "sleep", "5"}),
                             env());
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_NE(o.err.find(dir + "/c.toml:2:17: call.kill_grace_ms: expected at most "
                               "1000000000000, found 9200000000000"),
              std::string::npos)
        << o.err;
    std::filesystem::remove_all(dir);
}

TEST(Cli, RepeatableOptionsTakeOneValueEach) {
    const auto o =
        test::run(cmd({"exec", "--backend", "opt-out", "--env", "A=1", "printenv", "A"}), env());
    EXPECT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(o.out, "1\n");
}

// The help of each repeatable option says it takes one value per occurrence (CLI11's own
// "TEXT ..." reads as a list), and that is what happens: the word after the value starts the
// command.
TEST(Cli, TheHelpSaysRepeatableOptionsTakeOneValuePerOccurrence) {
    const std::vector<std::pair<std::string, std::string>> options{
        {"--withhold", "PATH"},
        {"--system-path", "DIR"},
        {"--env", "NAME[=VALUE]"},
        {"--egress", "HOST:PORT[=ADDR,...|@ADDR,...]"}};
    for (const std::string sub : {"exec", "preflight"}) {
        const auto help = test::run(cmd({sub, "--help"}), env());
        ASSERT_EQ(help.status, 0) << help.err;
        for (const auto &[option, value] : options) {
            const auto at = help.out.find("  " + option + " " + value);
            const auto after = at + option.size() + value.size() + 3;
            EXPECT_TRUE(at != std::string::npos && after < help.out.size() &&
                        (help.out[after] == ' ' || help.out[after] == '\n'))
                << sub << ": " << help.out;
            EXPECT_NE(help.out.find("(one per " + option + ": repeat the option for more)"),
                      std::string::npos)
                << sub << ": " << help.out;
            EXPECT_EQ(help.out.find(option + " TEXT"), std::string::npos) << help.out;
        }
    }
    const auto o = test::run(
        cmd({"exec", "--backend", "opt-out", "--env", "A=1", "B=2", "--", "printenv", "A"}), env());
    EXPECT_EQ(o.status, 127) << o.err;
    EXPECT_NE(o.err.find("B=2: command not found"), std::string::npos) << o.err;
}

TEST(Cli, ExecStatusWhenTheTargetCannotStart) {
    EXPECT_EQ(
        test::run(cmd({"exec", "--backend", "opt-out", "--", "tea-no-such-cmd"}), env()).status,
        127);
    EXPECT_EQ(test::run(cmd({"exec", "--backend", "opt-out", "--", "/etc/hostname"}), env()).status,
              126);
}

TEST(Cli, UsageErrorsExitTwo) {
    EXPECT_EQ(test::run(cmd({}), env()).status, 2);
    EXPECT_EQ(test::run(cmd({"exec", "--backend", "opt-out"}), env()).status, 2);
    EXPECT_EQ(test::run(cmd({"frobnicate"}), env()).status, 2);
    EXPECT_EQ(
        test::run(cmd({"exec", "--backend", "opt-out", "--timeout", "0", "--", "true"}), env())
            .status,
        2);
    const auto o = test::run(cmd({"exec", "--backend", "no-such-backend", "--", "true"}), env());
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.err.find("no-such-backend"), std::string::npos);
    EXPECT_EQ(test::run(cmd({"--help"}), env()).status, 0);
    EXPECT_EQ(test::run(cmd({"exec", "--help"}), env()).status, 0);
}

TEST(Cli, HelpVersionAndUsageErrorsReachTheirStreams) {
    // CLI11 writes into the streams main hands it, and main passes them on (util/console.hpp).
    const auto help = test::run(cmd({"exec", "--help"}), env());
    EXPECT_EQ(help.status, 0);
    EXPECT_NE(help.out.find("Usage: "), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("--withhold"), std::string::npos) << help.out;
    EXPECT_EQ(help.err, "");
    const auto version = test::run(cmd({"--version"}), env());
    EXPECT_EQ(version.status, 0);
    EXPECT_FALSE(version.out.empty());
    const auto bad = test::run(cmd({"exec", "--no-such-flag", "--", "true"}), env());
    EXPECT_EQ(bad.status, 2);
    EXPECT_EQ(bad.out, "");
    EXPECT_NE(bad.err.find("--no-such-flag"), std::string::npos) << bad.err;
}

// main builds the options of the subcommand the command line names, and of no other: each
// subcommand still has all of its own, and the top-level help still lists every one.
TEST(Cli, EverySubcommandKeepsItsOptions) {
    const std::vector<std::pair<std::string, std::vector<std::string>>> expected{
        {"check", {"EVAL_DIR TEXT REQUIRED"}},
        {"exec", {"--workspace", "--withhold", "--egress", "--strict", "command TEXT"}},
        {"preflight", {"--workspace", "--withhold", "--legs", "command TEXT"}},
        {"run", {"EVAL_DIR TEXT REQUIRED"}},
        {"score", {"RUN_DIR TEXT REQUIRED"}},
        {"qualify", {"EVAL_DIR TEXT REQUIRED", "--jobs"}},
        {"report", {"RUN_DIR TEXT REQUIRED", "--output"}}};
    const auto top = test::run(cmd({"--help"}), env());
    ASSERT_EQ(top.status, 0) << top.err;
    for (const auto &[sub, options] : expected) {
        EXPECT_NE(top.out.find("  " + sub + " "), std::string::npos) << top.out;
        const auto help = test::run(cmd({sub, "--help"}), env());
        ASSERT_EQ(help.status, 0) << sub << ": " << help.err;
        for (const auto &option : options) {
            EXPECT_NE(help.out.find(option), std::string::npos) << sub << " lacks " << option;
        }
    }
    EXPECT_NE(top.out.find("  plugins "), std::string::npos) << top.out;
    // Options of one subcommand are not another's.
    EXPECT_EQ(test::run(cmd({"score", "--legs", "2", "/nonexistent"}), env()).status, 2);
}

// `help [SUBCOMMAND]` prints exactly what `[SUBCOMMAND] --help` does, common options before it
// included, and lists itself in the top-level help.
TEST(Cli, HelpSubcommandPrintsWhatTheHelpOptionPrints) {
    const auto top = test::run(cmd({"--help"}), env());
    ASSERT_EQ(top.status, 0) << top.err;
    EXPECT_NE(top.out.find("\n  help "), std::string::npos) << top.out;
    const auto help = test::run(cmd({"help"}), env());
    EXPECT_EQ(help.status, 0) << help.err;
    EXPECT_EQ(help.out, top.out);
    EXPECT_EQ(help.err, "");
    // Every subcommand the top-level help lists, help itself aside, is one compared below: a new
    // one fails here until it is added.
    const std::vector<std::string> compared{"check", "plugins", "exec",    "preflight",
                                            "run",   "score",   "qualify", "report"};
    std::vector<std::string> listed;
    bool in_list = false;
    std::istringstream lines{top.out};
    for (std::string line; std::getline(lines, line);) {
        if (line == "Subcommands:") {
            in_list = true;
        } else if (line.empty()) {
            in_list = false;
        } else if (in_list && line.size() > 2 && line.starts_with("  ") && line[2] != ' ') {
            listed.push_back(line.substr(2, line.find(' ', 2) - 2));
        }
    }
    auto all = compared;
    all.emplace_back("help");
    EXPECT_EQ(listed, all) << top.out;
    for (const auto &sub : compared) {
        const auto option = test::run(cmd({sub, "--help"}), env());
        ASSERT_EQ(option.status, 0) << sub << ": " << option.err;
        EXPECT_NE(option.out, top.out) << sub;
        const auto word = test::run(cmd({"help", sub}), env());
        EXPECT_EQ(word.status, 0) << sub << ": " << word.err;
        EXPECT_EQ(word.out, option.out) << sub;
        EXPECT_EQ(word.err, "") << sub;
        const auto after_common = test::run(cmd({"-v", "--backend", "run", "help", sub}), env());
        EXPECT_EQ(after_common.status, 0) << sub << ": " << after_common.err;
        EXPECT_EQ(after_common.out, option.out) << sub;
    }
    // `help help` is the help that lists help.
    const auto twice = test::run(cmd({"help", "help"}), env());
    EXPECT_EQ(twice.status, 0) << twice.err;
    EXPECT_EQ(twice.out, top.out);
    // What follows "--" is exec's command: `help exec -- sh` is exec's help, not `sh --help` run.
    const auto command = test::run(cmd({"help", "exec", "--", "sh", "-c", "echo ran"}), env());
    EXPECT_EQ(command.status, 0) << command.err;
    EXPECT_EQ(command.out, test::run(cmd({"exec", "--help"}), env()).out);
}

// `help WORD` with a word that is no subcommand is refused as the word alone would be.
TEST(Cli, HelpOfNoSubcommandIsAUsageError) {
    const auto near = test::run(cmd({"help", "scroe"}), env());
    EXPECT_EQ(near.status, 2);
    EXPECT_EQ(near.out, "");
    EXPECT_EQ(near.err,
              "tea-evaluate: 'scroe' is not a subcommand (check, plugins, exec, preflight, run, "
              "score, qualify, report); did you mean 'score'?\n");
    const auto far = test::run(cmd({"--json", "help", "deploy"}), env());
    EXPECT_EQ(far.status, 2);
    EXPECT_EQ(far.err,
              "tea-evaluate: 'deploy' is not a subcommand (check, plugins, exec, preflight, run, "
              "score, qualify, report)\n");
}

// The subcommand is the first word that is not an option's value: a configuration file named
// "exec" is --config's, and `run` is still the one whose options are built (the control: the same
// help, with no --config, shows the same option).
TEST(Cli, AnOptionValueNamedLikeASubcommandIsNotTakenForOne) {
    const test::TempDir dir;
    test::write_file((dir.path() / "exec").string(), "");
    const auto in_dir = [&](const std::string &args) {
        return test::run({"/bin/sh", "-c",
                          "cd '" + dir.path().string() + "' && exec '" +
                              std::string{TEA_EVALUATE_BIN} + "' " + args},
                         env());
    };
    for (const std::string args : {"run --help", "--config exec run --help",
                                   "--config=exec run --help", "-v --config exec run --help"}) {
        const auto help = in_dir(args);
        EXPECT_EQ(help.status, 0) << args << ": " << help.err;
        EXPECT_NE(help.out.find("EVAL_DIR TEXT REQUIRED"), std::string::npos)
            << args << ": " << help.out;
    }
    // The file named like a subcommand is read as the configuration it is.
    const auto listed = in_dir("--config exec plugins");
    EXPECT_EQ(listed.status, 0) << listed.err;
    EXPECT_NE(listed.out.find("opt-out"), std::string::npos) << listed.out;
}

// Every file including <iostream> gets a static object that builds the eight standard streams
// before main, which costs each exec about 0.5 ms on the VM of bench/README.md; the runtime
// writes through util/console.hpp instead. A file that includes <iostream> again shows here.
TEST(Cli, TheExecutableBuildsNoStandardStreamAtStart) {
    const auto symbols = test::run({"nm", TEA_EVALUATE_BIN}, env());
    ASSERT_EQ(symbols.status, 0) << symbols.err;
    // The control: nm read the symbol table (a stripped binary would list nothing).
    ASSERT_NE(symbols.out.find(" T main\n"), std::string::npos);
    EXPECT_EQ(symbols.out.find("__ioinit"), std::string::npos)
        << "a file of tea-evaluate includes <iostream>; write through util/console.hpp";
}

// What nm cannot see: code that would write to std::cout or std::cerr, which nothing in the
// runtime builds (util/console.hpp), crashes when it runs. So no source of the runtime names
// them, nor the CLI11 features that write to std::cout themselves.
TEST(Cli, NoSourceOfTheRuntimeWritesToAStandardStream) {
    constexpr std::array<std::string_view, 8> banned{
        "std::cout",           "std::cerr",        "std::clog",     "std::cin",
        "#include <iostream>", "deprecate_option", "retire_option", "AutoTimer"};
    std::size_t files = 0;
    for (const auto &entry : std::filesystem::recursive_directory_iterator{
             std::filesystem::path{TEA_SOURCE_DIR} / "core"}) {
        const auto ext = entry.path().extension();
        if (ext != ".cpp" && ext != ".hpp") {
            continue;
        }
        ++files;
        std::ifstream in{entry.path()};
        std::string line;
        for (int number = 1; std::getline(in, line); ++number) {
            const auto code = std::string_view{line}.substr(0, line.find("//"));
            for (const auto word : banned) {
                EXPECT_EQ(code.find(word), std::string_view::npos)
                    << entry.path().string() << ":" << number << " uses " << word
                    << "; write through util/console.hpp";
            }
        }
    }
    EXPECT_GT(files, 50U);  // the control: the walk found the runtime's sources
}

// The runtime and every in-tree plugin are linked with full RELRO (CMakeLists.txt): all symbols
// bound at load, so the address tables are read-only before main and cannot be overwritten.
TEST(Cli, TheRuntimeAndItsPluginsAreBoundAtLoadWithFullRelro) {
    std::vector<std::filesystem::path> objects{TEA_EVALUATE_BIN};
    const auto plugins = std::filesystem::path{TEA_EVALUATE_BIN}.parent_path().parent_path() /
                         "lib" / "tea-evaluate" / "plugins";
    for (const auto &entry : std::filesystem::directory_iterator{plugins}) {
        if (entry.path().extension() == ".so") {
            objects.push_back(entry.path());
        }
    }
    ASSERT_GE(objects.size(), 2U) << "no plugin found in " << plugins;
    for (const auto &object : objects) {
        const auto dynamic = test::run({"readelf", "-dW", object.string()}, env());
        ASSERT_EQ(dynamic.status, 0) << dynamic.err;
        // The control: readelf read the dynamic section.
        ASSERT_NE(dynamic.out.find("(NEEDED)"), std::string::npos) << object;
        EXPECT_NE(dynamic.out.find("BIND_NOW"), std::string::npos) << object << "\n" << dynamic.out;
        const auto segments = test::run({"readelf", "-lW", object.string()}, env());
        EXPECT_NE(segments.out.find("GNU_RELRO"), std::string::npos) << object;
    }
}

TEST(Cli, BadConfigNamesFileLineAndKey) {
    const auto dir = test::make_temp_dir("tea-cli-config");
    test::write_file(dir + "/bad.toml", "[confinement]\nbackend = \"opt-out\"\nbakend = 1\n");
    const auto o = test::run(cmd({"--config", dir + "/bad.toml", "exec", "--", "true"}), env());
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.err.find(dir + "/bad.toml:3:1: confinement.bakend: unknown key"), std::string::npos)
        << o.err;
    test::write_file(dir + "/syntax.toml", "[call\n");
    EXPECT_EQ(test::run(cmd({"--config", dir + "/syntax.toml", "plugins"}), env()).status, 2);
    // The user's file is read from XDG_CONFIG_HOME and errors name it too.
    std::filesystem::create_directories(dir + "/xdg/tea-evaluate");
    test::write_file(dir + "/xdg/tea-evaluate/config.toml", "[call]\nkill_grace_ms = \"x\"\n");
    const auto user =
        test::run(cmd({"plugins"}), test::environment_with({"XDG_CONFIG_HOME=" + dir + "/xdg"}));
    EXPECT_EQ(user.status, 2);
    EXPECT_NE(user.err.find("config.toml:2:"), std::string::npos) << user.err;
    std::filesystem::remove_all(dir);
}

TEST(Cli, AMisspelledSubcommandNamesTheWordAndTheOneMeant) {
    const auto o = test::run(cmd({"rnu", "eval"}), env());
    EXPECT_EQ(o.status, 2);
    EXPECT_EQ(o.out, "");
    EXPECT_EQ(o.err,
              "tea-evaluate: 'rnu' is not a subcommand (check, plugins, exec, preflight, run, "
              "score, qualify, report); did you mean 'run'?\n");
    // After the common options and their values too; a word near none is answered with the list.
    const auto late = test::run(cmd({"--backend", "opt-out", "-v", "pluggins"}), env());
    EXPECT_EQ(late.status, 2);
    EXPECT_NE(late.err.find("'pluggins' is not a subcommand"), std::string::npos) << late.err;
    EXPECT_NE(late.err.find("did you mean 'plugins'?"), std::string::npos) << late.err;
    const auto far = test::run(cmd({"deploy"}), env());
    EXPECT_EQ(far.status, 2);
    EXPECT_EQ(far.err,
              "tea-evaluate: 'deploy' is not a subcommand (check, plugins, exec, preflight, run, "
              "score, qualify, report)\n");
    // The control: the word spelled right runs, and no word at all is CLI11's own refusal.
    EXPECT_EQ(test::run(cmd({"--backend", "opt-out", "-v", "plugins"}), env()).status, 0);
    const auto none = test::run(cmd({}), env());
    EXPECT_EQ(none.status, 2);
    EXPECT_NE(none.err.find("A subcommand is required"), std::string::npos) << none.err;
}

TEST(Cli, AMisspelledOptionNamesTheOptionAndTheOneMeant) {
    const auto own = test::run(cmd({"exec", "--withold", "secret", "--", "true"}), env());
    EXPECT_EQ(own.status, 2);
    EXPECT_EQ(own.err,
              "tea-evaluate: unknown option '--withold' (tea-evaluate exec --help lists the "
              "options; the command's own options go after --); did you mean '--withhold'?\n");
    const auto joined = test::run(cmd({"exec", "--timout=5", "--", "true"}), env());
    EXPECT_EQ(joined.status, 2);
    EXPECT_NE(joined.err.find("unknown option '--timout' (tea-evaluate exec --help lists the "
                              "options; the command's own options go after --); did you mean "
                              "'--timeout'?"),
              std::string::npos)
        << joined.err;
    // A common option, before the subcommand or after it.
    const auto common = test::run(cmd({"plugins", "--jsn"}), env());
    EXPECT_EQ(common.status, 2);
    EXPECT_NE(common.err.find("unknown option '--jsn'"), std::string::npos) << common.err;
    EXPECT_NE(common.err.find("did you mean '--json'?"), std::string::npos) << common.err;
    const auto before = test::run(cmd({"--bakend", "opt-out", "plugins"}), env());
    EXPECT_EQ(before.status, 2);
    EXPECT_NE(before.err.find("unknown option '--bakend'"), std::string::npos) << before.err;
    EXPECT_NE(before.err.find("did you mean '--backend'?"), std::string::npos) << before.err;
    const auto far = test::run(cmd({"exec", "--frobnicate", "--", "true"}), env());
    EXPECT_EQ(far.status, 2);
    EXPECT_EQ(far.err,
              "tea-evaluate: unknown option '--frobnicate' (tea-evaluate exec --help lists the "
              "options; the command's own options go after --)\n");
    // The control: spelled right, the same command lines run.
    EXPECT_EQ(
        test::run(cmd({"exec", "--backend", "opt-out", "--timeout=5000", "--", "true"}), env())
            .status,
        0);
    EXPECT_EQ(test::run(cmd({"plugins", "--json"}), env()).status, 0);
}

TEST(Cli, AMisspelledPluginOrKeyNamesTheOneMeant) {
    const auto backend = test::run(cmd({"exec", "--backend", "opt-ot", "--", "true"}), env());
    EXPECT_EQ(backend.status, 2);
    EXPECT_NE(backend.err.find("no backend plugin named 'opt-ot' is installed (see 'tea-evaluate "
                               "plugins'); did you mean 'opt-out'?"),
              std::string::npos)
        << backend.err;
    const auto dir = test::make_temp_dir("tea-cli-key");
    test::write_file(dir + "/bad.toml", "[call]\nkill_grace = 5\n");
    const auto key = test::run(cmd({"--config", dir + "/bad.toml", "plugins"}), env());
    EXPECT_EQ(key.status, 2);
    EXPECT_EQ(key.err, "tea-evaluate: " + dir +
                           "/bad.toml:2:1: call.kill_grace: unknown key (known keys here: "
                           "output_cap_bytes, kill_grace_ms); did you mean 'kill_grace_ms'?\n");
    std::filesystem::remove_all(dir);
}

// A manifest that can be read names its plugin, even when its library cannot be found.
TEST(Cli, PluginsListsAPluginWhoseLibraryIsMissingByItsName) {
    const auto dir = test::make_temp_dir("tea-cli-ghost");
    test::write_file(dir + "/ghost.toml", "name = \"ghost\"\nkind = \"backend\"\nabi = \"1." +
                                              std::to_string(TEA_ABI_MINOR) +
                                              "\"\nlibrary = \"libtea-backend-ghost.so\"\n");
    test::write_file(dir + "/c.conf", "[plugins]\npaths = [\"" + dir + "\"]\n");
    const auto listed = test::run(cmd({"--config", dir + "/c.conf", "plugins"}), env());
    EXPECT_EQ(listed.status, 0) << listed.err;
    const auto at = listed.out.find(dir + "/ghost.toml");
    ASSERT_NE(at, std::string::npos) << listed.out;
    const auto line = listed.out.substr(listed.out.rfind('\n', at) + 1);
    EXPECT_EQ(line.substr(0, line.find('\n')),
              "ghost          backend   refused  " + dir + "/ghost.toml")
        << listed.out;
    EXPECT_NE(line.find("    reason: " + dir +
                        "/ghost.toml: library 'libtea-backend-ghost.so' was not found"),
              std::string::npos)
        << listed.out;
    const auto json = test::run(cmd({"--config", dir + "/c.conf", "plugins", "--json"}), env());
    const auto doc = nlohmann::json::parse(json.out);
    bool found = false;
    for (const auto &p : doc["plugins"]) {
        if (p["manifest"] == dir + "/ghost.toml") {
            found = true;
            EXPECT_EQ(p["name"], "ghost");
            EXPECT_EQ(p["kind"], "backend");
            EXPECT_EQ(p["loaded"], false);
        }
    }
    EXPECT_TRUE(found) << json.out;
    // Asked for by name, it is the plugin that cannot be loaded, not one that is not installed.
    const auto asked = test::run(
        cmd({"--config", dir + "/c.conf", "exec", "--backend", "ghost", "--", "true"}), env());
    EXPECT_EQ(asked.status, 2);
    EXPECT_NE(asked.err.find("the backend plugin 'ghost' cannot be loaded: " + dir +
                             "/ghost.toml: library 'libtea-backend-ghost.so' was not found"),
              std::string::npos)
        << asked.err;
    std::filesystem::remove_all(dir);
}

TEST(Cli, AutoNeverPicksABackendThatConfinesNothing) {
    const auto dir = test::make_temp_dir("tea-cli-auto");
    test::write_file(dir + "/c.toml", "[confinement]\nauto_order = [\"opt-out\"]\n");
    const auto o = test::run(cmd({"--config", dir + "/c.toml", "exec", "--", "true"}), env());
    EXPECT_EQ(o.status, 12);
    EXPECT_NE(o.err.find("confines nothing"), std::string::npos) << o.err;
    test::write_file(dir + "/none.toml", "[confinement]\nauto_order = [\"missing-one\"]\n");
    const auto none = test::run(cmd({"--config", dir + "/none.toml", "exec", "--", "true"}), env());
    EXPECT_EQ(none.status, 12);
    EXPECT_NE(none.err.find("missing-one: not installed"), std::string::npos) << none.err;
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tea

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

namespace tea {
namespace {

// Starts tea-evaluate without waiting for it.
pid_t start(const std::vector<std::string> &argv, const std::vector<std::string> &environment) {
    auto args = test::c_strings(argv);
    auto envp = test::c_strings(environment);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    EXPECT_EQ(::posix_spawn(&pid, args[0], &fa, nullptr, args.data(), envp.data()), 0);
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

std::size_t run_dirs(const std::string &root) {
    std::size_t n = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it{root, ec}, end; !ec && it != end;
         it.increment(ec)) {
        n += it->path().filename().string().rfind("run-", 0) == 0 ? 1U : 0U;
    }
    return n;
}

// A workspace that holds the runtime's own programs or a folder it loads plugins from (a build
// tree inside a checkout, a workspace of $HOME holding ~/.config/tea-evaluate/plugins.d), or that
// lies in one of the runtime's own folders, would let a target choose what the next command runs
// outside any confinement: the call is refused before anything runs (exit 12), naming the path.
// The controls: the same workspaces once nothing of the runtime is in them, and a workspace in the
// build tree beside the runtime's own folders, run.
TEST(Cli, AWorkspaceHoldingTheRuntimesOwnFilesIsRefused) {
    const test::TempDir dir{"tea-cli-own-files"};
    const auto ws = dir.path() / "ws";
    std::filesystem::create_directories(ws / "config");
    const auto marker = ws / "ran";
    const auto exec_in = [&marker](const std::filesystem::path &workspace,
                                   const std::vector<std::string> &extra_env) {
        std::vector<std::string> e{"XDG_CONFIG_HOME=/nonexistent-tea-test",
                                   "HOME=/nonexistent-tea-test"};
        e.insert(e.end(), extra_env.begin(), extra_env.end());
        return test::run(cmd({"exec", "--backend", "opt-out", "--workspace", workspace.string(),
                              "--", "touch", marker.string()}),
                         test::environment_with(e));
    };
    const auto refused = [&marker](const test::Outcome &o, const std::string &named) {
        EXPECT_EQ(o.status, 12) << o.err;
        EXPECT_NE(o.err.find("holds " + named), std::string::npos) << o.err;
        EXPECT_FALSE(std::filesystem::exists(marker)) << "the target ran";
    };
    // The user's plugins.d inside the workspace, through XDG_CONFIG_HOME.
    refused(exec_in(ws, {"XDG_CONFIG_HOME=" + (ws / "config").string()}),
            (ws / "config" / "tea-evaluate" / "plugins.d").string());
    // A folder of TEA_PLUGIN_PATH inside it.
    refused(exec_in(ws, {"TEA_PLUGIN_PATH=" + (ws / "plugins").string()}),
            (ws / "plugins").string());
    // The build tree the runtime runs from.
    const auto prefix = std::filesystem::path{TEA_EVALUATE_BIN}.parent_path().parent_path();
    const auto holding = exec_in(prefix.parent_path(), {});
    EXPECT_EQ(holding.status, 12) << holding.err;
    EXPECT_NE(holding.err.find("the runtime's installation"), std::string::npos) << holding.err;
    // Inside a folder the runtime loads plugins from.
    const auto plugins_d = dir.path() / "config" / "tea-evaluate" / "plugins.d";
    std::filesystem::create_directories(plugins_d / "sub");
    const auto inside =
        exec_in(plugins_d / "sub", {"XDG_CONFIG_HOME=" + (dir.path() / "config").string()});
    EXPECT_EQ(inside.status, 12) << inside.err;
    EXPECT_NE(inside.err.find("lies in " + plugins_d.string()), std::string::npos) << inside.err;
    EXPECT_FALSE(std::filesystem::exists(marker));
    // The controls.
    const auto plain = exec_in(ws, {"XDG_CONFIG_HOME=" + (dir.path() / "config").string()});
    EXPECT_EQ(plain.status, 0) << plain.err;
    EXPECT_TRUE(std::filesystem::exists(marker));
    std::filesystem::remove(marker);
    const auto in_tree = exec_in(prefix / "bin", {});
    EXPECT_EQ(in_tree.status, 12) << "bin holds the runtime's programs: " << in_tree.err;
    EXPECT_EQ(exec_in(prefix / "tests", {}).status, 0);
    EXPECT_TRUE(std::filesystem::exists(marker));
}

// The configuration file a command reads chooses its plugins and how they confine: a workspace
// that holds it (a --config file in the project the call runs in) is refused, as is the user's
// own file under a workspace of $HOME. The control: the same file outside the workspace.
TEST(Cli, AWorkspaceHoldingTheConfigurationIsRefused) {
    const test::TempDir dir{"tea-cli-own-config"};
    const auto ws = dir.path() / "ws";
    std::filesystem::create_directories(ws);
    std::ofstream{ws / "config.toml"} << "# the project's\n";
    std::ofstream{dir.path() / "config.toml"} << "# beside the project\n";
    const auto exec_with = [&ws](const std::filesystem::path &config,
                                 const std::vector<std::string> &extra_env) {
        std::vector<std::string> e{"XDG_CONFIG_HOME=/nonexistent-tea-test",
                                   "HOME=/nonexistent-tea-test"};
        e.insert(e.end(), extra_env.begin(), extra_env.end());
        return test::run(cmd({"--config", config.string(), "exec", "--backend", "opt-out",
                              "--workspace", ws.string(), "--", "true"}),
                         test::environment_with(e));
    };
    const auto in_ws = exec_with(ws / "config.toml", {});
    EXPECT_EQ(in_ws.status, 12) << in_ws.err;
    EXPECT_NE(in_ws.err.find("holds " + (ws / "config.toml").string()), std::string::npos)
        << in_ws.err;
    // The user's folder of configuration inside the workspace (a workspace of $HOME).
    const auto home =
        exec_with(dir.path() / "config.toml", {"XDG_CONFIG_HOME=" + (ws / ".config").string()});
    EXPECT_EQ(home.status, 12) << home.err;
    EXPECT_NE(home.err.find("holds " + (ws / ".config" / "tea-evaluate").string()),
              std::string::npos)
        << home.err;
    // The same --config given by a relative name, from the workspace.
    const auto relative = test::run(
        {"sh", "-c", "cd \"$1\" && exec \"$2\" --config config.toml exec --backend opt-out -- true",
         "sh", ws.string(), TEA_EVALUATE_BIN},
        env());
    EXPECT_EQ(relative.status, 12) << relative.err;
    EXPECT_NE(relative.err.find("holds " + (ws / "config.toml").string()), std::string::npos)
        << relative.err;
    // The user's folder of configuration reached through a link into the workspace (a dotfiles
    // checkout): ~/.config/tea-evaluate -> <workspace>/dotfiles/tea-evaluate.
    std::filesystem::create_directories(ws / "dotfiles" / "tea-evaluate");
    std::filesystem::create_directories(dir.path() / "linked");
    std::filesystem::create_directory_symlink(ws / "dotfiles" / "tea-evaluate",
                                              dir.path() / "linked" / "tea-evaluate");
    const auto linked = exec_with(dir.path() / "config.toml",
                                  {"XDG_CONFIG_HOME=" + (dir.path() / "linked").string()});
    EXPECT_EQ(linked.status, 12) << linked.err;
    const auto beside = exec_with(dir.path() / "config.toml", {});
    EXPECT_EQ(beside.status, 0) << beside.err;
}

// As root, the folder of configuration of the user who ran sudo (SUDO_UID), and of the
// workspace's owner, count as the runtime's own: their next command reads it, and a target of a
// root call could plant a plugin there. A password database of the test's own, bound over
// /etc/passwd in a mount namespace of its own, gives a user whose home is the workspace. The
// controls: the same workspace without SUDO_UID, and owned by root.
TEST(Cli, AWorkspaceHoldingTheInvokingUsersConfigurationIsRefused) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "sudo's variables and a workspace's owner matter to a root runtime only";
    }
    const test::TempDir dir{"tea-cli-own-sudo"};
    const auto home = dir.path() / "alice";
    std::filesystem::create_directories(home);
    {
        std::ifstream real{"/etc/passwd"};
        std::ofstream fake{dir.path() / "passwd"};
        fake << real.rdbuf() << "tea-test-alice:x:4242:4242::" << home.string()
             << ":/usr/sbin/nologin\n";
    }
    const auto as = [&dir, &home](const std::string &sudo_uid) {
        return test::run(
            {"unshare", "-m", "--propagation", "private", "sh", "-c",
             "mount --bind \"$1\" /etc/passwd && exec env $2 \"$3\" exec "
             "--backend opt-out --workspace \"$4\" -- true",
             "sh", (dir.path() / "passwd").string(), sudo_uid, TEA_EVALUATE_BIN, home.string()},
            env());
    };
    const auto sudo = as("SUDO_UID=4242");
    EXPECT_EQ(sudo.status, 12) << sudo.err;
    EXPECT_NE(sudo.err.find("the invoking user's configuration"), std::string::npos) << sudo.err;
    const auto plain = as("TEA_TEST=1");
    EXPECT_EQ(plain.status, 0) << plain.err;
    ASSERT_EQ(::chown(home.c_str(), 4242, 4242), 0);
    const auto owned = as("TEA_TEST=1");
    EXPECT_EQ(owned.status, 12) << owned.err;
    EXPECT_NE(owned.err.find("the workspace's owner"), std::string::npos) << owned.err;
    ASSERT_EQ(::chown(home.c_str(), 0, 0), 0);
}

// Another name of a refused folder is no way round: the build tree bound at another path (in a
// mount namespace of the test's own) is refused as the build tree is. The control: a folder
// bound the same way that holds nothing of the runtime.
TEST(Cli, AWorkspaceBoundFromTheRuntimesOwnFilesIsRefused) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "a bind mount in a namespace of its own needs root here";
    }
    const test::TempDir dir{"tea-cli-own-bind"};
    const auto alias = dir.path() / "alias";
    const auto other = dir.path() / "other";
    std::filesystem::create_directories(alias);
    std::filesystem::create_directories(other / "src");
    const auto prefix = std::filesystem::path{TEA_EVALUATE_BIN}.parent_path().parent_path();
    const auto bound = [&alias](const std::filesystem::path &source) {
        return test::run({"unshare", "-m", "--propagation", "private", "sh", "-c",
                          "mount --bind \"$1\" \"$2\" && exec \"$3\" exec --backend opt-out "
                          "--workspace \"$2\" -- true",
                          "sh", source.string(), alias.string(), TEA_EVALUATE_BIN},
                         env());
    };
    const auto through = bound(prefix.parent_path());
    EXPECT_EQ(through.status, 12) << through.err;
    EXPECT_NE(through.err.find("holds " + prefix.string()), std::string::npos) << through.err;
    const auto control = bound(other / "src");
    EXPECT_EQ(control.status, 0) << control.err;
}

// SIGTERM and SIGINT end the running call and remove its private directories;
// a run killed outright leaves them, and the next run reclaims them.
TEST(Cli, ASignalEndsTheCallAndCleansUpAndAKillIsReclaimed) {
    // Searchable by the sandbox's user, which the audit's tracer runs as when the runtime is root.
    const auto root = test::make_host_dir("tea-cli-signal");
    const auto e = env({"TEA_EVALUATE_PRIVATE_ROOT=" + root + "/private"});
    // A workspace of its own: the test's directory may hold the private root, which is refused.
    const auto ws = root + "/ws";
    std::filesystem::create_directory(ws);
    // A confined, audited call: its home stays on the host for the audit to resolve (an opted-out
    // call makes no directories of its own, an unaudited one keeps them in its own namespace).
    const auto started = ws + "/started";
    for (const int sig : {SIGTERM, SIGINT, SIGKILL}) {
        std::filesystem::remove(started);
        const pid_t pid =
            start(cmd({"exec", "--backend", "bubblewrap", "--observer", "strace", "--workspace", ws,
                       "--", "sh", "-c", "touch started; exec sleep 30"}),
                  e);
        // Wait until the target has started, so the signal lands mid-call and the observer's
        // confirmation, a call of its own with directories of its own, is over (a loaded machine
        // may take seconds to start the process, so the bound is generous).
        for (int i = 0; i < 2000 && !std::filesystem::exists(started); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds{10});
        }
        ASSERT_EQ(run_dirs(root + "/private"), 1U);
        const auto sent = std::chrono::steady_clock::now();
        ::kill(pid, sig);
        int status = 0;
        ::waitpid(pid, &status, 0);
        EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds{5});
        if (sig == SIGKILL) {
            EXPECT_TRUE(WIFSIGNALED(status));
            EXPECT_EQ(run_dirs(root + "/private"), 1U);  // left behind, unlocked
            const auto next = test::run(cmd({"exec", "--backend", "bubblewrap", "--observer",
                                             "strace", "--workspace", ws, "--", "true"}),
                                        e);
            EXPECT_EQ(next.status, 0) << next.err;
        } else {
            ASSERT_TRUE(WIFEXITED(status));
            EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
        }
        EXPECT_EQ(run_dirs(root + "/private"), 0U) << "signal " << sig;
    }
    std::filesystem::remove_all(root);
}

// Processes whose command line mentions `text`.
int processes_mentioning(const std::string &text) {
    return static_cast<int>(test::processes_holding({text}).size());
}

// A pinned egress item is never sent to an egress plugin that implements a minor before pins
// (ABI 1.8): one that ignored "pinned" would resolve the host and read the addresses as a filter.
TEST(Cli, APinnedItemIsRefusedToAnEgressPluginBeforeAbi18) {
    const test::TempDir dir{"tea-cli-egress-pin"};
    const auto manifests = dir.path() / "plugins.d";
    std::filesystem::create_directory(manifests);
    test::write_file((manifests / "egress-abi-1-7.toml").string(),
                     "name = \"egress-abi-1-7\"\nkind = \"egress\"\nabi = \"1.7\"\nlibrary = \"" +
                         std::string{TEA_FIXTURE_EGRESS_ABI_1_7} + "\"\n");
    test::write_file((manifests / "good-egress.toml").string(),
                     "name = \"good-egress\"\nkind = \"egress\"\nabi = \"1." +
                         std::to_string(TEA_ABI_MINOR) + "\"\nlibrary = \"" +
                         std::string{TEA_FIXTURE_GOOD_EGRESS} + "\"\n");
    const auto exec_with = [&](const std::string &plugin, const std::string &item) {
        const auto config = (dir.path() / (plugin + ".toml")).string();
        test::write_file(config, "[plugins]\npaths = [\"" + manifests.string() +
                                     "\"]\n[egress]\nplugin = \"" + plugin + "\"\n");
        return test::run(cmd({"--config", config, "exec", "--backend", "opt-out", "--egress", item,
                              "--", "/bin/true"}),
                         env());
    };
    const auto refused = exec_with("egress-abi-1-7", "api.tea-evaluate.test:443@127.0.0.1");
    EXPECT_EQ(refused.status, 12) << refused.err;
    EXPECT_NE(refused.err.find("'egress-abi-1-7' implements ABI 1.7"), std::string::npos)
        << refused.err;
    EXPECT_NE(refused.err.find("api.tea-evaluate.test:443"), std::string::npos) << refused.err;
    // The controls: the same plugin is sent an unpinned item, and a plugin of 1.8 the pinned one
    // (the fixture then answers with no route, which stops the call otherwise).
    for (const auto &[plugin, item] : std::vector<std::pair<std::string, std::string>>{
             {"egress-abi-1-7", "api.tea-evaluate.test:443=127.0.0.1"},
             {"good-egress", "api.tea-evaluate.test:443@127.0.0.1"}}) {
        const auto sent = exec_with(plugin, item);
        EXPECT_NE(sent.status, 12) << plugin << " " << item << "\n" << sent.err;
        EXPECT_NE(sent.err.find("'" + plugin + "' returned an invalid route"), std::string::npos)
            << plugin << " " << item << "\n"
            << sent.err;
    }
}

#ifdef TEA_STRACE_PLUGIN
// A failure before the target starts says which side failed
// (tests/fixtures/fixture_call_plugin.cpp: a backend whose plan is a shell launcher, traced by
// strace): a target the launcher cannot execute is the target's exec failing (126), not a host that
// cannot confine.
TEST(Cli, ATargetTheLauncherCannotExecuteExits126AndSaysSo) {
    const test::TempDir dir{"tea-cli-exec-failure", std::filesystem::perms::owner_all |
                                                        std::filesystem::perms::others_exec};
    const auto manifests = dir.path() / "plugins.d";
    std::filesystem::create_directory(manifests);
    const auto abi = "1." + std::to_string(TEA_ABI_1_6);  // what the call fixtures implement
    test::write_file((manifests / "call-backend.toml").string(),
                     "name = \"call-backend\"\nkind = \"backend\"\nabi = \"" + abi +
                         "\"\nlibrary = \"" + TEA_FIXTURE_CALL_BACKEND + "\"\n");
    test::write_file((manifests / "strace.toml").string(),
                     "name = \"strace\"\nkind = \"observer\"\nabi = \"" + abi + "\"\nlibrary = \"" +
                         TEA_STRACE_PLUGIN + "\"\n");
    const auto config = (dir.path() / "config.toml").string();
    test::write_file(config, "[plugins]\npaths = [\"" + manifests.string() +
                                 "\"]\n[plugin.call-backend]\nmode = \"plain\"\n");
    const auto workspace = dir.path() / "workspace";
    std::filesystem::create_directory(workspace);
    const auto target = workspace / "not-executable";
    test::write_file(target.string(), "#!/bin/sh\necho ran\n");
    std::filesystem::permissions(target, std::filesystem::perms::owner_read);
    const auto o =
        test::run(cmd({"--config", config, "exec", "--backend", "call-backend", "--observer",
                       "strace", "--workspace", workspace.string(), "--", target.string()}),
                  env());
    EXPECT_EQ(o.status, 126) << o.err;
    EXPECT_NE(o.err.find("could not be executed"), std::string::npos) << o.err;
    EXPECT_EQ(o.err.find("process limit"), std::string::npos) << o.err;

    // The control: the same target made executable runs.
    std::filesystem::permissions(target, std::filesystem::perms::owner_all);
    const auto ran =
        test::run(cmd({"--config", config, "exec", "--backend", "call-backend", "--observer",
                       "strace", "--workspace", workspace.string(), "--", target.string()}),
                  env());
    EXPECT_EQ(ran.status, 0) << ran.err;
    EXPECT_EQ(ran.out, "ran\n");
}
#endif

// A backend that stages its calls (ABI 1.5, tests/fixtures/fixture_stager_plugin.cpp): the
// session starts the staged answer's process before the complete plan exists, fills its deferred
// descriptor once the complete plan starts the same process, and otherwise kills it unfinished.
TEST(Cli, AStagedCallIsFinishedOnlyByACompletePlanForTheSameProcess) {
    const test::TempDir dir{"tea-cli-stager"};
    const auto manifests = dir.path() / "plugins.d";
    std::filesystem::create_directory(manifests);
    test::write_file((manifests / "stager-backend.toml").string(),
                     "name = \"stager-backend\"\nkind = \"backend\"\nabi = \"1.5\"\nlibrary = \"" +
                         std::string{TEA_FIXTURE_STAGER_BACKEND} + "\"\n");
    const auto run_mode = [&](const std::string &mode) {
        const auto workspace = dir.path() / mode;
        std::filesystem::create_directory(workspace);
        const auto config = (dir.path() / (mode + ".toml")).string();
        test::write_file(config, "[plugins]\npaths = [\"" + manifests.string() +
                                     "\"]\n[plugin.stager-backend]\nmode = \"" + mode + "\"\n");
        return test::run(
            cmd({"--config", config, "exec", "--backend", "stager-backend", "--observer", "none",
                 "--workspace", workspace.string(), "--", "true"}),
            env());
    };
    const auto exists = [&](const std::string &mode, const char *file) {
        return std::filesystem::exists(dir.path() / mode / file);
    };

    // The control: the same process, its descriptor filled once the complete plan exists.
    const auto match = run_mode("match");
    EXPECT_EQ(match.status, 0) << match.err;
    EXPECT_TRUE(exists("match", "started"));
    EXPECT_EQ(test::read_file((dir.path() / "match" / "got").string()), "the view");
    EXPECT_TRUE(exists("match", "done"));

    // A complete plan for another process, and one that cannot be made: the staged process was
    // running (the backend waited for it), and it is killed before it reads its descriptor's end.
    const auto mismatch = run_mode("mismatch");
    EXPECT_EQ(mismatch.status, 125) << mismatch.err;
    EXPECT_NE(mismatch.err.find("does not start the process staged for it (argv differs)"),
              std::string::npos)
        << mismatch.err;
    const auto fail = run_mode("fail");
    EXPECT_EQ(fail.status, 12) << fail.err;
    EXPECT_NE(fail.err.find("the view cannot be made"), std::string::npos) << fail.err;
    const auto deferred = run_mode("deferred");
    EXPECT_EQ(deferred.status, 125) << deferred.err;
    EXPECT_NE(deferred.err.find("descriptor 8 is deferred in a plan the launch spec asked to be "
                                "complete"),
              std::string::npos)
        << deferred.err;
    // An unconfined plan is never started early (its environment may still change): the staged
    // answer is set aside and the complete plan runs from its start.
    const auto unconfined = run_mode("unconfined");
    EXPECT_EQ(unconfined.status, 0) << unconfined.err;
    EXPECT_EQ(test::read_file((dir.path() / "unconfined" / "got").string()), "the view");
    std::this_thread::sleep_for(std::chrono::milliseconds{200});
    for (const std::string mode : {"mismatch", "fail", "deferred"}) {
        EXPECT_TRUE(exists(mode, "started")) << mode;
        EXPECT_FALSE(exists(mode, "got")) << mode;
        EXPECT_FALSE(exists(mode, "done")) << mode;
        EXPECT_EQ(processes_mentioning((dir.path() / mode).string()), 0) << mode;
    }
}

}  // namespace
}  // namespace tea
