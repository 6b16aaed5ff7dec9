// run and score end to end: real bubblewrap, real strace, real git repositories, the
// tea-evaluate binary as a user runs it. Each protection is shown holding, with a control that
// shows the same probe succeeding without it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/project_fixture.hpp"
#include "support/fake_bwrap.hpp"
#include "support/observers.hpp"
#include "support/process.hpp"
#include "support/socket_io.hpp"
#include "support/temp_dir.hpp"

namespace tea {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Validates a record against its JSON Schema in docs/schema with python3-jsonschema.
void expect_schema_valid(const fs::path &record, const std::string &schema) {
    const auto o = test::run(
        {"/usr/bin/python3", "-c",
         "import json,sys,jsonschema\n"
         "jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))\n",
         record.string(), (kSource / "docs" / "schema" / schema).string()},
        test::environment_with({}));
    EXPECT_EQ(o.status, 0) << record << " does not match " << schema << ":\n" << o.err;
}

// The observer "auto" takes on this host for the project's configuration, as `plugins` names it.
std::string auto_observer(Project &p) {
    const auto o = p.tea({"plugins", "--json"});
    const auto doc = json::parse(o.out, nullptr, false);
    if (doc.is_discarded()) {
        return "(plugins failed: " + o.err + ")";
    }
    const auto &selected = doc["selected"]["observer"]["selected"];
    return selected.is_string() ? selected.get<std::string>() : std::string{"(none)"};
}

void write_simple_evaluation(Project &p, const std::string &evaluation_extra = "",
                             const std::string &target = "#!/bin/sh\necho ok\n",
                             const std::string &grader = "") {
    p.write("bin/t", target, true);
    p.write(".tea/evaluation.json",
            R"({"registry": [{"interfaceId": "t", "executable": "t", "target": "bin/t",
                 "maxElapsedMs": 60000}],
                "evaluator": {"command": ["evaluator/grade.sh"]})" +
                evaluation_extra + "}");
    p.write(".tea/probes/only.json", R"({"entry": "t"})");
    p.write(".tea/evaluator/grade.sh",
            grader.empty() ? "#!/bin/sh\necho '{\"verdict\": \"pass\"}'\n" : grader, true);
}

TEST(Run, QuickstartPassesAndItsRecordsMatchTheirSchemas) {
    Project p{"pass"};
    p.copy_example("quickstart");
    p.commit();
    const auto check = p.tea({"check", p.eval().string()});
    ASSERT_EQ(check.status, 0) << check.err;
    const auto run = p.run();
    ASSERT_EQ(run.status, 0) << run.err;
    const auto dir = run_dir_of(run);
    ASSERT_FALSE(dir.empty()) << run.out;
    const auto record = read_json(dir / "run.json");
    EXPECT_EQ(record["status"], "complete");
    EXPECT_EQ(record["confinement"], "bubblewrap");
    EXPECT_EQ(record["observer"], auto_observer(p));
    ASSERT_EQ(record["trials"].size(), 2U);
    for (const auto &t : record["trials"]) {
        EXPECT_EQ(t["observedMountsChannel"], "complete");
        EXPECT_EQ(t["calls"].size(), 3U);
        EXPECT_EQ(t["verdict"]["verdict"], "pass") << t["verdict"].dump();
        EXPECT_EQ(t["artifacts"]["wordcount"]["report"]["status"], "copied");
    }
    expect_schema_valid(dir / "run.json", "run.schema.json");
    expect_schema_valid(dir / "manifest.json", "manifest.schema.json");

    const auto score = p.tea({"score", dir.string()});
    EXPECT_EQ(score.status, 0) << score.err;
    EXPECT_NE(score.err.find("PASS"), std::string::npos) << score.err;
    expect_schema_valid(dir / "score.json", "score.schema.json");
    EXPECT_EQ(read_json(dir / "score.json")["verdict"], "pass");
    EXPECT_EQ(p.leftover_run_dirs(), 0U);

    // Torn, missing and altered records are never a pass. Each case starts from the good run.
    const auto pristine = dir.parent_path() / "pristine";
    fs::copy(dir, pristine, fs::copy_options::recursive);
    const auto mutate = [&](const std::function<void(const fs::path &)> &change,
                            const std::string &expect) {
        fs::remove_all(dir);
        fs::copy(pristine, dir, fs::copy_options::recursive);
        change(dir);
        const auto s = p.tea({"score", dir.string()});
        EXPECT_EQ(s.status, 3) << expect << "\n" << s.err;
        EXPECT_NE(s.err.find(expect), std::string::npos) << s.err;
        EXPECT_EQ(read_json(dir / "score.json")["verdict"], "invalid");
    };
    mutate([](const fs::path &d) { fs::resize_file(d / "run.json", 100); }, "torn");
    mutate([](const fs::path &d) { fs::remove(d / "manifest.json"); }, "manifest.json is missing");
    mutate(
        [](const fs::path &d) {
            auto m = read_json(d / "manifest.json");
            m["trials"] = 1;
            test::write_file((d / "manifest.json").string(), m.dump());
        },
        "does not match run.json");
    mutate([](const fs::path &d) { fs::remove(d / "trials" / "2" / "verdict.json"); },
           "verdict.json is missing");
    mutate(
        [](const fs::path &d) {
            for (const auto &e : fs::directory_iterator(d / "trials" / "1" / "calls")) {
                if (e.path().extension() == ".json") {
                    test::write_file(e.path().string(), "{\"status\": 0");
                    break;
                }
            }
        },
        "torn");
    mutate(
        [](const fs::path &d) {
            auto r = read_json(d / "run.json");
            r["trials"][0]["observedMountsChannel"] = 5;
            r["trials"][0]["calls"][0]["probe"] = json::array();
            test::write_file((d / "run.json").string(), r.dump());
        },
        "wrong type");
}

// The workspace is a checkout of the commit, so a target is executable in a run only if its commit
// says so (mode 100755): a chmod left uncommitted passes check, which reads the work tree, and
// every call then failed with 126, the trial failing as if the target had answered wrong.
TEST(Run, ATargetCommittedWithoutItsExecuteBitIsRefusedBeforeAnyCall) {
    Project p{"mode"};
    write_simple_evaluation(p);
    ::chmod((p.root() / "bin/t").c_str(), 0644);
    p.commit();
    ::chmod((p.root() / "bin/t").c_str(), 0755);  // in the work tree only
    const auto check = p.tea({"check", p.eval().string()});
    EXPECT_EQ(check.status, 0) << check.err;
    const auto run = p.run();
    EXPECT_EQ(run.status, 2) << run.err;
    EXPECT_NE(run.err.find("entry 't' field 'target': 'bin/t' in commit "), std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find("is not executable (mode 0644)"), std::string::npos) << run.err;
    EXPECT_FALSE(fs::exists(p.eval() / "runs") && !fs::is_empty(p.eval() / "runs"))
        << "no run was recorded";

    // The control: once the commit holds the mode, the same evaluation runs and passes.
    p.commit();
    const auto fixed = p.run();
    EXPECT_EQ(fixed.status, 0) << fixed.err;
    EXPECT_EQ(p.tea({"score", run_dir_of(fixed).string()}).status, 0);
}

TEST(Run, WrongAnswersScoreFail) {
    Project p{"fail"};
    p.copy_example("quickstart");
    p.write("bin/wordcount", "#!/bin/sh\necho 0\n", true);
    p.commit();
    const auto run = p.run();
    ASSERT_EQ(run.status, 0) << run.err;  // nothing outside the grants: the run itself is sound
    const auto score = p.tea({"score", run_dir_of(run).string()});
    EXPECT_EQ(score.status, 1) << score.err;
    EXPECT_NE(score.err.find("FAIL"), std::string::npos) << score.err;
    EXPECT_NE(score.err.find("count-file: printed '0', expected '9'"), std::string::npos)
        << score.err;
}

TEST(Run, LeakyTargetMakesTheRunExit3AndTheScoreInvalid) {
    Project p{"leaky"};
    p.copy_example("leaky-target");
    p.commit();
    const auto run = p.run();
    EXPECT_EQ(run.status, 3) << run.err;
    // Each attempt is named: the evaluation folder and the private root above the home.
    EXPECT_NE(run.err.find(p.eval().string()), std::string::npos) << run.err;
    EXPECT_NE(run.err.find(p.private_root().string()), std::string::npos) << run.err;
    const auto dir = run_dir_of(run);
    const auto record = read_json(dir / "run.json");
    const auto out = test::read_file((dir / "trials" / "1" / "calls" / "01-snoop.stdout").string());
    // Withheld: the target read nothing of the grading material and reached no host socket.
    EXPECT_EQ(out.find("READ " + p.eval().string()), std::string::npos) << out;
    EXPECT_EQ(out.find("CONNECTED"), std::string::npos) << out;
    EXPECT_NE(out.find("cover " + p.eval().string()), std::string::npos) << out;  // it looked
    const auto score = p.tea({"score", dir.string()});
    EXPECT_EQ(score.status, 3) << score.err;
    EXPECT_NE(score.err.find("mount outside allowlist: " + p.eval().string()), std::string::npos)
        << score.err;
    // The evaluator passed the trial; the audit overrides it.
    EXPECT_EQ(record["trials"][0]["verdict"]["verdict"], "pass");
}

TEST(Run, EvaluatorCannotWriteTheEvaluationFolderOrTheGitDirectory) {
    Project p{"grader"};
    const std::string grader =
        "#!/bin/sh\n"
        "r1=$( (echo x > \"$TEA_EVALUATION_DIR/planted\") 2>&1 && echo WROTE)\n"
        "r2=$( (echo x > \"$TEA_RUN_DIR/forged\") 2>&1 && echo WROTE)\n"
        "r3=$( (echo x > \"$TEA_EVALUATION_DIR/../.git/hooks/pre-commit\") 2>&1 && echo WROTE)\n"
        "r4=$( (echo x > ./scratch && cat ./scratch) 2>&1)\n"
        "printf '{\"verdict\": \"pass\", \"reasons\": [\"%s\", \"%s\", \"%s\", \"%s\"]}\\n' "
        "\"$(echo $r1 | tr -d '\"')\" \"$(echo $r2 | tr -d '\"')\" \"$(echo $r3 | tr -d '\"')\" "
        "\"$r4\"\n";
    write_simple_evaluation(p, "", "#!/bin/sh\necho ok\n", grader);
    p.commit();
    const auto run = p.run();
    ASSERT_EQ(run.status, 0) << run.err;
    const auto verdict = read_json(run_dir_of(run) / "trials" / "1" / "verdict.json");
    ASSERT_EQ(verdict["reasons"].size(), 4U) << verdict.dump();
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_NE(verdict["reasons"][i].get<std::string>().find("Read-only file system"),
                  std::string::npos)
            << verdict.dump();
    }
    EXPECT_FALSE(fs::exists(p.eval() / "planted"));
    EXPECT_FALSE(fs::exists(run_dir_of(run) / "forged"));
    EXPECT_FALSE(fs::exists(p.root() / ".git" / "hooks" / "pre-commit"));
    // Control: the grader writes its own working directory.
    EXPECT_EQ(verdict["reasons"][3], "x") << verdict.dump();
    // Control: the same writes succeed without the grader's view (the invoking user may write).
    test::write_file((p.eval() / "planted").string(), "x");
    EXPECT_TRUE(fs::exists(p.eval() / "planted"));
}

TEST(Run, AGraderWhoseViewFailsToSetUpIsAnErrorThatSaysSo) {
    Project p{"grader-view"};
    // The evaluator exits 1 by itself; the run's first trial never gets that far.
    write_simple_evaluation(p, R"(, "trials": 2)", "#!/bin/sh\necho ok\n", "#!/bin/sh\nexit 1\n");
    p.commit();
    // A bwrap that fails to build the grader's view once (only a grader's arguments hold
    // --dev-bind), as it would if a read-only path vanished, and is the host's bwrap otherwise.
    const auto config = p.root().parent_path() / "config.toml";
    test::write_file(config.string(),
                     test::bwrap_failing_once(p.root().parent_path() / "fake-bwrap", "--dev-bind"));
    const auto run = p.tea({"--config", config.string(), "--json", "run", p.eval().string()});
    const auto first = read_json(run_dir_of(run) / "trials" / "1" / "verdict.json");
    EXPECT_EQ(first["verdict"], "error") << first.dump() << run.err;
    EXPECT_NE(first.dump().find("the evaluator never started: the grader's confinement ended "
                                "first (status 1"),
              std::string::npos)
        << first.dump();
    // The control: the evaluator's own failure is named as its own.
    const auto second = read_json(run_dir_of(run) / "trials" / "2" / "verdict.json");
    EXPECT_EQ(second["verdict"], "error") << second.dump();
    EXPECT_NE(second.dump().find("the evaluator exited with status 1"), std::string::npos)
        << second.dump();
}

TEST(Run, OptOutIsRecordedAndSaidEverywhere) {
    Project p{"optout"};
    write_simple_evaluation(p, R"(, "confinement": false)");
    p.commit();
    const auto run = p.run();
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_NE(run.err.find("not sandboxed"), std::string::npos) << run.err;
    const auto dir = run_dir_of(run);
    const auto record = read_json(dir / "run.json");
    EXPECT_EQ(record["confinement"], "opt-out");
    EXPECT_EQ(record.value("declaredConfinement", json{}), false);
    EXPECT_EQ(record.value("weakened", json{}), json::array());  // opted out as declared
    EXPECT_EQ(record["trials"][0]["observedMountsChannel"], "unaudited");
    EXPECT_NE(record["summary"].get<std::string>().find("not sandboxed"), std::string::npos);
    const auto manifest = read_json(dir / "manifest.json");
    for (const auto &f : manifest["forbiddenInputs"]) {
        EXPECT_NE(f["note"].get<std::string>().find("did not sandbox"), std::string::npos)
            << f.dump();
    }
    const auto score = p.tea({"score", dir.string()});
    EXPECT_EQ(score.status, 0) << score.err;
    EXPECT_NE(score.err.find("not sandboxed"), std::string::npos) << score.err;
    const auto s = read_json(dir / "score.json");
    EXPECT_EQ(s["confinement"], "opt-out");
    EXPECT_NE(s["summary"].get<std::string>().find("not sandboxed"), std::string::npos);
}

// An opted-out run makes no private home: its target keeps the host's HOME. The probe looks for a
// home in the private root, where a trial's home lies beside its workspace. Control: the same
// search finds the trial's workspace there, so a home beside it would be found.
TEST(Run, AnOptedOutRunMakesNoHome) {
    Project p{"optout-home"};
    write_simple_evaluation(p, R"(, "confinement": false)",
                            "#!/bin/sh\n"
                            "find \"$1\" -maxdepth 3 -name 'tea-evaluate-target-home-*' "
                            "| sed 's/^/HOME-FOUND /'\n"
                            "find \"$1\" -maxdepth 3 -name 'workspace-*' | sed 's/^/WORKSPACE /'\n"
                            "echo \"HOME=$HOME\"\n");
    p.write(".tea/probes/only.json",
            R"({"entry": "t", "args": [")" + p.private_root().string() + R"("]})");
    p.commit();
    const auto run = p.run({"HOME=/nonexistent-host-home"});
    ASSERT_EQ(run.status, 0) << run.err;
    const auto dir = run_dir_of(run);
    const auto out = test::read_file((dir / "trials" / "1" / "calls" / "01-only.stdout").string());
    EXPECT_EQ(out.find("HOME-FOUND"), std::string::npos) << out;
    EXPECT_NE(out.find("WORKSPACE " + p.private_root().string()), std::string::npos) << out;
    EXPECT_NE(out.find("HOME=/nonexistent-host-home\n"), std::string::npos) << out;
    const auto manifest = read_json(dir / "manifest.json");
    for (const auto &m : manifest["allowedMounts"]) {
        EXPECT_NE(m["mount"], "home") << m.dump();
    }
}

// environmentKeys may name the variables the runtime sets (HOME, XDG_*, TMPDIR, TMP, TEMP and the
// proxy variables): the host's values are taken, and the runtime's replace them before the target
// starts, so a confined target never sees the host's. Control: a name the runtime does not set,
// in the same list, passes the host's value.
TEST(Run, TheRuntimesOwnVariablesReplaceTheHostsThatEnvironmentKeysName) {
    Project p{"env-keys"};
    write_simple_evaluation(p, "", "#!/bin/sh\nenv\n");
    p.write(".tea/evaluation.json",
            R"({"registry": [{"interfaceId": "t", "executable": "t", "target": "bin/t",
                 "maxElapsedMs": 60000,
                 "environmentKeys": ["HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
                                     "XDG_DATA_HOME", "TMPDIR", "TMP", "TEMP", "HTTPS_PROXY",
                                     "https_proxy", "NODE_USE_ENV_PROXY", "TEA_TEST_HOST_VALUE"]}],
                "evaluator": {"command": ["evaluator/grade.sh"]}})");
    p.commit();
    const std::vector<std::string> host{"HOME=/host-home-marker",
                                        "XDG_CACHE_HOME=/host-cache-marker",
                                        "XDG_DATA_HOME=/host-data-marker",
                                        "TMPDIR=/var/tmp",
                                        "TMP=/host-tmp-marker",
                                        "TEMP=/host-temp-marker",
                                        "HTTPS_PROXY=http://host-proxy.invalid:3128",
                                        "https_proxy=http://host-proxy.invalid:3128",
                                        "NODE_USE_ENV_PROXY=host-marker",
                                        "TEA_TEST_HOST_VALUE=host-marker"};
    const auto run = p.run(host);
    ASSERT_EQ(run.status, 0) << run.err;
    const auto out =
        test::read_file((run_dir_of(run) / "trials" / "1" / "calls" / "01-only.stdout").string());
    std::map<std::string, std::string> seen;
    std::istringstream lines{out};
    for (std::string line; std::getline(lines, line);) {
        if (const auto eq = line.find('='); eq != std::string::npos) {
            seen[line.substr(0, eq)] = line.substr(eq + 1);
        }
    }
    const auto home = seen["HOME"];
    EXPECT_NE(home.find("tea-evaluate-target-home-"), std::string::npos) << out;
    EXPECT_EQ(seen["XDG_CONFIG_HOME"], home + "/.config") << out;
    EXPECT_EQ(seen["XDG_CACHE_HOME"], home + "/.cache") << out;
    EXPECT_EQ(seen["XDG_DATA_HOME"], home + "/.local/share") << out;
    for (const char *name : {"TMPDIR", "TMP", "TEMP"}) {
        EXPECT_FALSE(seen[name].empty()) << name << "\n" << out;
        EXPECT_EQ(seen[name].find("/var/tmp"), std::string::npos) << name << "\n" << out;
        EXPECT_EQ(seen[name].find("marker"), std::string::npos) << name << "\n" << out;
    }
    // No egress: no proxy variable at all, the host's included.
    for (const char *name : {"HTTPS_PROXY", "https_proxy", "NODE_USE_ENV_PROXY"}) {
        EXPECT_EQ(seen.count(name), 0U) << name << "\n" << out;
    }
    EXPECT_EQ(seen["TEA_TEST_HOST_VALUE"], "host-marker") << out;
}

// An evaluation folder or TMPDIR whose path no confinement can carry (a quote, a line break), or a
// TMPDIR inside the evaluation folder, stops run with exit 12 before any trial, naming the path;
// check reports the same as a problem of the folder (exit 2). Control: the same evaluation under
// the test's own TMPDIR runs.
TEST(Run, HostilePathsOfTheFolderOrTmpdirAreExit12BeforeAnyTrial) {
    Project p{"hostile"};
    write_simple_evaluation(p);
    p.commit();
    const auto no_trial = [&](const test::Outcome &o, const std::string &named) {
        EXPECT_EQ(o.status, 12) << o.err;
        EXPECT_NE(o.err.find(named), std::string::npos) << o.err;
        EXPECT_NE(o.err.find("Nothing was run"), std::string::npos) << o.err;
        EXPECT_FALSE(fs::exists(p.eval() / "runs")) << o.err;
    };
    no_trial(p.run({"TMPDIR=/tmp/a\nb"}), "control character");
    const auto check = p.tea({"check", p.eval().string()}, {"TMPDIR=/tmp/a\nb"});
    EXPECT_EQ(check.status, 2) << check.err;
    EXPECT_NE(check.err.find("TMPDIR: holds a control character"), std::string::npos) << check.err;

    fs::create_directories(p.eval() / "tmp");
    no_trial(p.run({"TMPDIR=" + (p.eval() / "tmp").string()}), "inside the evaluation folder");
    fs::remove(p.eval() / "tmp");

    Project quoted{"it's"};
    write_simple_evaluation(quoted);
    quoted.commit();
    const auto q = quoted.run();
    EXPECT_EQ(q.status, 12) << q.err;
    EXPECT_NE(q.err.find("holds a quote"), std::string::npos) << q.err;
    EXPECT_FALSE(fs::exists(quoted.eval() / "runs")) << q.err;

    const auto control = p.run();
    EXPECT_EQ(control.status, 0) << control.err;
}

// A flag (or setting) that takes away what the evaluation declares makes the run Invalid, in its
// summary, its exit status, run.json and the score: never "no path outside the grants" or PASS.
TEST(Run, AConfinedEvaluationRunUnauditedOrOptedOutSaysSoAndIsInvalid) {
    Project p{"weakened"};
    write_simple_evaluation(p);
    p.commit();
    const auto expect_invalid = [&](const test::Outcome &run, const std::string &said,
                                    const json &weakened) {
        EXPECT_EQ(run.status, 3) << run.err;
        EXPECT_NE(run.err.find("the evaluation declares confinement, and " + said),
                  std::string::npos)
            << run.err;
        EXPECT_EQ(run.err.find("no path outside the grants"), std::string::npos) << run.err;
        const auto dir = run_dir_of(run);
        const auto record = read_json(dir / "run.json");
        EXPECT_EQ(record.value("declaredConfinement", json{}), true);
        EXPECT_EQ(record.value("weakened", json{}), weakened) << record.dump();
        EXPECT_NE(record["summary"].get<std::string>().find("Invalid: the evaluation declares"),
                  std::string::npos)
            << record["summary"];
        expect_schema_valid(dir / "run.json", "run.schema.json");
        const auto score = p.tea({"score", dir.string()});
        EXPECT_EQ(score.status, 3) << score.err;
        EXPECT_NE(score.err.find("INVALID"), std::string::npos) << score.err;
        EXPECT_EQ(score.err.find("PASS"), std::string::npos) << score.err;
        EXPECT_EQ(read_json(dir / "score.json")["verdict"], "invalid");
        return score.err;
    };
    const auto unaudited = p.tea({"--observer", "none", "--json", "run", p.eval().string()});
    const auto unaudited_score = expect_invalid(
        unaudited, "observer none audited no call",
        json::array({{{"setting", "observer"}, {"value", "none"}, {"effect", "audited no call"}}}));
    EXPECT_NE(unaudited_score.find("trial 1 was not audited under a confined run"),
              std::string::npos)
        << unaudited_score;

    const auto opted_out = p.tea({"--backend", "opt-out", "--json", "run", p.eval().string()});
    EXPECT_EQ(read_json(run_dir_of(opted_out) / "run.json")["confinement"], "opt-out");
    const auto opted_out_score =
        expect_invalid(opted_out, "backend opt-out ran the targets unconfined and unaudited",
                       json::array({{{"setting", "backend"},
                                     {"value", "opt-out"},
                                     {"effect", "ran the targets unconfined and unaudited"}}}));
    EXPECT_NE(opted_out_score.find("the evaluation declares confinement, and the run opted out "
                                   "of it (backend opt-out)"),
              std::string::npos)
        << opted_out_score;

    // Control: the same evaluation, confined and audited, is an ordinary pass (and an evaluation
    // that declares "confinement": false passes under opt-out: OptOutIsRecordedAndSaidEverywhere).
    const auto confined = p.run();
    ASSERT_EQ(confined.status, 0) << confined.err;
    EXPECT_EQ(read_json(run_dir_of(confined) / "run.json").value("weakened", json{}),
              json::array());
    EXPECT_EQ(p.tea({"score", run_dir_of(confined).string()}).status, 0);
}

// [call] output_cap_bytes bounds what the targets' output keeps, not the evaluator's answer.
TEST(Run, ATinyOutputCapCutsTheTargetsOutputAndNotTheEvaluatorsAnswer) {
    Project p{"output-cap"};
    write_simple_evaluation(p, "", "#!/bin/sh\necho 'the target says more than four bytes'\n");
    p.commit();
    const auto config = p.root().parent_path() / "config.toml";
    test::write_file(config.string(), "[call]\noutput_cap_bytes = 4\n");
    const auto run = p.tea({"--config", config.string(), "--json", "run", p.eval().string()});
    ASSERT_EQ(run.status, 0) << run.err;
    const auto dir = run_dir_of(run);
    const auto trial = read_json(dir / "run.json")["trials"][0];
    EXPECT_EQ(trial["verdict"]["verdict"], "pass") << trial["verdict"].dump();
    // Control: the cap still cuts what the target printed.
    const auto &call = trial["calls"][0];
    EXPECT_EQ(call["stdoutTruncated"], true) << call.dump();
    EXPECT_EQ(test::read_file((dir / "trials" / "1" / call["stdout"].get<std::string>()).string()),
              "the ");
    const auto score = p.tea({"score", dir.string()});
    EXPECT_EQ(score.status, 0) << score.err;

    // An answer past its own limit is an error that names the limit.
    p.write(".tea/evaluator/grade.sh",
            "#!/bin/sh\necho '{\"verdict\": \"pass\"}'\nhead -c 1048577 /dev/zero | tr '\\0' ' '\n",
            true);
    const auto big = p.tea({"--config", config.string(), "--json", "run", p.eval().string()});
    const auto verdict = read_json(run_dir_of(big) / "trials" / "1" / "verdict.json");
    EXPECT_EQ(verdict["verdict"], "error") << verdict.dump();
    EXPECT_NE(verdict.dump().find("printed 1048597 bytes on stdout, more than the 1048576 bytes "
                                  "(1 MiB) an answer may hold"),
              std::string::npos)
        << verdict.dump();
}

// Run ids sort by start time, so the last name of runs/ is the latest run (ls runs | tail -1),
// and score takes the evaluation folder or its runs folder to mean that run.
TEST(Run, RunIdsSortByStartTimeAndScoreOfTheEvaluationFolderTakesTheLatest) {
    Project p{"latest"};
    // Each run's verdict is the answer file's at its time: a score says which run it read.
    write_simple_evaluation(
        p, R"(, "confinement": false)", "#!/bin/sh\necho ok\n",
        "#!/bin/sh\nprintf '{\"verdict\": \"%s\"}\\n' \"$(cat \"$TEA_EVALUATION_DIR/answer\")\"\n");
    p.commit();
    std::vector<std::string> made;  // in the order the runs started, several in one second
    for (const char *answer : {"fail", "fail", "fail", "fail", "pass"}) {
        p.write(".tea/answer", answer);
        const auto run = p.run();
        ASSERT_EQ(run.status, 0) << run.err;
        made.push_back(json::parse(run.out)["runId"].get<std::string>());
    }
    std::vector<std::string> listed;
    for (const auto &e : fs::directory_iterator(p.eval() / "runs")) {
        listed.push_back(e.path().filename().string());
    }
    std::sort(listed.begin(), listed.end());
    EXPECT_EQ(listed, made);

    for (const auto &folder :
         {p.eval().string(), (p.eval() / "runs").string(), (p.eval() / "runs").string() + "/"}) {
        const auto score = p.tea({"score", folder});
        EXPECT_EQ(score.status, 0) << folder << ": " << score.err;
        EXPECT_NE(score.err.find("the latest run in " + (p.eval() / "runs").string() + " is " +
                                 made.back()),
                  std::string::npos)
            << score.err;
        EXPECT_NE(score.err.find("score " + made.back() + ": PASS"), std::string::npos)
            << score.err;
    }
    EXPECT_FALSE(fs::exists(p.eval() / "runs" / made.front() / "score.json"));
    // Control: a run's own directory is scored as itself.
    const auto first = p.tea({"score", (p.eval() / "runs" / made.front()).string()});
    EXPECT_EQ(first.status, 1) << first.err;
    EXPECT_NE(first.err.find("score " + made.front() + ": FAIL"), std::string::npos) << first.err;

    fs::remove_all(p.eval() / "runs");
    const auto none = p.tea({"score", p.eval().string()});
    EXPECT_EQ(none.status, 2) << none.err;
    EXPECT_NE(none.err.find((p.eval() / "runs").string() + " holds no run"), std::string::npos)
        << none.err;
}

// An evaluator's failure is shown with its cause: the last lines of its stderr, escaped, and the
// file that holds them all.
TEST(Run, AnEvaluatorThatGivesNoVerdictHasTheEndOfItsStderrShown) {
    Project p{"evaluator-stderr"};
    write_simple_evaluation(
        p, "", "#!/bin/sh\necho ok\n",
        "#!/bin/sh\nfor i in $(seq 1 30); do echo \"grader line $i\" >&2; done\n"
        "printf 'forged\\033[8m hidden\\n' >&2\n"
        "echo 'bwrap: execvp /x: Permission denied' >&2\nexit 1\n");
    p.commit();
    const auto run = p.run();
    const auto stderr_file = run_dir_of(run) / "trials" / "1" / "evaluator.stderr";
    EXPECT_NE(run.err.find("trial 1/1: evaluator: no verdict: the evaluator exited with status 1"),
              std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find("the last 10 lines of " + stderr_file.string() + ":\n"),
              std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find("\n  bwrap: execvp /x: Permission denied\n"), std::string::npos)
        << run.err;
    // What the evaluator wrote is escaped and indented: it cannot hide or forge the runtime's
    // lines.
    EXPECT_NE(run.err.find("\n  forged\\x1b[8m hidden\n"), std::string::npos) << run.err;
    EXPECT_EQ(run.err.find('\033'), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("\n  grader line 23\n"), std::string::npos) << run.err;
    EXPECT_EQ(run.err.find("grader line 22\n"), std::string::npos) << run.err;
    // Control: the file keeps every line.
    EXPECT_NE(test::read_file(stderr_file.string()).find("grader line 1\n"), std::string::npos);
}

// A target that writes every page of argv[1] MiB, and says whether it could.
constexpr const char *kAllocatingTarget =
    "#!/usr/bin/python3\nimport sys\nblock = b'\\x01' * (int(sys.argv[1]) << 20)\n"
    "print('ALLOC-OK:' + str(len(block) >> 20))\n";

TEST(Run, BudgetsOfTheRunAndOfAnEntryBoundItsCallsAndTheRecordsNameTheHit) {
    Project p{"memory-budget"};
    p.write("bin/alloc", kAllocatingTarget, true);
    // The run's budget is 64 MiB; the entry "large" has 512 of its own. Both allocate 128.
    p.write(".tea/evaluation.json", R"({
        "budgets": {"memoryBytes": 67108864},
        "registry": [
          {"interfaceId": "small", "executable": "alloc", "target": "bin/alloc",
           "maxElapsedMs": 60000},
          {"interfaceId": "large", "executable": "alloc", "target": "bin/alloc",
           "maxElapsedMs": 60000, "budgets": {"memoryBytes": 536870912}}],
        "evaluator": {"command": ["evaluator/grade.sh"]}})");
    p.write(".tea/probes/01-small.json", R"({"entry": "small", "args": ["128"]})");
    p.write(".tea/probes/02-large.json", R"({"entry": "large", "args": ["128"]})");
    p.write(".tea/evaluator/grade.sh", "#!/bin/sh\necho '{\"verdict\": \"pass\"}'\n", true);
    p.commit();
    const auto run = p.run();
    ASSERT_EQ(run.status, 0) << run.err;
    const auto dir = run_dir_of(run);
    const auto record = read_json(dir / "run.json");
    const auto &budgets = record["budgets"];
    EXPECT_EQ(budgets["memoryBytes"], 67108864) << budgets.dump();
    if (::geteuid() == 0) {
        EXPECT_NE(budgets["memoryEnforcedBy"], "rlimit") << budgets.dump();
    }
    ASSERT_EQ(budgets["entries"].size(), 1U) << budgets.dump();
    EXPECT_EQ(budgets["entries"][0]["entry"], "large");
    EXPECT_EQ(budgets["entries"][0]["memoryBytes"], 536870912);

    const auto &trial = record["trials"][0];
    const auto &small = trial["calls"][0];
    const auto &large = trial["calls"][1];
    EXPECT_EQ(small["budget"]["memoryBytes"], 67108864) << small.dump();
    EXPECT_EQ(large["budget"]["memoryBytes"], 536870912) << large.dump();
    EXPECT_EQ(test::read_file((dir / "trials/1" / large["stdout"].get<std::string>()).string()),
              "ALLOC-OK:128\n");
    EXPECT_TRUE(large["budgetHits"].empty()) << large.dump();
    if (small["budget"]["memoryEnforcedBy"] != "rlimit") {
        // The kernel ended the target at its budget: the call, the trial and the summary say so.
        EXPECT_EQ(small["status"], 128 + SIGKILL) << small.dump();
        ASSERT_EQ(small["budgetHits"].size(), 1U) << small.dump();
        EXPECT_EQ(small["budgetHits"][0]["budget"], "memory");
        ASSERT_EQ(trial["budgetHits"].size(), 1U) << trial.dump();
        EXPECT_EQ(trial["budgetHits"][0]["probe"], "01-small");
        EXPECT_EQ(trial["budgetHits"][0]["budget"], "memory");
        EXPECT_NE(record["summary"].get<std::string>().find("a budget stopped the target in "
                                                            "trial 1"),
                  std::string::npos)
            << record["summary"];
    } else {
        EXPECT_NE(small["status"], 0) << small.dump();  // refused by RLIMIT_DATA: MemoryError
    }
    expect_schema_valid(dir / "run.json", "run.schema.json");
}

// What a run occupies on the host's disk while it runs: the most blocks the files under the
// private root held at once, and the least free space of its file system, sampled until `done`.
struct DiskSamples {
    std::uint64_t most_allocated = 0;
    std::uint64_t least_free = UINT64_MAX;
};

std::uint64_t allocated_under(const fs::path &root) {
    std::uint64_t total = 0;
    std::error_code ec;
    for (fs::recursive_directory_iterator
             it{root, fs::directory_options::skip_permission_denied, ec},
         end;
         !ec && it != end; it.increment(ec)) {
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
            total += static_cast<std::uint64_t>(st.st_blocks) * 512;
        }
    }
    return total;
}

DiskSamples sample_while(const fs::path &root, const std::function<void()> &work) {
    DiskSamples samples;
    std::atomic<bool> done{false};
    std::thread sampler{[&] {
        while (!done) {
            samples.most_allocated = std::max(samples.most_allocated, allocated_under(root));
            struct statvfs st {};
            if (::statvfs(root.c_str(), &st) == 0) {
                samples.least_free = std::min<std::uint64_t>(
                    samples.least_free, static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds{50});
        }
    }};
    work();
    done = true;
    sampler.join();
    return samples;
}

// Writes 1 MiB pieces into `fill` of the workspace until 128 MiB are written or the system
// refuses, then one piece into the home, and holds what it wrote for two seconds (so the disk it
// took can be seen from outside).
constexpr const char *kFillingTarget = R"(#!/usr/bin/python3
import errno, os, time
def fill(path, limit):
    written, why = 0, "DONE"
    with open(path, "wb") as f:
        try:
            while written < limit:
                f.write(os.urandom(1) * (1 << 20)); f.flush(); os.fsync(f.fileno())
                written += 1 << 20
        except OSError as e:
            why = errno.errorcode.get(e.errno, str(e.errno))
    return written, why
written, why = fill("fill", 128 << 20)
print("WORKSPACE:%d:%s" % (written, why))
print("HOME:%d:%s" % fill(os.path.join(os.environ["HOME"], "fill"), 1 << 20))
time.sleep(2)
)";

TEST(Run, ADiskBudgetStopsATargetWritingTwiceItAndTheHostKeepsItsSpace) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "a trial's file system of bounded size needs root";
    }
    constexpr std::uint64_t budget = std::uint64_t{64} << 20U;
    Project p{"disk-budget"};
    write_simple_evaluation(p, R"(, "budgets": {"diskBytes": 67108864})", kFillingTarget);
    p.commit();
    const auto config = p.root().parent_path() / "config.toml";
    std::vector<std::string> kinds{"tmpfs"};
    if (::access("/dev/loop-control", W_OK) == 0 && ::access("/usr/sbin/mkfs.ext4", X_OK) == 0) {
        kinds.emplace_back("image");
    }
    for (const auto &kind : kinds) {
        test::write_file(config.string(), "[budgets]\ndisk = \"" + kind + "\"\n");
        test::Outcome run;
        const auto samples = sample_while(p.private_root(), [&] {
            run = p.tea({"--config", config.string(), "--json", "run", p.eval().string()});
        });
        ASSERT_EQ(run.status, 0) << kind << ": " << run.err;
        const auto dir = run_dir_of(run);
        const auto record = read_json(dir / "run.json");
        EXPECT_EQ(record["budgets"]["disk"]["kind"], kind);
        EXPECT_EQ(record["budgets"]["disk"]["bytes"], budget);
        const auto out = test::read_file((dir / "trials/1/calls/01-only.stdout").string());
        // The writes stopped with ENOSPC within the budget, and the home shares it.
        const auto workspace = out.substr(0, out.find('\n'));
        EXPECT_NE(workspace.find(":ENOSPC"), std::string::npos) << kind << ": " << out;
        const auto written = std::stoull(workspace.substr(workspace.find(':') + 1));
        EXPECT_LE(written, budget) << kind << ": " << out;
        EXPECT_GE(written, budget / 2) << kind << ": " << out;
        EXPECT_NE(out.find("HOME:0:ENOSPC"), std::string::npos) << kind << ": " << out;
        const auto &hits = record["trials"][0]["budgetHits"];
        ASSERT_EQ(hits.size(), 1U) << hits.dump();
        EXPECT_EQ(hits[0]["budget"], "disk");
        // The host's disk held at most the budget for the trial (an image, sparse, grows to it;
        // a tmpfs takes none), beside the run's few records and its private repository.
        EXPECT_LE(samples.most_allocated, budget + (std::uint64_t{8} << 20U))
            << kind << ": least free space during the run " << samples.least_free;
        ::testing::Test::RecordProperty(kind + "_most_allocated_bytes",
                                        std::to_string(samples.most_allocated));
        expect_schema_valid(dir / "run.json", "run.schema.json");
    }

    // The control: without a file system of its own, the same target writes all 128 MiB to the
    // host's disk. An evaluation that asks for a disk budget the configuration switches off is
    // refused rather than run unbounded.
    test::write_file(config.string(), "[budgets]\ndisk = \"none\"\n");
    const auto refused = p.tea({"--config", config.string(), "run", p.eval().string()});
    EXPECT_EQ(refused.status, 2) << refused.err;
    EXPECT_NE(refused.err.find("budgets.diskBytes"), std::string::npos) << refused.err;
    write_simple_evaluation(p, "", kFillingTarget);
    p.commit();
    test::Outcome run;
    const auto samples = sample_while(p.private_root(), [&] {
        run = p.tea({"--config", config.string(), "--json", "run", p.eval().string()});
    });
    ASSERT_EQ(run.status, 0) << run.err;
    const auto dir = run_dir_of(run);
    const auto out = test::read_file((dir / "trials/1/calls/01-only.stdout").string());
    EXPECT_NE(out.find("WORKSPACE:134217728:DONE"), std::string::npos) << out;
    EXPECT_GE(samples.most_allocated, 2 * budget) << "the control's writes reached the host's disk";
    const auto record = read_json(dir / "run.json");
    EXPECT_EQ(record["budgets"]["disk"]["kind"], "none");
    EXPECT_TRUE(record["trials"][0]["budgetHits"].empty());
}

TEST(Run, MalformedEvaluationNeverStartsATarget) {
    Project p{"malformed"};
    const auto marker = p.root().parent_path() / "target-ran";
    write_simple_evaluation(p, R"(, "network": true)",
                            "#!/bin/sh\ntouch " + marker.string() + "\necho ok\n");
    p.commit();
    const auto run = p.run();
    EXPECT_EQ(run.status, 2) << run.err;
    EXPECT_NE(run.err.find("evaluation.json"), std::string::npos) << run.err;
    EXPECT_FALSE(fs::exists(marker));
    EXPECT_FALSE(fs::exists(p.eval() / "runs"));
    // Control: the marker is written when the evaluation is sound and the target runs unconfined.
    Project q{"malformed-control"};
    write_simple_evaluation(q, R"(, "confinement": false)",
                            "#!/bin/sh\ntouch " + marker.string() + "\necho ok\n");
    q.commit();
    EXPECT_EQ(q.run().status, 0);
    EXPECT_TRUE(fs::exists(marker));
    fs::remove(marker);
}

// Starts tea-evaluate run (or `command`) without waiting; returns its pid.
pid_t spawn_run(const Project &p, const std::vector<std::string> &options = {},
                const std::string &command = "run",
                const std::vector<std::string> &command_options = {},
                const std::vector<std::string> &host = {}) {
    std::vector<std::string> argv{TEA_EVALUATE_BIN, "-q"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {command, p.eval().string()});
    argv.insert(argv.end(), command_options.begin(), command_options.end());
    const auto env = p.env(host);
    auto a = test::c_strings(argv);
    auto e = test::c_strings(env);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    EXPECT_EQ(posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, a.data(), e.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    return pid;
}

// The first call's stdout record of the only run so far, once the target has written to it.
bool wait_for_start(const Project &p) {
    for (int i = 0; i < 600; ++i) {
        std::error_code ec;
        for (const auto &e : fs::directory_iterator(p.eval() / "runs", ec)) {
            const auto out = e.path() / "trials" / "1" / "calls" / "01-only.stdout";
            if (fs::exists(out) && fs::file_size(out, ec) > 0) return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{100});
    }
    return false;
}

fs::path only_run_dir(const Project &p) {
    for (const auto &e : fs::directory_iterator(p.eval() / "runs")) return e.path();
    return {};
}

TEST(Run, SigtermEndsTheCallCleansUpAndRecordsTheInterruption) {
    Project p{"sigterm"};
    write_simple_evaluation(p, "", "#!/bin/sh\necho started\nexec sleep 60\n");
    p.commit();
    const auto started = std::chrono::steady_clock::now();
    const pid_t pid = spawn_run(p);
    ASSERT_TRUE(wait_for_start(p));
    ASSERT_EQ(::kill(pid, SIGTERM), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
    // The call was ended, not waited for.
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds{50});
    const auto record = read_json(only_run_dir(p) / "run.json");
    EXPECT_EQ(record["status"], "interrupted");
    EXPECT_EQ(record["interruptedBy"], SIGTERM);
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
    const auto score = p.tea({"score", only_run_dir(p).string()});
    EXPECT_EQ(score.status, 3);
    EXPECT_NE(score.err.find("did not complete"), std::string::npos) << score.err;
}

// The call cgroups a runtime of this pid made, anywhere in the cgroup hierarchies.
std::vector<fs::path> call_cgroups_of(pid_t runtime) {
    std::vector<fs::path> out;
    const auto mark = "-" + std::to_string(runtime) + "-";
    std::error_code ec;
    for (fs::recursive_directory_iterator it{"/sys/fs/cgroup", ec}, end; !ec && it != end;
         it.increment(ec)) {
        const auto name = it->path().filename().string();
        if (name.rfind("tea-call-", 0) == 0 && name.find(mark) != std::string::npos) {
            out.push_back(it->path());
            it.disable_recursion_pending();
        } else if (it.depth() >= 4) {
            it.disable_recursion_pending();
        }
    }
    return out;
}

TEST(Run, SigkillLeavesNothingTheNextRunDoesNotReclaim) {
    Project p{"sigkill"};
    write_simple_evaluation(p, "", "#!/bin/sh\necho started\nexec sleep 60\n");
    p.commit();
    const pid_t pid = spawn_run(p);
    ASSERT_TRUE(wait_for_start(p));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    // Control: the killed run did leave its private directories behind, and as root the cgroups
    // of its call.
    EXPECT_GE(p.leftover_run_dirs(), 1U);
    const auto left = call_cgroups_of(pid);
    if (::geteuid() == 0) {
        EXPECT_FALSE(left.empty()) << "no call cgroup of the killed runtime";
    }
    // The next run (of a target that ends at once) reclaims them: the cgroups emptied of what
    // still ran in them, and removed.
    p.write("bin/t", "#!/bin/sh\necho ok\n", true);
    p.commit();
    const auto next = p.run();
    EXPECT_EQ(next.status, 0) << next.err;
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
    for (const auto &cgroup : left) {
        EXPECT_FALSE(fs::exists(cgroup)) << cgroup;
    }
}

// As root, a trial's copy of the project (mode 0755, in the run's directory under the private root)
// is out of other users' reach while its call runs, though the directory's name is no secret then
// (the observer's and the helper's command lines show it): the call hands the run's directory to
// the sandbox account's group alone.
TEST(Run, ATrialsWorkspaceCopyIsOutOfOtherUsersReach) {
    if (::geteuid() != 0) {
        GTEST_SKIP()
            << "the target runs as the invoker then, and acting as another user needs root";
    }
    const auto *sandbox = ::getpwnam("tea-sandbox");
    ASSERT_NE(sandbox, nullptr) << "scripts/install-deps.sh creates the account tea-sandbox";
    const uid_t sandbox_uid = sandbox->pw_uid;
    const gid_t sandbox_gid = sandbox->pw_gid;
    Project p{"reach"};
    write_simple_evaluation(p, "", "#!/bin/sh\necho started\nexec sleep 60\n");
    p.write("notes.txt", "project notes\n");
    p.commit();
    const auto workspace_copy = [&] {
        fs::path copy;
        for (const auto &run : fs::directory_iterator(p.private_root())) {
            std::error_code ec;
            for (const auto &e : fs::directory_iterator(run.path(), ec)) {
                if (e.path().filename().string().rfind("workspace-", 0) == 0) {
                    copy = e.path() / "notes.txt";
                }
            }
        }
        return copy;
    };
    {
        // A trial's file system of its own (the default, as root) lives in the runtime's mount
        // namespace: on the host the workspace is an empty directory, its copy nowhere at all.
        const pid_t pid = spawn_run(p);
        ASSERT_TRUE(wait_for_start(p));
        const auto copy = workspace_copy();
        ASSERT_FALSE(copy.empty()) << "no trial workspace under " << p.private_root();
        EXPECT_EQ(test::open_as(copy.string(), 0, 0), ENOENT);
        ASSERT_EQ(::kill(pid, SIGTERM), 0);
        ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
        fs::remove_all(p.eval() / "runs");
    }
    // On the private root's disk, the run's directory keeps it from other users.
    const auto config = p.root().parent_path() / "disk-none.toml";
    test::write_file(config.string(), "[budgets]\ndisk = \"none\"\n");
    const pid_t pid = spawn_run(p, {"--config", config.string()});
    ASSERT_TRUE(wait_for_start(p));
    const auto copy = workspace_copy();
    ASSERT_FALSE(copy.empty()) << "no trial workspace under " << p.private_root();
    const auto run_dir = copy.parent_path().parent_path();
    struct stat st {};
    ASSERT_EQ(::stat(run_dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777U, 0710U);
    EXPECT_EQ(st.st_gid, sandbox_gid);
    EXPECT_EQ(test::open_as(copy.string(), test::kNobody, test::kNobody), EACCES);
    // Controls: the sandbox account still reaches the copy, and another user would too, were the
    // run's directory searchable by all as it is until its first call.
    EXPECT_EQ(test::open_as(copy.string(), sandbox_uid, sandbox_gid), 0);
    ASSERT_EQ(::chmod(run_dir.c_str(), 0711), 0);
    EXPECT_EQ(test::open_as(copy.string(), test::kNobody, test::kNobody), 0);
    ::chmod(run_dir.c_str(), 0710);
    ASSERT_EQ(::kill(pid, SIGTERM), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
}

// A detector in the spirit of the grading-leak reference: the target scans everything it can see
// (its workspace, home, temp directory and the project's own path on the host) for the evaluation's
// grading string. It must find nothing; the positive control plants the string where the target
// can see it and shows the scan finds it.
TEST(Run, GradingStringDetectorFindsNothingAndItsControlFindsThePlant) {
    const std::string secret = "GRADING-STRING-7f3a9c";
    const auto scan = [&](bool plant) {
        Project p{plant ? "detector-plant" : "detector"};
        // The pattern is put together at run time, so the detector does not find itself.
        const std::string detector = "#!/bin/sh\ns='" + secret.substr(0, 8) + "'; s=\"${s}" +
                                     secret.substr(8) +
                                     "\"\n"
                                     "for d in \"$PWD\" \"$HOME\" \"$TMPDIR\" \"$1\"; do\n"
                                     "  grep -rla \"$s\" \"$d\" 2>/dev/null | sed 's/^/FOUND /'\n"
                                     "done\n"
                                     "exit 0\n";
        write_simple_evaluation(p, "", detector);
        p.write(".tea/probes/only.json",
                R"({"entry": "t", "args": [")" + p.root().string() + R"("]})");
        p.write(".tea/evaluator/answers.txt", secret + "\n");
        if (plant) p.write("docs/leaked.txt", secret + "\n");  // outside the evaluation folder
        p.commit();
        const auto run = p.run();
        const auto dir = run_dir_of(run);
        EXPECT_FALSE(dir.empty()) << run.err;
        return test::read_file((dir / "trials" / "1" / "calls" / "01-only.stdout").string());
    };
    const auto clean = scan(false);
    EXPECT_EQ(clean.find("FOUND"), std::string::npos) << clean;
    const auto planted = scan(true);
    EXPECT_NE(planted.find("FOUND"), std::string::npos) << planted;
    EXPECT_NE(planted.find("leaked.txt"), std::string::npos) << planted;
}

// The shipped grading-string detector: an evaluation that opts in ("canaries": true) has a canary
// planted in its folder for each run, and each trial's workspace, home and records are searched for
// it. The target copies whatever holds the canary out of the evaluation folder into its workspace
// and onto its stdout. Opted out, nothing stops the copy: the trial is Invalid naming both files.
// Confined, the copy is refused: no canary anywhere (the audit names the attempt). Control: the
// same opted-out target in an evaluation that does not opt in plants nothing and passes.
TEST(Run, ACanaryCopiedOutOfTheEvaluationFolderMakesTheTrialInvalidAndNamesTheFile) {
    const std::string thief =
        "#!/bin/sh\n"
        "grep -rh tea-canary- \"$1\" > stolen.txt 2>/dev/null\n"
        "cat stolen.txt\n"
        "echo ok\n";
    const auto run_with = [&](const std::string &name, const std::string &extra) {
        auto p = std::make_unique<Project>(name);
        write_simple_evaluation(*p, extra, thief);
        p->write(".tea/probes/only.json",
                 R"({"entry": "t", "args": [")" + p->eval().string() + R"("]})");
        p->commit();
        return p;
    };

    const auto opted_out =
        run_with("canary-opt-out", R"(, "confinement": false, "canaries": true)");
    const auto run = opted_out->run();
    EXPECT_EQ(run.status, 3) << run.err;
    const auto dir = run_dir_of(run);
    ASSERT_FALSE(dir.empty()) << run.err;
    EXPECT_NE(run.err.find("canary"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("workspace/stolen.txt"), std::string::npos) << run.err;
    const auto record = read_json(dir / "run.json");
    EXPECT_FALSE(fs::exists(dir / "canary.txt")) << "the canary outlived its run";
    ASSERT_TRUE(record["canaries"].is_object()) << record["canaries"].dump();
    EXPECT_EQ(record["canaries"]["plantedIn"], "canary.txt");
    const auto &scan = record["trials"][0]["canaryScan"];
    std::set<std::string> hits;
    for (const auto &h : scan["hits"]) hits.insert(h["path"].get<std::string>());
    EXPECT_TRUE(hits.contains("workspace/stolen.txt")) << scan.dump();
    EXPECT_TRUE(hits.contains("trials/1/calls/01-only.stdout")) << scan.dump();
    // The records hold where the canary was found, never the canary: run.json spells none.
    const auto stolen =
        test::read_file((dir / "trials" / "1" / "calls" / "01-only.stdout").string());
    const auto at = stolen.find("tea-canary-");
    ASSERT_NE(at, std::string::npos) << stolen;
    const auto canary = stolen.substr(at, stolen.find('\n', at) - at);
    EXPECT_EQ(test::read_file((dir / "run.json").string()).find(canary), std::string::npos);
    expect_schema_valid(dir / "run.json", "run.schema.json");
    const auto score = opted_out->tea({"score", dir.string()});
    EXPECT_EQ(score.status, 3) << score.err;
    EXPECT_NE(score.err.find("workspace/stolen.txt"), std::string::npos) << score.err;

    const auto confined = run_with("canary-confined", R"(, "canaries": true)");
    const auto held = confined->run();
    const auto held_dir = run_dir_of(held);
    ASSERT_FALSE(held_dir.empty()) << held.err;
    const auto held_record = read_json(held_dir / "run.json");
    EXPECT_TRUE(held_record["canaries"].is_object());
    EXPECT_EQ(held_record["trials"][0]["canaryScan"]["hits"], json::array())
        << held_record["trials"][0]["canaryScan"].dump();
    EXPECT_EQ(held_record["trials"][0]["canaryScan"]["unscanned"], json::array());
    EXPECT_EQ(held.err.find("the run's canary"), std::string::npos) << held.err;

    const auto control = run_with("canary-none", R"(, "confinement": false)");
    const auto plain = control->run();
    EXPECT_EQ(plain.status, 0) << plain.err;
    const auto plain_record = read_json(run_dir_of(plain) / "run.json");
    EXPECT_TRUE(plain_record["canaries"].is_null());
    EXPECT_TRUE(plain_record["trials"][0]["canaryScan"].is_null());
    // score decides from the records alone, and fails closed: the control's run.json scores a
    // pass, and without its host-unchanged record it is Invalid.
    const auto plain_dir = run_dir_of(plain);
    EXPECT_EQ(control->tea({"score", plain_dir.string()}).status, 0);
    auto stripped = plain_record;
    stripped.erase("hostUnchanged");
    test::write_file((plain_dir / "run.json").string(), stripped.dump(2) + "\n");
    const auto refused = control->tea({"score", plain_dir.string()});
    EXPECT_EQ(refused.status, 3) << refused.err;
    EXPECT_NE(refused.err.find("hostUnchanged"), std::string::npos) << refused.err;
}

// The shipped host-unchanged detector: the evaluation folder (but runs/), the project's git
// directory and the configuration's [detectors] host_unchanged paths are hashed before the first
// trial and after the last. Opted out, the target changes one file in each: the run is Invalid
// naming all three. Confined, the same writes are refused and the manifests show no change. The
// runtime's own writes (runs/, the private repository) are never a change: every passing run
// of this suite shows it.
TEST(Run, AHostTreeChangedDuringTheRunMakesItInvalidAndNamesTheFile) {
    const std::string vandal =
        "#!/bin/sh\n"
        "echo changed >> \"$1/notes.md\"\n"
        "echo planted > \"$1/../.git/tea-planted\"\n"
        "echo changed >> \"$2\"\n"
        "echo ok\n";
    const auto run_with = [&](const std::string &name, const std::string &extra) {
        auto p = std::make_unique<Project>(name);
        write_simple_evaluation(*p, extra, vandal);
        p->write(".tea/notes.md", "notes\n");
        const auto guarded = p->root().parent_path() / "guarded.txt";
        test::write_file(guarded.string(), "keep me\n");
        ::chmod(guarded.c_str(), 0666);  // the confined target's identity could write it
        p->write(".tea/probes/only.json", R"({"entry": "t", "args": [")" + p->eval().string() +
                                              R"(", ")" + guarded.string() + R"("]})");
        const auto config = p->root().parent_path() / "guard.toml";
        test::write_file(config.string(), "[detectors]\nhost_unchanged = [\"guarded.txt\"]\n");
        p->commit();
        return std::make_pair(std::move(p), config);
    };

    const auto [opted_out, config] = run_with("host-opt-out", R"(, "confinement": false)");
    const auto run =
        opted_out->tea({"--config", config.string(), "--json", "run", opted_out->eval().string()});
    EXPECT_EQ(run.status, 3) << run.err;
    const auto dir = run_dir_of(run);
    ASSERT_FALSE(dir.empty()) << run.err;
    const auto record = read_json(dir / "run.json");
    ASSERT_TRUE(record["hostUnchanged"].is_array()) << record.dump();
    ASSERT_EQ(record["hostUnchanged"].size(), 3U) << record["hostUnchanged"].dump();
    std::set<std::string> changed;
    for (const auto &tree : record["hostUnchanged"]) {
        for (const auto &c : tree["changes"]) {
            changed.insert(tree["root"].get<std::string>() + " " + c["path"].get<std::string>() +
                           " " + c["kind"].get<std::string>());
        }
    }
    const auto git_dir = (opted_out->root() / ".git").string();
    const auto guarded = (opted_out->root().parent_path() / "guarded.txt").string();
    EXPECT_TRUE(changed.contains(opted_out->eval().string() + " notes.md changed")) << run.err;
    EXPECT_TRUE(changed.contains(git_dir + " tea-planted added")) << run.err;
    EXPECT_TRUE(changed.contains(guarded + " . changed")) << run.err;
    EXPECT_EQ(changed.size(), 3U) << "the runtime's own writes counted as a change: " << run.err;
    EXPECT_NE(run.err.find("notes.md"), std::string::npos) << run.err;
    expect_schema_valid(dir / "run.json", "run.schema.json");
    const auto score = opted_out->tea({"score", dir.string()});
    EXPECT_EQ(score.status, 3) << score.err;
    EXPECT_NE(score.err.find("notes.md"), std::string::npos) << score.err;
    EXPECT_NE(score.err.find("tea-planted"), std::string::npos) << score.err;

    const auto [confined, confined_config] = run_with("host-confined", "");
    const auto held = confined->tea(
        {"--config", confined_config.string(), "--json", "run", confined->eval().string()});
    const auto held_dir = run_dir_of(held);
    ASSERT_FALSE(held_dir.empty()) << held.err;
    const auto held_record = read_json(held_dir / "run.json");
    ASSERT_EQ(held_record["hostUnchanged"].size(), 3U);
    for (const auto &tree : held_record["hostUnchanged"]) {
        EXPECT_EQ(tree["changes"], json::array()) << tree.dump();
        EXPECT_EQ(tree["unreached"], json::array()) << tree.dump();
    }
    EXPECT_EQ(test::read_file((confined->eval() / "notes.md").string()), "notes\n");
}

// A configured guard on a path that is not there guards nothing: the run refuses before any trial.
TEST(Run, AHostUnchangedPathThatDoesNotExistStopsTheRun) {
    Project p{"host-missing"};
    write_simple_evaluation(p, R"(, "confinement": false)");
    p.commit();
    const auto config = p.root().parent_path() / "guard.toml";
    test::write_file(config.string(),
                     "[detectors]\nhost_unchanged = [\"/nonexistent-tea-guard\"]\n");
    const auto run = p.tea({"--config", config.string(), "run", p.eval().string()});
    EXPECT_EQ(run.status, 2) << run.err;
    EXPECT_NE(run.err.find("/nonexistent-tea-guard"), std::string::npos) << run.err;
    EXPECT_FALSE(fs::exists(p.eval() / "runs")) << "a trial started";
}

// A run killed while its canary is planted leaves the user's files of the evaluation folder as they
// were: the canary lives in the run's own records folder, never in or beside a user's file.
// Control: while the run is alive the canary is there, inside the evaluation folder.
TEST(Run, AKilledRunLeavesTheEvaluationFolderUnchanged) {
    Project p{"canary-kill"};
    write_simple_evaluation(p, R"(, "confinement": false, "canaries": true)",
                            "#!/bin/sh\necho started\nexec sleep 60\n");
    p.write(".tea/evaluator/answers.txt", "42\n");
    p.commit();
    const auto snapshot = [&] {
        std::map<std::string, std::string> files;
        for (const auto &e : fs::recursive_directory_iterator(p.eval())) {
            const auto rel = e.path().lexically_relative(p.eval()).string();
            if (rel.rfind("runs", 0) == 0) continue;
            files[rel] = e.is_regular_file() ? test::read_file(e.path().string()) : "(dir)";
        }
        return files;
    };
    const auto before = snapshot();
    const pid_t pid = spawn_run(p);
    ASSERT_TRUE(wait_for_start(p));
    const auto planted = only_run_dir(p) / "canary.txt";
    EXPECT_NE(test::read_file(planted.string()).find("tea-canary-"), std::string::npos) << planted;
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
    EXPECT_EQ(snapshot(), before);
}

}  // namespace
}  // namespace tea

namespace tea {
namespace {

// preflight EVAL_DIR: a path every leg opens is named (exit 3); declared in systemPaths, it is
// not (the control); an opted-out evaluation has nothing to check.
TEST(Preflight, NamesWhatEveryLegOpensAndAcceptsItOnceDeclared) {
    Project p{"preflight"};
    // Outside the host's temp directories, which the target sees as its call's own.
    const fs::path outside = test::make_host_dir("tea-run-test-toolchain");
    const struct Removed {
        fs::path path;
        ~Removed() {
            std::error_code ec;
            fs::remove_all(path, ec);
        }
    } removed{outside};
    test::write_file((outside / "rules.txt").string(), "rules\n");
    const auto evaluation = [&](const std::string &system_paths) {
        p.write(".tea/evaluation.json",
                R"({"registry": [{"interfaceId": "t", "executable": "t", "target": "bin/t",
                     "maxElapsedMs": 60000, "systemPaths": [)" +
                    system_paths + R"(]}], "evaluator": {"command": ["evaluator/grade.sh"]}})");
    };
    write_simple_evaluation(p, "", "#!/bin/sh\ncat " + (outside / "rules.txt").string() + "\n");
    evaluation("");
    p.commit();
    const auto named = p.tea({"preflight", p.eval().string()});
    EXPECT_EQ(named.status, 3) << named.err;
    EXPECT_NE(named.err.find((outside / "rules.txt").string()), std::string::npos) << named.err;
    EXPECT_NE(named.err.find("preflight leg 2/2"), std::string::npos) << named.err;
    EXPECT_FALSE(fs::exists(p.eval() / "runs"));  // a preflight is not a run

    evaluation("\"" + outside.string() + "\"");
    p.commit();
    const auto declared = p.tea({"preflight", p.eval().string()});
    EXPECT_EQ(declared.status, 0) << declared.err;

    // A malformed evaluation is check's exit 2, before anything starts.
    p.write("bad-eval/evaluation.json", "{\"trials\": ");
    const auto malformed = p.tea({"preflight", (p.root() / "bad-eval").string()});
    EXPECT_EQ(malformed.status, 2) << malformed.err;
    EXPECT_NE(malformed.err.find("evaluation.json:1:"), std::string::npos) << malformed.err;
}

TEST(Preflight, AnOptedOutEvaluationHasNothingToCheck) {
    Project p{"preflight-optout"};
    write_simple_evaluation(p, R"(, "confinement": false)");
    p.commit();
    const auto o = p.tea({"preflight", p.eval().string()});
    EXPECT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.err.find("opts out of confinement"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace tea

namespace tea {
namespace {

// write_simple_evaluation's project whose entry may reach 127.0.0.1:9 and nothing else through
// the egress route, so that any other request the target makes is refused and recorded.
void write_egress_evaluation(Project &p, const std::string &target) {
    write_simple_evaluation(p, "", target);
    p.write(".tea/evaluation.json",
            R"({"registry": [{"interfaceId": "t", "executable": "t", "target": "bin/t",
                 "maxElapsedMs": 60000, "egress": [{"host": "127.0.0.1", "port": 9}]}],
                "evaluator": {"command": ["evaluator/grade.sh"]}})");
}

// An entry's egress in the records: run.json lists the entry's items, a refused request lands in
// egressRefusals with its trial, the summary names the trial and the manifest notes the entry.
// Control: the same request from an entry without egress has no route at all (no proxy
// variable), so nothing is refused or recorded.
TEST(Run, EgressRefusalsAreRecordedAndNamed) {
    Project p{"egress"};
    const std::string target =
        "#!/bin/sh\n"
        "if [ -z \"${HTTPS_PROXY:-}\" ]; then echo no-route; exit 0; fi\n"
        "curl -s -o /dev/null -w '%{http_code}' -p -x \"$HTTPS_PROXY\" "
        "https://not-listed.invalid:443/ || true\n";
    write_egress_evaluation(p, target);
    p.commit();
    const auto run = p.run();
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_NE(run.err.find("not-listed.invalid"), std::string::npos) << run.err;
    const auto dir = run_dir_of(run);
    const auto record = read_json(dir / "run.json");
    ASSERT_EQ(record["egress"].size(), 1U) << record["egress"].dump();
    EXPECT_EQ(record["egress"][0]["entry"], "t");
    EXPECT_EQ(record["egress"][0]["items"][0]["port"], 9);
    ASSERT_EQ(record["egressRefusals"].size(), 1U) << record.dump(2);
    const auto &refusal = record["egressRefusals"][0];
    EXPECT_EQ(refusal["trialIndex"], 1);
    EXPECT_EQ(refusal["refusals"][0]["host"], "not-listed.invalid");
    EXPECT_EQ(refusal["refusals"][0]["status"], 403);
    EXPECT_NE(record["summary"].get<std::string>().find("egress refusals in trial 1"),
              std::string::npos)
        << record["summary"];
    bool noted = false;
    const auto manifest = read_json(dir / "manifest.json");
    for (const auto &f : manifest["forbiddenInputs"]) {
        noted = noted || f.value("entry", "") == "t";
    }
    EXPECT_TRUE(noted);
    expect_schema_valid(dir / "run.json", "run.schema.json");

    Project q{"egress-control"};
    write_simple_evaluation(q, "", target);
    q.commit();
    const auto control = q.run();
    ASSERT_EQ(control.status, 0) << control.err;
    const auto control_record = read_json(run_dir_of(control) / "run.json");
    EXPECT_TRUE(control_record["egress"].empty());
    EXPECT_TRUE(control_record["egressRefusals"].empty());
    EXPECT_EQ(test::read_file(
                  (run_dir_of(control) / "trials" / "1" / "calls" / "01-only.stdout").string()),
              "no-route\n");
}

// An entry's pinned item reaches run.json as written, with "pinned", and its calls connect to the
// pinned address without resolving the made-up name: nothing listens on 127.0.0.1:9, so the
// proxy's refusal is that the address cannot be reached, not that the name does not resolve.
TEST(Run, APinnedEgressItemIsRecordedAndConnectedWithoutResolving) {
    Project p{"egress-pin"};
    const std::string target =
        "#!/bin/sh\n"
        "curl -s -o /dev/null -w '%{http_code}' -p -x \"$HTTPS_PROXY\" "
        "https://api.tea-evaluate.test:9/ || true\n";
    write_simple_evaluation(p, "", target);
    p.write(".tea/evaluation.json",
            R"({"registry": [{"interfaceId": "t", "executable": "t", "target": "bin/t",
                 "maxElapsedMs": 60000,
                 "egress": [{"host": "api.tea-evaluate.test", "port": 9,
                             "pinned": ["127.0.0.1"]}]}],
                "evaluator": {"command": ["evaluator/grade.sh"]}})");
    p.commit();
    const auto run = p.run();
    ASSERT_EQ(run.status, 0) << run.err;
    const auto dir = run_dir_of(run);
    const auto record = read_json(dir / "run.json");
    ASSERT_EQ(record["egress"].size(), 1U) << record["egress"].dump();
    EXPECT_EQ(record["egress"][0]["items"][0], (nlohmann::json{{"host", "api.tea-evaluate.test"},
                                                               {"port", 9},
                                                               {"addresses", {"127.0.0.1"}},
                                                               {"pinned", true}}));
    ASSERT_EQ(record["egressRefusals"].size(), 1U) << record.dump(2);
    const auto &refusal = record["egressRefusals"][0]["refusals"][0];
    EXPECT_EQ(refusal["status"], 502);
    EXPECT_NE(refusal["reason"].get<std::string>().find("127.0.0.1"), std::string::npos) << refusal;
    EXPECT_EQ(refusal["reason"].get<std::string>().find("resolve"), std::string::npos) << refusal;
    expect_schema_valid(dir / "run.json", "run.schema.json");
}

// ---------------------------------------------------------------------------------------------
// Logins (docs/logins.md), with the real claude and codex adapters.

const std::string kToken = "sk-ant-oat01-TOKEN-4f9a2c7e11";

// Every file under `dir` that holds `secret`, as "path" lines; "" when none does.
std::string files_holding(const fs::path &dir, const std::string &secret) {
    std::string found;
    for (const auto &e : fs::recursive_directory_iterator(dir)) {
        if (e.is_regular_file() && e.file_size() < (std::uintmax_t{64} << 20U) &&
            test::read_file(e.path().string()).find(secret) != std::string::npos) {
            found += e.path().string() + "\n";
        }
    }
    return found;
}

// A project whose entry "agent" declares `login`, and whose target prints its token variable in
// every way a record can take it: stdout (whole and split across two writes), stderr, an
// artifact. Its grader, which keeps the host's environment, puts the token in its reasons.
void write_login_evaluation(Project &p, const std::string &login, bool confined = true,
                            const std::string &variable = "CLAUDE_CODE_OAUTH_TOKEN") {
    const std::string v = "$" + variable;
    p.write("bin/agent",
            "#!/bin/sh\n"
            "echo \"out " +
                v +
                "\"\n"
                "printf 'split %s' \"$(printf %s \"" +
                v +
                "\" | cut -c1-9)\"\n"
                "sleep 0.2\n"
                "printf '%s\\n' \"$(printf %s \"" +
                v +
                "\" | cut -c10-)\"\n"
                "echo \"err " +
                v +
                "\" >&2\n"
                "echo \"other key: ${ANTHROPIC_API_KEY:-none}\"\n"
                "mkdir -p out && echo \"artifact " +
                v +
                "\" > out/a.txt\n"
                "[ ! -e \"$HOME/.claude/.credentials.json\" ] || cat "
                "\"$HOME/.claude/.credentials.json\"\n",
            true);
    p.write(".tea/evaluation.json",
            R"({"confinement": )" + std::string{confined ? "true" : "false"} +
                R"(, "registry": [{"interfaceId": "agent", "executable": "agent",
                 "target": "bin/agent", "artifacts": {"a": "out/a.txt"},
                 "maxElapsedMs": 60000)" +
                (login.empty() ? "" : R"(, "login": ")" + login + "\"") + R"(}],
                "evaluator": {"command": ["evaluator/grade.sh"]}})");
    p.write(".tea/probes/only.json", R"({"entry": "agent"})");
    p.write(".tea/evaluator/grade.sh",
            "#!/bin/sh\nprintf '{\"verdict\": \"pass\", \"reasons\": [\"grader saw %s\"]}\\n' "
            "\"" +
                v + "\"\n",
            true);
}

// The invoker's environment for a login test: a home of the test's own (no login in it unless
// the test writes one), the token when given, and another credential that must not pass.
std::vector<std::string> login_env(const Project &p, const fs::path &home,
                                   const std::string &token) {
    auto env = p.env();
    for (const auto &item : std::vector<std::string>{
             "HOME=" + home.string(), "CLAUDE_CONFIG_DIR=", "CODEX_HOME=",
             "CLAUDE_CODE_OAUTH_TOKEN=" + token, "ANTHROPIC_API_KEY=sk-ant-api03-NOT-PASSED-77"}) {
        const auto name = item.substr(0, item.find('=') + 1);
        std::erase_if(env, [&](const std::string &e) { return e.rfind(name, 0) == 0; });
        env.push_back(item);
    }
    return env;
}

test::Outcome tea_in(const std::vector<std::string> &env, std::vector<std::string> args) {
    args.insert(args.begin(), TEA_EVALUATE_BIN);
    return test::run(args, env);
}

TEST(RunLogin, TheTokenRoutePassesTheTokenAloneAndNoRecordHoldsIt) {
    Project p{"login-token"};
    write_login_evaluation(p, "claude");
    p.commit();
    const auto home = p.root().parent_path() / "home";
    fs::create_directories(home);
    const auto env = login_env(p, home, kToken);
    const auto run = tea_in(env, {"--json", "run", p.eval().string()});
    ASSERT_EQ(run.status, 0) << run.err;
    const auto dir = run_dir_of(run);
    const auto score = tea_in(env, {"score", dir.string()});
    EXPECT_EQ(score.status, 0) << score.err;

    const auto calls = dir / "trials" / "1" / "calls";
    EXPECT_EQ(test::read_file((calls / "01-only.stdout").string()),
              "out [redacted]\nsplit [redacted]\nother key: none\n");
    EXPECT_EQ(test::read_file((calls / "01-only.stderr").string()), "err [redacted]\n");
    EXPECT_EQ(test::read_file((dir / "trials" / "1" / "artifacts" / "agent" / "a").string()),
              "artifact [redacted]\n");
    const auto record = read_json(dir / "run.json");
    EXPECT_EQ(record["trials"][0]["verdict"]["reasons"][0], "grader saw [redacted]");
    ASSERT_EQ(record["logins"].size(), 1U) << record["logins"];
    const auto &login = record["logins"][0];
    EXPECT_EQ(login["interface"], "agent");
    EXPECT_EQ(login["executable"], "agent");
    EXPECT_EQ(login["adapter"], "claude");
    EXPECT_EQ(login["variables"], json::array({"CLAUDE_CODE_OAUTH_TOKEN"}));
    EXPECT_TRUE(login["files"].empty());
    const auto manifest = read_json(dir / "manifest.json");
    for (const auto &f : manifest["forbiddenInputs"]) {
        EXPECT_NE(f["note"].get<std::string>().find("CLAUDE_CODE_OAUTH_TOKEN"), std::string::npos)
            << f.dump();
    }
    expect_schema_valid(dir / "run.json", "run.schema.json");
    expect_schema_valid(dir / "manifest.json", "manifest.schema.json");
    EXPECT_EQ(files_holding(dir, kToken), "");
    EXPECT_EQ(files_holding(dir, "NOT-PASSED"), "");
    EXPECT_EQ(run.err.find(kToken), std::string::npos) << run.err;
    EXPECT_EQ(score.err.find(kToken), std::string::npos) << score.err;

    // The control: the same target, opted out and with no login, prints the token the records
    // then hold, so the probe above would have shown a leak.
    Project q{"login-token-control"};
    write_login_evaluation(q, "", false);
    q.commit();
    const auto control = tea_in(login_env(q, home, kToken), {"--json", "run", q.eval().string()});
    ASSERT_EQ(control.status, 0) << control.err;
    EXPECT_NE(files_holding(run_dir_of(control), kToken), "");
}

TEST(RunLogin, AConfinedEntryWithNeitherSourceStopsBeforeAnyTarget) {
    Project p{"login-none"};
    write_login_evaluation(p, "claude");
    p.commit();
    const auto home = p.root().parent_path() / "home";
    fs::create_directories(home);
    const auto run = tea_in(login_env(p, home, ""), {"run", p.eval().string()});
    EXPECT_EQ(run.status, 12) << run.err;
    for (const auto &named :
         {std::string{"entry 'agent'"}, (home / ".claude" / ".credentials.json").string(),
          std::string{"CLAUDE_CODE_OAUTH_TOKEN"}, std::string{"\"confinement\": false"}}) {
        EXPECT_NE(run.err.find(named), std::string::npos) << named << "\n" << run.err;
    }
    EXPECT_FALSE(fs::exists(p.eval() / "runs"));

    // Opted out, the same entry runs with the invoker's own home and environment.
    Project q{"login-none-opted-out"};
    write_login_evaluation(q, "claude", false);
    q.commit();
    const auto opted_out = tea_in(login_env(q, home, ""), {"--json", "run", q.eval().string()});
    EXPECT_EQ(opted_out.status, 0) << opted_out.err;
}

TEST(RunLogin, AnOptedOutRunRecordsTheLoginWithNoFileAndStillRedacts) {
    Project p{"login-opt-out"};
    write_login_evaluation(p, "claude", false);
    p.commit();
    const auto home = p.root().parent_path() / "home";
    fs::create_directories(home / ".claude");
    const std::string file_token = "sk-ant-oat01-FROM-THE-FILE-5d1e";
    test::write_file((home / ".claude" / ".credentials.json").string(),
                     R"({"claudeAiOauth": {"accessToken": ")" + file_token +
                         R"(", "scopes": ["user:inference"], "subscriptionType": "enterprise"}})");
    const auto run = tea_in(login_env(p, home, kToken), {"--json", "run", p.eval().string()});
    ASSERT_EQ(run.status, 0) << run.err;
    const auto dir = run_dir_of(run);
    const auto record = read_json(dir / "run.json");
    EXPECT_EQ(record["confinement"], "opt-out");
    ASSERT_EQ(record["logins"].size(), 1U);
    EXPECT_TRUE(record["logins"][0]["files"].empty()) << record["logins"];
    // The unconfined target read the file where it is: its secret is replaced, the fields the
    // format says are no secret are kept.
    const auto out = test::read_file((dir / "trials" / "1" / "calls" / "01-only.stdout").string());
    EXPECT_NE(out.find(R"("accessToken": "[redacted]")"), std::string::npos) << out;
    EXPECT_NE(out.find("enterprise"), std::string::npos) << out;
    EXPECT_NE(out.find("user:inference"), std::string::npos) << out;
    EXPECT_EQ(files_holding(dir, kToken), "");
    EXPECT_EQ(files_holding(dir, file_token), "");
}

// The file route, confined: the home holds the file read-only with what the host read, the
// target reads it and cannot change it, the audit lists neither, and no record holds a secret of
// it while the fields the format says are no secret stay.
TEST(RunLogin, TheFileRouteShowsTheFileReadOnlyAndNoRecordHoldsItsSecrets) {
    Project p{"login-file"};
    write_login_evaluation(p, "claude");
    p.write("bin/agent",
            "#!/bin/sh\n"
            "f=\"$HOME/.claude/.credentials.json\"\n"
            "cat \"$f\"; echo\n"
            "(echo forged > \"$f\") 2>/dev/null && echo WROTE\n"
            "rm -f \"$f\" 2>/dev/null; [ -e \"$f\" ] && echo still-there\n"
            "echo \"token: ${CLAUDE_CODE_OAUTH_TOKEN:-none}\"\n"
            "mkdir -p \"$HOME/.claude/projects\" && echo state > \"$HOME/.claude/projects/s\" "
            "&& echo state-written\n",
            true);
    p.commit();
    const auto home = p.root().parent_path() / "home";
    fs::create_directories(home / ".claude");
    const std::string access = "sk-ant-oat01-ACCESS-FROM-FILE-77aa";
    const std::string refresh = "sk-ant-ort01-REFRESH-FROM-FILE-88bb";
    const auto file = home / ".claude" / ".credentials.json";
    const std::string content = R"({"claudeAiOauth": {"accessToken": ")" + access +
                                R"(", "refreshToken": ")" + refresh +
                                R"(", "expiresAt": 1, "scopes": ["user:inference"],)"
                                R"( "subscriptionType": "enterprise"}})";
    test::write_file(file.string(), content);
    ::chmod(file.c_str(), 0600);
    const auto env = login_env(p, home, "");
    const auto run = tea_in(env, {"--json", "run", p.eval().string()});
    ASSERT_EQ(run.status, 0) << run.err;
    const auto dir = run_dir_of(run);
    const auto out = test::read_file((dir / "trials" / "1" / "calls" / "01-only.stdout").string());
    EXPECT_NE(out.find(R"("accessToken": "[redacted]", "refreshToken": "[redacted]")"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find(R"("scopes": ["user:inference"], "subscriptionType": "enterprise")"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("WROTE"), std::string::npos) << out;
    EXPECT_NE(out.find("still-there"), std::string::npos) << out;
    EXPECT_NE(out.find("token: none"), std::string::npos) << out;
    EXPECT_NE(out.find("state-written"), std::string::npos) << out;
    EXPECT_EQ(test::read_file(file.string()), content);
    const auto record = read_json(dir / "run.json");
    EXPECT_TRUE(record["trials"][0]["observedMounts"].empty()) << record["trials"][0].dump(2);
    EXPECT_EQ(
        record["logins"][0]["files"],
        json::array({{{"file", "<credentials-file>"}, {"homePath", ".claude/.credentials.json"}}}));
    EXPECT_TRUE(record["logins"][0]["variables"].empty());
    bool mounted = false;
    const auto manifest = read_json(dir / "manifest.json");
    for (const auto &m : manifest["allowedMounts"]) {
        mounted = mounted || m.value("what", "") == "read-only login <credentials-file>";
    }
    EXPECT_TRUE(mounted);
    expect_schema_valid(dir / "run.json", "run.schema.json");
    expect_schema_valid(dir / "manifest.json", "manifest.schema.json");
    EXPECT_EQ(files_holding(dir, access), "");
    EXPECT_EQ(files_holding(dir, refresh), "");
    EXPECT_EQ(files_holding(dir, file.string()), "");

    // exec --login shows the same file and redacts the terminal and the --json record; the
    // control, without --login, finds no file and prints the token it is handed.
    const auto exec = tea_in(env, {"--json", "exec", "--login", "claude", "--", "sh", "-c",
                                   "cat \"$HOME/.claude/.credentials.json\""});
    EXPECT_EQ(exec.status, 0) << exec.err;
    EXPECT_EQ(exec.err.find(access), std::string::npos) << exec.err;
    EXPECT_NE(exec.err.find(R"("accessToken": "[redacted]")"), std::string::npos) << exec.err;
    const auto control =
        tea_in(env, {"exec", "--env", "T=" + access, "--", "sh", "-c",
                     "echo \"$T\"; cat \"$HOME/.claude/.credentials.json\" 2>/dev/null"});
    EXPECT_EQ(control.out, access + "\n") << control.err;
}

// A token the client on the host writes into the file during a call is redacted from that call.
TEST(RunLogin, ATokenRotatedIntoTheFileDuringACallIsRedactedFromIt) {
    Project p{"login-rotated"};
    const std::string rotated = "sk-ant-oat01-ROTATED-DURING-9c3b";
    // The target prints, late, what it was handed on stdin: the token the file will hold then.
    p.write("bin/agent", "#!/bin/sh\nsleep 2\ncat\n", true);
    p.write(".tea/evaluation.json",
            R"({"confinement": false, "registry": [{"interfaceId": "agent", "executable": "agent",
                 "target": "bin/agent", "maxElapsedMs": 60000, "login": "claude"}],
                "evaluator": {"command": ["evaluator/grade.sh"]}})");
    p.write(".tea/probes/only.json", R"({"entry": "agent", "stdin": ")" + rotated + R"(\n"})");
    p.write(".tea/evaluator/grade.sh", "#!/bin/sh\necho '{\"verdict\": \"pass\"}'\n", true);
    p.commit();
    const auto home = p.root().parent_path() / "home";
    fs::create_directories(home / ".claude");
    const auto file = home / ".claude" / ".credentials.json";
    const auto write_token = [&](const std::string &token) {
        test::write_file(file.string(), R"({"claudeAiOauth": {"accessToken": ")" + token + "\"}}");
    };
    for (const bool rotate : {true, false}) {
        write_token("sk-ant-oat01-BEFORE-THE-CALL-1a2b");
        std::atomic<bool> done{false};
        std::thread rotator([&] {
            if (!rotate) return;
            // Once the call has started (its capture exists), the host's client rotates.
            for (int i = 0; i < 400 && !done; ++i) {
                for (const auto &e : fs::recursive_directory_iterator(
                         p.eval(), fs::directory_options::skip_permission_denied)) {
                    if (e.path().extension() == ".stdout") {
                        write_token(rotated);
                        return;
                    }
                }
                std::this_thread::sleep_for(std::chrono::milliseconds{10});
            }
        });
        const auto run = tea_in(login_env(p, home, ""), {"--json", "run", p.eval().string()});
        done = true;
        rotator.join();
        ASSERT_EQ(run.status, 0) << run.err;
        const auto out = test::read_file(
            (run_dir_of(run) / "trials" / "1" / "calls" / "01-only.stdout").string());
        // The control (no rotation): the same string is nobody's secret and stays.
        EXPECT_EQ(out, rotate ? "[redacted]\n" : rotated + "\n") << "rotate=" << rotate;
    }
}

TEST(RunLogin, ALoginFileThatIsNoPlainFileStopsTheRun) {
    Project p{"login-bad-file"};
    write_login_evaluation(p, "claude");
    p.commit();
    const auto home = p.root().parent_path() / "home";
    const auto dir = home / ".claude";
    const auto file = dir / ".credentials.json";
    fs::create_directories(dir);
    const auto expect_refused = [&](const std::string &what, const std::string &said) {
        const auto run = tea_in(login_env(p, home, kToken), {"run", p.eval().string()});
        EXPECT_EQ(run.status, 12) << what << "\n" << run.err;
        EXPECT_NE(run.err.find(said), std::string::npos) << what << "\n" << run.err;
        EXPECT_NE(run.err.find(file.string()), std::string::npos) << what << "\n" << run.err;
        EXPECT_FALSE(fs::exists(p.eval() / "runs")) << what;
        std::error_code ec;
        fs::remove(file, ec);
    };
    test::write_file((home / "elsewhere").string(), "{}");
    fs::create_symlink(home / "elsewhere", file);
    expect_refused("a link", "symbolic link");
    ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
    expect_refused("a fifo", "not a regular file");
    fs::create_directory(file);
    expect_refused("a directory", "not a regular file");
    test::write_file(file.string(), "{\"a\": \"" + std::string(70 * 1024, 'x') + "\"}");
    expect_refused("a huge file", "KiB");
}

// A token with a line break and bytes that are not UTF-8 is replaced as it is, and an entry of
// another adapter in the same run keeps its own login.
TEST(RunLogin, OddTokensAndTwoAdaptersInOneRunAreRedacted) {
    Project p{"login-two"};
    write_login_evaluation(p, "claude");
    p.write("bin/codex",
            "#!/bin/sh\necho \"key $OPENAI_API_KEY\"\necho \"claude $CLAUDE_CODE_OAUTH_TOKEN\"\n",
            true);
    p.write(".tea/evaluation.json",
            R"({"registry": [{"interfaceId": "agent", "executable": "agent", "target": "bin/agent",
                 "maxElapsedMs": 60000, "login": "claude"},
                {"interfaceId": "codex", "executable": "codex", "target": "bin/codex",
                 "maxElapsedMs": 60000, "login": "codex", "environmentKeys": ["OPENAI_API_KEY"]}],
                "evaluator": {"command": ["evaluator/grade.sh"]}})");
    p.write(".tea/probes/a.json", R"({"entry": "agent"})");
    p.write(".tea/probes/b.json", R"({"entry": "codex"})");
    p.commit();
    const auto home = p.root().parent_path() / "home";
    fs::create_directories(home);
    const std::string odd = "sk-ant-oat01-\nLINE\xff\xfe-TAIL-0042";
    const std::string key = "sk-proj-OPENAI-KEY-8e2d";
    auto env = login_env(p, home, odd);
    env.push_back("OPENAI_API_KEY=" + key);
    const auto run = tea_in(env, {"--json", "run", p.eval().string()});
    ASSERT_EQ(run.status, 0) << run.err;
    const auto dir = run_dir_of(run);
    const auto calls = dir / "trials" / "1" / "calls";
    EXPECT_EQ(test::read_file((calls / "01-a.stdout").string()).substr(0, 15), "out [redacted]\n");
    // The codex entry gets its key and not the claude token.
    EXPECT_EQ(test::read_file((calls / "02-b.stdout").string()), "key [redacted]\nclaude \n");
    EXPECT_EQ(files_holding(dir, "LINE\xff\xfe-TAIL"), "");
    EXPECT_EQ(files_holding(dir, key), "");
    EXPECT_EQ(read_json(dir / "run.json")["logins"].size(), 2U);
}

}  // namespace
}  // namespace tea

namespace tea {
namespace {

// The evaluator may write the rest of the project, not what git would run or follow next: a
// husky-style hooks directory (core.hooksPath outside .git) and a linked worktree's .git file.
TEST(Run, EvaluatorCannotPlantAHuskyHookOrRepointALinkedWorktree) {
    Project p{"husky"};
    const auto main_repo = p.root();
    const auto worktree = p.root().parent_path() / "linked";
    const std::string grader =
        "#!/bin/sh\n"
        "p=\"$TEA_EVALUATION_DIR/..\"\n"
        "r1=$( (echo x > \"$p/.husky/_/pre-commit\") 2>&1 && echo WROTE)\n"
        "r2=$( (echo 'gitdir: /tmp/elsewhere' > \"$p/.git\") 2>&1 && echo WROTE)\n"
        "r3=$( (echo x > \"$p/docs-scratch\") 2>&1 && echo WROTE)\n"
        "printf '{\"verdict\": \"pass\", \"reasons\": [\"%s\", \"%s\", \"%s\"]}\\n' "
        "\"$(echo $r1 | tr -d '\"')\" \"$(echo $r2 | tr -d '\"')\" \"$(echo $r3 | tr -d '\"')\"\n";
    write_simple_evaluation(p, "", "#!/bin/sh\necho ok\n", grader);
    p.write(".husky/_/husky.sh", "# hooks\n");
    p.commit();
    // The evaluation runs in a linked worktree of the project, whose hooks live in .husky/_.
    for (const std::vector<std::string> &argv :
         {std::vector<std::string>{"git", "-C", main_repo.string(), "config", "core.hooksPath",
                                   ".husky/_"},
          {"git", "-C", main_repo.string(), "worktree", "add", "-q", "--detach",
           worktree.string()}}) {
        const auto o = test::run(argv, test::environment_with({}));
        ASSERT_EQ(o.status, 0) << o.err;
    }
    const auto dot_git_before = test::read_file((worktree / ".git").string());
    auto o = test::run({TEA_EVALUATE_BIN, "--json", "run", (worktree / ".tea").string()}, p.env());
    ASSERT_EQ(o.status, 0) << o.err;
    const auto verdict = read_json(run_dir_of(o) / "trials" / "1" / "verdict.json");
    ASSERT_EQ(verdict["reasons"].size(), 3U) << verdict.dump();
    EXPECT_NE(verdict["reasons"][0].get<std::string>().find("Read-only file system"),
              std::string::npos)
        << verdict.dump();
    EXPECT_NE(verdict["reasons"][1].get<std::string>().find("Read-only file system"),
              std::string::npos)
        << verdict.dump();
    EXPECT_FALSE(fs::exists(worktree / ".husky" / "_" / "pre-commit"));
    EXPECT_EQ(test::read_file((worktree / ".git").string()), dot_git_before);
    // Control: the rest of the project stays writable to the evaluator.
    EXPECT_EQ(verdict["reasons"][2], "WROTE") << verdict.dump();
    EXPECT_TRUE(fs::exists(worktree / "docs-scratch"));
}

}  // namespace
}  // namespace tea

namespace tea {
namespace {

// The target's git: the evaluated commit's full history and tags through the private repository,
// the evaluation folder empty in every commit, no grading string anywhere in the history, and
// nothing it can commit. Control: the project's own repository does hold the string.
TEST(Run, TargetGitSeesTheHistoryWithoutTheEvaluationAndCannotCommit) {
    Project p{"git"};
    const std::string secret_a = "SECRET-ANSWER-";
    const std::string target =
        "#!/bin/sh\n"
        "echo \"commits=$(git log --all --oneline | wc -l)\"\n"
        "echo \"describe=$(git describe --tags)\"\n"
        "echo \"tags=$(git tag -l | tr '\\n' ' ')\"\n"
        "echo \"evaltree=[$(git ls-tree HEAD .tea/ | wc -l)]\"\n"
        "s='" +
        secret_a +
        "'; s=\"${s}42\"\n"
        "echo \"secret=$(git log --all -p | grep -c \"$s\")\"\n"
        "echo \"status=$(git status --porcelain | wc -l)\"\n"
        "if [ \"${1:-}\" = commit ]; then\n"
        "  git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x 2>/dev/null"
        " && echo committed || echo commit-failed\n"
        "fi\n";
    write_simple_evaluation(p, "", target);
    p.write(".tea/probes/only.json", R"({"entry": "t"})");
    p.write(".tea/evaluator/answers.txt", secret_a + "42\n");
    p.write("README", "one\n");
    p.commit();
    const auto tag = test::run({"git", "-C", p.root().string(), "tag", "-a", "v1", "-m", "one"},
                               test::environment_with({}));
    ASSERT_EQ(tag.status, 0) << tag.err;
    p.write("README", "two\n");
    p.commit();
    // Control: the project's own history holds the grading string.
    const auto own = test::run({"git", "-C", p.root().string(), "log", "--all", "-p"},
                               test::environment_with({}));
    ASSERT_NE(own.out.find(secret_a + "42"), std::string::npos);

    const auto run = p.run();
    ASSERT_EQ(run.status, 0) << run.err;  // reading its history is inside the grants
    const auto out =
        test::read_file((run_dir_of(run) / "trials" / "1" / "calls" / "01-only.stdout").string());
    EXPECT_NE(out.find("commits=2\n"), std::string::npos) << out;
    EXPECT_NE(out.find("describe=v1-1-g"), std::string::npos) << out;
    EXPECT_NE(out.find("tags=v1 "), std::string::npos) << out;
    EXPECT_NE(out.find("evaltree=[0]"), std::string::npos) << out;
    EXPECT_NE(out.find("secret=0\n"), std::string::npos) << out;
    EXPECT_NE(out.find("status=0\n"), std::string::npos) << out;

    // A commit fails: the private repository is read-only, and the refused write is listed.
    p.write(".tea/probes/only.json", R"({"entry": "t", "args": ["commit"]})");
    p.commit();
    const auto commit = p.run();
    EXPECT_EQ(commit.status, 3) << commit.err;
    const auto commit_out = test::read_file(
        (run_dir_of(commit) / "trials" / "1" / "calls" / "01-only.stdout").string());
    EXPECT_NE(commit_out.find("commit-failed"), std::string::npos) << commit_out;
    EXPECT_NE(commit.err.find("repository-"), std::string::npos) << commit.err;
}

}  // namespace
}  // namespace tea

namespace tea {
namespace {

// git in dir, as a user runs it; the test fails on a non-zero status.
std::string git(const fs::path &dir, std::vector<std::string> args) {
    args.insert(args.begin(),
                {"git", "-C", dir.string(), "-c", "user.name=t", "-c", "user.email=t@t"});
    const auto o = test::run(args, test::environment_with({}));
    EXPECT_EQ(o.status, 0) << args[7] << ": " << o.err;
    return o.out;
}

std::string first_line(const std::string &text) {
    return text.substr(0, text.find('\n'));
}

// Clones the project's repository with a partial-clone filter, as a user of a large repository
// does; the source serves filters.
fs::path partial_clone(const Project &p, const std::string &filter,
                       const std::vector<std::string> &extra = {}) {
    (void)git(p.root(), {"config", "uploadpack.allowFilter", "true"});
    auto clone = p.root().parent_path() / "clone";
    std::vector<std::string> argv{"git", "clone", "-q", "--filter=" + filter};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"file://" + p.root().string(), clone.string()});
    const auto o = test::run(argv, test::environment_with({}));
    EXPECT_EQ(o.status, 0) << o.err;
    return clone;
}

// The object ids the clone's history names but does not hold on disk (listing them fetches
// nothing, unlike `git cat-file -e`).
std::string missing_objects(const fs::path &clone) {
    return git(clone, {"rev-list", "--objects", "--missing=print", "HEAD"});
}

// A partial clone runs confined: the target's git reads the history the clone holds, and an
// object the clone never fetched ends in git's own error, since the private repository has no
// remote to fetch it from. Control: the clone's own git, which has the remote, fetches it.
TEST(Run, PartialCloneRunsConfinedAndTheTargetsGitFetchesNothing) {
    for (const std::string filter : {"blob:none", "tree:0"}) {
        SCOPED_TRACE(filter);
        Project p{filter == "tree:0" ? "partial-tree" : "partial-blob"};
        const std::string target =
            "#!/bin/sh\n"
            "echo \"commits=$(git log --oneline | wc -l)\"\n"
            "if git show \"$1\" >\"$TMPDIR/shown\" 2>\"$TMPDIR/err\"; then\n"
            "  echo \"show=ok $(cat \"$TMPDIR/shown\")\"\n"
            "else\n"
            "  echo \"show=failed $(head -n 1 \"$TMPDIR/err\")\"\n"
            "fi\n";
        p.write("data.txt", "old-data\n");
        write_simple_evaluation(p, "", target);
        p.commit();
        const auto first = first_line(git(p.root(), {"rev-parse", "HEAD"}));
        const auto old_blob = first_line(git(p.root(), {"rev-parse", first + ":data.txt"}));
        const auto old_tree = first_line(git(p.root(), {"rev-parse", first + "^{tree}"}));
        p.write("data.txt", "new-data\n");
        p.write(".tea/probes/only.json",
                R"({"entry": "t", "args": [")" + first + R"(:data.txt"]})");
        p.commit();
        const auto clone = partial_clone(p, filter);
        // Control: the clone really lacks the old object on disk.
        const auto missing = missing_objects(clone);
        ASSERT_NE(missing.find('?' + (filter == "tree:0" ? old_tree : old_blob)), std::string::npos)
            << missing;

        const auto run =
            test::run({TEA_EVALUATE_BIN, "--json", "run", (clone / ".tea").string()}, p.env());
        ASSERT_EQ(run.status, 0) << run.err;  // nothing was read or fetched outside the grants
        const auto out = test::read_file(
            (run_dir_of(run) / "trials" / "1" / "calls" / "01-only.stdout").string());
        EXPECT_NE(out.find("commits=2\n"), std::string::npos) << out;
        EXPECT_NE(out.find("show=failed fatal: "), std::string::npos) << out;
        EXPECT_EQ(out.find("old-data"), std::string::npos) << out;
        // Nothing fetched it on the run's behalf either.
        EXPECT_NE(missing_objects(clone).find('?' + (filter == "tree:0" ? old_tree : old_blob)),
                  std::string::npos);

        // Positive control: the clone's own git, with its promisor remote, fetches and shows it.
        EXPECT_EQ(git(clone, {"show", first + ":data.txt"}), "old-data\n");
    }
}

// A commit whose own files the clone lacks (a partial clone checked out in part) cannot become a
// workspace without a fetch, which a confined run never makes: run and preflight end with exit 12
// naming the commit, before any target starts. Control: once the clone holds the objects, it runs.
TEST(Run, ACommitWhoseObjectsTheCloneLacksIsExit12BeforeAnyTargetStarts) {
    Project p{"partial-part"};
    p.write("lib/data.txt", "data\n");
    write_simple_evaluation(p);
    p.commit();
    // Cloned without a checkout, then only the evaluation and the target checked out: the rest
    // of the commit's files were never fetched.
    const auto clone = partial_clone(p, "blob:none", {"--no-checkout"});
    (void)git(clone, {"checkout", "HEAD", "--", ".tea", "bin"});
    const auto head = first_line(git(clone, {"rev-parse", "HEAD"}));
    const auto data_blob = first_line(git(p.root(), {"rev-parse", "HEAD:lib/data.txt"}));
    ASSERT_NE(missing_objects(clone).find('?' + data_blob), std::string::npos);

    const auto eval = clone / ".tea";
    for (const char *command : {"run", "preflight"}) {
        SCOPED_TRACE(command);
        const auto o = test::run({TEA_EVALUATE_BIN, command, eval.string()}, p.env());
        EXPECT_EQ(o.status, 12) << o.err;
        EXPECT_NE(o.err.find("lacks objects of commit " + head), std::string::npos) << o.err;
        EXPECT_NE(o.err.find("lib/data.txt"), std::string::npos) << o.err;
        EXPECT_NE(o.err.find("fetches nothing"), std::string::npos) << o.err;
    }
    // No run was recorded: no target started.
    std::error_code ec;
    EXPECT_TRUE(fs::is_empty(eval / "runs", ec) || !fs::exists(eval / "runs")) << ec.message();
    EXPECT_NE(missing_objects(clone).find('?' + data_blob), std::string::npos);

    // Control: with the commit's objects fetched into the clone the way the message says, the
    // same evaluation runs.
    const auto archive = test::run({"git", "-C", clone.string(), "archive", "-o",
                                    (clone.parent_path() / "archive.tar").string(), "HEAD"},
                                   test::environment_with({}));
    ASSERT_EQ(archive.status, 0) << archive.err;
    ASSERT_EQ(missing_objects(clone).find('?' + data_blob), std::string::npos);
    const auto run = test::run({TEA_EVALUATE_BIN, "--json", "run", eval.string()}, p.env());
    EXPECT_EQ(run.status, 0) << run.err;
    EXPECT_EQ(
        test::read_file((run_dir_of(run) / "trials" / "1" / "calls" / "01-only.stdout").string()),
        "ok\n");
}

// A historical probe's call runs in its revision's tree, with that revision's history as its git
// and the evaluation folder withheld there as in the evaluated commit: the old grading material
// in the history is no more readable than the current one. Control: the probe without a revision,
// in the same run, sees the evaluated commit; the project's own git shows the old grader.
TEST(Run, HistoricalProbeRunsInItsRevisionsTreeWithTheFolderWithheld) {
    Project p{"historical"};
    const std::string target =
        "#!/bin/sh\n"
        "echo \"data=$(cat data.txt)\"\n"
        "echo \"commits=$(git log --oneline | wc -l)\"\n"
        "echo \"head=$(git rev-parse HEAD)\"\n"
        "if [ -e .tea ]; then echo folder=present; else echo folder=absent; fi\n"
        "echo \"grader=$(git show HEAD:.tea/evaluator/grade.sh 2>/dev/null | wc -c)\"\n";
    p.write("data.txt", "old-data\n");
    write_simple_evaluation(p, "", target);
    p.commit();
    (void)git(p.root(), {"tag", "v1"});
    const auto old_commit = first_line(git(p.root(), {"rev-parse", "HEAD"}));
    p.write("data.txt", "new-data\n");
    p.write(".tea/probes/then.json", R"({"entry": "t", "revision": "v1"})");
    p.commit();
    const auto new_commit = first_line(git(p.root(), {"rev-parse", "HEAD"}));
    ASSERT_FALSE(git(p.root(), {"show", "v1:.tea/evaluator/grade.sh"}).empty());

    const auto check = p.tea({"check", p.eval().string()});
    ASSERT_EQ(check.status, 0) << check.err;
    const auto run = p.run();
    ASSERT_EQ(run.status, 0) << run.err;
    const auto dir = run_dir_of(run);
    const auto calls = dir / "trials" / "1" / "calls";
    const auto then = test::read_file((calls / "02-then.stdout").string());
    EXPECT_NE(then.find("data=old-data\n"), std::string::npos) << then;
    EXPECT_NE(then.find("commits=1\n"), std::string::npos) << then;
    EXPECT_NE(then.find("head=" + old_commit + "\n"), std::string::npos) << then;
    EXPECT_NE(then.find("folder=absent\n"), std::string::npos) << then;
    EXPECT_NE(then.find("grader=0\n"), std::string::npos) << then;
    // Control: the same target without a revision, in the same run.
    const auto now = test::read_file((calls / "01-only.stdout").string());
    EXPECT_NE(now.find("data=new-data\n"), std::string::npos) << now;
    EXPECT_NE(now.find("commits=2\n"), std::string::npos) << now;
    EXPECT_NE(now.find("head=" + new_commit + "\n"), std::string::npos) << now;

    const auto record = read_json(dir / "run.json");
    const auto &recorded = record["trials"][0]["calls"];
    ASSERT_EQ(recorded.size(), 2U);
    EXPECT_FALSE(recorded[0].contains("revision"));
    EXPECT_EQ(recorded[1]["revision"], (json{{"name", "v1"}, {"commit", old_commit}}));
    EXPECT_TRUE(record["trials"][0]["observedMounts"].empty()) << record.dump(2);
    expect_schema_valid(dir / "run.json", "run.schema.json");
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
}

// A project whose first commit's data.txt ("old-data") a historical probe 'then' asks for by
// commit id, and its partial clone (blob:none) checked out at the second commit, which never
// fetched the old blob.
struct HistoricalClone {
    std::string old_commit;
    std::string old_blob;
    fs::path clone;
};
HistoricalClone historical_clone(Project &p, const std::string &evaluation_extra) {
    p.write("data.txt", "old-data\n");
    write_simple_evaluation(p, evaluation_extra, "#!/bin/sh\ncat data.txt\n");
    p.commit();
    HistoricalClone out;
    out.old_commit = first_line(git(p.root(), {"rev-parse", "HEAD"}));
    out.old_blob = first_line(git(p.root(), {"rev-parse", "HEAD:data.txt"}));
    p.write("data.txt", "new-data\n");
    p.write(".tea/probes/then.json", R"({"entry": "t", "revision": ")" + out.old_commit + R"("})");
    p.commit();
    out.clone = partial_clone(p, "blob:none");
    EXPECT_NE(missing_objects(out.clone).find('?' + out.old_blob), std::string::npos);
    return out;
}

// A historical probe whose revision the clone lacks on disk (a partial clone that never fetched
// its blobs, or a commit id that exists nowhere) cannot be checked out without a fetch, which a
// confined run never makes: exit 12 naming the revision and the way out, before any target
// starts; `check` reports it with its probe's field. Control: once the revision has been checked
// out in the clone, the same evaluation runs and the probe sees the revision's file.
TEST(Run, HistoricalProbeWhoseObjectsTheCloneLacksIsExit12BeforeAnyTargetStarts) {
    Project p{"historical-partial"};
    const auto [old_commit, old_blob, clone] = historical_clone(p, "");
    const auto eval = clone / ".tea";
    const auto no_run_recorded = [&] {
        std::error_code ec;
        return !fs::exists(eval / "runs") || fs::is_empty(eval / "runs", ec);
    };

    for (const char *command : {"run", "preflight"}) {
        SCOPED_TRACE(command);
        const auto o = test::run({TEA_EVALUATE_BIN, command, eval.string()}, p.env());
        EXPECT_EQ(o.status, 12) << o.err;
        EXPECT_NE(o.err.find("revision '" + old_commit + "'"), std::string::npos) << o.err;
        EXPECT_NE(o.err.find("data.txt"), std::string::npos) << o.err;
        EXPECT_NE(o.err.find("Check the revision out once in your clone"), std::string::npos)
            << o.err;
        EXPECT_NE(o.err.find("or set \"confinement\": false"), std::string::npos) << o.err;
    }
    EXPECT_TRUE(no_run_recorded());
    EXPECT_NE(missing_objects(clone).find('?' + old_blob), std::string::npos);

    // A commit id that exists nowhere: check names the probe's field, run exits 12.
    const std::string nowhere = "0123456789abcdef0123456789abcdef01234567";
    test::write_file((eval / "probes" / "then.json").string(),
                     R"({"entry": "t", "revision": ")" + nowhere + R"("})");
    const auto check = test::run({TEA_EVALUATE_BIN, "check", eval.string()}, p.env());
    EXPECT_EQ(check.status, 2) << check.err;
    EXPECT_NE(check.err.find("probe 'then' field 'revision': revision '" + nowhere + "'"),
              std::string::npos)
        << check.err;
    const auto unknown = test::run({TEA_EVALUATE_BIN, "run", eval.string()}, p.env());
    EXPECT_EQ(unknown.status, 12) << unknown.err;
    EXPECT_NE(unknown.err.find("revision '" + nowhere + "'"), std::string::npos) << unknown.err;
    EXPECT_TRUE(no_run_recorded());

    // Control: the revision checked out once in the clone, as the message says.
    test::write_file((eval / "probes" / "then.json").string(),
                     R"({"entry": "t", "revision": ")" + old_commit + R"("})");
    (void)git(clone, {"checkout", "-q", old_commit});
    (void)git(clone, {"checkout", "-q", "-"});
    ASSERT_EQ(missing_objects(clone).find('?' + old_blob), std::string::npos);
    const auto run = test::run({TEA_EVALUATE_BIN, "--json", "run", eval.string()}, p.env());
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_EQ(
        test::read_file((run_dir_of(run) / "trials" / "1" / "calls" / "02-then.stdout").string()),
        "old-data\n");
}

// The other way out the refusal names: an evaluation that opts out of confinement has the host's
// git fetch the revision's objects through the clone's promisor remote, and its probe runs.
TEST(Run, OptedOutHistoricalProbeFetchesWhatTheCloneLacks) {
    Project p{"historical-opt-out"};
    const auto [old_commit, old_blob, clone] = historical_clone(p, R"(, "confinement": false)");

    const auto run =
        test::run({TEA_EVALUATE_BIN, "--json", "run", (clone / ".tea").string()}, p.env());
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_EQ(
        test::read_file((run_dir_of(run) / "trials" / "1" / "calls" / "02-then.stdout").string()),
        "old-data\n");
    EXPECT_EQ(missing_objects(clone).find('?' + old_blob), std::string::npos);
}

// A corpus file reaches the target only as the copy its probe asks for: the corpus folder itself
// lies in the withheld evaluation folder, so a read of it answers ENOENT and the audit lists it.
// Control: opted out (--backend opt-out), the same target reads the corpus folder directly.
TEST(Run, CorpusFileIsCopiedInAndTheCorpusFolderStaysWithheld) {
    Project p{"corpus"};
    write_simple_evaluation(p, "",
                            "#!/bin/sh\n"
                            "echo \"copy=$(cat in/input.txt)\"\n"
                            "if direct=$(cat \"$1/corpus/input.txt\" 2>&1); then\n"
                            "  echo \"direct=$direct\"\n"
                            "else\n"
                            "  echo direct=unreadable\n"
                            "fi\n");
    p.write(".tea/corpus/input.txt", "corpus-content");
    p.commit();
    test::write_file((p.eval() / "probes" / "only.json").string(),
                     R"({"entry": "t", "args": [")" + fs::canonical(p.eval()).string() +
                         R"("], "corpus": {"in/input.txt": "input.txt"}})");
    (void)git(p.root(), {"commit", "-q", "-am", "probe"});
    const auto stdout_of = [](const test::Outcome &o) {
        return test::read_file(
            (run_dir_of(o) / "trials" / "1" / "calls" / "01-only.stdout").string());
    };

    const auto confined = p.run();
    const auto out = stdout_of(confined);
    EXPECT_NE(out.find("copy=corpus-content\n"), std::string::npos) << out << confined.err;
    EXPECT_NE(out.find("direct=unreadable\n"), std::string::npos) << out;
    const auto record = read_json(run_dir_of(confined) / "run.json");
    const auto seen = record["trials"][0]["observedMounts"].dump();
    EXPECT_NE(seen.find("corpus"), std::string::npos) << seen;

    const auto opted_out = p.tea({"--backend", "opt-out", "--json", "run", p.eval().string()});
    const auto control = stdout_of(opted_out);
    EXPECT_NE(control.find("copy=corpus-content\n"), std::string::npos) << control;
    EXPECT_NE(control.find("direct=corpus-content\n"), std::string::npos) << control;
}

}  // namespace
}  // namespace tea

namespace tea {
namespace {

// The lines of the first call's stdout of a run.
std::string first_call_output(const test::Outcome &run) {
    return test::read_file(
        (run_dir_of(run) / "trials" / "1" / "calls" / "01-only.stdout").string());
}

// A target that prints the history it sees and tries the project's git directory ($1).
constexpr const char *kHistoryAndGitDir =
    "#!/bin/sh\n"
    "echo \"commits=$(git log --oneline | wc -l)\"\n"
    "echo \"head=$(git rev-parse HEAD)\"\n"
    "echo \"gitdir=$(ls -A \"$1\" 2>/dev/null | wc -l)\"\n"
    "cat \"$1/HEAD\" >/dev/null 2>&1 && echo gitdir-head-read || echo gitdir-head-unreadable\n";

void write_history_evaluation(Project &p, const fs::path &git_dir) {
    write_simple_evaluation(p, "", kHistoryAndGitDir);
    p.write(".tea/probes/only.json", R"({"entry": "t", "args": [")" + git_dir.string() + R"("]})");
    p.commit();
    p.write("README", "two\n");
    p.commit();
}

// The project's work tree is a linked worktree or a submodule: the target's history is the
// checkout's own (same count, same HEAD), and the main repository's git directory is an empty
// view whose every access is listed (exit 3). Control: on the host it is there and readable.
void expect_history_without_the_git_dir(const Project &p, const fs::path &project,
                                        const fs::path &git_dir) {
    const auto commits = first_line(git(project, {"rev-list", "--count", "HEAD"}));
    const auto head = first_line(git(project, {"rev-parse", "HEAD"}));
    const auto run =
        test::run({TEA_EVALUATE_BIN, "--json", "run", (project / ".tea").string()}, p.env());
    EXPECT_EQ(run.status, 3) << run.err;  // the target looked at the git directory: listed
    EXPECT_NE(run.err.find(git_dir.string()), std::string::npos) << run.err;
    const auto out = first_call_output(run);
    EXPECT_NE(out.find("commits=" + commits + "\n"), std::string::npos) << out;
    EXPECT_NE(out.find("head=" + head + "\n"), std::string::npos) << out;
    EXPECT_NE(out.find("gitdir=0\n"), std::string::npos) << out;
    EXPECT_NE(out.find("gitdir-head-unreadable"), std::string::npos) << out;
    // Control: the git directory holds a repository the host reads.
    EXPECT_TRUE(fs::is_regular_file(git_dir / "HEAD"));
    EXPECT_FALSE(fs::is_empty(git_dir));
}

TEST(Run, ALinkedWorktreeGetsItsHistoryAndNotTheMainGitDirectory) {
    Project p{"linked"};
    write_history_evaluation(p, p.root() / ".git");
    const auto linked = p.root().parent_path() / "linked";
    (void)git(p.root(), {"worktree", "add", "-q", "--detach", linked.string(), "HEAD~1"});
    expect_history_without_the_git_dir(p, linked, p.root() / ".git");

    // exec in place in the linked worktree: its .git file is shown naming the private repository,
    // whose history is the worktree's own; a commit fails and the main repository is unchanged.
    const auto exec =
        p.tea({"exec", "--backend", "bubblewrap", "--workspace", linked.string(), "--", "sh", "-c",
               "echo \"commits=$(git log --oneline | wc -l)\"; cat .git; "
               "git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x "
               "2>/dev/null && echo committed || echo commit-failed"});
    EXPECT_EQ(exec.status, 0) << exec.err;
    EXPECT_NE(exec.out.find("commits=1\n"), std::string::npos) << exec.out;
    EXPECT_NE(exec.out.find("gitdir: " + p.private_root().string() + "/run-"), std::string::npos)
        << exec.out;
    EXPECT_NE(exec.out.find("commit-failed"), std::string::npos) << exec.out;
    EXPECT_EQ(first_line(git(p.root(), {"rev-list", "--count", "--all"})), "2");
    EXPECT_NE(test::read_file((linked / ".git").string()).find(p.root().string()),
              std::string::npos);
}

TEST(Run, ASubmoduleGetsItsHistoryAndNotItsGitDirectory) {
    Project p{"submodule"};
    const auto super = p.root().parent_path() / "super";
    // Inside the superproject the submodule's git directory is .git/modules/sub.
    const auto git_dir = super / ".git" / "modules" / "sub";
    write_history_evaluation(p, git_dir);
    fs::create_directories(super);
    (void)git(super, {"init", "-q"});
    (void)git(super, {"-c", "protocol.file.allow=always", "submodule", "add", "-q",
                      "file://" + p.root().string(), "sub"});
    (void)git(super, {"commit", "-q", "-m", "with the submodule"});
    ASSERT_TRUE(fs::is_regular_file(super / "sub" / ".git"));
    expect_history_without_the_git_dir(p, super / "sub", git_dir);
}

// A project in a folder of its repository, which an exec target in that folder turned into a
// repository of its own with a forged target: run evaluates the folder of the project's commit or
// nothing. Found by discovery, the planted repository's commit was the one evaluated (the forged
// target passed) and the project's git directory was left in view of the trials. Control: before
// the plant, the same run evaluates the project's own target.
TEST(Run, ARepositoryPlantedInTheProjectFolderIsRefused) {
    Project p{"planted"};
    p.write("task/bin/t", "#!/bin/sh\necho honest\n", true);
    p.write("task/.tea/evaluation.json",
            R"({"registry": [{"interfaceId": "t", "executable": "t", "target": "bin/t",
                 "maxElapsedMs": 60000}],
                "evaluator": {"command": ["evaluator/grade.sh"]}})");
    p.write("task/.tea/probes/only.json", R"({"entry": "t"})");
    p.write("task/.tea/evaluator/grade.sh", "#!/bin/sh\necho '{\"verdict\": \"pass\"}'\n", true);
    p.commit();
    const auto folder = p.root() / "task";
    const auto run = [&] {
        return test::run({TEA_EVALUATE_BIN, "--json", "run", (folder / ".tea").string()}, p.env());
    };
    const auto before = run();
    ASSERT_EQ(before.status, 0) << before.err;
    EXPECT_EQ(first_call_output(before), "honest\n");

    const auto plant =
        p.tea({"exec", "--backend", "bubblewrap", "--workspace", folder.string(), "--", "sh", "-c",
               "git init -q && printf '#!/bin/sh\\necho forged\\n' > bin/t && git add -A && "
               "git -c user.name=t -c user.email=t@t commit -qm forged"});
    ASSERT_EQ(plant.status, 0) << plant.err;
    ASSERT_TRUE(fs::is_directory(folder / ".git"));
    const auto after = run();
    EXPECT_EQ(after.status, 2) << after.err;
    EXPECT_NE(after.err.find((folder / ".git").string()), std::string::npos) << after.err;
    EXPECT_NE(after.err.find("tracks as its folder task"), std::string::npos) << after.err;
    EXPECT_TRUE(run_dir_of(after).empty()) << after.out;
}

}  // namespace
}  // namespace tea

namespace tea {
namespace {

// exec in place in a checkout at its repository's root: the target's .git is a private
// repository of HEAD's history without the --withhold folder, the project's git directory (and
// its configuration) is out of view, git commit fails, and the work tree's own changes show in
// git status. Control: unconfined (opt-out), the same script reads the project's repository and
// commits into it.
TEST(Exec, ACheckoutAtItsRootGetsAPrivateHistoryAndCannotCommit) {
    Project p{"exec-git"};
    p.write(".tea/answers.txt", "SECRET-ANSWER\n");
    p.write("README", "one\n");
    p.commit();
    p.write("README", "two\n");
    p.commit();
    (void)git(p.root(), {"config", "tea.marker", "project"});
    p.write("README", "uncommitted\n");  // exec runs in the user's checkout as it is
    const std::string script =
        "echo \"commits=$(git log --oneline | wc -l)\"\n"
        "echo \"evaltree=$(git ls-tree -r HEAD .tea | wc -l)\"\n"
        "echo \"show=[$(git show HEAD:.tea/answers.txt 2>/dev/null)]\"\n"
        "echo \"marker=[$(git config tea.marker)]\"\n"
        "echo \"status=$(git status --porcelain | tr '\\n' ' ')\"\n"
        "git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x 2>/dev/null"
        " && echo committed || echo commit-failed\n";
    const auto exec = [&](const std::string &backend) {
        return p.tea({"exec", "--backend", backend, "--workspace", p.root().string(), "--withhold",
                      p.eval().string(), "--", "sh", "-c", script});
    };
    const auto confined = exec("bubblewrap");
    EXPECT_EQ(confined.status, 0) << confined.err;
    EXPECT_NE(confined.out.find("commits=2\n"), std::string::npos) << confined.out;
    EXPECT_NE(confined.out.find("evaltree=0\n"), std::string::npos) << confined.out;
    EXPECT_NE(confined.out.find("show=[]\n"), std::string::npos) << confined.out;
    EXPECT_NE(confined.out.find("marker=[]\n"), std::string::npos) << confined.out;
    EXPECT_NE(confined.out.find("status= M README \n"), std::string::npos) << confined.out;
    EXPECT_NE(confined.out.find("commit-failed"), std::string::npos) << confined.out;
    // The project's own git directory was neither read nor written: only the withheld folder,
    // which git status looked into, is listed.
    EXPECT_EQ(confined.err.find((p.root() / ".git").string()), std::string::npos) << confined.err;
    EXPECT_EQ(first_line(git(p.root(), {"rev-list", "--count", "HEAD"})), "2");
    EXPECT_EQ(test::read_file((p.root() / "README").string()), "uncommitted\n");
    EXPECT_EQ(p.leftover_run_dirs(), 0U);

    // Control: without the confinement the same script reads the project's repository, the
    // grading material in its history included, and commits into it.
    const auto open = exec("opt-out");
    EXPECT_EQ(open.status, 0) << open.err;
    EXPECT_NE(open.out.find("evaltree=1\n"), std::string::npos) << open.out;
    EXPECT_NE(open.out.find("show=[SECRET-ANSWER]\n"), std::string::npos) << open.out;
    EXPECT_NE(open.out.find("marker=[project]\n"), std::string::npos) << open.out;
    EXPECT_NE(open.out.find("committed"), std::string::npos) << open.out;
    EXPECT_EQ(first_line(git(p.root(), {"rev-list", "--count", "HEAD"})), "3");
}

}  // namespace
}  // namespace tea

namespace tea {
namespace {

// Listening sockets under /run, where every call looks for the host's and which stays the host's
// in every view: one of root's (masked whatever the room, or the call is refused) and three of
// another user's (masked while the room lasts). Each is open to every user, so only a mask keeps
// the target out. Closed, and the directory removed, on destruction.
class HostSockets {
   public:
    // Neither root, a system account (below 1000), the invoker nor the sandbox account.
    static constexpr uid_t kOtherUser = 2999999;

    HostSockets() {
        dir_ = fs::path{"/run"} / ("tea-run-test-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(::time(nullptr)));
        fs::create_directories(dir_);
        ::chmod(dir_.c_str(), 0755);
        root_ = bind(dir_ / "root.sock", 0);
        for (int i = 0; i < 3; ++i) {
            others_.push_back(bind(dir_ / ("other-" + std::to_string(i) + ".sock"), kOtherUser));
        }
    }
    HostSockets(const HostSockets &) = delete;
    HostSockets &operator=(const HostSockets &) = delete;
    ~HostSockets() {
        for (const int fd : fds_) ::close(fd);
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    [[nodiscard]] const fs::path &dir() const { return dir_; }
    [[nodiscard]] const std::string &root() const { return root_; }
    [[nodiscard]] const std::vector<std::string> &others() const { return others_; }
    [[nodiscard]] std::vector<std::string> all() const {
        std::vector<std::string> every{root_};
        every.insert(every.end(), others_.begin(), others_.end());
        return every;
    }

   private:
    std::string bind(const fs::path &path, uid_t owner) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        EXPECT_GE(fd, 0);
        fds_.push_back(fd);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
        EXPECT_EQ(::bind(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr), 0) << path;
        EXPECT_EQ(::listen(fd, 64), 0);
        EXPECT_EQ(::chown(path.c_str(), owner, owner), 0) << path;
        EXPECT_EQ(::chmod(path.c_str(), 0777), 0) << path;
        return path.string();
    }

    fs::path dir_;
    std::string root_;
    std::vector<std::string> others_;
    std::vector<int> fds_;
};

// Connects to each socket named on its command line: "PATH OK" or "PATH DENIED:<errno name>".
constexpr const char *kConnectProbe = R"PY(#!/usr/bin/python3 -I
import errno, socket, sys
for path in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(path)
        print(path + " OK")
    except OSError as e:
        print(path + " DENIED:" + errno.errorcode.get(e.errno, str(e.errno)))
    finally:
        s.close()
)PY";

// A project of two trials whose one probe connects to every socket of `sockets`.
void write_socket_evaluation(Project &p, const HostSockets &sockets) {
    write_simple_evaluation(p, R"(, "trials": 2)", kConnectProbe);
    p.write(".tea/probes/only.json", json{{"entry", "t"}, {"args", sockets.all()}}.dump());
    p.commit();
}

// tea-evaluate in a network namespace of its own, where /proc/net/unix lists none of the host's
// sockets, and with `room` for socket masks and a walk for socket files of `sockets`' directory
// alone: its calls find exactly the test's four sockets, however many other processes of the host
// bind or remove sockets meanwhile.
test::Outcome tea_among(const Project &p, const HostSockets &sockets, std::size_t room,
                        std::vector<std::string> args) {
    const auto config = p.root().parent_path() / ("room-" + std::to_string(room) + ".toml");
    test::write_file(config.string(),
                     "[plugin.bubblewrap]\nmax_socket_masks = " + std::to_string(room) +
                         "\nsocket_dirs = [\"" + sockets.dir().string() + "\"]\n");
    args.insert(args.begin(),
                {"/usr/bin/unshare", "--net", "--", TEA_EVALUATE_BIN, "--config", config.string()});
    return test::run(args, p.env());
}

std::string call_output(const fs::path &run_dir, int trial) {
    return test::read_file(
        (run_dir / "trials" / std::to_string(trial) / "calls" / "01-only.stdout").string());
}

// max_socket_masks bounds the host sockets a call masks; root's come first. With room for all four
// sockets, all are masked and hostSocketTruncation is empty. With room for two, root's and the
// first of the other user's are masked and the other two stay reachable: each trial is listed with
// its counts and those two paths, the summary names the trials, and the run is not Invalid for it
// (the confinement spec records it, nothing more). Controls: the test itself reaches every socket,
// and what the record lists as reachable is what the target reached.
TEST(Run, UnixSocketsOfOtherUsersBeyondTheMaskRoomAreRecordedAndNamed) {
    if (::geteuid() != 0) GTEST_SKIP() << "binds sockets under /run and hands them to another uid";
    const HostSockets sockets;
    Project p{"socket-room"};
    write_socket_evaluation(p, sockets);
    const auto all = sockets.all();

    // Control: outside any confinement every socket answers.
    std::vector<std::string> probe{"/usr/bin/python3", "-I", "-c", kConnectProbe};
    probe.insert(probe.end(), all.begin(), all.end());
    const auto open = test::run(probe, test::environment_with({}));
    for (const auto &s : all) {
        EXPECT_NE(open.out.find(s + " OK"), std::string::npos) << open.out << open.err;
    }

    // Fewer sockets than the room: every one masked, nothing recorded.
    const auto roomy = tea_among(p, sockets, all.size() + 1, {"--json", "run", p.eval().string()});
    ASSERT_EQ(roomy.status, 0) << roomy.err;
    const auto roomy_dir = run_dir_of(roomy);
    const auto roomy_record = read_json(roomy_dir / "run.json");
    EXPECT_TRUE(roomy_record["hostSocketTruncation"].empty()) << roomy_record.dump(2);
    EXPECT_EQ(roomy_record["summary"].get<std::string>().find("socket"), std::string::npos)
        << roomy_record["summary"];
    for (int trial = 1; trial <= 2; ++trial) {
        const auto at = static_cast<std::size_t>(trial - 1);
        const auto out = call_output(roomy_dir, trial);
        for (const auto &s : all) {
            EXPECT_NE(out.find(s + " DENIED:ECONNREFUSED"), std::string::npos) << out;
        }
        EXPECT_FALSE(roomy_record["trials"][at]["calls"][0].contains("socketsLeftReachable"));
    }

    // Two sockets more than the room.
    const std::vector<std::string> open_ones{sockets.others()[1], sockets.others()[2]};
    const auto tight = tea_among(p, sockets, 2, {"--json", "run", p.eval().string()});
    ASSERT_EQ(tight.status, 0) << tight.err;
    const auto tight_dir = run_dir_of(tight);
    const auto record = read_json(tight_dir / "run.json");
    EXPECT_EQ(record["status"], "complete");
    ASSERT_EQ(record["hostSocketTruncation"].size(), 2U) << record.dump(2);
    for (int trial = 1; trial <= 2; ++trial) {
        const auto at = static_cast<std::size_t>(trial - 1);
        const auto &entry = record["hostSocketTruncation"][at];
        EXPECT_EQ(entry["conditionArm"], "run");
        EXPECT_EQ(entry["trialIndex"], trial);
        EXPECT_EQ(entry["calls"], 1);
        EXPECT_EQ(entry["truncatedCalls"], 1);
        EXPECT_EQ(entry["socketsLeftReachable"], json(open_ones)) << entry.dump();
        EXPECT_EQ(record["trials"][at]["calls"][0]["socketsLeftReachable"], json(open_ones));
        const auto out = call_output(tight_dir, trial);
        for (const auto &s : all) {
            const bool left_open = s == open_ones[0] || s == open_ones[1];
            EXPECT_NE(out.find(s + (left_open ? " OK" : " DENIED:ECONNREFUSED")), std::string::npos)
                << s << "\n"
                << out;
        }
    }
    EXPECT_NE(
        record["summary"].get<std::string>().find("host sockets left reachable in trials 1, 2"),
        std::string::npos)
        << record["summary"];
    EXPECT_NE(tight.err.find("host sockets left reachable in trials 1, 2"), std::string::npos)
        << tight.err;
    expect_schema_valid(tight_dir / "run.json", "run.schema.json");
    const auto score = p.tea({"score", tight_dir.string()});
    EXPECT_EQ(score.status, 0) << score.err;

    // exec and preflight say so as well.
    const auto exec_ws = p.root().parent_path() / "exec-ws";
    fs::create_directories(exec_ws);
    const auto tight_exec = tea_among(p, sockets, 2,
                                      {"--json", "exec", "--observer", "none", "--workspace",
                                       exec_ws.string(), "--", "/bin/true"});
    EXPECT_EQ(tight_exec.status, 0) << tight_exec.err;
    EXPECT_NE(tight_exec.err.find("2 host socket(s) stayed reachable"), std::string::npos)
        << tight_exec.err;
    EXPECT_EQ(json::parse(tight_exec.out)["backendReport"]["socketsLeftReachable"],
              json(open_ones));
    const auto preflight = tea_among(p, sockets, 2, {"preflight", p.eval().string()});
    EXPECT_EQ(preflight.status, 0) << preflight.err;
    EXPECT_NE(preflight.err.find("1 call of leg 2 left 2 host socket(s) reachable"),
              std::string::npos)
        << preflight.err;
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
}

// Root's sockets (and the system's, and the invoker's) are never left reachable: more of them than
// the room stops the run with exit 12 naming the count and the room, before any target starts.
// Control: the same run with room for them runs (the test above).
TEST(Run, UnixSocketsOfRootBeyondTheMaskRoomStopTheRun) {
    if (::geteuid() != 0) GTEST_SKIP() << "binds sockets under /run and hands them to another uid";
    const HostSockets sockets;
    Project p{"socket-no-room"};
    write_socket_evaluation(p, sockets);
    const auto run = tea_among(p, sockets, 0, {"--json", "run", p.eval().string()});
    EXPECT_EQ(run.status, 12) << run.err;
    EXPECT_NE(run.err.find("1 host sockets of root, system accounts and this user must be masked, "
                           "but the room is 0"),
              std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find("max_socket_masks"), std::string::npos) << run.err;
    for (const auto &e : fs::directory_iterator(p.eval() / "runs")) {
        const auto record = read_json(e.path() / "run.json");
        EXPECT_EQ(record["status"], "failed") << record.dump(2);
        EXPECT_TRUE(record["trials"].empty()) << record.dump(2);
        EXPECT_FALSE(fs::exists(e.path() / "trials" / "1" / "calls" / "01-only.stdout"));
    }
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
}

// A tool server that answers as its argument says: "good" answers every request, "junk" prints a
// line that is no JSON and exits at its first request, "silent" answers only the handshake,
// "daemon" leaves a process holding its stdout open and exits instead of answering.
constexpr const char *kScriptedToolServer = R"(#!/usr/bin/python3
import json, sys
mode = sys.argv[1]
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if mode == "junk":
        print("not json at all", flush=True)
        sys.exit(5)
    if msg["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "scripted", "version": "1"}}
    elif mode == "silent":
        continue
    elif mode == "daemon":
        import os, time
        if os.fork() == 0:
            os.setsid()
            time.sleep(300)
        sys.exit(0)
    else:
        result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
)";

TEST(RunToolServer, EachProbeTalksToItsOwnServerAndALyingServerSpoilsOnlyItsProbe) {
    Project p{"tool-server"};
    p.write("bin/server", kScriptedToolServer, true);
    p.write(".tea/evaluation.json", R"({
        "registry": [
          {"interfaceId": "good", "kind": "toolServer", "executable": "server",
           "target": "bin/server", "args": ["good"], "maxElapsedMs": 60000},
          {"interfaceId": "junk", "kind": "toolServer", "executable": "server",
           "target": "bin/server", "args": ["junk"], "maxElapsedMs": 60000},
          {"interfaceId": "silent", "kind": "toolServer", "executable": "server",
           "target": "bin/server", "args": ["silent"], "maxElapsedMs": 60000},
          {"interfaceId": "daemon", "kind": "toolServer", "executable": "server",
           "target": "bin/server", "args": ["daemon"], "maxElapsedMs": 60000}],
        "evaluator": {"command": ["evaluator/grade.sh"]}})");
    p.write(".tea/probes/01-list.json", R"({"entry": "good", "method": "tools/list",
        "expect": {"result": {"tools": [{"name": "echo"}]}}})");
    p.write(".tea/probes/02-wrong.json", R"({"entry": "good", "method": "tools/list",
        "expect": {"result": {"tools": [{"name": "other"}]}}})");
    p.write(".tea/probes/03-junk.json", R"({"entry": "junk", "method": "tools/list",
        "expect": {"result": {}}})");
    p.write(".tea/probes/04-silent.json",
            R"({"entry": "silent", "method": "tools/list", "timeoutMs": 1500})");
    p.write(".tea/probes/05-daemon.json",
            R"({"entry": "daemon", "method": "tools/list", "timeoutMs": 30000})");
    p.write(".tea/evaluator/grade.sh", "#!/bin/sh\necho '{\"verdict\": \"pass\"}'\n", true);
    p.commit();
    const auto check = p.tea({"check", p.eval().string()});
    ASSERT_EQ(check.status, 0) << check.err;
    const auto run = p.run();
    ASSERT_EQ(run.status, 0) << run.err;
    const auto dir = run_dir_of(run);
    const auto record = read_json(dir / "run.json");
    const auto &calls = record["trials"][0]["calls"];
    ASSERT_EQ(calls.size(), 5U) << record.dump(2);

    const auto &list = calls[0];
    EXPECT_EQ(list["args"], json::array({"good"})) << list.dump(2);
    EXPECT_TRUE(list["stdout"].is_null());
    EXPECT_TRUE(list["endedByRuntime"]) << list.dump(2);
    ASSERT_EQ(list["exchanges"].size(), 3U) << list.dump(2);  // the handshake's two, the request
    EXPECT_EQ(list["exchanges"][0]["method"], "initialize");
    EXPECT_EQ(list["exchanges"][2]["method"], "tools/list");
    EXPECT_EQ(list["exchanges"][2]["outcome"], "result");
    EXPECT_EQ(list["exchanges"][2]["protocol"], "mcp");
    EXPECT_EQ(list["expect"], (json{{"met", true}, {"differences", json::array()}}));

    const auto &wrong = calls[1];
    EXPECT_FALSE(wrong["expect"]["met"]) << wrong.dump(2);
    ASSERT_EQ(wrong["expect"]["differences"].size(), 1U);
    EXPECT_NE(wrong["expect"]["differences"][0].get<std::string>().find("result.tools[0].name"),
              std::string::npos)
        << wrong.dump(2);

    const auto &junk = calls[2];
    ASSERT_FALSE(junk["peerEvents"].empty()) << junk.dump(2);
    EXPECT_EQ(junk["peerEvents"][0]["kind"], "notJson");
    EXPECT_EQ(junk["peerEvents"][0]["line"], "not json at all");
    EXPECT_EQ(junk["exchanges"][0]["outcome"], "closed") << junk.dump(2);
    EXPECT_FALSE(junk["expect"]["met"]);
    EXPECT_EQ(junk["exitCode"], 5);

    const auto &silent = calls[3];
    ASSERT_EQ(silent["exchanges"].size(), 3U) << silent.dump(2);
    EXPECT_EQ(silent["exchanges"][2]["outcome"], "timedOut");
    EXPECT_FALSE(silent.contains("expect"));
    EXPECT_TRUE(silent["endedByRuntime"]);
    EXPECT_LT(silent["elapsedMs"].get<double>(), 30000.0) << "ended at the request's timeout";

    // The process it left holding its stdout ends with the call, and so does the wait.
    const auto &daemon = calls[4];
    EXPECT_EQ(daemon["exchanges"].back()["outcome"], "closed") << daemon.dump(2);
    EXPECT_LT(daemon["elapsedMs"].get<double>(), 20000.0) << daemon.dump(2);
    expect_schema_valid(dir / "run.json", "run.schema.json");
    const auto score = p.tea({"score", dir.string()});
    EXPECT_EQ(score.status, 0) << score.err;
    EXPECT_EQ(p.leftover_run_dirs(), 0U);

    // Only a conversation's record may name no stdout file: one without its exchanges is missing
    // its output, and the score says so instead of passing it.
    auto edited = record;
    edited["trials"][0]["calls"][0].erase("exchanges");
    p.write(fs::relative(dir / "run.json", p.root()).string(), edited.dump(2));
    const auto tampered = p.tea({"score", dir.string()});
    EXPECT_NE(tampered.status, 0) << tampered.err;
    EXPECT_NE(tampered.err.find("call 01-list: its output records are missing"), std::string::npos)
        << tampered.err;
}

// examples/mcp-filesystem with its evaluation folder's path in the probe that reads it.
void copy_filesystem_example(Project &p, bool confined) {
    p.copy_example("mcp-filesystem");
    const auto probe = p.eval() / "probes/03-evaluation.json";
    auto text = test::read_file(probe.string());
    text.replace(text.find("@EVALUATION@"), 12, p.eval().string());
    p.write(".tea/probes/03-evaluation.json", text);
    if (!confined) {
        auto doc = read_json(p.eval() / "evaluation.json");
        doc["confinement"] = false;
        p.write(".tea/evaluation.json", doc.dump(2));
    }
    p.commit();
}

// The answer's text of a tools/call exchange (the probe's request, the call's last exchange).
std::string tool_text(const json &call) {
    const auto response = json::parse(call["exchanges"].back()["response"].get<std::string>());
    return response["result"]["content"][0]["text"].get<std::string>();
}
bool tool_error(const json &call) {
    const auto response = json::parse(call["exchanges"].back()["response"].get<std::string>());
    return response["result"].value("isError", false);
}

// The pinned @modelcontextprotocol/server-filesystem, told it may serve "/" as well as its
// workspace: its own path checks let everything through, so only the confinement stands between
// it and the grading material. Under each observer of the build: the server works alike, and its
// read of the evaluation folder is listed by each.
class RunToolServerEachObserver : public ::testing::TestWithParam<const char *> {};

TEST_P(RunToolServerEachObserver,
       TheFilesystemServerListsItsWorkspaceAndTheConfinementStopsItsReads) {
    ASSERT_TRUE(fs::exists(TEA_TEST_MCP_FILESYSTEM)) << "run scripts/install-deps.sh";
    Project p{"mcp-filesystem"};
    copy_filesystem_example(p, true);
    const auto run = p.tea({"--json", "--observer", GetParam(), "run", p.eval().string()});
    EXPECT_EQ(run.status, 3) << run.err;
    EXPECT_NE(run.err.find("access to always-listed " + p.eval().string()), std::string::npos)
        << run.err;
    const auto dir = run_dir_of(run);
    const auto record = read_json(dir / "run.json");
    EXPECT_EQ(record["observer"], GetParam());
    const auto &calls = record["trials"][0]["calls"];
    ASSERT_EQ(calls.size(), 3U) << record.dump(2);
    EXPECT_EQ(calls[0]["expect"]["met"], true) << calls[0].dump(2);
    EXPECT_NE(tool_text(calls[0]).find("[FILE] hello.txt"), std::string::npos);
    // The sandbox identity (or the invoker, who is not root) may not read the shadow file.
    EXPECT_TRUE(tool_error(calls[1])) << calls[1].dump(2);
    EXPECT_NE(tool_text(calls[1]).find("EACCES"), std::string::npos) << calls[1].dump(2);
    // The evaluation folder is withheld: the server finds nothing there, and the audit lists it.
    EXPECT_TRUE(tool_error(calls[2])) << calls[2].dump(2);
    EXPECT_NE(tool_text(calls[2]).find("ENOENT"), std::string::npos) << calls[2].dump(2);
    const auto &seen = calls[2]["observedMounts"];
    EXPECT_NE(std::find(seen.begin(), seen.end(), (p.eval() / "evaluation.json").string()),
              seen.end())
        << seen.dump();
    expect_schema_valid(dir / "run.json", "run.schema.json");
    const auto score = p.tea({"score", dir.string()});
    EXPECT_EQ(score.status, 3) << score.err;
    EXPECT_EQ(score.err.find("records are missing"), std::string::npos) << score.err;
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
}

INSTANTIATE_TEST_SUITE_P(Observers, RunToolServerEachObserver,
                         ::testing::ValuesIn(test::observers_of_the_build()));

// The control: the same server, opted out, reads what the confined one could not.
TEST(RunToolServer, TheFilesystemServerOptedOutReadsWhatTheConfinedOneCouldNot) {
    ASSERT_TRUE(fs::exists(TEA_TEST_MCP_FILESYSTEM)) << "run scripts/install-deps.sh";
    Project p{"mcp-filesystem-opt-out"};
    copy_filesystem_example(p, false);
    const auto run = p.run();
    EXPECT_EQ(run.status, 0) << run.err;
    const auto record = read_json(run_dir_of(run) / "run.json");
    const auto &calls = record["trials"][0]["calls"];
    ASSERT_EQ(calls.size(), 3U) << record.dump(2);
    if (::geteuid() == 0) {
        EXPECT_FALSE(tool_error(calls[1])) << calls[1].dump(2);
        EXPECT_NE(tool_text(calls[1]).find("root:"), std::string::npos);
    }
    EXPECT_FALSE(tool_error(calls[2])) << calls[2].dump(2);
    EXPECT_NE(tool_text(calls[2]).find("\"toolServer\""), std::string::npos) << calls[2].dump(2);
}

// The MCP TypeScript SDK's own streamable HTTP server (tests/core/services/mcp_http_sdk_server.mjs)
// as a toolServer entry over HTTP: started confined, its port reported, spoken to through the
// bridge with answers as event streams; opted out (the control) the same conversation holds.
TEST(RunToolServer, AnHttpToolServerIsSpokenToThroughTheBridge) {
    const std::string deps = "/var/cache/tea-evaluate-deps";
    const std::string modules = deps + "/mcp-server-filesystem-2026.8.31/node_modules";
    ASSERT_TRUE(fs::exists(modules + "/@modelcontextprotocol/sdk"))
        << "run scripts/install-deps.sh";
    for (const bool confined : {true, false}) {
        SCOPED_TRACE(confined ? "confined" : "opted out");
        Project p{confined ? "mcp-http" : "mcp-http-opt-out"};
        p.write(
            "bin/server.mjs",
            test::read_file((kSource / "tests/core/services/mcp_http_sdk_server.mjs").string()));
        p.write("bin/sdk-server",
                "#!/bin/sh\nexec " + deps +
                    "/node-22.23.5/bin/node \"$(dirname \"$0\")/server.mjs\" \"$@\"\n",
                true);
        p.write(".tea/evaluation.json",
                json{{"confinement", confined},
                     {"registry", json::array({{{"interfaceId", "sdk"},
                                                {"kind", "toolServer"},
                                                {"transport", "http"},
                                                {"executable", "sdk-server"},
                                                {"target", "bin/sdk-server"},
                                                {"args", json::array({modules, "sse"})},
                                                {"systemPaths", json::array({deps})},
                                                {"maxElapsedMs", 60000}}})},
                     {"evaluator", {{"command", json::array({"evaluator/grade.sh"})}}}}
                    .dump(2));
        p.write(".tea/probes/01-list.json", R"({"entry": "sdk", "method": "tools/list",
            "expect": {"result": {"tools": [{"name": "echo"}, {"name": "session"}]}}})");
        p.write(".tea/probes/02-echo.json", R"({"entry": "sdk", "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}},
            "expect": {"result": {"content": [{"type": "text", "text": "echo: hi"}]}}})");
        p.write(".tea/evaluator/grade.sh", "#!/bin/sh\necho '{\"verdict\": \"pass\"}'\n", true);
        p.commit();
        const auto check = p.tea({"check", p.eval().string()});
        ASSERT_EQ(check.status, 0) << check.err;
        const auto run = p.run();
        EXPECT_EQ(run.status, 0) << run.err;
        const auto dir = run_dir_of(run);
        const auto record = read_json(dir / "run.json");
        const auto &calls = record["trials"][0]["calls"];
        ASSERT_EQ(calls.size(), 2U) << record.dump(2);
        for (const auto &call : calls) {
            EXPECT_EQ(call["expect"]["met"], true) << call.dump(2);
            EXPECT_TRUE(call["service"]["refusal"].is_null()) << call.dump(2);
            EXPECT_GE(call["service"]["connections"].get<int>(), 2) << call.dump(2);
            EXPECT_EQ(call["exchanges"][0]["transport"], "http") << call.dump(2);
            EXPECT_TRUE(call["stdout"].is_string()) << call.dump(2);
        }
        EXPECT_TRUE(record["servicesFailed"].empty()) << record.dump(2);
        expect_schema_valid(dir / "run.json", "run.schema.json");
        EXPECT_EQ(p.leftover_run_dirs(), 0U);
    }
}

// A tool server that says its login's token in every place a toolServer call record keeps: a
// line that is no JSON (a peer event), its answer, and its stderr.
void write_login_tool_server(Project &p, const std::string &login, bool confined) {
    p.write("bin/server",
            "#!/usr/bin/python3\n"
            "import json, os, sys\n"
            "token = os.environ.get('CLAUDE_CODE_OAUTH_TOKEN', 'none')\n"
            "print('stray ' + token, file=sys.stderr, flush=True)\n"
            "for line in sys.stdin:\n"
            "    msg = json.loads(line)\n"
            "    if 'id' in msg:\n"
            "        print('banner ' + token, flush=True)\n"
            "        print(json.dumps({'jsonrpc': '2.0', 'id': msg['id'],\n"
            "                          'result': {'said': token}}), flush=True)\n",
            true);
    p.write(".tea/evaluation.json",
            R"({"confinement": )" + std::string{confined ? "true" : "false"} +
                R"(, "registry": [{"interfaceId": "agent", "kind": "toolServer",
                 "executable": "server", "target": "bin/server", "maxElapsedMs": 60000)" +
                (login.empty() ? "" : R"(, "login": ")" + login + "\"") + R"(}],
                "evaluator": {"command": ["evaluator/grade.sh"]}})");
    p.write(".tea/probes/only.json", R"({"entry": "agent", "method": "tools/list"})");
    p.write(".tea/evaluator/grade.sh", "#!/bin/sh\necho '{\"verdict\": \"pass\"}'\n", true);
    p.commit();
}

TEST(RunLogin, WhatAToolServerSaysOfItsTokenIsRedactedInEveryRecord) {
    Project p{"login-tool-server"};
    write_login_tool_server(p, "claude", true);
    const auto home = p.root().parent_path() / "home";
    fs::create_directories(home);
    const auto run = tea_in(login_env(p, home, kToken), {"--json", "run", p.eval().string()});
    ASSERT_EQ(run.status, 0) << run.err;
    const auto dir = run_dir_of(run);
    const auto call = read_json(dir / "trials/1/calls/01-only.json");
    ASSERT_FALSE(call["peerEvents"].empty()) << call.dump(2);
    EXPECT_EQ(call["peerEvents"][0]["line"], "banner [redacted]");
    EXPECT_NE(call["exchanges"].back()["response"].get<std::string>().find("[redacted]"),
              std::string::npos)
        << call.dump(2);
    EXPECT_EQ(files_holding(dir, kToken), "");
    EXPECT_EQ(run.err.find(kToken), std::string::npos) << run.err;

    // The control: opted out and with no login, the same server's token is in the records.
    Project q{"login-tool-server-control"};
    write_login_tool_server(q, "", false);
    const auto control = tea_in(login_env(q, home, kToken), {"--json", "run", q.eval().string()});
    ASSERT_EQ(control.status, 0) << control.err;
    EXPECT_NE(files_holding(run_dir_of(control), kToken), "");
}

// The processes whose command line holds `text`.
std::vector<std::string> running_with(const std::string &text) {
    std::vector<std::string> out;
    for (const auto &process : test::processes_holding({text})) {
        out.push_back(std::to_string(process.pid));
    }
    return out;
}

// A service of an http entry that behaves as its arguments say:
//   serve [ADDRESS]   binds ADDRESS (127.0.0.1 by default), reports its port and answers
//                     GET /file?path=P with P's bytes (200) or the error's name (404);
//   port TEXT         writes TEXT in its port file and serves nothing;
//   link              makes its port file a link to /etc/passwd;
//   silent            never writes its port file;
//   daemon MARKER     leaves a process of its own session behind (its argv holds MARKER), then
//                     serves as `serve` does.
constexpr const char *kHttpService = R"(#!/usr/bin/python3
import http.server, os, sys, time, urllib.parse
mode = sys.argv[1]
port_file = os.environ["TEA_PORT_FILE"]
def idle():
    while True:
        time.sleep(60)
if mode == "port":
    with open(port_file, "w") as f:
        f.write(sys.argv[2])
    idle()
if mode == "link":
    os.unlink(port_file)
    os.symlink("/etc/passwd", port_file)
    idle()
if mode == "silent":
    idle()
if mode == "daemon":
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", "300", sys.argv[2]])
        os._exit(0)
    os.wait()
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        status, body = 404, b"no route"
        if url.path == "/file":
            try:
                with open(urllib.parse.parse_qs(url.query)["path"][0], "rb") as f:
                    status, body = 200, f.read()
            except OSError as e:
                status, body = 404, (e.__class__.__name__ + " " + str(e.errno)).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
bind = sys.argv[2] if mode == "serve" and len(sys.argv) > 2 else "127.0.0.1"
server = http.server.HTTPServer((bind, 0), Handler)
with open(port_file, "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
)";

// One http entry per service in `services` (name -> its args), each probed once with GET `path`.
void write_http_evaluation(Project &p, const std::vector<std::pair<std::string, json>> &services,
                           const std::string &path, bool confined, int max_elapsed_ms = 60000) {
    p.write("bin/service", kHttpService, true);
    json doc{{"confinement", confined},
             {"registry", json::array()},
             {"evaluator", {{"command", json::array({"evaluator/grade.sh"})}}}};
    int n = 0;
    for (const auto &[name, args] : services) {
        doc["registry"].push_back({{"interfaceId", name},
                                   {"kind", "http"},
                                   {"executable", "service"},
                                   {"target", "bin/service"},
                                   {"args", args},
                                   {"maxElapsedMs", max_elapsed_ms}});
        p.write(".tea/probes/0" + std::to_string(++n) + "-" + name + ".json",
                json{{"entry", name}, {"request", {{"method", "GET"}, {"path", path}}}}.dump());
    }
    p.write(".tea/evaluation.json", doc.dump(2));
    p.write(".tea/evaluator/grade.sh", "#!/bin/sh\necho '{\"verdict\": \"pass\"}'\n", true);
    p.commit();
}

// The body the service answered a call with ("" when no answer came).
std::string answered_body(const json &call) {
    if (!call.contains("exchanges") || call["exchanges"].empty()) return "";
    return call["exchanges"][0]["responseBody"].get<std::string>();
}

// examples/http-service: a notes service started confined for each probe, reached through the
// bridge by the runtime's requests, its answers compared with each probe's expect.
TEST(RunHttp, TheNotesExampleIsServedThroughTheBridge) {
    Project p{"http-notes"};
    p.copy_example("http-service");
    p.commit();
    const auto check = p.tea({"check", p.eval().string()});
    ASSERT_EQ(check.status, 0) << check.err;
    const auto run = p.run();
    ASSERT_EQ(run.status, 0) << run.err
                             << read_json(run_dir_of(run) / "run.json")["trials"].dump(2);
    const auto dir = run_dir_of(run);
    const auto record = read_json(dir / "run.json");
    EXPECT_EQ(record["confinement"], "bubblewrap") << record.dump(2);
    const auto &calls = record["trials"][0]["calls"];
    ASSERT_EQ(calls.size(), 4U) << record.dump(2);
    for (const auto &call : calls) {
        EXPECT_EQ(call["expect"]["met"], true) << call.dump(2);
        EXPECT_TRUE(call["endedByRuntime"]) << call.dump(2);
        EXPECT_EQ(call["service"]["connections"], 1) << call.dump(2);
        EXPECT_TRUE(call["service"]["refusal"].is_null()) << call.dump(2);
        EXPECT_EQ(call["exchanges"][0]["protocol"], "http");
        EXPECT_FALSE(call["infrastructureError"]);
    }
    EXPECT_EQ(answered_body(calls[2]), "buy milk\n");
    EXPECT_EQ(record["trials"][0]["verdict"]["verdict"], "pass") << record.dump(2);
    EXPECT_TRUE(record["servicesFailed"].empty());
    EXPECT_EQ(record["trials"][0]["observedMounts"], json::array()) << record.dump(2);
    expect_schema_valid(dir / "run.json", "run.schema.json");
    EXPECT_EQ(p.tea({"score", dir.string()}).status, 0);
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
}

// A confined service asked for the grading material finds nothing, and the audit lists the
// attempt; opted out (the control), the same service hands it over.
TEST(RunHttp, AConfinedServiceCannotServeTheGradingMaterial) {
    for (const bool confined : {true, false}) {
        SCOPED_TRACE(confined ? "confined" : "opted out");
        Project p{confined ? "http-leak" : "http-leak-opt-out"};
        write_http_evaluation(p, {{"web", json::array({"serve"})}},
                              "/file?path=" + (p.eval() / "evaluation.json").string(), confined);
        const auto run = p.run();
        const auto record = read_json(run_dir_of(run) / "run.json");
        const auto &call = record["trials"][0]["calls"][0];
        if (confined) {
            EXPECT_EQ(run.status, 3) << run.err;
            EXPECT_EQ(call["exchanges"][0]["status"], 404) << call.dump(2);
            EXPECT_NE(answered_body(call).find("FileNotFoundError"), std::string::npos);
            const auto &seen = call["observedMounts"];
            EXPECT_NE(std::find(seen.begin(), seen.end(), (p.eval() / "evaluation.json").string()),
                      seen.end())
                << seen.dump();
        } else {
            EXPECT_EQ(run.status, 0) << run.err;
            EXPECT_EQ(call["exchanges"][0]["status"], 200) << call.dump(2);
            EXPECT_NE(answered_body(call).find("\"registry\""), std::string::npos);
        }
        EXPECT_EQ(p.leftover_run_dirs(), 0U);
    }
}

// A service listening on every address of its network is refused, named and recorded; the run
// goes on, and its summary names the service. Control: the same service on 127.0.0.1 is served.
TEST(RunHttp, AServiceOnEveryAddressIsRefusedAndNamed) {
    Project p{"http-any-address"};
    write_http_evaluation(
        p, {{"anywhere", json::array({"serve", "0.0.0.0"})}, {"loopback", json::array({"serve"})}},
        "/file?path=/dev/null", true);
    const auto run = p.run();
    ASSERT_EQ(run.status, 0) << run.err;
    const auto record = read_json(run_dir_of(run) / "run.json");
    const auto &calls = record["trials"][0]["calls"];
    ASSERT_EQ(calls.size(), 2U) << record.dump(2);
    const auto refusal = calls[0]["service"]["refusal"];
    ASSERT_TRUE(refusal.is_string()) << calls[0].dump(2);
    EXPECT_NE(refusal.get<std::string>().find("0.0.0.0"), std::string::npos) << refusal;
    EXPECT_TRUE(calls[0]["exchanges"].empty());
    EXPECT_FALSE(calls[0]["infrastructureError"]);
    ASSERT_EQ(record["servicesFailed"].size(), 1U) << record.dump(2);
    EXPECT_EQ(record["servicesFailed"][0]["entry"], "anywhere");
    EXPECT_NE(record["summary"].get<std::string>().find(
                  "services that failed to start: entry 'anywhere' in trial 1"),
              std::string::npos)
        << record["summary"];
    EXPECT_TRUE(calls[1]["service"]["refusal"].is_null()) << calls[1].dump(2);
    EXPECT_EQ(calls[1]["exchanges"][0]["status"], 200) << calls[1].dump(2);
    expect_schema_valid(run_dir_of(run) / "run.json", "run.schema.json");
}

// What a port file may hold is a port the service listens on inside its own network: garbage, a
// number out of range and a link are refused with what they held; a port of a host process is
// not reachable from the call's network; a service that never reports is an infrastructure error
// once maxElapsedMs has passed. Nothing is left running.
TEST(RunHttp, PortFilesThatLieAreRefusedAndNothingIsLeftRunning) {
    std::uint16_t host_port_number = 0;
    const int host = test::listen_loopback(AF_INET, host_port_number);
    ASSERT_GE(host, 0);
    const auto host_port = std::to_string(host_port_number);
    const std::string marker = "tea-http-daemon-" + std::to_string(::getpid());
    Project p{"http-port-files"};
    write_http_evaluation(p,
                          {{"garbage", json::array({"port", "eighty"})},
                           {"huge", json::array({"port", "99999"})},
                           {"link", json::array({"link"})},
                           {"hostport", json::array({"port", host_port})},
                           {"silent", json::array({"silent"})},
                           {"daemon", json::array({"daemon", marker})}},
                          "/file?path=/dev/null", true, 4000);
    const auto run = p.run();
    ::close(host);
    ASSERT_EQ(run.status, 0) << run.err;
    const auto record = read_json(run_dir_of(run) / "run.json");
    const auto &calls = record["trials"][0]["calls"];
    ASSERT_EQ(calls.size(), 6U) << record.dump(2);
    const auto refusal = [&](std::size_t i) {
        const auto &r = calls[i]["service"]["refusal"];
        return r.is_string() ? r.get<std::string>() : std::string{"(none)"};
    };
    EXPECT_NE(refusal(0).find("eighty"), std::string::npos) << refusal(0);
    EXPECT_NE(refusal(1).find("99999"), std::string::npos) << refusal(1);
    EXPECT_NE(refusal(2).find("link"), std::string::npos) << refusal(2);
    EXPECT_NE(refusal(3).find("nothing listens on port " + host_port), std::string::npos)
        << refusal(3);
    EXPECT_NE(refusal(4).find("wrote no port"), std::string::npos) << refusal(4);
    for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_FALSE(calls[i]["infrastructureError"]) << calls[i].dump(2);
    }
    EXPECT_TRUE(calls[4]["infrastructureError"]) << calls[4].dump(2);
    EXPECT_EQ(record["trials"][0]["infrastructureErrors"], 1);
    EXPECT_EQ(calls[5]["exchanges"][0]["status"], 200) << calls[5].dump(2);
    EXPECT_EQ(record["servicesFailed"].size(), 5U) << record.dump(2);
    EXPECT_TRUE(running_with(marker).empty()) << "the service's daemon outlived its trial";
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
}

// The control of a port file naming a host process's port: opted out, the service shares the
// host's network, and the bridge carries the request to that process.
TEST(RunHttp, APortOfAHostProcessIsReachedOnlyOptedOut) {
    std::uint16_t host_port_number = 0;
    const int host = test::listen_loopback(AF_INET, host_port_number);
    ASSERT_GE(host, 0);
    std::thread answer{[host] {
        const int c = ::accept4(host, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        char buf[4096];
        (void)::recv(c, buf, sizeof buf, 0);
        const std::string reply = "HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\nhost";
        (void)::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
        ::close(c);
    }};
    Project p{"http-host-port-opt-out"};
    write_http_evaluation(p,
                          {{"hostport", json::array({"port", std::to_string(host_port_number)})}},
                          "/", false, 10000);
    const auto run = p.run();
    ::shutdown(host, SHUT_RDWR);
    answer.join();
    ::close(host);
    EXPECT_EQ(run.status, 0) << run.err;
    const auto record = read_json(run_dir_of(run) / "run.json");
    const auto &call = record["trials"][0]["calls"][0];
    EXPECT_EQ(answered_body(call), "host") << call.dump(2);
}

// qualify: the arms are runs of the real binary under bubblewrap and strace, as run's trials are.
test::Outcome qualify(const Project &p) {
    return p.tea({"--json", "qualify", p.eval().string()});
}

json qualification_of(const test::Outcome &o) {
    return json::parse(o.out, nullptr, false);
}

TEST(Qualify, TheQuickstartDetectsOneMutationAndNamesTheOneItMisses) {
    Project p{"qualify"};
    p.copy_example("quickstart");
    p.commit();
    const auto q = qualify(p);
    EXPECT_EQ(q.status, 1) << q.err;
    const auto record = qualification_of(q);
    ASSERT_TRUE(record.is_object()) << q.out;
    EXPECT_EQ(record["verdict"], "not qualified");
    EXPECT_EQ(record["mutationScore"], (json{{"detected", 1}, {"total", 2}}));
    EXPECT_EQ(record["undetected"], json::array({"usage-exits-zero"}));
    EXPECT_EQ(record["baseline"], "pass");
    EXPECT_EQ(record["repass"], "pass");
    EXPECT_NE(q.err.find("mutation score 1/2 (undetected: usage-exits-zero)"), std::string::npos)
        << q.err;
    ASSERT_EQ(record["arms"].size(), 4U);
    const std::vector<std::pair<std::string, std::string>> arms{{"baseline", ""},
                                                                {"mutated", "count-lines"},
                                                                {"mutated", "usage-exits-zero"},
                                                                {"repass", ""}};
    const auto dirs = fs::path{record["arms"][0]["runDir"].get<std::string>()}.parent_path();
    const auto qualification =
        dirs / ("qualify-" + record["qualificationId"].get<std::string>()) / "qualification.json";
    EXPECT_EQ(read_json(qualification), record);
    expect_schema_valid(qualification, "qualification.schema.json");
    for (std::size_t i = 0; i < arms.size(); ++i) {
        const auto &arm = record["arms"][i];
        EXPECT_EQ(arm["conditionArm"], arms[i].first);
        const fs::path dir = arm["runDir"].get<std::string>();
        const auto run = read_json(dir / "run.json");
        const auto manifest = read_json(dir / "manifest.json");
        EXPECT_EQ(run["conditionArm"], arms[i].first);
        EXPECT_EQ(manifest["conditionArm"], arms[i].first);
        EXPECT_EQ(run.value("mutation", ""), arms[i].second);
        EXPECT_EQ(run["status"], "complete");
        EXPECT_EQ(run["confinement"], "bubblewrap");
        EXPECT_EQ(run["observer"], auto_observer(p));
        expect_schema_valid(dir / "run.json", "run.schema.json");
        expect_schema_valid(dir / "manifest.json", "manifest.schema.json");
    }
    // The mutated arm ran the mutated target (it counted lines); the baseline ran the committed
    // one.
    const auto stdout_of = [&](std::size_t arm) {
        const fs::path dir = record["arms"][arm]["runDir"].get<std::string>();
        return test::read_file((dir / "trials" / "1" / "calls" / "01-count-file.stdout").string());
    };
    EXPECT_EQ(stdout_of(0), "9\n");
    EXPECT_EQ(stdout_of(1), "2\n");
    EXPECT_EQ(record["arms"][1]["detected"], true);
    EXPECT_EQ(record["arms"][2]["detected"], false);
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
    // score EVAL_DIR takes the latest run, the re-pass, and not the qualification's folder.
    const auto score = p.tea({"score", p.eval().string()});
    EXPECT_EQ(score.status, 0) << score.err;
    EXPECT_NE(score.err.find(record["arms"][3]["runId"].get<std::string>()), std::string::npos);

    // With only the mutation its probes catch, the evaluation qualifies.
    fs::remove_all(p.eval() / "mutations" / "usage-exits-zero");
    const auto again = qualify(p);
    EXPECT_EQ(again.status, 0) << again.err;
    EXPECT_EQ(qualification_of(again)["verdict"], "qualified");
    EXPECT_EQ(qualification_of(again)["mutationScore"], (json{{"detected", 1}, {"total", 1}}));
}

// The quickstart without its own mutations, changed by `plant`, committed and qualified: the
// record, the exit status checked, and what qualify printed on stderr in *err.
json qualify_quickstart(Project &p, const std::function<void()> &plant, int status,
                        std::string *err) {
    p.copy_example("quickstart");
    fs::remove_all(p.eval() / "mutations");
    plant();
    p.commit();
    const auto q = qualify(p);
    EXPECT_EQ(q.status, status) << q.err;
    *err = q.err;
    return qualification_of(q);
}

TEST(Qualify, ABaselineThatFailsIsNotQualified) {
    Project p{"qualify-baseline"};
    std::string err;
    const auto record = qualify_quickstart(
        p, [&] { p.write("bin/wordcount", "#!/bin/sh\necho 0\n", true); }, 1, &err);
    EXPECT_EQ(record["verdict"], "not qualified");
    EXPECT_EQ(record["baseline"], "fail");
    EXPECT_EQ(record["repass"], "fail");
    EXPECT_NE(err.find("baseline did not pass (fail)"), std::string::npos) << err;
}

TEST(Qualify, AnArmWhoseAuditListsAPathIsInvalid) {
    Project p{"qualify-invalid"};
    std::string err;
    // The mutated target looks into the grading material before it answers.
    const auto record = qualify_quickstart(
        p,
        [&] {
            p.write(".tea/mutations/peek/bin/wordcount",
                    "#!/bin/sh\ncat " + (p.eval() / "evaluator" / "answers.json").string() +
                        " >/dev/null 2>&1\nexec wc -w \"$2\"\n",
                    true);
        },
        3, &err);
    EXPECT_EQ(record["verdict"], "invalid");
    // Control: the same evaluation without the mutation reached nothing outside its grants.
    EXPECT_EQ(record["baseline"], "pass");
    EXPECT_EQ(record["repass"], "pass");
    EXPECT_EQ(record["arms"][1]["verdict"], "invalid");
    EXPECT_NE(err.find("mutated arm peek (run "), std::string::npos) << err;
    EXPECT_NE(err.find("mount outside allowlist: " + p.eval().string()), std::string::npos) << err;
}

// A patch in git's format of `rel` holding `content`, made against the project's commit.
std::string patch_of(const Project &p, const std::string &rel, const std::string &content) {
    const auto before = test::read_file((p.root() / rel).string());
    test::write_file((p.root() / rel).string(), content);
    const auto diff =
        test::run({"git", "-C", p.root().string(), "diff", "--", rel}, test::environment_with({}));
    test::write_file((p.root() / rel).string(), before);
    return diff.out;
}

TEST(Qualify, BadMutationsAreRefusedBeforeAnyArmRuns) {
    Project p{"qualify-bad"};
    write_simple_evaluation(p);
    p.commit();
    const auto good = patch_of(p, "bin/t", "#!/bin/sh\necho no\n");
    const auto mutations = p.eval() / "mutations";
    const auto refused = [&](const std::function<void()> &plant, const std::string &file,
                             const std::string &why) {
        fs::remove_all(mutations);
        fs::create_directories(mutations);
        // A good mutation beside the bad one: nothing of it runs either.
        test::write_file((mutations / "good.patch").string(), good);
        plant();
        const auto q = qualify(p);
        EXPECT_EQ(q.status, 2) << file << ": " << q.err;
        EXPECT_NE(q.err.find(file), std::string::npos) << q.err;
        EXPECT_NE(q.err.find(why), std::string::npos) << q.err;
        // No arm began: an arm's first act is its run's records folder.
        EXPECT_FALSE(fs::exists(p.eval() / "runs")) << file;
    };
    refused(
        [&] {
            test::write_file((mutations / "stale.patch").string(),
                             patch_of(p, "bin/t", "#!/bin/sh\necho other\n") + "");
            // The patch is made against a line the commit does not hold.
            auto text = test::read_file((mutations / "stale.patch").string());
            text.replace(text.find("-echo ok"), 8, "-echo no");
            test::write_file((mutations / "stale.patch").string(), text);
        },
        "mutations/stale.patch", "does not apply");
    refused(
        [&] {
            test::write_file((mutations / "grader.patch").string(),
                             patch_of(p, ".tea/evaluator/grade.sh", "#!/bin/sh\necho x\n"));
        },
        "mutations/grader.patch", "is in the evaluation folder .tea");
    refused([&] { p.write(".tea/mutations/grader/.tea/probes/only.json", "{}"); },
            "mutations/grader/", "is in the evaluation folder .tea");
    refused([&] { p.write(".tea/mutations/hook/.git/hooks/pre-commit", "#!/bin/sh\n", true); },
            "mutations/hook/", "touches a .git entry");
    refused([&] { fs::create_symlink(mutations / "good.patch", mutations / "linked.patch"); },
            "mutations/linked.patch", "is a symbolic link");
    refused(
        [&] {
            fs::create_directories(mutations / "inner" / "bin");
            fs::create_symlink("/etc/passwd", mutations / "inner" / "bin" / "t");
        },
        "mutations/inner/bin/t", "is a symbolic link");
    refused(
        [&] {
            test::write_file((mutations / "link.patch").string(),
                             "diff --git a/bin/link b/bin/link\nnew file mode 120000\n"
                             "index 0000000..e69de29\n--- /dev/null\n+++ b/bin/link\n"
                             "@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n");
        },
        "mutations/link.patch", "becomes a symbolic link");
    refused([&] { p.write(".tea/mutations/huge/bin/t", std::string((2U << 20U), 'x'), true); },
            "mutations/huge/bin/t", "more than the 1 MiB");
    refused([&] { p.write(".tea/mutations/bad name/bin/t", "#!/bin/sh\n", true); },
            "mutations/bad name/", "the name 'bad name'");
    refused([&] { p.write(".tea/mutations/notes.txt", "x"); }, "mutations/notes.txt",
            "neither a <name>.patch file nor a <name>/ folder");

    // Control: the good mutation alone runs every arm, the mutated target among them.
    fs::remove_all(mutations);
    fs::create_directories(mutations);
    test::write_file((mutations / "good.patch").string(), good);
    const auto q = qualify(p);
    EXPECT_EQ(q.status, 1) << q.err;  // its answer passes the evaluator: not detected
    const auto record = qualification_of(q);
    EXPECT_EQ(record["undetected"], json::array({"good"}));
    ASSERT_EQ(record["arms"].size(), 3U) << q.out;
    const fs::path mutated = record["arms"][1]["runDir"].get<std::string>();
    EXPECT_EQ(test::read_file((mutated / "trials/1/calls/01-only.stdout").string()), "no\n");
}

TEST(Qualify, EveryArmStartsWithAnEmptyHome) {
    Project p{"qualify-home"};
    p.write("bin/t",
            "#!/bin/sh\n"
            "case \"$1\" in\n"
            "first) [ -e \"$HOME/marker\" ] && echo carried; echo planted >\"$HOME/marker\";;\n"
            "second) [ -e \"$HOME/marker\" ] && echo seen;;\n"
            "esac\n"
            "exit 0\n",
            true);
    p.write(".tea/evaluation.json",
            R"({"trials": 1, "registry": [{"interfaceId": "t", "executable": "t",
                 "target": "bin/t", "maxElapsedMs": 60000}],
                "evaluator": {"command": ["evaluator/grade.sh"]}})");
    p.write(".tea/probes/first.json", R"({"entry": "t", "args": ["first"]})");
    p.write(".tea/probes/second.json", R"({"entry": "t", "args": ["second"]})");
    p.write(".tea/evaluator/grade.sh", "#!/bin/sh\necho '{\"verdict\": \"pass\"}'\n", true);
    p.write(".tea/mutations/extra/bin/extra", "#!/bin/sh\n", true);
    p.commit();
    const auto q = qualify(p);
    EXPECT_EQ(q.status, 1) << q.err;  // the mutation changes nothing the probes see
    const auto record = qualification_of(q);
    ASSERT_EQ(record["arms"].size(), 3U) << q.out;
    for (const auto &arm : record["arms"]) {
        const fs::path calls = fs::path{arm["runDir"].get<std::string>()} / "trials/1/calls";
        // Control: the write happened, and a later call of the same trial saw it.
        EXPECT_EQ(test::read_file((calls / "02-second.stdout").string()), "seen\n") << arm;
        // No arm found what an arm before it planted.
        EXPECT_EQ(test::read_file((calls / "01-first.stdout").string()), "") << arm;
    }
}

TEST(Qualify, SigkillLeavesNothingTheNextQualifyDoesNotReclaim) {
    Project p{"qualify-sigkill"};
    write_simple_evaluation(p, "", "#!/bin/sh\necho started\nexec sleep 60\n");
    p.commit();
    const pid_t pid = spawn_run(p, {}, "qualify");
    ASSERT_TRUE(wait_for_start(p));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    // Control: the killed arm left its private directories behind.
    EXPECT_GE(p.leftover_run_dirs(), 1U);
    p.write("bin/t", "#!/bin/sh\necho ok\n", true);
    p.commit();
    const auto q = qualify(p);
    EXPECT_EQ(q.status, 0) << q.err;
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
}

// What two qualifications of the same commit may differ in: ids (in the text that names them
// too), times, durations, the memory a call peaked at, the folders named after ids and the
// private directories' random names. Removed or masked at every depth.
json without_ids_and_times(json j) {
    static const std::vector<std::string> varying{
        "qualificationId", "runId",   "runDir", "startedAt",
        "finishedAt",      "records", "id",     "memoryPeakBytes"};
    static const std::regex id{R"(\d{8}T\d{6}\.\d{6}Z-[A-Za-z0-9]{6})"};
    static const std::regex random_name{R"(-[A-Za-z0-9]{12}(/|$))"};
    if (j.is_string()) {
        const auto text = std::regex_replace(j.get<std::string>(), id, "ID");
        return std::regex_replace(text, random_name, "-RANDOM$1");
    }
    if (j.is_object()) {
        for (const auto &key : varying) j.erase(key);
        for (auto it = j.begin(); it != j.end();) {
            if (it.key().size() > 2 && it.key().ends_with("Ms")) {
                it = j.erase(it);
            } else {
                *it = without_ids_and_times(*it);
                ++it;
            }
        }
    } else if (j.is_array()) {
        for (auto &e : j) e = without_ids_and_times(e);
    }
    return j;
}

TEST(Qualify, JobsTwoWritesTheRecordsJobsOneWrites) {
    Project p{"qualify-jobs"};
    p.copy_example("quickstart");
    p.commit();
    const auto one = p.tea({"--json", "qualify", p.eval().string(), "--jobs", "1"});
    const auto two = p.tea({"--json", "qualify", p.eval().string(), "--jobs", "2"});
    EXPECT_EQ(one.status, 1) << one.err;
    EXPECT_EQ(two.status, 1) << two.err;
    const auto first = qualification_of(one);
    const auto second = qualification_of(two);
    ASSERT_TRUE(second.is_object()) << two.out;
    ASSERT_EQ(first["arms"].size(), 4U) << one.out;
    ASSERT_EQ(second["arms"].size(), 4U) << two.out;
    EXPECT_TRUE(without_ids_and_times(first) == without_ids_and_times(second))
        << json::diff(without_ids_and_times(first), without_ids_and_times(second)).dump();
    const auto dirs = fs::path{second["arms"][0]["runDir"].get<std::string>()}.parent_path();
    const auto written =
        dirs / ("qualify-" + second["qualificationId"].get<std::string>()) / "qualification.json";
    EXPECT_EQ(read_json(written), second);
    expect_schema_valid(written, "qualification.schema.json");
    for (std::size_t i = 0; i < 4; ++i) {
        const fs::path a = first["arms"][i]["runDir"].get<std::string>();
        const fs::path b = second["arms"][i]["runDir"].get<std::string>();
        for (const char *record : {"run.json", "manifest.json"}) {
            const auto left = read_json(a / record);
            ASSERT_TRUE(left.is_object()) << a / record;
            const auto right = read_json(b / record);
            EXPECT_TRUE(without_ids_and_times(left) == without_ids_and_times(right))
                << "arm " << i << ": " << record << ": "
                << json::diff(without_ids_and_times(left), without_ids_and_times(right)).dump();
        }
    }
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
}

// Each arm's run.json, in the qualification's order.
std::vector<json> arm_runs(const json &qualification) {
    std::vector<json> runs;
    for (const auto &arm : qualification["arms"]) {
        runs.push_back(read_json(fs::path{arm["runDir"].get<std::string>()} / "run.json"));
    }
    return runs;
}

TEST(Qualify, JobsTwoRunsTheBaselineAndAMutatedArmAtOnceAndTheRepassAfter) {
    Project p{"qualify-overlap"};
    // Each arm's trial lasts two seconds, so arms one after another cannot share a second of
    // their run.json's start and end times.
    write_simple_evaluation(p, "", "#!/bin/sh\nsleep 2\necho ok\n");
    p.write(".tea/mutations/silent/bin/t", "#!/bin/sh\nsleep 2\n", true);
    p.commit();
    const auto overlap = [](const json &a, const json &b) {
        return a["startedAt"].get<std::string>() < b["finishedAt"].get<std::string>() &&
               b["startedAt"].get<std::string>() < a["finishedAt"].get<std::string>();
    };
    for (const char *jobs : {"2", "1"}) {
        const auto q = p.tea({"--json", "qualify", p.eval().string(), "--jobs", jobs});
        EXPECT_EQ(q.status, 1) << q.err;  // the mutation passes: the grader accepts anything
        const auto record = qualification_of(q);
        ASSERT_EQ(record["arms"].size(), 3U) << q.out;
        const auto runs = arm_runs(record);
        // Control (--jobs 1): the same probe sees the arms one after another.
        EXPECT_EQ(overlap(runs[0], runs[1]), std::string{jobs} == "2") << jobs;
        for (std::size_t arm = 0; arm < 2; ++arm) {
            EXPECT_LE(runs[arm]["finishedAt"].get<std::string>(),
                      runs[2]["startedAt"].get<std::string>())
                << "the re-pass began before arm " << arm << " ended (--jobs " << jobs << ")";
        }
    }
}

// How many processes have every one of `needles` in their command line.
std::size_t processes_with(const std::vector<std::string> &needles) {
    return test::processes_holding(needles).size();
}

// A target that writes a line and then sleeps `seconds`, an argument no process of another
// test has.
std::string task_target(const std::string &seconds) {
    return "#!/bin/sh\necho started\nexec sleep " + seconds + "\n";
}
// The command lines of task_target(seconds)'s targets.
std::vector<std::string> task_sleep(const std::string &seconds) {
    return {"sleep" + std::string(1, '\0') + seconds};
}

// Waits until `count` targets of task_target(seconds) run.
bool wait_for_targets(const std::string &seconds, std::size_t count) {
    for (int i = 0; i < 600; ++i) {
        if (processes_with(task_sleep(seconds)) >= count) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
    return false;
}

// Waits until no process has every one of `needles` in its command line.
bool wait_for_none(const std::vector<std::string> &needles) {
    for (int i = 0; i < 300; ++i) {
        if (processes_with(needles) == 0) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds{100});
    }
    return false;
}

// The arm processes of p's qualify --jobs: their command lines name the evaluation and --arm.
std::vector<std::string> arms_of(const Project &p) {
    return {p.eval().string(), "--arm"};
}

// A qualify --jobs 2 of two arms whose targets wait a minute, sent `signal_number` once both
// targets have started; its wait status. Control: the probes see both arms and both targets
// just before the signal.
// The targets wait `seconds` (59.NNN), a value no other test's processes have.
int signal_two_long_arms(Project &p, int signal_number, const std::string &seconds) {
    write_simple_evaluation(p, "", task_target(seconds));
    p.write(".tea/mutations/other/bin/t", task_target(seconds), true);
    p.commit();
    const pid_t pid = spawn_run(p, {}, "qualify", {"--jobs", "2"});
    // The targets themselves, not their first line: a shell that has written it may not have
    // become the sleep yet.
    EXPECT_TRUE(wait_for_targets(seconds, 2));
    EXPECT_EQ(processes_with(arms_of(p)), 2U);
    EXPECT_EQ(processes_with(task_sleep(seconds)), 2U);
    EXPECT_EQ(::kill(pid, signal_number), 0);
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    return status;
}

TEST(Qualify, SigtermDuringJobsTwoEndsEveryArmAndLeavesNothing) {
    Project p{"qualify-jobs-sigterm"};
    const auto started = std::chrono::steady_clock::now();
    const int status = signal_two_long_arms(p, SIGTERM, "59.375");
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds{50});
    EXPECT_EQ(processes_with(arms_of(p)), 0U);
    EXPECT_TRUE(wait_for_none(task_sleep("59.375")));
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
    std::size_t interrupted_runs = 0;
    json qualification;
    for (const auto &e : fs::directory_iterator(p.eval() / "runs")) {
        if (e.path().filename().string().starts_with("qualify-")) {
            qualification = read_json(e.path() / "qualification.json");
        } else {
            interrupted_runs += read_json(e.path() / "run.json")["status"] == "interrupted";
        }
    }
    EXPECT_EQ(interrupted_runs, 2U);
    EXPECT_EQ(qualification["status"], "interrupted") << qualification.dump(2);
    EXPECT_EQ(qualification["arms"].size(), 0U) << qualification.dump(2);
}

TEST(Qualify, SigkillOfAQualifyWithJobsTwoEndsItsArmsAndTheNextQualifyReclaims) {
    Project p{"qualify-jobs-sigkill"};
    (void)signal_two_long_arms(p, SIGKILL, "59.5");
    EXPECT_TRUE(wait_for_none(arms_of(p)));
    EXPECT_TRUE(wait_for_none(task_sleep("59.5")));
    p.write("bin/t", "#!/bin/sh\necho ok\n", true);
    fs::remove_all(p.eval() / "mutations");
    p.commit();
    const auto q = p.tea({"--json", "qualify", p.eval().string(), "--jobs", "2"});
    EXPECT_EQ(q.status, 0) << q.err;
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
}

TEST(Qualify, JobsOutsideOneToSixtyFourIsAUsageErrorAndArmIsNotInTheHelp) {
    Project p{"qualify-bad-jobs"};
    write_simple_evaluation(p);
    p.commit();
    for (const char *jobs : {"0", "65", "-1", "two", ""}) {
        const auto q = p.tea({"qualify", p.eval().string(), "--jobs", jobs});
        EXPECT_EQ(q.status, 2) << jobs << ": " << q.err;
        EXPECT_NE(q.err.find("--jobs"), std::string::npos) << jobs << ": " << q.err;
        EXPECT_FALSE(fs::exists(p.eval() / "runs")) << jobs;
    }
    // Control: a value in range runs.
    const auto q = p.tea({"qualify", p.eval().string(), "--jobs", "64"});
    EXPECT_EQ(q.status, 0) << q.err;
    const auto help = p.tea({"qualify", "--help"});
    EXPECT_NE(help.out.find("--jobs"), std::string::npos) << help.out;
    EXPECT_EQ(help.out.find("--arm"), std::string::npos) << help.out;
    // The internal --arm refuses an arm that is not one, and a mutated arm without its mutation
    // (test::run gives it an empty stdin).
    const auto runs_before = std::distance(fs::directory_iterator(p.eval() / "runs"), {});
    for (const auto &[arm, why] : std::vector<std::pair<std::string, std::string>>{
             {"sideways", "no arm sideways"}, {"mutated:x", "stdin holds no mutation"}}) {
        const auto refused = p.tea({"qualify", p.eval().string(), "--arm", arm});
        EXPECT_EQ(refused.status, 2) << arm << ": " << refused.err;
        EXPECT_NE(refused.err.find(why), std::string::npos) << arm << ": " << refused.err;
    }
    EXPECT_EQ(std::distance(fs::directory_iterator(p.eval() / "runs"), {}), runs_before);
}

// ---- run --jobs N: each trial a task of its own (docs/cli.md) ----

// A run.json or manifest.json as without_ids_and_times leaves it, the executor left out too.
json without_executor(json record) {
    record.erase("executor");
    return without_ids_and_times(std::move(record));
}

// The example run one trial at a time, then with `options` (its trials made by tasks); both runs'
// run.json and manifest.json must be the same apart from ids, times and the executor, and both
// runs must end with `expected`. The second run's folder.
fs::path second_run_as_the_first(const Project &p, const std::string &example,
                                 const std::vector<std::string> &options,
                                 const std::vector<std::string> &host, int expected) {
    const auto one = p.tea({"--json", "run", p.eval().string()});
    std::vector<std::string> args{"--json", "run", p.eval().string()};
    args.insert(args.end(), options.begin(), options.end());
    const auto two = p.tea(args, host);
    EXPECT_EQ(one.status, expected) << one.err;
    EXPECT_EQ(two.status, expected) << two.err;
    const auto a = run_dir_of(one);
    const auto b = run_dir_of(two);
    EXPECT_FALSE(b.empty()) << two.out << two.err;
    if (a.empty() || b.empty()) return {};
    for (const char *record : {"run.json", "manifest.json"}) {
        const auto left = without_executor(read_json(a / record));
        const auto right = without_executor(read_json(b / record));
        EXPECT_TRUE(left == right)
            << example << ": " << record << ": " << json::diff(left, right).dump();
    }
    EXPECT_EQ(read_json(a / "run.json")["executor"], (json{{"kind", "local"}, {"jobs", 1}}));
    expect_schema_valid(b / "run.json", "run.schema.json");
    const auto score = p.tea({"score", b.string()});
    EXPECT_EQ(score.status, expected) << score.err;
    if (expected == 3) {
        EXPECT_NE(score.err.find("mount outside allowlist: " + p.eval().string()),
                  std::string::npos)
            << score.err;
    }
    return b;
}

TEST(RunJobs, TwoAtOnceWriteTheRecordsOneAtATimeWrites) {
    for (const char *example : {"quickstart", "leaky-target"}) {
        Project p{std::string{"run-jobs-"} + example};
        p.copy_example(example);
        p.commit();
        const auto b = second_run_as_the_first(p, example, {"--jobs", "2"}, {},
                                               std::string{example} == "quickstart" ? 0 : 3);
        ASSERT_FALSE(b.empty());
        const auto run = read_json(b / "run.json");
        EXPECT_EQ(run["executor"], (json{{"kind", "local"}, {"jobs", 2}}));
        EXPECT_EQ(run["failedTrialTasks"], json::array());
        // The tasks' outcomes are merged into run.json and not kept beside it.
        for (const auto &t : fs::directory_iterator(b / "trials")) {
            EXPECT_FALSE(fs::exists(t.path() / "trial.json")) << t.path();
        }
        EXPECT_EQ(p.leftover_run_dirs(), 0U);
    }
}

// The largest number of targets of p's run seen running at once until the run (pid) ended; its
// wait status in *status. Calls made one after another are never seen two at once.
std::size_t most_targets_at_once(pid_t pid, const std::vector<std::string> &targets, int *status) {
    std::size_t most = 0;
    for (;;) {
        most = std::max(most, processes_with(targets));
        const pid_t ended = ::waitpid(pid, status, WNOHANG);
        if (ended == pid) return most;
        EXPECT_EQ(ended, 0);
        if (ended != 0) return most;
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
}

TEST(RunJobs, JobsTwoMakesTwoTrialsAtOnceAndJobsOneOneAfterTheOther) {
    Project p{"run-jobs-overlap"};
    write_simple_evaluation(p, R"(, "trials": 2)", task_target("4.125"));
    p.commit();
    for (const char *jobs : {"2", "1"}) {
        int status = 0;
        const auto most = most_targets_at_once(spawn_run(p, {}, "run", {"--jobs", jobs}),
                                               task_sleep("4.125"), &status);
        ASSERT_TRUE(WIFEXITED(status)) << jobs;
        EXPECT_EQ(WEXITSTATUS(status), 0) << jobs;
        // Control (--jobs 1): the same probe sees the trials one after another.
        EXPECT_EQ(most, std::string{jobs} == "2" ? 2U : 1U) << "--jobs " << jobs;
    }
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
}

// The task processes of p's run --jobs: their command lines name the evaluation and --trial-task.
std::vector<std::string> tasks_of(const Project &p, const std::string &trial = "") {
    return {p.eval().string(), "--trial-task", trial};
}

// Runs `run --jobs 2` with `options` before the subcommand, SIGKILLs the task of trial 2 once
// both targets (each a `sleep` of `seconds`) run, and returns the run's wait status (-1 when
// the targets never showed or the task was not found: a failure already recorded).
int run_killing_task_two(const Project &p, const std::vector<std::string> &options,
                         const std::string &seconds) {
    const pid_t pid = spawn_run(p, options, "run", {"--jobs", "2"});
    const bool running = wait_for_targets(seconds, 2);
    EXPECT_TRUE(running);
    const auto task = test::processes_holding(tasks_of(p, ":2"));
    EXPECT_EQ(task.size(), 1U);
    // The task's whole process group, as a node's death or an out-of-memory kill would end it.
    if (!running || task.size() != 1U || ::kill(-task[0].pid, SIGKILL) != 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        return -1;
    }
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    return status;
}

TEST(RunJobs, ATaskKilledMakesItsTrialAnInfrastructureErrorAndNeverAPass) {
    Project p{"run-jobs-task-killed"};
    write_simple_evaluation(p, R"(, "trials": 2)", task_target("4.250"));
    p.commit();
    const int status = run_killing_task_two(p, {"--json"}, "4.250");
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 3);  // Invalid: one trial has no verdict
    EXPECT_TRUE(wait_for_none(task_sleep("4.250")));
    EXPECT_TRUE(wait_for_none(tasks_of(p)));
    fs::path dir;
    for (const auto &e : fs::directory_iterator(p.eval() / "runs")) dir = e.path();
    const auto run = read_json(dir / "run.json");
    EXPECT_EQ(run["status"], "complete");
    ASSERT_EQ(run["trials"].size(), 1U) << run.dump(2);
    // The other trial counts as it would have alone: the control in the same run.
    EXPECT_EQ(run["trials"][0]["index"], 1);
    EXPECT_EQ(run["trials"][0]["verdict"]["verdict"], "pass");
    ASSERT_EQ(run["failedTrialTasks"].size(), 1U) << run.dump(2);
    EXPECT_EQ(run["failedTrialTasks"][0]["trialIndex"], 2);
    EXPECT_EQ(run["failedTrialTasks"][0]["status"], 128 + SIGKILL);
    expect_schema_valid(dir / "run.json", "run.schema.json");
    const auto score = p.tea({"score", dir.string()});
    EXPECT_EQ(score.status, 3) << score.err;
    EXPECT_NE(score.err.find("trial 2: its task ended with killed by signal 9"), std::string::npos)
        << score.err;
    // The next run reclaims what the killed task left in the private root.
    p.write("bin/t", "#!/bin/sh\necho ok\n", true);
    p.commit();
    const auto next = p.tea({"--json", "run", p.eval().string(), "--jobs", "2"});
    EXPECT_EQ(next.status, 0) << next.err;
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
}

TEST(RunJobs, WithRetriesATaskKilledIsMadeAgainOnceAndAVerdictNever) {
    Project p{"run-jobs-retried"};
    write_simple_evaluation(p, R"(, "trials": 2)", task_target("4.750"));
    p.commit();
    const auto config = p.root().parent_path() / "retries.toml";
    test::write_file(config.string(), "[executor]\nretries = 1\n");
    const int status = run_killing_task_two(p, {"--config", config.string()}, "4.750");
    ASSERT_TRUE(WIFEXITED(status));
    // Made again, the trial counts: the run is whole, and says that its trial 2 was retried.
    EXPECT_EQ(WEXITSTATUS(status), 0);
    fs::path dir;
    for (const auto &e : fs::directory_iterator(p.eval() / "runs")) dir = e.path();
    const auto run = read_json(dir / "run.json");
    ASSERT_EQ(run["trials"].size(), 2U) << run.dump(2);
    EXPECT_EQ(run["trials"][1]["index"], 2);
    EXPECT_EQ(run["trials"][1]["verdict"]["verdict"], "pass");
    EXPECT_EQ(run["failedTrialTasks"], json::array());
    ASSERT_EQ(run["retriedTrialTasks"].size(), 1U) << run.dump(2);
    EXPECT_EQ(run["retriedTrialTasks"][0]["trialIndex"], 2);
    EXPECT_EQ(run["retriedTrialTasks"][0]["status"], 128 + SIGKILL);
    EXPECT_NE(run["retriedTrialTasks"][0]["reason"].get<std::string>().find(
                  "its task ended with killed by signal 9"),
              std::string::npos)
        << run.dump(2);
    expect_schema_valid(dir / "run.json", "run.schema.json");
    EXPECT_EQ(p.tea({"score", dir.string()}).status, 0);
    // A verdict is the trial's answer, never a failure of its task: a fail is not made again.
    write_simple_evaluation(p, R"(, "trials": 2)", "#!/bin/sh\necho ok\n",
                            "#!/bin/sh\necho '{\"verdict\": \"fail\"}'\n");
    p.commit();
    const auto failed =
        p.tea({"--json", "--config", config.string(), "run", p.eval().string(), "--jobs", "2"});
    EXPECT_EQ(failed.status, 0) << failed.err;
    const auto verdicts = read_json(run_dir_of(failed) / "run.json");
    EXPECT_EQ(verdicts["retriedTrialTasks"], json::array()) << verdicts.dump(2);
    ASSERT_EQ(verdicts["trials"].size(), 2U);
    EXPECT_EQ(verdicts["trials"][0]["verdict"]["verdict"], "fail");
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
}

TEST(RunJobs, SigtermEndsEveryTaskAndSigkillLeavesWhatTheNextRunReclaims) {
    for (const int signal_number : {SIGTERM, SIGKILL}) {
        Project p{"run-jobs-" + std::to_string(signal_number)};
        const std::string seconds = signal_number == SIGTERM ? "4.375" : "4.500";
        write_simple_evaluation(p, R"(, "trials": 2)", task_target(seconds));
        p.commit();
        const pid_t pid = spawn_run(p, {}, "run", {"--jobs", "2"});
        ASSERT_TRUE(wait_for_targets(seconds, 2));
        EXPECT_EQ(processes_with(tasks_of(p)), 2U);
        ASSERT_EQ(::kill(pid, signal_number), 0);
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        // Every task ends with the run, and every target with its task.
        EXPECT_TRUE(wait_for_none(tasks_of(p)));
        EXPECT_TRUE(wait_for_none(task_sleep(seconds)));
        fs::path dir;
        for (const auto &e : fs::directory_iterator(p.eval() / "runs")) dir = e.path();
        if (signal_number == SIGTERM) {
            ASSERT_TRUE(WIFEXITED(status));
            EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
            EXPECT_EQ(read_json(dir / "run.json")["status"], "interrupted");
            EXPECT_EQ(p.leftover_run_dirs(), 0U);
        } else {
            EXPECT_EQ(read_json(dir / "run.json")["status"], "running");
        }
        p.write("bin/t", "#!/bin/sh\necho ok\n", true);
        p.commit();
        const auto next = p.tea({"--json", "run", p.eval().string(), "--jobs", "2"});
        EXPECT_EQ(next.status, 0) << next.err;
        EXPECT_EQ(p.leftover_run_dirs(), 0U) << signal_number;
    }
}

// Runs p with --jobs `jobs` until its target sleeps `seconds`, interrupts the run with SIGTERM,
// and checks what an interrupted run keeps of trial 1: the one refusal its route made, no trial
// made, a valid run.json. Returns the run's folder.
fs::path expect_an_interrupted_run_keeps_its_refusal(const Project &p, const char *jobs,
                                                     const std::string &seconds) {
    const pid_t pid = spawn_run(p, {}, "run", {"--jobs", jobs});
    EXPECT_TRUE(wait_for_targets(seconds, 1));
    EXPECT_EQ(::kill(pid, SIGTERM), 0);
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << status;
    EXPECT_TRUE(wait_for_none(task_sleep(seconds)));
    fs::path dir;
    for (const auto &e : fs::directory_iterator(p.eval() / "runs")) dir = e.path();
    const auto run = read_json(dir / "run.json");
    EXPECT_EQ(run["status"], "interrupted");
    EXPECT_EQ(run["egressRefusals"].size(), 1U) << jobs << ": " << run.dump(2);
    if (run["egressRefusals"].size() == 1U) {
        EXPECT_EQ(run["egressRefusals"][0]["trialIndex"], 1);
        EXPECT_EQ(run["egressRefusals"][0]["refusals"][0]["host"], "not-listed.invalid");
    }
    EXPECT_EQ(run["trials"], json::array());
    expect_schema_valid(dir / "run.json", "run.schema.json");
    return dir;
}

// A run interrupted while a trial's second call runs: the egress refusal of its first call is in
// run.json when a task made the trial (--jobs 2) as when the run made it itself (--jobs 1, the
// control: what a run in one process keeps). The trial itself is not made.
TEST(RunJobs, AnInterruptedTrialsEgressRefusalsAreKeptAsARunInOneProcessKeepsThem) {
    for (const char *jobs : {"2", "1"}) {
        Project p{std::string{"run-jobs-refusals-"} + jobs};
        const std::string target =
            "#!/bin/sh\n"
            "if [ -e called-once ]; then echo started; exec sleep 5.125; fi\n"
            "touch called-once\n"
            "curl -s -o /dev/null -p -x \"$HTTPS_PROXY\" https://not-listed.invalid:443/ || true\n";
        write_egress_evaluation(p, target);
        p.write(".tea/probes/second.json", R"({"entry": "t"})");
        p.commit();
        const auto dir = expect_an_interrupted_run_keeps_its_refusal(p, jobs, "5.125");
        EXPECT_EQ(read_json(dir / "run.json")["failedTrialTasks"], json::array());
        EXPECT_FALSE(fs::exists(dir / "trials" / "1" / "trial.json"));
    }
}

// A run interrupted in the very call whose connection the route refused: that refusal is in
// run.json too, whether a task made the trial (--jobs 2) or the run itself (--jobs 1). Before,
// only the refusals of the calls that had ended were kept. The control is the test above: the
// same refusal in a call that ended is kept either way.
TEST(RunJobs, TheRefusalsOfTheCallARunIsInterruptedInAreKept) {
    for (const char *jobs : {"2", "1"}) {
        Project p{std::string{"run-refused-in-call-"} + jobs};
        const std::string target =
            "#!/bin/sh\n"
            "curl -s -o /dev/null -p -x \"$HTTPS_PROXY\" https://not-listed.invalid:443/ || true\n"
            "echo started; exec sleep 5.375\n";
        write_egress_evaluation(p, target);
        p.commit();
        (void)expect_an_interrupted_run_keeps_its_refusal(p, jobs, "5.375");
    }
}

TEST(RunJobs, JobsOutOfRangeAndTrialTasksThatAreNotOfARunningRunAreRefused) {
    Project p{"run-jobs-refused"};
    write_simple_evaluation(p);
    p.commit();
    for (const char *jobs : {"0", "65", "two"}) {
        const auto r = p.tea({"run", p.eval().string(), "--jobs", jobs});
        EXPECT_EQ(r.status, 2) << jobs << ": " << r.err;
        EXPECT_NE(r.err.find("--jobs"), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(p.eval() / "runs")) << jobs;
    }
    const auto help = p.tea({"run", "--help"});
    EXPECT_NE(help.out.find("--jobs"), std::string::npos) << help.out;
    EXPECT_EQ(help.out.find("--trial-task"), std::string::npos) << help.out;
    // Control: a run that is over.
    const auto done = p.run();
    ASSERT_EQ(done.status, 0) << done.err;
    const auto dir = run_dir_of(done);
    const auto id = dir.filename().string();
    const auto before = test::read_file((dir / "run.json").string());
    for (const auto &[spec, why] : std::vector<std::pair<std::string, std::string>>{
             {id + ":1", "does not say the run is running"},
             {id + ":0", "--trial-task takes RUN_ID:N"},
             {"../" + id + ":1", "--trial-task takes RUN_ID:N"},
             {"20261206T125956.026242Z-NOSUCH:1", "run.json is missing"}}) {
        const auto r = p.tea({"run", p.eval().string(), "--trial-task", spec});
        EXPECT_EQ(r.status, 2) << spec << ": " << r.err;
        EXPECT_NE(r.err.find(why), std::string::npos) << spec << ": " << r.err;
    }
    EXPECT_EQ(test::read_file((dir / "run.json").string()), before);
    EXPECT_FALSE(fs::exists(dir / "trials" / "1" / "trial.json"));
}

// ---- run --executor slurm: the trials as one Slurm job array (docs/scale-out.md) ----

// A single-node Slurm cluster of this machine for one test (scripts/slurm-up.sh), stopped and
// removed with it (scripts/slurm-down.sh).
class SlurmCluster {
   public:
    SlurmCluster() : dir_{"tea-slurm", fs::perms{0755}} {
        const auto up = test::run(
            {"/bin/bash", (kSource / "scripts" / "slurm-up.sh").string(), cluster().string()},
            test::environment_with({}));
        EXPECT_EQ(up.status, 0) << up.err;
        conf_ = up.out.substr(0, up.out.find('\n'));
    }
    SlurmCluster(const SlurmCluster &) = delete;
    SlurmCluster &operator=(const SlurmCluster &) = delete;
    ~SlurmCluster() {
        (void)test::run(
            {"/bin/bash", (kSource / "scripts" / "slurm-down.sh").string(), cluster().string()},
            test::environment_with({}));
    }
    // The variable that points Slurm's commands (and so the runtime's) at this cluster.
    [[nodiscard]] std::string env() const { return "SLURM_CONF=" + conf_; }
    // The jobs the cluster still holds.
    [[nodiscard]] std::string queue() const {
        return test::run({"squeue", "--noheader", "--array"}, test::environment_with({env()})).out;
    }

   private:
    [[nodiscard]] fs::path cluster() const { return dir_.path() / "cluster"; }
    test::TempDir dir_;
    std::string conf_;
};

// This machine's name, as uname(2) gives it.
std::string this_node() {
    utsname names{};
    return ::uname(&names) == 0 ? std::string{names.nodename} : std::string{};
}

// The node check (cli/node_check.hpp), as a node runs it: a node that cannot see the run's folder
// at the path the run wrote it stops the run, naming the node.
TEST(NodeCheck, ANodeThatDoesNotSeeTheRunsFolderIsExit12NamingTheNode) {
    Project p{"node-check"};
    write_simple_evaluation(p);
    p.commit();
    const std::string absent = "20261206T125956.026242Z-RKAOZV";
    const auto r = p.tea({"run", p.eval().string(), "--node-check", absent});
    EXPECT_EQ(r.status, 12) << r.err;
    EXPECT_NE(r.err.find("node " + this_node() + ": the run's folder " +
                         (p.eval() / "runs" / absent).string() + " is not visible here"),
              std::string::npos)
        << r.err;
    // What is not a run id never names a folder.
    EXPECT_EQ(p.tea({"run", p.eval().string(), "--node-check", "../" + absent}).status, 2);
}

TEST(RunSlurm, TheArrayWritesTheRecordsALocalRunWrites) {
    SlurmCluster slurm;
    for (const char *example : {"quickstart", "leaky-target"}) {
        Project p{std::string{"run-slurm-"} + example};
        p.copy_example(example);
        p.commit();
        const auto b =
            second_run_as_the_first(p, example, {"--executor", "slurm", "--jobs", "2"},
                                    {slurm.env()}, std::string{example} == "quickstart" ? 0 : 3);
        ASSERT_FALSE(b.empty());
        const auto run = read_json(b / "run.json");
        EXPECT_EQ(run["executor"]["kind"], "slurm");
        EXPECT_EQ(run["executor"]["jobs"], 2);
        EXPECT_TRUE(run["executor"].contains("jobId")) << run["executor"].dump();
        // Before the array, the node check ran on the node and found nothing wrong.
        const auto checked = read_json(b / "slurm" / "node-check.json");
        EXPECT_EQ(checked["failed"], "") << checked.dump();
        EXPECT_EQ(checked["node"], this_node());
        EXPECT_EQ(p.leftover_run_dirs(), 0U);
    }
    EXPECT_EQ(slurm.queue(), "");
}

TEST(RunSlurm, ATaskCancelledIsAnInfrastructureErrorAndARunInterruptedCancelsItsArray) {
    SlurmCluster slurm;
    Project p{"run-slurm-cancel"};
    // Each cancel must land while the task's target still sleeps: one that lands after it, in the
    // evaluator, ends a trial the test did not mean to end. On a loaded machine Slurm has taken
    // over four seconds to deliver one.
    const std::string seconds = "14.625";
    write_simple_evaluation(p, R"(, "trials": 2)", task_target(seconds));
    p.commit();
    // One task cancelled by the cluster's operator: its trial has no verdict; the other counts.
    const pid_t pid =
        spawn_run(p, {}, "run", {"--executor", "slurm", "--jobs", "2"}, {slurm.env()});
    ASSERT_TRUE(wait_for_targets(seconds, 2));
    fs::path dir;
    for (const auto &e : fs::directory_iterator(p.eval() / "runs")) dir = e.path();
    const auto job = read_json(dir / "run.json")["executor"].value("jobId", "");
    ASSERT_FALSE(job.empty());
    const auto cancelled =
        test::run({"scancel", job + "_2"}, test::environment_with({slurm.env()}));
    ASSERT_EQ(cancelled.status, 0) << cancelled.err;
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 3);
    EXPECT_TRUE(wait_for_none(task_sleep(seconds)));
    const auto run = read_json(dir / "run.json");
    ASSERT_EQ(run["trials"].size(), 1U) << run.dump(2);
    EXPECT_EQ(run["trials"][0]["verdict"]["verdict"], "pass");
    ASSERT_EQ(run["failedTrialTasks"].size(), 1U) << run.dump(2);
    EXPECT_EQ(run["failedTrialTasks"][0]["trialIndex"], 2);
    EXPECT_NE(run["failedTrialTasks"][0]["reason"].get<std::string>().find("CANCELLED"),
              std::string::npos)
        << run.dump(2);
    const auto score = p.tea({"score", dir.string()});
    EXPECT_EQ(score.status, 3) << score.err;
    EXPECT_NE(score.err.find("trial 2: its task ended with Slurm state CANCELLED"),
              std::string::npos)
        << score.err;

    // With retries, the cancelled task's trial is made again by a second array, and counts.
    const auto config = p.root().parent_path() / "retries.toml";
    test::write_file(config.string(), "[executor]\nretries = 1\n");
    const pid_t retried = spawn_run(p, {"--config", config.string()}, "run",
                                    {"--executor", "slurm", "--jobs", "2"}, {slurm.env()});
    ASSERT_TRUE(wait_for_targets(seconds, 2));
    fs::path latest;
    for (const auto &e : fs::directory_iterator(p.eval() / "runs")) {
        if (e.path() != dir) latest = e.path();
    }
    const auto first = read_json(latest / "run.json")["executor"].value("jobId", "");
    ASSERT_EQ(test::run({"scancel", first + "_2"}, test::environment_with({slurm.env()})).status,
              0);
    ASSERT_EQ(::waitpid(retried, &status, 0), retried);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    const auto retried_run = read_json(latest / "run.json");
    EXPECT_EQ(retried_run["trials"].size(), 2U) << retried_run.dump(2);
    EXPECT_EQ(retried_run["failedTrialTasks"], json::array());
    ASSERT_EQ(retried_run["retriedTrialTasks"].size(), 1U) << retried_run.dump(2);
    EXPECT_EQ(retried_run["retriedTrialTasks"][0]["trialIndex"], 2);
    EXPECT_NE(retried_run["retriedTrialTasks"][0]["reason"].get<std::string>().find("CANCELLED"),
              std::string::npos);
    ASSERT_TRUE(retried_run["executor"].contains("retryJobId")) << retried_run.dump(2);
    EXPECT_NE(retried_run["executor"]["retryJobId"], first);
    expect_schema_valid(latest / "run.json", "run.schema.json");

    // The run interrupted: the array is cancelled with it, and nothing of it runs on.
    const pid_t again =
        spawn_run(p, {}, "run", {"--executor", "slurm", "--jobs", "2"}, {slurm.env()});
    ASSERT_TRUE(wait_for_targets(seconds, 2));
    ASSERT_EQ(::kill(again, SIGTERM), 0);
    ASSERT_EQ(::waitpid(again, &status, 0), again);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
    EXPECT_TRUE(wait_for_none(task_sleep(seconds)));
    EXPECT_EQ(slurm.queue(), "");
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
}

// The one run folder of p made after `before` (empty: any).
fs::path run_dir_other_than(const Project &p, const fs::path &before) {
    fs::path found;
    for (const auto &e : fs::directory_iterator(p.eval() / "runs")) {
        if (e.path() != before) found = e.path();
    }
    return found;
}

// Slurm's jobs as squeue lists them, until none is left or about a minute has passed.
bool wait_for_empty_queue(const SlurmCluster &slurm) {
    for (int i = 0; i < 300; ++i) {
        if (slurm.queue().empty()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds{200});
    }
    return false;
}

// A coordinator killed outright (SIGKILL: no handler runs, nothing cancels its array). Its tasks
// that start afterwards make no trial, and the next run of the evaluation cancels what is left of
// the array and records the run as failed. Control: the task that started while the coordinator
// lived made its trial, and the next run's own trials are made and pass.
TEST(RunSlurm, ACoordinatorKilledOutrightMakesNoMoreTrialsAndTheNextRunCancelsItsArray) {
    SlurmCluster slurm;
    Project p{"run-slurm-killed"};
    write_simple_evaluation(p, R"(, "trials": 3)", task_target("3.125"));
    p.commit();
    // One task at a time: tasks 2 and 3 start after the coordinator is gone.
    pid_t pid = spawn_run(p, {}, "run", {"--executor", "slurm", "--jobs", "1"}, {slurm.env()});
    ASSERT_TRUE(wait_for_targets("3.125", 1));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(wait_for_empty_queue(slurm)) << slurm.queue();
    const auto first = run_dir_other_than(p, {});
    EXPECT_TRUE(fs::exists(first / "trials" / "1" / "trial.json"));
    for (const char *task : {"2", "3"}) {
        EXPECT_FALSE(fs::exists(first / "trials" / task / "trial.json")) << task;
        const auto err = test::read_file((first / "slurm" / (std::string{task} + ".err")).string());
        EXPECT_NE(err.find("is not run: the run's coordinator is not known to be alive (its "
                           "process ("),
                  std::string::npos)
            << err;
        EXPECT_NE(err.find(") has ended)"), std::string::npos) << err;
    }
    // Nothing has cancelled anything yet: the run still says it is running.
    EXPECT_EQ(read_json(first / "run.json")["status"], "running");

    // Killed again while its first task runs: the next run cancels the array.
    pid = spawn_run(p, {}, "run", {"--executor", "slurm", "--jobs", "1"}, {slurm.env()});
    ASSERT_TRUE(wait_for_targets("3.125", 1));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    const auto second = run_dir_other_than(p, first);
    ASSERT_FALSE(slurm.queue().empty());
    const auto next = p.tea({"run", p.eval().string(), "--jobs", "3"}, {slurm.env()});
    EXPECT_EQ(next.status, 0) << next.err;
    // The first was found gone by the second run as it began; the second by the next.
    EXPECT_NE(next.err.find("run " + second.filename().string() +
                            "'s coordinator is gone (its process ("),
              std::string::npos)
        << next.err;
    EXPECT_EQ(next.err.find(first.filename().string()), std::string::npos) << next.err;
    for (const auto &dir : {first, second}) {
        const auto run = read_json(dir / "run.json");
        EXPECT_EQ(run["status"], "failed");
        EXPECT_NE(run["error"].get<std::string>().find("its coordinator is gone"),
                  std::string::npos)
            << run.dump(2);
        expect_schema_valid(dir / "run.json", "run.schema.json");
        EXPECT_FALSE(fs::exists(dir / "slurm" / "coordinator.lease"));
    }
    EXPECT_EQ(slurm.queue(), "");
    EXPECT_TRUE(wait_for_none(task_sleep("3.125")));
    EXPECT_FALSE(fs::exists(second / "trials" / "2" / "trial.json"));
    // What the next run found gone it does not reclaim again.
    const auto after = p.tea({"run", p.eval().string(), "--jobs", "3"}, {slurm.env()});
    EXPECT_EQ(after.status, 0) << after.err;
    EXPECT_EQ(after.err.find("coordinator is gone"), std::string::npos) << after.err;
}

// A run that cannot rewrite an abandoned run's record (its folder immutable here; another user's
// in a shared evaluation) still runs, and says so; the abandoned run's lease stays, so a run that
// can rewrite it later reclaims it (the control).
TEST(RunSlurm, ARunThatCannotRecordAnAbandonedRunAsFailedStillRunsAndSaysSo) {
    SlurmCluster slurm;
    Project p{"run-slurm-unwritable"};
    write_simple_evaluation(p);
    p.commit();
    const std::string id = "20261206T125956.026242Z-RKAOZV";
    const auto abandoned = p.eval() / "runs" / id;
    fs::create_directories(abandoned / "slurm");
    test::write_file(
        (abandoned / "run.json").string(),
        json{{"runId", id}, {"status", "running"}, {"executor", {{"kind", "slurm"}}}}.dump());
    // Its coordinator's lease was made on another node and not renewed since.
    const auto lease = abandoned / "slurm" / "coordinator.lease";
    test::write_file(
        lease.string(),
        R"({"node":"n7","bootId":"not-this-boot","process":"4026531836-1-1","leaseS":30})");
    const timespec old[2] = {{0, UTIME_OMIT}, {std::time(nullptr) - 3600, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, lease.c_str(), old, 0), 0);
    const auto chattr = [&](const char *flag) {
        return test::run({"chattr", flag, abandoned.string()}, test::environment_with({})).status;
    };
    ASSERT_EQ(chattr("+i"), 0);
    const auto refused = p.tea({"run", p.eval().string()}, {slurm.env()});
    EXPECT_EQ(chattr("-i"), 0);
    EXPECT_EQ(refused.status, 0) << refused.err;
    EXPECT_NE(refused.err.find("run " + id + "'s coordinator is gone (its lease was last renewed"),
              std::string::npos)
        << refused.err;
    EXPECT_NE(refused.err.find("its Slurm jobs were cancelled, but it could not be recorded as "
                               "failed: cannot write " +
                               abandoned.string()),
              std::string::npos)
        << refused.err;
    EXPECT_EQ(read_json(abandoned / "run.json")["status"], "running");
    EXPECT_TRUE(fs::exists(lease));

    const auto reclaimed = p.tea({"run", p.eval().string()}, {slurm.env()});
    EXPECT_EQ(reclaimed.status, 0) << reclaimed.err;
    EXPECT_NE(
        reclaimed.err.find("run " + id + "'s coordinator is gone (its lease was last renewed"),
        std::string::npos)
        << reclaimed.err;
    EXPECT_NE(reclaimed.err.find("the run is recorded as failed"), std::string::npos)
        << reclaimed.err;
    EXPECT_EQ(read_json(abandoned / "run.json")["status"], "failed");
    EXPECT_FALSE(fs::exists(lease));
}

TEST(RunSlurm, ACommandLineOfHostileWordsReachesTheTasksAsItWasAndARefusedArrayIsExit12) {
    SlurmCluster slurm;
    Project p{"run-slurm-words"};
    write_simple_evaluation(p);
    p.commit();
    // A configuration file whose name holds a quote, a space and a dollar: the task script
    // quotes every word, so the tasks read the same file.
    const auto config = p.root().parent_path() / "it's a $HOME config.toml";
    test::write_file(config.string(), "[executor]\nkind = \"slurm\"\njobs = 2\n");
    const auto r =
        p.tea({"--json", "--config", config.string(), "run", p.eval().string()}, {slurm.env()});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(read_json(run_dir_of(r) / "run.json")["executor"]["kind"], "slurm");
    // Control: the same command line, on a partition the cluster does not have (the node check,
    // the first job of the run, is refused).
    test::write_file(config.string(), "[executor]\nkind = \"slurm\"\nslurm_partition = \"none\"\n");
    const auto none =
        p.tea({"--json", "--config", config.string(), "run", p.eval().string()}, {slurm.env()});
    EXPECT_EQ(none.status, 12) << none.err;
    EXPECT_NE(none.err.find("sbatch did not take the run's node check"), std::string::npos)
        << none.err;
    EXPECT_NE(none.err.find("invalid partition"), std::string::npos) << none.err;
    // A job Slurm holds never starts: past the pending limit it is cancelled, and the run ends
    // saying why, with nothing of it left queued.
    test::write_file(config.string(),
                     "[executor]\nkind = \"slurm\"\nslurm_pending_limit_s = 1\n"
                     "slurm_options = [\"--hold\"]\n");
    const auto held =
        p.tea({"--json", "--config", config.string(), "run", p.eval().string()}, {slurm.env()});
    EXPECT_EQ(held.status, 12) << held.err;
    EXPECT_NE(held.err.find("waited more than 1 s with no task running (squeue's reason: "
                            "JobHeldUser) and was cancelled"),
              std::string::npos)
        << held.err;
    // The array's own wait: on a partition whose time limit is below the array's (and above the
    // node check's), the array never starts; past the limit it is cancelled, and each trial that
    // never ran is an infrastructure error saying so.
    test::write_file(config.string(),
                     "[executor]\nkind = \"slurm\"\nslurm_pending_limit_s = 1\n"
                     "slurm_partition = \"short\"\n");
    const auto pending =
        p.tea({"--json", "--config", config.string(), "run", p.eval().string()}, {slurm.env()});
    EXPECT_EQ(pending.status, 3) << pending.err;
    const auto never = read_json(run_dir_of(pending) / "run.json");
    ASSERT_EQ(never["failedTrialTasks"].size(), 1U) << never.dump(2);
    EXPECT_NE(never["failedTrialTasks"][0]["reason"].get<std::string>().find(
                  "waited more than 1 s with no task running (squeue's reason: "
                  "PartitionTimeLimit) and was cancelled"),
              std::string::npos)
        << never.dump(2);
    EXPECT_EQ(never["retriedTrialTasks"], json::array());
    EXPECT_EQ(slurm.queue(), "");
    EXPECT_EQ(p.leftover_run_dirs(), 0U);
}

// ---- sealed briefs (docs/agent-evaluations.md) ----

// A target that speaks the relay's protocol and, for every message, tries to read the brief at its
// absolute path: it answers with the brief's first line, or with why it could not.
std::string brief_reading_target(const fs::path &brief) {
    return "#!/usr/bin/python3\nimport json, sys\nfor line in sys.stdin:\n"
           "    try:\n        seen = open('" +
           brief.string() +
           "').readline().strip()\n"
           "    except OSError as e:\n        seen = 'unreadable: ' + type(e).__name__\n"
           "    print(json.dumps({'role': 'assistant', 'text': 'brief: ' + seen}), flush=True)\n";
}

// An agent CLI that answers as Claude Code's `-p --output-format json` does: its opening is
// "hello", and it is done as soon as the target has answered. `exit_code` other than 0: it fails.
std::string scripted_agent_cli(int exit_code = 0) {
    return "#!/bin/sh\nprompt=$(cat)\ncase \"$prompt\" in *'first message'*) said=hello ;; "
           "*) said='[[done]]' ;; esac\n"
           "printf '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,"
           "\"result\":\"%s\",\"session_id\":\"s-1\"}\\n' \"$said\"\nexit " +
           std::to_string(exit_code) + "\n";
}

// A project whose one probe is a conversation with the brief-reading target.
void write_brief_evaluation(Project &p, const std::string &evaluation_extra, int agent_exit = 0) {
    const auto agent = p.root().parent_path() / "agent-cli";
    test::write_file(agent.string(), scripted_agent_cli(agent_exit));
    ::chmod(agent.c_str(), 0755);
    write_simple_evaluation(p, evaluation_extra,
                            brief_reading_target(p.eval() / "briefs" / "customer.md"));
    p.write(".tea/briefs/customer.md", "SEALED: you want a refund for order 42\n");
    p.write(".tea/probes/only.json",
            json{{"entry", "t"},
                 {"conversation",
                  {{"brief", "briefs/customer.md"},
                   {"maxTurns", 4},
                   {"turnTimeoutMs", 20000},
                   {"agent", {{"program", agent.string()}, {"model", "scripted"}}}}}}
                .dump());
}

// The brief is grading material: a confined target that reaches for it finds nothing and is
// listed, and the conversation around it is recorded whole.
TEST(Run, ASealedBriefIsHiddenFromTheConfinedTargetAndTheConversationIsRecorded) {
    Project p{"brief-confined"};
    write_brief_evaluation(p, "");
    p.commit();
    const auto check = p.tea({"check", p.eval().string()});
    ASSERT_EQ(check.status, 0) << check.err;
    const auto run = p.run();
    const auto dir = run_dir_of(run);
    ASSERT_FALSE(dir.empty()) << run.status << "\n" << run.out << run.err;
    EXPECT_EQ(run.status, 3) << "the read of the brief is listed\n" << run.err;
    expect_schema_valid(dir / "run.json", "run.schema.json");
    const auto record = read_json(dir / "run.json");
    const auto &call = record["trials"][0]["calls"][0];
    const auto &relay = call["relay"];
    EXPECT_EQ(relay["ended"], "agentDone") << relay.dump(2);
    EXPECT_EQ(relay["agentMessages"], 1);
    ASSERT_EQ(relay["turns"].size(), 3U) << relay.dump(2);
    EXPECT_EQ(relay["turns"][0]["text"], "hello");
    EXPECT_EQ(relay["turns"][1]["text"].get<std::string>().rfind("brief: unreadable: ", 0), 0U)
        << relay["turns"][1];
    EXPECT_EQ(relay["turns"][2]["text"], "[[done]]");
    EXPECT_EQ(call["infrastructureError"], false);
    EXPECT_EQ(call["endedByRuntime"], true);
    EXPECT_TRUE(call["stdout"].is_null());
    const auto sha =
        test::run({"/usr/bin/sha256sum", (p.eval() / "briefs" / "customer.md").string()},
                  test::environment_with({}));
    EXPECT_EQ(relay["briefSha256"], sha.out.substr(0, 64));
    const auto &observed = record["trials"][0]["observedMounts"];
    EXPECT_NE(
        std::find(observed.begin(), observed.end(), (p.eval() / "briefs" / "customer.md").string()),
        observed.end())
        << observed;
    const auto transcript =
        test::read_file((dir / "trials" / "1" / relay["transcript"].get<std::string>()).string());
    EXPECT_NE(transcript.find("brief: unreadable"), std::string::npos) << transcript;
    // The brief's text is in no record of the run: only its digest is.
    for (const auto &e : fs::recursive_directory_iterator(dir)) {
        if (e.is_regular_file()) {
            EXPECT_EQ(test::read_file(e.path().string()).find("SEALED"), std::string::npos)
                << e.path();
        }
    }
    // The agent's prompts and answers are kept beside the transcript.
    ASSERT_EQ(relay["agent"]["turns"].size(), 2U) << relay["agent"].dump(2);
    EXPECT_TRUE(fs::is_regular_file(dir / "trials" / "1" /
                                    relay["agent"]["turns"][1]["prompt"].get<std::string>()));
}

// Control: the same target opted out reads the brief, so the confined run's "unreadable" was the
// confinement's doing.
TEST(Run, AnOptedOutTargetReadsTheBriefTheConfinementHides) {
    Project p{"brief-optout"};
    write_brief_evaluation(p, R"(, "confinement": false)");
    p.commit();
    const auto run = p.run();
    const auto dir = run_dir_of(run);
    ASSERT_FALSE(dir.empty()) << run.status << "\n" << run.out << run.err;
    EXPECT_EQ(run.status, 0) << run.err;
    const auto relay = read_json(dir / "run.json")["trials"][0]["calls"][0]["relay"];
    ASSERT_GE(relay["turns"].size(), 2U) << relay.dump(2);
    EXPECT_EQ(relay["turns"][1]["text"], "brief: SEALED: you want a refund for order 42");
}

// An agent that cannot speak leaves the target unheard: an infrastructure error, not a fail.
TEST(Run, AConversationWhoseAgentFailsIsAnInfrastructureError) {
    Project p{"brief-agent-fails"};
    write_brief_evaluation(p, "", 4);
    p.commit();
    const auto run = p.run();
    const auto dir = run_dir_of(run);
    ASSERT_FALSE(dir.empty()) << run.status << "\n" << run.out << run.err;
    const auto call = read_json(dir / "run.json")["trials"][0]["calls"][0];
    EXPECT_EQ(call["relay"]["ended"], "agentFailed") << call["relay"].dump(2);
    EXPECT_NE(call["relay"]["detail"].get<std::string>().find("status 4"), std::string::npos)
        << call["relay"]["detail"];
    EXPECT_EQ(call["infrastructureError"], true);
    EXPECT_EQ(call["relay"]["turns"].size(), 0U);
    const auto score = p.tea({"score", dir.string()});
    EXPECT_NE(score.status, 1) << "never the target's fail\n" << score.err;
}

// The invoker's environment for a login test with the token route, in a home of the project's.
std::vector<std::string> token_env(const Project &p) {
    const auto home = p.root().parent_path() / "home";
    fs::create_directories(home);
    return login_env(p, home, kToken);
}

// The brief-reading project with its agent logged in through the adapter `login`: the agent CLI
// says whether it holds the token in its opening; the target (whose entry declares no login)
// says whether it does in each answer.
void write_logged_in_brief_evaluation(Project &p, const std::string &login) {
    write_brief_evaluation(p, "");
    const auto agent = p.root().parent_path() / "agent-cli";
    test::write_file(agent.string(),
                     "#!/bin/sh\nprompt=$(cat)\ncase \"$prompt\" in *'first message'*) "
                     "said=\"hello token:${CLAUDE_CODE_OAUTH_TOKEN:+held}\" ;; "
                     "*) said='[[done]]' ;; esac\n"
                     "printf '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,"
                     "\"result\":\"%s\",\"session_id\":\"s-1\"}\\n' \"$said\"\n");
    p.write("bin/t",
            "#!/bin/sh\nwhile read -r line; do printf '{\"role\": \"assistant\", \"text\": "
            "\"target token:%s\"}\\n' \"${CLAUDE_CODE_OAUTH_TOKEN:-none}\"; done\n",
            true);
    p.write(
        ".tea/probes/only.json",
        json{{"entry", "t"},
             {"conversation",
              {{"brief", "briefs/customer.md"},
               {"maxTurns", 4},
               {"turnTimeoutMs", 20000},
               {"agent", {{"program", agent.string()}, {"model", "scripted"}, {"login", login}}}}}}
            .dump());
}

// agent.login names a login adapter, as a rubric judge's login does: the agent gets a grant of
// its own, "sealed brief <probe>", asked of the adapter and recorded, and the target, whose entry
// declares no login, holds none of it.
TEST(RunLogin, ASealedBriefAgentGetsAGrantOfItsOwnThatTheTargetNeverHolds) {
    Project p{"brief-login"};
    write_logged_in_brief_evaluation(p, "claude");
    p.commit();
    const auto env = token_env(p);
    const auto check = tea_in(env, {"check", p.eval().string()});
    ASSERT_EQ(check.status, 0) << check.err;
    const auto run = tea_in(env, {"--json", "run", p.eval().string()});
    const auto dir = run_dir_of(run);
    ASSERT_FALSE(dir.empty()) << run.status << "\n" << run.out << run.err;
    EXPECT_EQ(run.status, 0) << run.err;
    expect_schema_valid(dir / "run.json", "run.schema.json");
    const auto record = read_json(dir / "run.json");
    const auto &relay = record["trials"][0]["calls"][0]["relay"];
    ASSERT_EQ(relay["turns"].size(), 3U) << relay.dump(2);
    EXPECT_EQ(relay["turns"][0]["text"], "hello token:held") << "the agent got its grant";
    EXPECT_EQ(relay["turns"][1]["text"], "target token:none") << "the target got none of it";
    EXPECT_EQ(relay["agent"]["login"], "claude");
    EXPECT_EQ(relay["agent"]["loginGrant"], "sealed brief only");
    ASSERT_EQ(record["logins"].size(), 1U) << record["logins"];
    EXPECT_EQ(record["logins"][0]["interface"], "sealed brief only");
    EXPECT_EQ(record["logins"][0]["adapter"], "claude");
    EXPECT_EQ(record["logins"][0]["variables"], json::array({"CLAUDE_CODE_OAUTH_TOKEN"}));
    EXPECT_EQ(files_holding(dir, kToken), "");
    // The manifest shows the targets' confinement: the agent's grant is no part of it.
    const auto manifest = read_json(dir / "manifest.json");
    EXPECT_EQ(manifest.dump().find("sealed brief"), std::string::npos) << manifest.dump(2);

    // Control: without a login the agent holds no token either.
    Project bare{"brief-no-login"};
    write_logged_in_brief_evaluation(bare, "claude");
    auto probe = read_json(bare.eval() / "probes" / "only.json");
    probe["conversation"]["agent"].erase("login");
    bare.write(".tea/probes/only.json", probe.dump());
    bare.commit();
    const auto bare_run = tea_in(token_env(bare), {"--json", "run", bare.eval().string()});
    const auto bare_dir = run_dir_of(bare_run);
    ASSERT_FALSE(bare_dir.empty()) << bare_run.status << "\n" << bare_run.out << bare_run.err;
    const auto bare_relay = read_json(bare_dir / "run.json")["trials"][0]["calls"][0]["relay"];
    EXPECT_EQ(bare_relay["turns"][0]["text"], "hello token:") << bare_relay.dump(2);
    EXPECT_TRUE(bare_relay["agent"]["login"].is_null());
    EXPECT_TRUE(read_json(bare_dir / "run.json")["logins"].empty());
}

// A brief agent's adapter that is not installed stops the run before any trial, naming the
// probe's file and field as `check` does; the run above, with "claude", is the control.
TEST(RunLogin, ASealedBriefAgentsUninstalledAdapterStopsTheRunNamingFileAndField) {
    Project p{"brief-login-missing"};
    write_logged_in_brief_evaluation(p, "claud");
    p.commit();
    const auto env = token_env(p);
    const std::string where = fs::canonical(p.eval()).string() +
                              "/probes/only.json: probe 'only' field 'conversation.agent.login': ";
    const auto check = tea_in(env, {"check", p.eval().string()});
    EXPECT_EQ(check.status, 2) << check.err;
    EXPECT_NE(check.err.find(where), std::string::npos) << check.err;
    const auto run = tea_in(env, {"--json", "run", p.eval().string()});
    EXPECT_EQ(run.status, 2) << run.err;
    EXPECT_NE(run.err.find(where), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("did you mean 'claude'"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("nothing was run"), std::string::npos) << run.err;
    EXPECT_FALSE(fs::exists(p.eval() / "runs")) << "no trial began";
}

// The judge's likewise: its `login` in evaluation.json, refused by run before any trial.
TEST(RunLogin, ARubricJudgesUninstalledAdapterStopsTheRunNamingFileAndField) {
    Project p{"judge-login-missing"};
    write_simple_evaluation(p, "");
    p.write(".tea/rubric.md", "# Rubric\n\n## kind\nIs kind.\n");
    auto doc = read_json(p.eval() / "evaluation.json");
    doc["evaluator"] = {{"kind", "rubric"}, {"rubric", "rubric.md"}, {"agent", "claude"},
                        {"program", "sh"},  {"model", "m"},          {"login", "github"}};
    p.write(".tea/evaluation.json", doc.dump());
    p.commit();
    const auto run = p.run();
    EXPECT_EQ(run.status, 2) << run.err;
    EXPECT_NE(run.err.find(fs::canonical(p.eval()).string() +
                           "/evaluation.json: evaluator field 'login': "),
              std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find("no login plugin named 'github'"), std::string::npos) << run.err;
    EXPECT_FALSE(fs::exists(p.eval() / "runs")) << "no trial began";
}

// A judge that stands for the agent CLI: it tries a loopback server of the host directly, then
// through the route's proxy for the host its egress lists and for one it does not, and answers the
// one criterion with what it saw as the reason.
constexpr const char *kNetworkJudge = R"PY(#!/usr/bin/python3
import json, os, socket, sys
sys.stdin.read()
PORT = int(sys.argv[0].rsplit("-", 1)[1])
def direct():
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=5).close()
        return "open"
    except OSError:
        return "refused"
def through_route(host):
    proxy = os.environ.get("HTTPS_PROXY", "")
    if not proxy:
        return "no-route"
    address, port = proxy.split("//", 1)[1].rstrip("/").rsplit(":", 1)
    s = socket.create_connection((address, int(port)), timeout=5)
    s.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host, PORT, host, PORT)).encode())
    status = s.makefile("rb").readline().decode().split()
    s.close()
    return status[1] if len(status) > 1 else "none"
seen = "direct=%s listed=%s unlisted=%s" % (
    direct(), through_route("grading-api.tea-evaluate.test"),
    through_route("elsewhere.tea-evaluate.test"))
answer = {"criteria": [{"id": "kind", "score": 1, "reason": seen}]}
print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                  "result": json.dumps(answer), "session_id": "judge-session"}))
)PY";

// A rubric judge with `egress` reaches the hosts it lists through a route of its own and nothing
// else: a loopback server of the host is closed to it directly, open through the route for the
// listed (pinned) name, refused for another name, and the refusal is in the turn's record.
// Control: the same judge without egress keeps the host's network and has no route; so does one
// with egress that nothing confines (opted out), whose record then names no route.
TEST(RunJudge, AJudgesEgressIsItsOnlyWayOutAndItsRefusalsAreRecorded) {
    std::uint16_t port = 0;
    const int server = test::listen_loopback(AF_INET, port);
    ASSERT_GE(server, 0);
    const auto verdict_of = [&](const std::string &name, const json &egress,
                                bool confinement = true) {
        Project p{name};
        write_simple_evaluation(p, "");
        p.write(".tea/rubric.md", "# Rubric\n\n## kind\nIs kind.\n");
        // The port rides in the judge's own name: the judge is given nothing of the test's.
        const auto judge = "judge-" + std::to_string(port);
        p.write(judge, kNetworkJudge, true);
        auto doc = read_json(p.eval() / "evaluation.json");
        doc["evaluator"] = {{"kind", "rubric"},  {"rubric", "rubric.md"},
                            {"agent", "claude"}, {"program", (p.root() / judge).string()},
                            {"model", "m"},      {"maxScore", 1}};
        if (!egress.is_null()) doc["evaluator"]["egress"] = egress;
        doc["confinement"] = confinement;
        p.write(".tea/evaluation.json", doc.dump());
        p.commit();
        const auto run = p.run();
        EXPECT_EQ(run.status, 0) << run.err;
        const auto dir = run_dir_of(run);
        if (dir.empty()) return json{};
        expect_schema_valid(dir / "run.json", "run.schema.json");
        return read_json(dir / "trials" / "1" / "verdict.json");
    };
    const json listed = json::array(
        {{{"host", "grading-api.tea-evaluate.test"}, {"port", port}, {"pinned", {"127.0.0.1"}}}});
    const auto routed = verdict_of("judge-egress", listed);
    ASSERT_TRUE(routed.contains("judge")) << routed.dump(2);
    EXPECT_EQ(routed["verdict"], "pass") << routed.dump(2);
    // What the judge saw, read without assuming the verdict has a criterion.
    const auto reason = [](const json &verdict) {
        return verdict.value(json::json_pointer{"/judge/criteria/0/reason"}, std::string{});
    };
    EXPECT_EQ(reason(routed), "direct=refused listed=200 unlisted=403") << routed.dump(2);
    EXPECT_EQ(routed.value(json::json_pointer{"/judge/egress/0/host"}, std::string{}),
              "grading-api.tea-evaluate.test");
    const auto refusals =
        routed.value(json::json_pointer{"/judge/turns/0/egressRefusals"}, json::array());
    ASSERT_EQ(refusals.size(), 1U) << routed.dump(2);
    EXPECT_EQ(refusals[0]["host"], "elsewhere.tea-evaluate.test");
    EXPECT_EQ(refusals[0]["status"], 403);

    const auto control = verdict_of("judge-no-egress", nullptr);
    ASSERT_TRUE(control.contains("judge")) << control.dump(2);
    EXPECT_EQ(reason(control), "direct=open listed=no-route unlisted=no-route") << control.dump(2);
    EXPECT_TRUE(control["judge"]["egress"].is_null());
    EXPECT_EQ(control.value(json::json_pointer{"/judge/turns/0/egressRefusals"}, json(nullptr)),
              json::array());

    // Opted out, nothing confines the judge: its route is dropped, and its record says it had
    // the host's network rather than the hosts it listed.
    const auto unconfined = verdict_of("judge-egress-opted-out", listed, false);
    ASSERT_TRUE(unconfined.contains("judge")) << unconfined.dump(2);
    EXPECT_EQ(reason(unconfined), "direct=open listed=no-route unlisted=no-route")
        << unconfined.dump(2);
    EXPECT_TRUE(unconfined["judge"]["egress"].is_null()) << unconfined.dump(2);
    EXPECT_EQ(unconfined["view"], "unprotected");
    ::close(server);
}

}  // namespace
}  // namespace tea
